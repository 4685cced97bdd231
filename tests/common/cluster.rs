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

/// A cluster's directory (every node's data and logs): removed when the cluster drops,
/// unless `RINGDB_TEST_KEEP` is set (kept whole) or the test failed (the nodes' logs are
/// kept, and the path printed).
fn cluster_dir() -> tempfile::TempDir {
    let mut dir = tempfile::Builder::new()
        .prefix("ringdb-cluster-")
        .tempdir()
        .expect("tempdir");
    if std::env::var_os("RINGDB_TEST_KEEP").is_some() {
        dir.disable_cleanup(true);
        eprintln!("cluster directory kept: {}", dir.path().display());
    }
    dir
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
        let dir = cluster_dir();
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
        let dir = cluster_dir();
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

impl Drop for TestCluster {
    fn drop(&mut self) {
        if std::thread::panicking() && std::env::var_os("RINGDB_TEST_KEEP").is_none() {
            // The nodes' logs stay to be read; their data goes (a failing run must not fill
            // the disk under the tests after it).
            self._dir.disable_cleanup(true);
            for node in &mut self.nodes {
                node.kill();
                node.remove_data();
            }
            eprintln!(
                "the test failed; the nodes' logs are kept in {}",
                self._dir.path().display()
            );
        }
    }
}

impl ClusterNode {
    /// Removes everything in the node's directory but its logs and its config.
    fn remove_data(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("log-") || name.ends_with(".toml") {
                continue;
            }
            let path = entry.path();
            let _ = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
    }
}

impl Drop for ClusterNode {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A scylla session that sends requests to the nodes at `natives` only: the driver learns the
/// other members from `system.peers` but never connects to them.
pub async fn session_on(natives: &[SocketAddr]) -> scylla::client::session::Session {
    let mut builder = scylla::client::session_builder::SessionBuilder::new()
        .host_filter(std::sync::Arc::new(OnlyNodes(natives.to_vec())));
    for native in natives {
        builder = builder.known_node(native.to_string());
    }
    builder.build().await.expect("scylla driver connects")
}

/// Lets a session use some nodes only.
struct OnlyNodes(Vec<SocketAddr>);

impl scylla::policies::host_filter::HostFilter for OnlyNodes {
    fn accept(&self, peer: &scylla::cluster::metadata::Peer) -> bool {
        self.0
            .iter()
            .any(|a| peer.address.ip() == a.ip() && peer.address.port() == a.port())
    }
}

/// What an admin command (`ringdb <args>`, such as `decommission`) did.
#[derive(Debug)]
pub struct AdminRun {
    /// Its exit status, or `None` when it ran past its time and was killed.
    pub status: Option<std::process::ExitStatus>,
    /// Its standard output and standard error, interleaved as written.
    pub output: String,
    /// How long it ran.
    pub took: Duration,
}

impl AdminRun {
    /// Whether it exited with status 0 in time.
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// The last `lines` lines of its output.
    pub fn tail(&self, lines: usize) -> String {
        let all: Vec<&str> = self.output.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// Runs `ringdb <args>` and waits for it at most `within`, killing it then. Blocking: from
/// async code call [`admin`].
pub fn run_admin(args: &[String], within: Duration) -> AdminRun {
    use std::io::{Read, Seek, SeekFrom};
    let mut output = tempfile::tempfile().expect("output file");
    let stdout = output.try_clone().expect("output file");
    let stderr = output.try_clone().expect("output file");
    let started = Instant::now();
    let mut child = Command::new(binary())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .spawn()
        .expect("spawn ringdb admin command");
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < within => {
                std::thread::sleep(Duration::from_millis(100));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let took = started.elapsed();
    let mut bytes = Vec::new();
    let _ = output.seek(SeekFrom::Start(0));
    let _ = output.read_to_end(&mut bytes);
    AdminRun {
        status,
        output: String::from_utf8_lossy(&bytes).into_owned(),
        took,
    }
}

/// [`run_admin`] on the blocking pool.
pub async fn admin(args: &[&str], within: Duration) -> AdminRun {
    let args: Vec<String> = args.iter().map(|a| (*a).to_string()).collect();
    tokio::task::spawn_blocking(move || run_admin(&args, within))
        .await
        .expect("admin command thread")
}

/// The rows of `cql` (a small system table or view) at `session`, or the error.
pub async fn view_rows<R>(
    session: &scylla::client::session::Session,
    cql: &str,
) -> Result<Vec<R>, String>
where
    R: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm>,
{
    let result = session
        .query_unpaged(cql, ())
        .await
        .map_err(|e| format!("{cql}: {e}"))?
        .into_rows_result()
        .map_err(|e| format!("{cql}: {e}"))?;
    result
        .rows::<R>()
        .map_err(|e| format!("{cql}: {e}"))?
        .collect::<Result<Vec<R>, _>>()
        .map_err(|e| format!("{cql}: {e}"))
}

/// The IP of a `native_address` ("127.0.0.2:9042").
pub fn ip_of(native_address: &str) -> Option<std::net::IpAddr> {
    native_address
        .rsplit_once(':')
        .and_then(|(ip, _)| ip.parse().ok())
}

/// One row of `system_views.cluster_nodes`.
#[derive(Debug, Clone)]
pub struct NodeRow {
    /// The member's host id.
    pub host_id: uuid::Uuid,
    /// The IP of its native address.
    pub ip: Option<std::net::IpAddr>,
    /// 'UP' or 'DOWN'.
    pub status: String,
    /// 'NORMAL', 'LEAVING' or 'REMOVING' (null from a build without the column's values).
    pub state: Option<String>,
    /// Physical partitions it leads.
    pub groups_led: i32,
    /// Physical partitions it holds a replica of.
    pub groups_held: i32,
}

/// `system_views.cluster_nodes` at `session`.
pub async fn cluster_nodes(
    session: &scylla::client::session::Session,
) -> Result<Vec<NodeRow>, String> {
    type Row = (
        uuid::Uuid,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<i32>,
        Option<i32>,
    );
    let rows: Vec<Row> = view_rows(
        session,
        "SELECT host_id, native_address, status, state, groups_led, groups_held \
         FROM system_views.cluster_nodes",
    )
    .await?;
    Ok(rows
        .into_iter()
        .map(|(host_id, native, status, state, led, held)| NodeRow {
            host_id,
            ip: native.as_deref().and_then(ip_of),
            status: status.unwrap_or_default(),
            state,
            groups_led: led.unwrap_or(0),
            groups_held: held.unwrap_or(0),
        })
        .collect())
}

/// One row of `system_views.moves`: a replica move in flight.
#[derive(Debug, Clone)]
pub struct MoveRow {
    /// The group (physical partition) whose replica moves.
    pub group_id: i64,
    /// Its table's keyspace.
    pub keyspace_name: Option<String>,
    /// Its table.
    pub table_name: Option<String>,
    /// The node giving up its replica (`None` when a replica is added).
    pub from_node: Option<uuid::Uuid>,
    /// The node receiving the replica.
    pub to_node: Option<uuid::Uuid>,
    /// Bytes of the snapshot received so far.
    pub bytes_received: Option<i64>,
    /// Bytes of the whole snapshot.
    pub bytes_total: Option<i64>,
    /// How long the move has run.
    pub elapsed_ms: Option<i64>,
}

/// `system_views.moves` at `session`.
pub async fn moves(session: &scylla::client::session::Session) -> Result<Vec<MoveRow>, String> {
    type Row = (
        i64,
        Option<String>,
        Option<String>,
        Option<uuid::Uuid>,
        Option<uuid::Uuid>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
    );
    let rows: Vec<Row> = view_rows(
        session,
        "SELECT group_id, keyspace_name, table_name, from_node, to_node, bytes_received, \
         bytes_total, elapsed_ms FROM system_views.moves",
    )
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(group_id, keyspace_name, table_name, from_node, to_node, received, total, ms)| {
                MoveRow {
                    group_id,
                    keyspace_name,
                    table_name,
                    from_node,
                    to_node,
                    bytes_received: received,
                    bytes_total: total,
                    elapsed_ms: ms,
                }
            },
        )
        .collect())
}

/// One row of `system_views.physical_partitions`: a piece of a table's ring and its group's
/// replicas (as the node asked sees them).
#[derive(Debug, Clone)]
pub struct PartitionRow {
    /// The table.
    pub table_name: String,
    /// The last token of the piece.
    pub end_token: i64,
    /// The group's replicas, by native IP, in the order listed (empty when null).
    pub replicas: Vec<std::net::IpAddr>,
    /// The group's leader, once known.
    pub leader: Option<std::net::IpAddr>,
    /// The bytes the node asked stores of the piece (0 where it keeps no replica).
    pub bytes: u64,
}

/// The physical partitions of `keyspace`'s tables at `session`.
pub async fn physical_partitions(
    session: &scylla::client::session::Session,
    keyspace: &str,
) -> Result<Vec<PartitionRow>, String> {
    type Row = (
        String,
        i64,
        Option<Vec<std::net::IpAddr>>,
        Option<std::net::IpAddr>,
        i64,
    );
    let rows: Vec<Row> = view_rows(
        session,
        &format!(
            "SELECT table_name, end_token, replicas, leader, bytes \
             FROM system_views.physical_partitions WHERE keyspace_name = '{keyspace}'"
        ),
    )
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(table_name, end_token, replicas, leader, bytes)| PartitionRow {
                table_name,
                end_token,
                replicas: replicas.unwrap_or_default(),
                leader,
                bytes: u64::try_from(bytes).unwrap_or(0),
            },
        )
        .collect())
}

/// The text stored at key `k` of `ks.big (k int PRIMARY KEY, v text)`: about 1 KB.
pub fn big_value(k: i32) -> String {
    format!("{k:08}-{}", "x".repeat(1000))
}

/// Writes `keys` into `ks.big` at `level`, 16 at a time; every write must be acknowledged,
/// each tried up to five times (a write may time out while its partition splits or moves,
/// and writing the same value again is harmless).
pub async fn write_big_rows(
    session: &scylla::client::session::Session,
    keys: std::ops::Range<i32>,
    level: scylla::statement::Consistency,
) {
    let mut insert = session
        .prepare("INSERT INTO ks.big (k, v) VALUES (?, ?)")
        .await
        .expect("prepare");
    insert.set_consistency(level);
    insert.set_request_timeout(Some(Duration::from_secs(10)));
    let keys: Vec<i32> = keys.collect();
    for chunk in keys.chunks(16) {
        let writes = chunk.iter().map(|k| {
            let insert = &insert;
            async move {
                let mut last = None;
                for _ in 0..5 {
                    match session.execute_unpaged(insert, (*k, big_value(*k))).await {
                        Ok(_) => return Ok(()),
                        Err(e) => last = Some(e),
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(last)
            }
        });
        for (k, r) in chunk.iter().zip(futures::future::join_all(writes).await) {
            if let Err(e) = r {
                panic!("write of {k} acknowledged in five tries: {e:?}");
            }
        }
    }
}
