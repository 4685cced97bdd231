//! A replica move one of whose ends dies part-way. Node 3 joins a loaded two-node cluster
//! and, while a replica is being copied to it, either node 3 (the receiver) or the node the
//! replica leaves (the sender) is killed (SIGKILL). A dead receiver: the move rolls back and
//! the balancer plans nothing while node 3 is down. A dead sender: the move waits for it or
//! rolls back. Once the killed node restarts on its data the cluster balances again. Writes
//! go on throughout, and every acknowledged row reads back at every node.

mod common;

use common::acked_rows::{
    background_load, bulk_load, prepare_insert, read_back, Key, Load, TABLES,
};
use common::cluster::{self, TestCluster};
use scylla::client::session::Session;
use scylla::statement::Consistency;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Each table's keyspace and replication factor.
const KEYSPACES: [(&str, usize); 2] = [("ks", 2), ("ks1", 1)];
/// The level each table is written at: QUORUM (both replicas of RF 2), ONE (RF 1).
const WRITE_LEVELS: [Consistency; 2] = [Consistency::Quorum, Consistency::One];
/// Partitions each table is loaded with before node 3 joins: 12 MiB and 8 MiB, so a move
/// (a group's snapshot, 1 to 2 MiB) takes a moment.
const BULK_PARTITIONS: [i32; 2] = [600, 400];
/// The background load: 4 inserts every 50 ms, 24,000 at most.
const LOAD: Load = Load {
    every: Duration::from_millis(50),
    max: 24_000,
    bulk_partitions: BULK_PARTITIONS,
};
/// Groups per table (the harness's `initial_physical_partitions`).
const GROUPS_PER_TABLE: usize = 6;
/// How long to look for a move to node 3 once it starts, and how often.
const MOVE_SEEN_WITHIN: Duration = Duration::from_secs(60);
const MOVE_POLL: Duration = Duration::from_millis(50);
/// How long the move to the dead node may take to roll back.
const ROLLBACK_WITHIN: Duration = Duration::from_secs(60);
/// How long nothing may be planned once it has (node 3 still down).
const QUIET_FOR: Duration = Duration::from_secs(5);
/// How long the sender stays down before it restarts.
const SENDER_DOWN_FOR: Duration = Duration::from_secs(5);
/// Each test starts a cluster of three: one at a time, or two on two cores starve each other.
static ONE_CLUSTER_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
/// How long the cluster may take to balance once the killed node is back: a move left
/// behind by a dead sender is rolled back at the latest after its 5-minute deadline, then
/// planned again.
const REBALANCE_WITHIN: Duration = Duration::from_secs(420);

/// Why `session`'s groups are not each on their keyspace's replication factor of distinct
/// replicas among `ips` (`Err`): no move left half done.
async fn whole_groups(session: &Session, ips: &[IpAddr]) -> Result<(), String> {
    for (keyspace, rf) in KEYSPACES {
        let parts = cluster::physical_partitions(session, keyspace).await?;
        let whole = |p: &cluster::PartitionRow| {
            let distinct: BTreeSet<&IpAddr> = p.replicas.iter().collect();
            p.replicas.len() == rf
                && distinct.len() == rf
                && distinct.iter().all(|r| ips.contains(r))
        };
        if parts.len() < GROUPS_PER_TABLE || !parts.iter().all(whole) {
            return Err(format!("{keyspace}'s partitions are {parts:?}"));
        }
    }
    Ok(())
}

/// Why the cluster is not yet balanced (`Err`), or a summary of its layout (`Ok`): as each of
/// `nodes` sees it, every node UP and NORMAL, no move in flight, every `ks` group on two
/// distinct replicas with a leader and every `ks1` group on one, and each node's own
/// `groups_held` within one of the others'.
async fn balance(nodes: &[(IpAddr, &Session)]) -> Result<String, String> {
    let ips: Vec<IpAddr> = nodes.iter().map(|(ip, _)| *ip).collect();
    let mut held = BTreeMap::new();
    for (ip, session) in nodes {
        let rows = cluster::cluster_nodes(session).await?;
        let normal = rows
            .iter()
            .filter(|r| r.status == "UP" && r.state.as_deref() == Some("NORMAL"))
            .count();
        if rows.len() != nodes.len() || normal != nodes.len() {
            return Err(format!("{ip} sees the nodes as {rows:?}"));
        }
        let own = rows
            .iter()
            .find(|r| r.ip == Some(*ip))
            .ok_or_else(|| format!("{ip} does not list itself: {rows:?}"))?;
        held.insert(*ip, (own.groups_held, own.groups_led));
        let moving = cluster::moves(session).await?;
        if !moving.is_empty() {
            return Err(format!("{ip} sees moves in flight: {moving:?}"));
        }
        whole_groups(session, &ips)
            .await
            .map_err(|why| format!("{ip}: {why}"))?;
        let led = cluster::physical_partitions(session, "ks").await?;
        if led.iter().any(|p| p.leader.is_none()) {
            return Err(format!("{ip} sees a ks group without a leader: {led:?}"));
        }
    }
    let least = held.values().map(|(h, _)| *h).min().unwrap_or(0);
    let most = held.values().map(|(h, _)| *h).max().unwrap_or(0);
    if least == 0 || most - least > 1 {
        return Err(format!("groups (held, led) by node: {held:?}"));
    }
    Ok(format!("groups (held, led) by node: {held:?}"))
}

