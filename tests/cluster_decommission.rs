//! Nodes leave a cluster. `ringdb decommission` marks a live node LEAVING, the balancer moves
//! its replicas to the others while writes go on, and the node is removed; `ringdb removenode`
//! re-creates a dead node's replicas on the survivors from their own copies, then removes it.
//! Either way the nodes that stay hold every group on `min(RF, nodes)` replicas, about as many
//! groups each, and every acknowledged row reads back from them.

mod common;

use common::acked_rows::{
    assert_load_went_on, background_load, bulk_load, prepare_insert, read_back, Key, Load, TABLES,
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
/// Partitions each table is loaded with before a node leaves: 8 MiB and 2 MiB.
const BULK_PARTITIONS: [i32; 2] = [400, 100];
/// Partitions of `ks` loaded before a node dies (for `removenode`): 5 MiB.
const REMOVENODE_PARTITIONS: i32 = 250;
/// The background load: 4 inserts every 50 ms, 24,000 at most.
const LOAD: Load = Load {
    every: Duration::from_millis(50),
    max: 24_000,
    bulk_partitions: BULK_PARTITIONS,
};
/// Groups per table (the harness's `initial_physical_partitions`).
const GROUPS_PER_TABLE: usize = 6;
/// How long `ringdb decommission` and `ringdb removenode` may run.
const COMMAND_WITHIN: Duration = Duration::from_secs(240);
/// How long the nodes that stay may take to agree on the membership once the command is done.
const MEMBERSHIP_WITHIN: Duration = Duration::from_secs(20);
/// How long the groups may take to settle (replicas, counts, no move in flight) after that.
const SETTLE_WITHIN: Duration = Duration::from_secs(60);

/// Each test starts a cluster of three: one at a time, or two on two cores starve each other.
static ONE_CLUSTER_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Creates `ks.t` and/or `ks1.t` (`keyspaces`: name and replication factor).
async fn create_tables(session: &Session, keyspaces: &[(&str, usize)]) {
    for (keyspace, rf) in keyspaces {
        let create_keyspace = format!(
            "CREATE KEYSPACE {keyspace} WITH replication = \
             {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}"
        );
        let create_table =
            format!("CREATE TABLE {keyspace}.t (pk int, c int, v blob, PRIMARY KEY (pk, c))");
        common::run_all(session, &[&create_keyspace, &create_table]).await;
    }
}

/// Every member's host id by native IP, as `session`'s node lists them once it lists `n`.
async fn host_ids(session: &Session, n: usize) -> BTreeMap<IpAddr, Uuid> {
    let deadline = Instant::now() + Duration::from_secs(30);
    for _ in 0..300 {
        let rows = cluster::cluster_nodes(session).await;
        if let Ok(rows) = &rows {
            let ids: BTreeMap<IpAddr, Uuid> = rows
                .iter()
                .filter_map(|r| Some((r.ip?, r.host_id)))
                .collect();
            if ids.len() == n {
                return ids;
            }
        }
        assert!(
            Instant::now() < deadline,
            "cluster_nodes does not list {n} nodes within 30 s: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("cluster_nodes does not list {n} nodes after 300 looks");
}

/// Why `session`'s node does not yet see exactly `members` (`Err`): its `system.peers` lists
/// the other members and no more, its `cluster_nodes` lists every member, UP and NORMAL.
async fn membership(
    ip: IpAddr,
    session: &Session,
    members: &BTreeMap<IpAddr, Uuid>,
) -> Result<(), String> {
    let peers: BTreeSet<IpAddr> =
        cluster::view_rows::<(IpAddr,)>(session, "SELECT peer FROM system.peers")
            .await?
            .into_iter()
            .map(|(peer,)| peer)
            .collect();
    let others: BTreeSet<IpAddr> = members.keys().copied().filter(|m| *m != ip).collect();
    if peers != others {
        return Err(format!("{ip} lists peers {peers:?}, not {others:?}"));
    }
    let rows = cluster::cluster_nodes(session).await?;
    let listed: BTreeSet<Uuid> = rows.iter().map(|r| r.host_id).collect();
    let expected: BTreeSet<Uuid> = members.values().copied().collect();
    let normal = rows
        .iter()
        .all(|r| r.status == "UP" && r.state.as_deref() == Some("NORMAL"));
    if listed != expected || rows.len() != members.len() || !normal {
        return Err(format!(
            "{ip}'s cluster_nodes is {rows:?}, not {members:?} all UP and NORMAL"
        ));
    }
    Ok(())
}

/// Waits (at most `MEMBERSHIP_WITHIN`) until each of `nodes` sees exactly `members`.
async fn wait_for_membership(nodes: &[(IpAddr, &Session)], members: &BTreeMap<IpAddr, Uuid>) {
    let deadline = Instant::now() + MEMBERSHIP_WITHIN;
    for (ip, session) in nodes {
        for look in 0.. {
            match membership(*ip, session, members).await {
                Ok(()) => break,
                Err(why) => assert!(
                    Instant::now() < deadline && look < 200,
                    "the members are not {members:?} {MEMBERSHIP_WITHIN:?} after the command: \
                     {why}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Why the groups are not yet where they belong (`Err`), or a summary (`Ok`): as each of
/// `nodes` sees it, every group of each `(keyspace, rf)` of `keyspaces` on `rf` distinct
/// replicas, all among `nodes`, with a leader when `rf > 1`; no move in flight; and each
/// node's own `groups_held` within one of the others'.
async fn settled(
    nodes: &[(IpAddr, &Session)],
    keyspaces: &[(&str, usize)],
) -> Result<String, String> {
    let ips: Vec<IpAddr> = nodes.iter().map(|(ip, _)| *ip).collect();
    let mut held = BTreeMap::new();
    for (ip, session) in nodes {
        for (keyspace, rf) in keyspaces {
            let parts = cluster::physical_partitions(session, keyspace).await?;
            let placed = |p: &cluster::PartitionRow| {
                let distinct: BTreeSet<&IpAddr> = p.replicas.iter().collect();
                p.replicas.len() == *rf
                    && distinct.len() == *rf
                    && distinct.iter().all(|r| ips.contains(r))
                    && (*rf == 1 || p.leader.is_some())
            };
            if parts.len() < GROUPS_PER_TABLE || !parts.iter().all(placed) {
                return Err(format!("{ip} sees {keyspace}'s partitions as {parts:?}"));
            }
        }
        let moving = cluster::moves(session).await?;
        if !moving.is_empty() {
            return Err(format!("{ip} sees moves in flight: {moving:?}"));
        }
        let rows = cluster::cluster_nodes(session).await?;
        let own = rows
            .iter()
            .find(|r| r.ip == Some(*ip))
            .ok_or_else(|| format!("{ip} does not list itself: {rows:?}"))?;
        held.insert(*ip, (own.groups_held, own.groups_led));
    }
    let least = held.values().map(|(h, _)| *h).min().unwrap_or(0);
    let most = held.values().map(|(h, _)| *h).max().unwrap_or(0);
    if least == 0 || most - least > 1 {
        return Err(format!("groups (held, led) by node: {held:?}"));
    }
    Ok(format!("groups (held, led) by node: {held:?}"))
}

/// Waits (at most `SETTLE_WITHIN`) until [`settled`]; returns its summary.
async fn wait_until_settled(nodes: &[(IpAddr, &Session)], keyspaces: &[(&str, usize)]) -> String {
    let deadline = Instant::now() + SETTLE_WITHIN;
    for _ in 0..300 {
        match settled(nodes, keyspaces).await {
            Ok(summary) => return summary,
            Err(why) => assert!(
                Instant::now() < deadline,
                "the groups do not settle within {SETTLE_WITHIN:?}: {why}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("the groups do not settle after 300 looks");
}

/// Waits (at most 30 s) until `session`'s node (`ip`) lists `host_id` as DOWN.
async fn wait_until_down(ip: IpAddr, session: &Session, host_id: Uuid) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut rows = Ok(Vec::new());
    for _ in 0..300 {
        rows = cluster::cluster_nodes(session).await;
        let down = rows.as_ref().is_ok_and(|rows| {
            rows.iter()
                .any(|r| r.host_id == host_id && r.status == "DOWN")
        });
        if down {
            return;
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{ip} does not see {host_id} down within 30 s: {rows:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decommissioning_one_of_three_keeps_every_row() {
    let _alone = ONE_CLUSTER_AT_A_TIME.lock().await;
    let test_start = Instant::now();
    let mut cluster = TestCluster::start(3);
    cluster.wait_until_formed().await;
    let first = cluster.nodes[0].session().await;
    create_tables(&first, &KEYSPACES).await;
    // Secondary indexes travel with the replicas: a moved replica's rows get their entries.
    common::run_all(
        &first,
        &["CREATE INDEX ON ks.t (c)", "CREATE INDEX ON ks1.t (c)"],
    )
    .await;
    let hosts = host_ids(&first, 3).await;
    let [one, two, three] = [0, 1, 2].map(|i| cluster.nodes[i].native);
    let leaving_id = hosts[&three.ip()];

    // 10 MiB over the three nodes.
    let loading = Instant::now();
    let mut acknowledged: Vec<Key> = Vec::new();
    for (table, name) in TABLES.iter().enumerate() {
        let insert = prepare_insert(&first, name, WRITE_LEVELS[table]).await;
        acknowledged.extend(bulk_load(&first, &insert, table, BULK_PARTITIONS[table]).await);
    }
    eprintln!(
        "loaded {} rows in {:?}",
        acknowledged.len(),
        loading.elapsed()
    );

    // Writes go on through nodes 1 and 2 while node 3 leaves.
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
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Node 3 is decommissioned: the command returns once it holds nothing and is removed.
    let acked_before = acked.load(Ordering::Relaxed);
    let three_addr = three.to_string();
    let run = cluster::admin(
        &["decommission", "--server", three_addr.as_str()],
        COMMAND_WITHIN,
    )
    .await;
    let acked_during = acked.load(Ordering::Relaxed) - acked_before;
    eprintln!(
        "ringdb decommission --server {three} ran {:?} ({:?}); its output ends:\n{}",
        run.took,
        run.status,
        run.tail(40)
    );
    assert!(
        run.succeeded(),
        "ringdb decommission did not exit 0 within {COMMAND_WITHIN:?}: {:?}\n{}",
        run.status,
        run.tail(40)
    );

    // Nodes 1 and 2 list only each other, both UP and NORMAL; node 3 is gone.
    let sessions = [
        cluster.nodes[0].session().await,
        cluster.nodes[1].session().await,
    ];
    let staying: Vec<(IpAddr, &Session)> = vec![(one.ip(), &sessions[0]), (two.ip(), &sessions[1])];
    let members: BTreeMap<IpAddr, Uuid> = hosts
        .iter()
        .filter(|(ip, _)| **ip != three.ip())
        .map(|(ip, id)| (*ip, *id))
        .collect();
    wait_for_membership(&staying, &members).await;
    let after = cluster::cluster_nodes(&sessions[0])
        .await
        .expect("cluster_nodes on node 1");
    assert_eq!(after.len(), 2, "node 1 lists two nodes: {after:?}");
    assert!(
        after.iter().all(|r| r.host_id != leaving_id),
        "node 1 still lists node 3 ({leaving_id}): {after:?}"
    );

    // Nothing needs node 3 any more: its process goes, and every ks group is on nodes 1 and 2,
    // every ks1 group on one of them, each node holding as many groups as the other within one.
    cluster.node(3).kill();
    let layout = wait_until_settled(&staying, &KEYSPACES).await;
    eprintln!("after the decommission: {layout}");

    // The load stops; what it did is part of what must read back.
    stop.store(true, Ordering::Relaxed);
    let outcome = tokio::time::timeout(Duration::from_secs(60), load)
        .await
        .expect("the load stops within 60 s")
        .expect("load task");
    eprintln!(
        "load: {} acknowledged ({acked_during} during the decommission), {} failed, errors by \
         kind: {:?}, longest time without an acknowledged insert {:?}",
        outcome.acknowledged.len(),
        outcome.failed.len(),
        outcome.errors,
        outcome.longest_gap
    );
    eprintln!("the decommission took {:?}", run.took);
    assert_load_went_on(&outcome, acked_during, "a node left");
    acknowledged.extend(outcome.acknowledged.iter().copied());
    let maybe: BTreeSet<Key> = outcome.failed.iter().copied().collect();

    // Every acknowledged row reads back at nodes 1 and 2.
    let reading = Instant::now();
    for (ip, session) in &staying {
        for table in 0..TABLES.len() {
            read_back(&ip.to_string(), session, table, &acknowledged, &maybe).await;
        }
    }
    // An indexed query through either node finds every acknowledged row of its value, and
    // nothing that was never written.
    for (ip, session) in &staying {
        for (table, name) in TABLES.iter().enumerate() {
            let query = format!("SELECT pk FROM {name} WHERE c = 2");
            let found: BTreeSet<i32> = cluster::view_rows::<(i32,)>(session, &query)
                .await
                .unwrap_or_else(|e| panic!("{ip}: {e}"))
                .into_iter()
                .map(|(pk,)| pk)
                .collect();
            let want: BTreeSet<i32> = acknowledged
                .iter()
                .filter(|(t, _, c)| *t == table && *c == 2)
                .map(|(_, pk, _)| *pk)
                .collect();
            let missing: Vec<&i32> = want.difference(&found).collect();
            assert!(missing.is_empty(), "{ip}: {query} misses {missing:?}");
            let unknown: Vec<&i32> = found
                .iter()
                .filter(|pk| !want.contains(pk) && !maybe.contains(&(table, **pk, 2)))
                .collect();
            assert!(
                unknown.is_empty(),
                "{ip}: {query} finds unwritten {unknown:?}"
            );
        }
    }
    eprintln!(
        "read back {} rows at ONE and QUORUM on 2 nodes in {:?}; the test took {:?}",
        acknowledged.len(),
        reading.elapsed(),
        test_start.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removenode_recreates_a_dead_nodes_replicas() {
    let _alone = ONE_CLUSTER_AT_A_TIME.lock().await;
    let test_start = Instant::now();
    let mut cluster = TestCluster::start(3);
    cluster.wait_until_formed().await;
    let first = cluster.nodes[0].session().await;
    create_tables(&first, &KEYSPACES[..1]).await;
    let hosts = host_ids(&first, 3).await;
    let [one, two, three] = [0, 1, 2].map(|i| cluster.nodes[i].native);
    let dead_id = hosts[&three.ip()];

    // 5 MiB of ks (RF 2): node 3 holds a replica of about two thirds of its groups.
    let insert = prepare_insert(&first, TABLES[0], WRITE_LEVELS[0]).await;
    let acknowledged = bulk_load(&first, &insert, 0, REMOVENODE_PARTITIONS).await;

    // Node 3 dies, and nodes 1 and 2 see it down.
    cluster.node(3).kill();
    let sessions = [
        cluster.nodes[0].session().await,
        cluster.nodes[1].session().await,
    ];
    let staying: Vec<(IpAddr, &Session)> = vec![(one.ip(), &sessions[0]), (two.ip(), &sessions[1])];
    for (ip, session) in &staying {
        wait_until_down(*ip, session, dead_id).await;
    }

    // removenode through node 1: node 3's replicas are made again on nodes 1 and 2, then
    // node 3 is removed.
    let dead = dead_id.to_string();
    let server = one.to_string();
    let run = cluster::admin(
        &["removenode", dead.as_str(), "--server", server.as_str()],
        COMMAND_WITHIN,
    )
    .await;
    eprintln!(
        "ringdb removenode {dead} --server {one} ran {:?} ({:?}); its output ends:\n{}",
        run.took,
        run.status,
        run.tail(40)
    );
    assert!(
        run.succeeded(),
        "ringdb removenode did not exit 0 within {COMMAND_WITHIN:?}: {:?}\n{}",
        run.status,
        run.tail(40)
    );
    let members: BTreeMap<IpAddr, Uuid> = hosts
        .iter()
        .filter(|(ip, _)| **ip != three.ip())
        .map(|(ip, id)| (*ip, *id))
        .collect();
    wait_for_membership(&staying, &members).await;

    // Every ks group has its two replicas on nodes 1 and 2.
    let layout = wait_until_settled(&staying, &KEYSPACES[..1]).await;
    eprintln!("after removenode: {layout}");

    // Every row reads back at both nodes, at ONE from each node's own (re-created) replica
    // and at QUORUM.
    let reading = Instant::now();
    for (ip, session) in &staying {
        read_back(&ip.to_string(), session, 0, &acknowledged, &BTreeSet::new()).await;
    }
    eprintln!(
        "removenode took {:?}; read back {} rows on 2 nodes in {:?}; the test took {:?}",
        run.took,
        acknowledged.len(),
        reading.elapsed(),
        test_start.elapsed()
    );
}
