//! nullserver: the protocol ceiling `scripts/bench` measures ringdb against. It speaks the
//! CQL native protocol (v3, v4) through ringdb's own `cql` crate, keeps the schema so that
//! drivers and prepared statements work, and stores nothing: writes are acknowledged, reads
//! answered with synthesized rows of the right types (one for a whole primary key, else the
//! slice rows setting or the LIMIT when smaller).
//!
//! Settings (environment):
//! - `NULLSERVER_ADDR`: listen address (default `127.0.0.1:9042`);
//! - `NULLSERVER_THREADS`: worker threads (default: the number of CPUs);
//! - `NULLSERVER_VALUE_SIZE`: bytes of each text or blob value read (default 100);
//! - `NULLSERVER_SLICE_ROWS`: rows of a read that is not a point lookup (default 10).

mod answer;
mod catalog;
mod connection;
mod markers;
mod prepared;
mod synthetic;
mod system_tables;

use answer::{ReadSettings, Server};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use system_tables::Identity;

fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> std::process::ExitCode {
    let addr: SocketAddr = setting("NULLSERVER_ADDR", SocketAddr::from(([127, 0, 0, 1], 9042)));
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads: usize = setting("NULLSERVER_THREADS", cpus).max(1);
    let reads = ReadSettings {
        value_size: setting("NULLSERVER_VALUE_SIZE", 100),
        slice_rows: setting("NULLSERVER_SLICE_ROWS", 10),
    };
    let identity = Identity {
        address: match addr.ip() {
            IpAddr::V4(v4) => v4,
            IpAddr::V6(_) => Ipv4Addr::LOCALHOST,
        },
        port: addr.port(),
    };
    let server = Arc::new(Server::new(identity, reads));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("nullserver: no runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("nullserver: cannot listen on {addr}: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        eprintln!("nullserver: listening on {addr} ({threads} threads)");
        loop {
            match listener.accept().await {
                Ok((socket, _)) => {
                    let server = server.clone();
                    tokio::spawn(async move {
                        if let Err(e) = connection::serve(server, socket).await {
                            eprintln!("nullserver: connection closed: {e}");
                        }
                    });
                }
                Err(e) => eprintln!("nullserver: accept failed: {e}"),
            }
        }
    })
}