/// Looks at `session`'s `system_views.moves` every `MOVE_POLL` until a move to the node at
/// `ip` is in flight (learning its host id from `cluster_nodes` once it joins); returns the
/// host id and the move.
async fn wait_for_move_to(session: &Session, ip: IpAddr) -> (Uuid, cluster::MoveRow) {
    let started = Instant::now();
    let mut host_id: Option<Uuid> = None;
    let mut seen: Vec<cluster::MoveRow> = Vec::new();
    let looks = MOVE_SEEN_WITHIN.as_millis() / MOVE_POLL.as_millis();
    for _ in 0..looks {
        if host_id.is_none() {
            host_id = cluster::cluster_nodes(session)
                .await
                .ok()
                .and_then(|rows| rows.into_iter().find(|r| r.ip == Some(ip)))
                .map(|r| r.host_id);
        }
        if let Some(id) = host_id {
            if let Ok(rows) = cluster::moves(session).await {
                if let Some(found) = rows.iter().find(|m| m.to_node == Some(id)) {
                    return (id, found.clone());
                }
                for m in rows {
                    if seen.len() < 20 && !seen.iter().any(|s| s.group_id == m.group_id) {
                        seen.push(m);
                    }
                }
            }
        }
        if started.elapsed() >= MOVE_SEEN_WITHIN {
            break;
        }
        tokio::time::sleep(MOVE_POLL).await;
    }
    panic!(
        "no move to {ip} (host id {host_id:?}) seen within {MOVE_SEEN_WITHIN:?}; moves seen: \
         {seen:?}"
    );
}

