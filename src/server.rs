//! The accept loop: bounded connections, graceful shutdown on SIGINT/SIGTERM, final storage flush.

use crate::config::Config;
use crate::connection::{self, ReadOffload};
use crate::node::{Node, NodeError};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{error, info, warn};

/// Why the server could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Opening the node (data directory, catalog, storage) failed.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// Binding or accepting failed.
    #[error("listener on {addr}: {source}")]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// Opens the node from `config`, binds `config.listen` (and `tls_listen`) and serves until
/// SIGINT or SIGTERM.
///
/// # Errors
/// When the data directory cannot be opened or an address cannot be bound.
pub async fn serve(config: Config) -> Result<(), ServerError> {
    let addr = config.listen;
    let tls_addr = config.tls_listen;
    let node = tokio::task::spawn_blocking(move || Node::open(config))
        .await
        .map_err(|e| NodeError::Startup(format!("opening the node panicked: {e}")))??;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Listen { addr, source })?;
    let local = listener.local_addr().unwrap_or(addr);
    let tls = if node.config().tls_only {
        "TLS"
    } else {
        "plain"
    };
    info!(%local, transport = tls, "ringdb is serving CQL");
    let tls_listener = match tls_addr {
        Some(addr) => {
            let l = TcpListener::bind(addr)
                .await
                .map_err(|source| ServerError::Listen { addr, source })?;
            info!(local = %l.local_addr().unwrap_or(addr), transport = "TLS", "ringdb is serving CQL");
            Some(l)
        }
        None => None,
    };
    let node = Arc::new(node);
    let native = std::net::SocketAddr::new(node.info().rpc_address, local.port());
    let stop_cluster = CancellationToken::new();
    let cluster = start_cluster(&node, native, stop_cluster.clone()).await?;
    let stop_metrics = CancellationToken::new();
    if let Some(addr) = node.config().metrics_address() {
        tokio::spawn(crate::metrics_http::serve_metrics(
            node.clone(),
            addr,
            stop_metrics.clone(),
        ));
    }
    run_with_tls(listener, tls_listener, node, shutdown_signal()).await;
    stop_metrics.cancel();
    stop_cluster.cancel();
    if let Some(cluster) = cluster {
        cluster.stop().await;
    }
    Ok(())
}

/// Binds the internode listener and starts this node's part of the cluster. A node without
/// seeds whose internode port is taken (another ringdb on this host) runs alone, with a
/// warning; a node with seeds cannot.
async fn start_cluster(
    node: &Arc<Node>,
    native: std::net::SocketAddr,
    shutdown: CancellationToken,
) -> Result<Option<Arc<crate::cluster::Cluster>>, ServerError> {
    let addr = node.config().internode_address();
    let listener = match TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(source) if node.config().seeds.is_empty() => {
            warn!(%addr, error = %source, "internode port unavailable: running as a single node that others cannot join");
            return Ok(None);
        }
        Err(source) => return Err(ServerError::Listen { addr, source }),
    };
    crate::cluster::Cluster::start(node.clone(), listener, native, shutdown)
        .await
        .map(Some)
        .map_err(|e| ServerError::Node(NodeError::Startup(e.to_string())))
}

/// Serves `listener` until `shutdown` completes, then drains connections and flushes storage.
/// The listener speaks TLS when the node's config says `tls_only`.
pub async fn run(listener: TcpListener, node: Arc<Node>, shutdown: impl Future<Output = ()>) {
    run_with_tls(listener, None, node, shutdown).await;
}

/// As [`run`], plus `tls_listener` whose connections must use TLS (the node needs a TLS
/// certificate, else that listener is ignored with an error logged).
pub async fn run_with_tls(
    listener: TcpListener,
    tls_listener: Option<TcpListener>,
    node: Arc<Node>,
    shutdown: impl Future<Output = ()>,
) {
    let reads = match ReadOffload::from_config(node.config()) {
        Ok(reads) => Arc::new(reads),
        Err(e) => {
            error!(error = %e, "cannot start the read threads; not serving");
            return;
        }
    };
    let token = CancellationToken::new();
    let tracker = TaskTracker::new();
    let limit = Arc::new(Semaphore::new(node.config().max_connections));
    let main_tls = match (node.config().tls_only, node.tls_acceptor()) {
        (true, Some(acceptor)) => Some(acceptor.clone()),
        (true, None) => {
            error!("tls_only is set but no TLS certificate is loaded; not serving");
            return;
        }
        (false, _) => None,
    };
    let tls_listener = match (tls_listener, node.tls_acceptor()) {
        (Some(l), Some(acceptor)) => Some((l, acceptor.clone())),
        (Some(_), None) => {
            error!("a TLS listener was given but no TLS certificate is loaded; ignoring it");
            None
        }
        (None, _) => None,
    };
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            permit = limit.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (accepted, tls) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => (accepted, main_tls.clone()),
            accepted = accept_tls(tls_listener.as_ref()) => {
                (accepted, tls_listener.as_ref().map(|(_, a)| a.clone()))
            }
        };
        match accepted {
            Ok((socket, peer)) => {
                let node = node.clone();
                let reads = reads.clone();
                let token = token.child_token();
                tracker.spawn(async move {
                    node.metrics().connections(1);
                    let metrics_node = node.clone();
                    match tls {
                        Some(acceptor) => {
                            connection::run_tls(socket, peer, node, reads, acceptor, token).await
                        }
                        None => connection::run(socket, peer, node, reads, token).await,
                    }
                    metrics_node.metrics().connections(-1);
                    drop(permit);
                });
            }
            Err(e) => {
                // Transient (EMFILE, aborted handshakes): back off briefly and keep serving.
                warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    info!("shutting down: no longer accepting connections");
    drop(listener);
    drop(tls_listener);
    token.cancel();
    tracker.close();
    let grace = Duration::from_secs(node.config().shutdown_grace_seconds);
    if tokio::time::timeout(grace, tracker.wait()).await.is_err() {
        warn!("connections did not finish within {grace:?}; closing them");
    }
    let flush = node.clone();
    match tokio::task::spawn_blocking(move || flush.shutdown()).await {
        Ok(Ok(())) => info!("storage flushed; bye"),
        Ok(Err(e)) => error!(error = %e, "flushing storage on shutdown failed"),
        Err(e) => error!(error = %e, "flushing storage on shutdown panicked"),
    }
}

/// Accepts on the TLS listener, or never when there is none.
async fn accept_tls(
    listener: Option<&(TcpListener, tokio_rustls::TlsAcceptor)>,
) -> std::io::Result<(tokio::net::TcpStream, std::net::SocketAddr)> {
    match listener {
        Some((l, _)) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            error!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => info!("SIGINT received"),
        _ = term => info!("SIGTERM received"),
    }
}
