//! A ringdb cluster for tests: one binary per node, node `i` on its own loopback address
//! 127.0.0.`i` (same CQL port on each, as drivers expect), internode on a second port.

use super::binary;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One node's process and addresses.
pub struct ClusterNode {
    /// 1-based index: the node listens on 127.0.0.`index`.
    pub index: u8,
    /// Its CQL address.
    pub native: SocketAddr,
    /// Its internode address.
    pub internode: SocketAddr,
    dir: PathBuf,
    seeds: Vec<SocketAddr>,
    extra_config: String,
    child: Option<Child>,
}

/// Nodes on 127.0.0.1 .. 127.0.0.n.
pub struct TestCluster {
    /// The nodes, `nodes[i]` on 127.0.0.(i+1).
    pub nodes: Vec<ClusterNode>,
    _dir: tempfile::TempDir,
}

fn free_port_on(ip: &str) -> u16 {
    std::net::TcpListener::bind(format!("{ip}:0"))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

impl TestCluster {
    /// Starts `n` nodes: the first starts the cluster, the others join it through it.
    pub fn start(n: u8) -> TestCluster {
        Self::start_with(n, "")
    }

    /// As [`TestCluster::start`], with `extra_config` (TOML lines) in every node's config.
    pub fn start_with(n: u8, extra_config: &str) -> TestCluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let native_port = free_port_on("127.0.0.1");
        let internode_port = free_port_on("127.0.0.1");
        let first: SocketAddr = format!("127.0.0.1:{internode_port}").parse().expect("addr");
        let mut nodes = Vec::new();
        for i in 1..=n {
            let ip = format!("127.0.0.{i}");
            let mut node = ClusterNode {
                index: i,
                native: format!("{ip}:{native_port}").parse().expect("addr"),
                internode: format!("{ip}:{internode_port}").parse().expect("addr"),
                dir: dir.path().join(format!("node{i}")),
                seeds: if i == 1 { Vec::new() } else { vec![first] },
                extra_config: extra_config.to_string(),
                child: None,
            };
            node.start();
            nodes.push(node);
        }
        TestCluster { nodes, _dir: dir }
    }

    /// Creates `n` nodes with `extra_config` (TOML lines) in every node's config and starts
    /// node 1 only, which starts the cluster; nodes 2..=n have node 1 as their seed and join it
    /// when a test calls [`ClusterNode::start`] on them.
    pub fn start_first_of(n: u8, extra_config: &str) -> TestCluster {
        assert!(n >= 1, "a cluster has at least one node");
        let dir = tempfile::tempdir().expect("tempdir");
        let native_port = free_port_on("127.0.0.1");
        let internode_port = free_port_on("127.0.0.1");
        let first: SocketAddr = format!("127.0.0.1:{internode_port}").parse().expect("addr");
        let nodes = (1..=n)
            .map(|i| {
                let ip = format!("127.0.0.{i}");
                ClusterNode {
                    index: i,
                    native: format!("{ip}:{native_port}").parse().expect("addr"),
                    internode: format!("{ip}:{internode_port}").parse().expect("addr"),
                    dir: dir.path().join(format!("node{i}")),
                    seeds: if i == 1 { Vec::new() } else { vec![first] },
                    extra_config: extra_config.to_string(),
                    child: None,
                }
            })
            .collect();
        let mut cluster = TestCluster { nodes, _dir: dir };
        cluster.node(1).start();
        cluster
    }

    /// Waits (at most `within`) until every running node lists every other running node in
    /// `system.peers`, and no more.
    pub async fn wait_until_running_formed(&self, within: Duration) {
        let running: Vec<&ClusterNode> = self.nodes.iter().filter(|n| n.is_running()).collect();
        let expected = running.len().saturating_sub(1);
        let deadline = Instant::now() + within;
        for node in &running {
            loop {
                let peers: Vec<(std::net::IpAddr,)> = match node.session_as(None).await {
                    Ok(session) => {
                        super::paged_rows(&session, "SELECT peer FROM system.peers", (), 100).await
                    }
                    Err(_) => Vec::new(),
                };
                if peers.len() == expected {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "node {} sees {} peers, not {expected}, after {within:?}",
                    node.index,
                    peers.len()
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }

    /// The node on 127.0.0.`index`.
    pub fn node(&mut self, index: u8) -> &mut ClusterNode {
        &mut self.nodes[usize::from(index - 1)]
    }

    /// Waits until every running node lists every other node in `system.peers`.
    pub async fn wait_until_formed(&self) {
        self.wait_until_formed_with(None).await;
    }

    /// As [`TestCluster::wait_until_formed`], logged in as `login`.
    pub async fn wait_until_formed_as(&self, login: (&str, &str)) {
        self.wait_until_formed_with(Some(login)).await;
    }

    async fn wait_until_formed_with(&self, login: Option<(&str, &str)>) {
        let expected = self.nodes.len() - 1;
        let deadline = Instant::now() + Duration::from_secs(60);
        for node in &self.nodes {
            loop {
                let session = node.session_as(login).await.expect("driver connects");
                let peers: Vec<(std::net::IpAddr,)> =
                    super::paged_rows(&session, "SELECT peer FROM system.peers", (), 100).await;
                if peers.len() == expected {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "node {} sees {} peers, not {expected}",
                    node.index,
                    peers.len()
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

impl ClusterNode {
    /// Starts (or restarts) the node's process and waits until it accepts CQL connections.
    pub fn start(&mut self) {
        std::fs::create_dir_all(&self.dir).expect("data dir");
        let seeds: Vec<String> = self.seeds.iter().map(|s| format!("\"{s}\"")).collect();
        // Six groups per table unless the test's own lines say otherwise.
        let groups = if self.extra_config.contains("initial_physical_partitions") {
            ""
        } else {
            "initial_physical_partitions = 6\n"
        };
        let config = format!(
            "internode_listen = \"{}\"\nseeds = [{}]\n{groups}{}\n",
            self.internode,
            seeds.join(", "),
            self.extra_config
        );
        let config_path = self.dir.join("cluster-test.toml");
        std::fs::write(&config_path, config).expect("config file");
        let log = std::fs::File::create(self.dir.join(format!(
            "log-{}.txt",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0)
        )))
        .expect("log file");
        let child = Command::new(binary())
            .arg("--config")
            .arg(&config_path)
            .arg("--listen")
            .arg(self.native.to_string())
            .arg("--data-dir")
            .arg(&self.dir)
            .arg("--log-level")
            .arg("info,openraft=warn,lsm_tree=warn,fjall=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn ringdb");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(self.native).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("node {} did not listen within 30 s", self.index);
    }

    /// Whether the node's process was started (and not killed since).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A scylla session connected to this node only (no discovery of the others).
    pub async fn session(&self) -> scylla::client::session::Session {
        self.session_as(None).await.expect("scylla driver connects")
    }

    /// As [`ClusterNode::session`], logged in as `(user, password)` when given.
    pub async fn session_as(
        &self,
        login: Option<(&str, &str)>,
    ) -> Result<scylla::client::session::Session, scylla::errors::NewSessionError> {
        let mut builder = scylla::client::session_builder::SessionBuilder::new()
            .known_node(self.native.to_string())
            .host_filter(std::sync::Arc::new(OnlyNode(self.native)));
        if let Some((user, password)) = login {
            builder = builder.user(user, password);
        }
        builder.build().await
    }
}

/// Lets a session use one node only.
struct OnlyNode(SocketAddr);

impl scylla::policies::host_filter::HostFilter for OnlyNode {
    fn accept(&self, peer: &scylla::cluster::metadata::Peer) -> bool {
        peer.address.ip() == self.0.ip() && peer.address.port() == self.0.port()
    }
}

impl Drop for ClusterNode {
    fn drop(&mut self) {
        self.kill();
    }
}