/// With the receiver (node 3, `three_id`) killed at `killed`: the move rolls back (none is
/// left in flight once node 1 sees node 3 down), every group is whole (moves that finished
/// before the kill may have left replicas on node 3), and the balancer plans nothing while
/// node 3 is down.
async fn receiver_down(first: &Session, three_id: Uuid, killed: Instant, ips: &[IpAddr]) {
    let mut state = String::new();
    let mut rolled_back = false;
    for _ in 0..(ROLLBACK_WITHIN.as_millis() / 250) {
        let down = cluster::cluster_nodes(first).await.map(|rows| {
            rows.iter()
                .any(|r| r.host_id == three_id && r.status == "DOWN")
        });
        let moving = cluster::moves(first).await;
        if matches!(down, Ok(true)) && moving.as_ref().is_ok_and(Vec::is_empty) {
            rolled_back = true;
            break;
        }
        state = format!("node 3 down: {down:?}; moves: {moving:?}");
        if killed.elapsed() >= ROLLBACK_WITHIN {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(
        rolled_back,
        "moves still in flight {ROLLBACK_WITHIN:?} after node 3 was killed: {state}"
    );
    let rollback = killed.elapsed();
    eprintln!("no move in flight {rollback:?} after the kill");
    whole_groups(first, ips)
        .await
        .unwrap_or_else(|why| panic!("after the roll back, on node 1: {why}"));

    // With node 3 down, the balancer plans nothing.
    let quiet_until = Instant::now() + QUIET_FOR;
    for _ in 0..(QUIET_FOR.as_millis() / 250) {
        let moving = cluster::moves(first).await.expect("moves on node 1");
        assert!(
            moving.is_empty(),
            "a move was planned with node 3 down: {moving:?}"
        );
        if Instant::now() >= quiet_until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Which end of the move the test kills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Node 3, which receives the replica.
    Receiver,
    /// The node the replica leaves.
    Sender,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_receiving_node_mid_move_loses_nothing() {
    let _one = ONE_CLUSTER_AT_A_TIME.lock().await;
    kill_mid_move(End::Receiver).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_sending_node_mid_move_loses_nothing() {
    let _one = ONE_CLUSTER_AT_A_TIME.lock().await;
    kill_mid_move(End::Sender).await;
}

async fn kill_mid_move(end: End) {
    let test_start = Instant::now();
    let mut cluster = TestCluster::start_first_of(3, "");
    tokio::task::block_in_place(|| cluster.node(2).start());
    cluster
        .wait_until_running_formed(Duration::from_secs(60))
        .await;
    let [one, two, three] = [0, 1, 2].map(|i| cluster.nodes[i].native);
    let first = cluster.nodes[0].session().await;
    for (keyspace, rf) in KEYSPACES {
        let create_keyspace = format!(
            "CREATE KEYSPACE {keyspace} WITH replication = \
             {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}"
        );
        let create_table =
            format!("CREATE TABLE {keyspace}.t (pk int, c int, v blob, PRIMARY KEY (pk, c))");
        common::run_all(&first, &[&create_keyspace, &create_table]).await;
    }

    // 20 MiB on nodes 1 and 2.
    let loading = Instant::now();
    let mut acknowledged: Vec<Key> = Vec::new();
    for (table, name) in TABLES.iter().enumerate() {
        let insert = prepare_insert(&first, name, WRITE_LEVELS[table]).await;
        acknowledged.extend(bulk_load(&first, &insert, table, BULK_PARTITIONS[table]).await);
    }
    eprintln!(
        "loaded {} rows on nodes 1 and 2 in {:?}",
        acknowledged.len(),
        loading.elapsed()
    );

    // Writes go on through nodes 1 and 2 from here to the end.
    let load_session = Arc::new(cluster::session_on(&[one, two]).await);
    let inserts = [
        prepare_insert(&load_session, TABLES[0], WRITE_LEVELS[0]).await,
        prepare_insert(&load_session, TABLES[1], WRITE_LEVELS[1]).await,
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicU64::new(0));
    let load = tokio::spawn(background_load(
        load_session.clone(),
        inserts,
        LOAD,
        stop.clone(),
        acked.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Node 3 joins; the balancer starts moving replicas to it, and while one is on its way,
    // one end of that move is killed.
    let joining = Instant::now();
    tokio::task::block_in_place(|| cluster.node(3).start());
    let (three_id, caught) = wait_for_move_to(&first, three.ip()).await;
    let ips = [one.ip(), two.ip(), three.ip()];
    let victim: u8 = match end {
        End::Receiver => 3,
        End::Sender => {
            let from = caught
                .from_node
                .expect("a move to a joining node has a sender");
            let rows = cluster::cluster_nodes(&first).await.expect("cluster_nodes");
            let ip = rows
                .iter()
                .find(|r| r.host_id == from)
                .and_then(|r| r.ip)
                .unwrap_or_else(|| panic!("the sender {from} is not listed: {rows:?}"));
            let at = ips
                .iter()
                .position(|i| *i == ip)
                .expect("a node of the test");
            u8::try_from(at + 1).expect("node index")
        }
    };
    cluster.node(victim).kill();
    let killed = Instant::now();
    eprintln!(
        "killed node {victim} ({end:?}) {:?} after node 3 ({three_id}) started, mid-move: \
         {caught:?}",
        joining.elapsed()
    );
    if end == End::Receiver {
        receiver_down(&first, three_id, killed, &ips).await;
    } else {
        // The sender stays down a moment; the move waits for it or rolls back.
        tokio::time::sleep(SENDER_DOWN_FOR).await;
    }

    // The killed node restarts on its data; the balancer plans again, and the cluster
    // balances.
    let restarting = Instant::now();
    tokio::task::block_in_place(|| cluster.node(victim).start());
    cluster
        .wait_until_running_formed(Duration::from_secs(60))
        .await;
    let mut sessions = Vec::new();
    for node in &cluster.nodes {
        sessions.push(node.session().await);
    }
    let nodes: Vec<(IpAddr, &Session)> = ips.iter().copied().zip(sessions.iter()).collect();
    let deadline = restarting + REBALANCE_WITHIN;
    let mut layout = Err(String::new());
    while Instant::now() < deadline {
        layout = balance(&nodes).await;
        if layout.is_ok() || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let layout = layout.unwrap_or_else(|why| {
        panic!("not balanced {REBALANCE_WITHIN:?} after node {victim} restarted: {why}")
    });
    eprintln!(
        "balanced {:?} after node {victim} restarted: {layout}",
        restarting.elapsed()
    );

    // The load stops; what it did is part of what must read back.
    stop.store(true, Ordering::Relaxed);
    let outcome = tokio::time::timeout(Duration::from_secs(60), load)
        .await
        .expect("the load stops within 60 s")
        .expect("load task");
    eprintln!(
        "load: {} acknowledged, {} failed, errors by kind: {:?}, longest time without an \
         acknowledged insert {:?}",
        outcome.acknowledged.len(),
        outcome.failed.len(),
        outcome.errors,
        outcome.longest_gap
    );
    assert!(
        outcome.unexpected.is_empty(),
        "writes failed with errors a node dying mid-move should not give: {:?}",
        outcome.unexpected
    );
    assert!(
        acked.load(Ordering::Relaxed) > 0,
        "the background load had no insert acknowledged"
    );
    acknowledged.extend(outcome.acknowledged.iter().copied());
    let maybe: BTreeSet<Key> = outcome.failed.iter().copied().collect();

    // Every acknowledged row reads back at every node, and a scan of each table finds them.
    let reading = Instant::now();
    for (ip, session) in &nodes {
        for table in 0..TABLES.len() {
            read_back(&ip.to_string(), session, table, &acknowledged, &maybe).await;
        }
    }
    eprintln!(
        "read back {} rows at ONE and QUORUM on 3 nodes in {:?}; the test took {:?}",
        acknowledged.len(),
        reading.elapsed(),
        test_start.elapsed()
    );
}
