//! An elastic cluster: one node loaded with data grows to three while writes go on; the
//! balancer gives the RF 3 keyspace's groups three replicas and spreads the RF 1 keyspace's
//! groups, moving replicas by snapshot, and every acknowledged row reads back at every node.

mod common;

use common::acked_rows::{
    assert_load_went_on, background_load, bulk_load, prepare_insert, read_back, Key, Load, TABLES,
};
use common::cluster::{ip_of, view_rows, ClusterNode, TestCluster};
use scylla::client::session::Session;
use scylla::statement::Consistency;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Partitions each table is loaded with before the cluster grows: 20 MiB and 5 MiB.
const BULK_PARTITIONS: [i32; 2] = [1000, 250];
/// The background load: 4 inserts every 20 ms (at most 200 a second), 16,000 at most.
const LOAD: Load = Load {
    every: Duration::from_millis(20),
    max: 16_000,
    bulk_partitions: BULK_PARTITIONS,
};
/// Groups per table (the harness's `initial_physical_partitions`).
const GROUPS_PER_TABLE: i32 = 6;
/// How long the cluster may take to reach its balanced layout.
const REBALANCE_WITHIN: Duration = Duration::from_secs(240);

/// Why the cluster is not yet balanced (`Err`), or a summary of its layout (`Ok`): every
/// node's own `groups_held` within one of the others', and, as every node sees it, each `ks`
/// group on three replicas with a leader, each `ks1` group on one replica, and `ks1`'s groups
/// spread over the nodes within one of each other.
async fn balance(nodes: &[&ClusterNode], sessions: &[Session]) -> Result<String, String> {
    let ips: Vec<IpAddr> = nodes.iter().map(|n| n.native.ip()).collect();
    let mut held = Vec::new();
    for (node, session) in nodes.iter().zip(sessions) {
        let rows: Vec<(String, String, i32, i32)> = view_rows(
            session,
            "SELECT native_address, status, groups_held, groups_led FROM system_views.cluster_nodes",
        )
        .await?;
        let up = rows
            .iter()
            .filter(|(_, status, _, _)| status == "UP")
            .count();
        if up != nodes.len() {
            return Err(format!("node {} sees {up} nodes up: {rows:?}", node.index));
        }
        let own = rows
            .iter()
            .find(|(address, _, _, _)| ip_of(address) == Some(node.native.ip()))
            .ok_or_else(|| format!("node {} does not list itself: {rows:?}", node.index))?;
        held.push((own.2, own.3));
    }
    let counts: Vec<i32> = held.iter().map(|(h, _)| *h).collect();
    let (least, most) = (
        counts.iter().copied().min().unwrap_or(0),
        counts.iter().copied().max().unwrap_or(0),
    );
    if least == 0 || most - least > 1 {
        return Err(format!("groups (held, led) by node: {held:?}"));
    }
    let mut spread = BTreeMap::new();
    for (node, session) in nodes.iter().zip(sessions) {
        for (keyspace, rf) in [("ks", 3), ("ks1", 1)] {
            let parts: Vec<(i64, Option<Vec<IpAddr>>, Option<IpAddr>)> = view_rows(
                session,
                &format!(
                    "SELECT end_token, replicas, leader FROM system_views.physical_partitions \
                     WHERE keyspace_name = '{keyspace}'"
                ),
            )
            .await?;
            let placed = |(_, replicas, leader): &(i64, Option<Vec<IpAddr>>, Option<IpAddr>)| {
                let distinct: BTreeSet<&IpAddr> = replicas.iter().flatten().collect();
                distinct.len() == rf
                    && replicas.as_ref().is_some_and(|r| r.len() == rf)
                    && distinct.iter().all(|ip| ips.contains(ip))
                    && (rf == 1 || leader.is_some())
            };
            if parts.len() < GROUPS_PER_TABLE as usize || !parts.iter().all(placed) {
                return Err(format!(
                    "node {} sees {keyspace}'s partitions as {parts:?}",
                    node.index
                ));
            }
            if keyspace == "ks1" && node.index == 1 {
                let groups: BTreeSet<(i64, IpAddr)> = parts
                    .iter()
                    .filter_map(|(end, r, _)| Some((*end, *r.as_ref()?.first()?)))
                    .collect();
                for ip in &ips {
                    spread.insert(*ip, groups.iter().filter(|(_, r)| r == ip).count());
                }
            }
        }
    }
    let least = spread.values().copied().min().unwrap_or(0);
    let most = spread.values().copied().max().unwrap_or(0);
    if most - least > 1 {
        return Err(format!("ks1's groups by node: {spread:?}"));
    }
    Ok(format!(
        "groups (held, led) by node: {held:?}; ks1's groups by node: {spread:?}"
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_grows_from_one_node_to_three_under_writes() {
    let test_start = Instant::now();
    let mut cluster = TestCluster::start_first_of(3, "");
    let first = cluster.nodes[0].session().await;
    for (keyspace, rf) in [("ks", 3), ("ks1", 1)] {
        let create_keyspace = format!(
            "CREATE KEYSPACE {keyspace} WITH replication = \
             {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}"
        );
        let create_table =
            format!("CREATE TABLE {keyspace}.t (pk int, c int, v blob, PRIMARY KEY (pk, c))");
        common::run_all(&first, &[&create_keyspace, &create_table]).await;
    }
    let one_node: Vec<(String, i32)> = view_rows(
        &first,
        "SELECT native_address, groups_held FROM system_views.cluster_nodes",
    )
    .await
    .expect("cluster_nodes on node 1");
    assert_eq!(
        one_node.iter().map(|(_, held)| *held).collect::<Vec<_>>(),
        vec![2 * GROUPS_PER_TABLE],
        "node 1 alone holds every group of both tables: {one_node:?}"
    );

    // 25 MiB on the first node alone (at ONE: QUORUM of RF 3 needs two live replicas).
    let loading = Instant::now();
    let mut acknowledged: Vec<Key> = Vec::new();
    for (table, name) in TABLES.iter().enumerate() {
        let insert = prepare_insert(&first, name, Consistency::One).await;
        acknowledged.extend(bulk_load(&first, &insert, table, BULK_PARTITIONS[table]).await);
    }
    eprintln!(
        "loaded {} rows on node 1 in {:?}",
        acknowledged.len(),
        loading.elapsed()
    );

    // Writes go on while the cluster grows, through a driver that finds the nodes as they
    // join.
    let load_session = Arc::new(
        scylla::client::session_builder::SessionBuilder::new()
            .known_node(cluster.nodes[0].native.to_string())
            .build()
            .await
            .expect("driver connects"),
    );
    let inserts = [
        prepare_insert(&load_session, TABLES[0], Consistency::One).await,
        prepare_insert(&load_session, TABLES[1], Consistency::One).await,
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

    // Node 2 joins, then node 3, each through node 1 as its seed.
    let growing = Instant::now();
    let acked_before = acked.load(Ordering::Relaxed);
    tokio::task::block_in_place(|| cluster.node(2).start());
    cluster
        .wait_until_running_formed(Duration::from_secs(60))
        .await;
    eprintln!("node 2 joined after {:?}", growing.elapsed());
    tokio::task::block_in_place(|| cluster.node(3).start());
    cluster
        .wait_until_running_formed(Duration::from_secs(60))
        .await;
    eprintln!("node 3 joined after {:?}", growing.elapsed());

    // The balancer gives every ks group three replicas and spreads ks1's groups.
    let nodes: Vec<&ClusterNode> = cluster.nodes.iter().collect();
    let mut sessions = Vec::new();
    for node in &nodes {
        sessions.push(node.session().await);
    }
    let deadline = growing + REBALANCE_WITHIN;
    let layout = loop {
        let state = balance(&nodes, &sessions).await;
        match state {
            Ok(layout) => break layout,
            Err(why) => assert!(
                Instant::now() < deadline,
                "not balanced {REBALANCE_WITHIN:?} after node 2 started: {why}"
            ),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let rebalance = growing.elapsed();
    let acked_during = acked.load(Ordering::Relaxed) - acked_before;
    eprintln!("balanced {rebalance:?} after node 2 started: {layout}");

    // The load stops; what it did is part of what must read back.
    stop.store(true, Ordering::Relaxed);
    let outcome = tokio::time::timeout(Duration::from_secs(60), load)
        .await
        .expect("the load stops within 60 s")
        .expect("load task");
    eprintln!(
        "load: {} acknowledged ({acked_during} while the cluster grew), {} failed, errors by kind: \
         {:?}, longest time without an acknowledged insert {:?}",
        outcome.acknowledged.len(),
        outcome.failed.len(),
        outcome.errors,
        outcome.longest_gap
    );
    eprintln!("rebalance took {rebalance:?}");
    assert_load_went_on(&outcome, acked_during, "the cluster grew");
    acknowledged.extend(outcome.acknowledged.iter().copied());
    let maybe: BTreeSet<Key> = outcome.failed.iter().copied().collect();

    // Every acknowledged row reads back at every node, at ONE (a replica's own copy, which
    // may trail its leader for a moment) and at QUORUM (the leader's).
    let reading = Instant::now();
    for (node, session) in nodes.iter().zip(&sessions) {
        let who = format!("node {}", node.index);
        for table in 0..TABLES.len() {
            read_back(&who, session, table, &acknowledged, &maybe).await;
        }
    }
    eprintln!(
        "read back {} rows at ONE and QUORUM on 3 nodes in {:?}; the test took {:?}",
        acknowledged.len(),
        reading.elapsed(),
        test_start.elapsed()
    );
}
