//! Splits in a three-node cluster: physical partitions that grow past the (tiny) threshold
//! split while writes go on; each split is a metadata entry whose right half becomes a new
//! Raft group with the same replicas, and no acknowledged write is lost or misplaced.

mod common;

use common::cluster::{self, TestCluster};
use common::paged_rows;
use scylla::client::session::Session;
use scylla::statement::{Consistency, Statement};
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// The physical partitions a node reports for `ks.big`: (end token, replicas, leader).
type Partitions = Vec<(i64, Option<Vec<IpAddr>>, Option<IpAddr>)>;

async fn partitions(s: &Session) -> Partitions {
    paged_rows(
        s,
        "SELECT end_token, replicas, leader FROM system_views.physical_partitions \
         WHERE keyspace_name = 'ks'",
        (),
        1000,
    )
    .await
}

/// The physical partitions node 1 holds a replica of (as `cluster_nodes` reports for itself).
async fn groups_held(s: &Session) -> i32 {
    let rows: Vec<(IpAddr, i32)> = paged_rows(
        s,
        "SELECT native_address, groups_held FROM system_views.cluster_nodes",
        (),
        100,
    )
    .await
    .into_iter()
    .map(|(a, n): (String, i32)| {
        let ip = a
            .rsplit_once(':')
            .and_then(|(ip, _)| ip.parse().ok())
            .expect("native address");
        (ip, n)
    })
    .collect();
    rows.iter()
        .find(|(ip, _)| ip.to_string() == "127.0.0.1")
        .map_or(0, |(_, n)| *n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn physical_partitions_split_into_new_groups_while_writes_go_on() {
    let cluster = TestCluster::start_with(
        3,
        "physical_partition_max_bytes = 262144\ninitial_physical_partitions = 2",
    );
    cluster.wait_until_formed().await;
    let session = scylla::client::session_builder::SessionBuilder::new()
        .known_node(cluster.nodes[0].native.to_string())
        .build()
        .await
        .expect("driver connects");
    session
        .query_unpaged(
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
            (),
        )
        .await
        .expect("create keyspace");
    session
        .query_unpaged("CREATE TABLE ks.big (k int PRIMARY KEY, v text)", ())
        .await
        .expect("create table");
    let at_one = cluster.nodes[0].session().await;
    assert_eq!(groups_held(&at_one).await, 2, "two groups to start with");

    // About 3 MB against a 256 KiB threshold: the groups split while the writes go on.
    cluster::write_big_rows(&session, 0..1500, Consistency::Quorum).await;
    cluster::write_big_rows(&session, 1500..3000, Consistency::Quorum).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut held = groups_held(&at_one).await;
    while held < 6 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        held = groups_held(&at_one).await;
    }
    assert!(held >= 6, "the groups split: {held} held");

    // Every acknowledged write reads back at QUORUM through any node, and the count over
    // every group is exact.
    let mut read = Statement::new("SELECT v FROM ks.big WHERE k = ?");
    read.set_consistency(Consistency::Quorum);
    for k in (0..3000).step_by(7) {
        let rows: Vec<(String,)> = session
            .query_unpaged(read.clone(), (k,))
            .await
            .expect("QUORUM read")
            .into_rows_result()
            .expect("rows")
            .rows::<(String,)>()
            .expect("typed")
            .map(|r| r.expect("row"))
            .collect();
        assert_eq!(rows.len(), 1, "key {k}");
        assert!(rows[0].0.starts_with(&format!("{k:08}-")), "key {k}");
    }
    let mut count = Statement::new("SELECT count(*) FROM ks.big");
    count.set_consistency(Consistency::Quorum);
    let (n,): (i64,) = session
        .query_unpaged(count, ())
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(n, 3000);

    // Writes after the splits land in the new groups, and every node holds every key at ONE
    // once it caught up (each node's paged scan walks every group).
    cluster::write_big_rows(&session, 3000..3300, Consistency::Quorum).await;
    for node in &cluster.nodes {
        let s = node.session().await;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let keys: BTreeSet<i32> = paged_rows::<(i32,)>(&s, "SELECT k FROM ks.big", (), 500)
                .await
                .into_iter()
                .map(|(k,)| k)
                .collect();
            if keys.len() == 3300 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node {} holds {} of 3300 keys",
                node.index,
                keys.len()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    // Each node's store is cut where the groups end, and system_views.physical_partitions
    // names every partition's three replicas and (once known) its leader.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let parts = partitions(&at_one).await;
        let complete = parts.len() >= 6
            && parts.iter().all(|(_, replicas, leader)| {
                replicas.as_ref().is_some_and(|r| r.len() == 3) && leader.is_some()
            });
        if complete {
            break;
        }
        assert!(Instant::now() < deadline, "partitions: {parts:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // TRUNCATE goes through every group's log: every node ends up empty, and writes go on.
    session
        .query_unpaged("TRUNCATE ks.big", ())
        .await
        .expect("truncate");
    let mut count = Statement::new("SELECT count(*) FROM ks.big");
    count.set_consistency(Consistency::Quorum);
    let (n,): (i64,) = session
        .query_unpaged(count, ())
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(n, 0, "rows left after TRUNCATE at QUORUM");
    for node in &cluster.nodes {
        let s = node.session().await;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left: Vec<(i32,)> = paged_rows(&s, "SELECT k FROM ks.big", (), 500).await;
            if left.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node {} keeps {} rows after TRUNCATE",
                node.index,
                left.len()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    cluster::write_big_rows(&session, 0..50, Consistency::Quorum).await;
    let keys: Vec<(i32,)> = paged_rows(&session, "SELECT k FROM ks.big", (), 500).await;
    assert_eq!(keys.len(), 50);
}
