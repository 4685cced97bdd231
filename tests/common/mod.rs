//! Test harness: a real ringdb server on 127.0.0.1:0 over a temporary data directory, run
//! in-process (for driver tests) or as the real binary (for restart and crash tests).

#![allow(dead_code, unreachable_pub)]

pub mod acked_rows;
pub mod cluster;
pub mod raw;

use ringdb::config::Config;
use ringdb::node::Node;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A server running inside the test process.
pub struct TestServer {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    /// The node the server runs (for counters the protocol does not show).
    pub node: Arc<Node>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server on a fresh data directory.
    pub async fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        Self::start_in(dir).await
    }

    /// Starts a server on a fresh data directory with settings changed by `tune`.
    pub async fn start_with(tune: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        Self::start_tuned(dir, tune).await
    }

    /// Starts a server on `dir`.
    pub async fn start_in(dir: tempfile::TempDir) -> TestServer {
        Self::start_tuned(dir, |_| {}).await
    }

    async fn start_tuned(dir: tempfile::TempDir, tune: impl FnOnce(&mut Config)) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut config = Config {
            listen: addr,
            data_dir: dir.path().to_path_buf(),
            shutdown_grace_seconds: 2,
            ..Config::default()
        };
        tune(&mut config);
        let node = tokio::task::spawn_blocking(move || Node::open(config))
            .await
            .expect("join")
            .expect("node opens");
        let (tx, rx) = oneshot::channel::<()>();
        let node = Arc::new(node);
        let task = tokio::spawn(ringdb::server::run(listener, node.clone(), async {
            let _ = rx.await;
        }));
        TestServer {
            addr,
            dir,
            node,
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// Stops the server (graceful shutdown) and returns its data directory.
    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("server stops within 10 s")
                .expect("server task");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        std::mem::replace(&mut self.dir, dir)
    }

    /// A scylla driver session connected to this server.
    pub async fn session(&self) -> scylla::client::session::Session {
        scylla::client::session_builder::SessionBuilder::new()
            .known_node(self.addr.to_string())
            .build()
            .await
            .expect("scylla driver connects")
    }
}

impl TestServer {
    /// A driver session on a new keyspace `keyspace` (SimpleStrategy, RF 1) after running each
    /// of `statements` (the tables of the test).
    pub async fn session_with_keyspace(
        &self,
        keyspace: &str,
        statements: &[&str],
    ) -> scylla::client::session::Session {
        let session = self.session().await;
        run_all(&session, &[&create_keyspace(keyspace)]).await;
        run_all(&session, statements).await;
        session
    }
}

/// Runs each statement in order through `session`, panicking with the statement on failure
/// (test setup: keyspaces, tables).
pub async fn run_all(session: &scylla::client::session::Session, statements: &[&str]) {
    for cql in statements {
        session
            .query_unpaged(*cql, ())
            .await
            .unwrap_or_else(|e| panic!("{cql}: {e}"));
    }
}

/// `CREATE KEYSPACE <name>` with SimpleStrategy, replication factor 1.
pub fn create_keyspace(name: &str) -> String {
    format!(
        "CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
    )
}

/// The first column (an int) of every row `cql` returns.
pub async fn int_column(session: &scylla::client::session::Session, cql: &str) -> Vec<i32> {
    session
        .query_unpaged(cql, ())
        .await
        .unwrap_or_else(|e| panic!("{cql}: {e}"))
        .into_rows_result()
        .expect("rows")
        .rows::<(i32,)>()
        .expect("typed rows")
        .map(|r| r.expect("row").0)
        .collect()
}

/// Every row of the prepared `cql` bound to `values`, fetched `page_size` rows a page.
pub async fn paged_rows<R>(
    session: &scylla::client::session::Session,
    cql: &str,
    values: impl scylla::serialize::row::SerializeRow,
    page_size: i32,
) -> Vec<R>
where
    R: 'static + for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm>,
{
    use futures::TryStreamExt;
    let mut statement = session.prepare(cql).await.expect("prepare");
    statement.set_page_size(page_size);
    session
        .execute_iter(statement, values)
        .await
        .expect("select")
        .rows_stream::<R>()
        .expect("rows")
        .try_collect()
        .await
        .expect("pages")
}

/// The ringdb binary built by cargo for integration tests.
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ringdb"))
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A ringdb child process.
pub struct ServerProcess {
    pub child: Child,
    pub addr: SocketAddr,
}

impl ServerProcess {
    /// Spawns the binary on `dir` and waits until it accepts connections.
    pub fn spawn(dir: &Path, port: u16) -> ServerProcess {
        Self::spawn_with_config(dir, port, "")
    }

    /// Spawns the binary with a `--config` file holding `config_toml`.
    #[allow(clippy::zombie_processes)]
    pub fn spawn_with_config(dir: &Path, port: u16, config_toml: &str) -> ServerProcess {
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        std::fs::create_dir_all(dir).expect("data dir");
        let config = dir.join("test-config.toml");
        std::fs::write(&config, config_toml).expect("config file");
        let child = Command::new(binary())
            .arg("--config")
            .arg(&config)
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--data-dir")
            .arg(dir)
            .arg("--log-level")
            .arg("warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn ringdb");
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(addr).is_ok() {
                return ServerProcess { child, addr };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("ringdb did not start listening on {addr} within 20 s");
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("ringdb did not exit within 15 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
