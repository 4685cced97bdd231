//! ALTER KEYSPACE in a cluster of three: raising the replication factor adds replicas to every
//! physical partition in the background (each new one starts from the partition's data), and
//! lowering it drops them; every row reads back at ONE from every node and at QUORUM.

mod common;

use common::cluster::{self, TestCluster};
use scylla::client::session::Session;
use scylla::statement::{Consistency, Statement};
use std::time::{Duration, Instant};

const ROWS: i32 = 600;

fn value(pk: i32) -> Vec<u8> {
    (0..512).map(|i| (pk as u8).wrapping_add(i as u8)).collect()
}

/// Waits until every partition of `ks` has `replicas` distinct replicas and no move is in
/// flight, as `session` sees it.
async fn wait_for_replicas(session: &Session, replicas: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = String::new();
    while Instant::now() < deadline {
        let parts = cluster::physical_partitions(session, "ks").await;
        let moving = cluster::moves(session).await;
        if let (Ok(parts), Ok(moving)) = (&parts, &moving) {
            let done = !parts.is_empty()
                && moving.is_empty()
                && parts.iter().all(|p| {
                    let mut r = p.replicas.clone();
                    r.sort();
                    r.dedup();
                    r.len() == replicas
                });
            if done {
                return;
            }
        }
        seen = format!("{parts:?} / {moving:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("partitions of ks did not reach {replicas} replicas: {seen}");
}

async fn read_all(session: &Session, level: Consistency) {
    let mut select = session
        .prepare("SELECT v FROM ks.t WHERE pk = ?")
        .await
        .expect("prepare");
    select.set_consistency(level);
    for pk in 0..ROWS {
        let mut attempt = 0;
        loop {
            let result = session.execute_unpaged(&select, (pk,)).await;
            let rows = match result {
                Ok(r) => r.into_rows_result().map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match rows {
                Ok(rows) => {
                    let got: Vec<(Vec<u8>,)> = rows
                        .rows::<(Vec<u8>,)>()
                        .expect("typed rows")
                        .map(|r| r.expect("row"))
                        .collect();
                    assert_eq!(got, vec![(value(pk),)], "pk {pk} at {level:?}");
                    break;
                }
                other => {
                    attempt += 1;
                    assert!(attempt < 20, "pk {pk} at {level:?}: {other:?}");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn altering_the_replication_factor_adds_and_drops_replicas() {
    let cluster = TestCluster::start(3);
    cluster.wait_until_formed().await;
    let s = cluster.nodes[0].session().await;
    s.query_unpaged(
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        (),
    )
    .await
    .expect("create keyspace");
    s.query_unpaged("CREATE TABLE ks.t (pk int PRIMARY KEY, v blob)", ())
        .await
        .expect("create table");
    let insert = s
        .prepare("INSERT INTO ks.t (pk, v) VALUES (?, ?)")
        .await
        .expect("prepare");
    for pk in 0..ROWS {
        // The fresh table's groups are being placed on the nodes: a write caught by a move
        // may time out (a retryable error, as the issue allows) and is sent again.
        let mut attempt = 0;
        loop {
            match s.execute_unpaged(&insert, (pk, value(pk))).await {
                Ok(_) => break,
                Err(e) if common::acked_rows::retryable(&e) && attempt < 3 => {
                    attempt += 1;
                    eprintln!("insert {pk} retried after {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("insert {pk}: {e:?}"),
            }
        }
    }
    wait_for_replicas(&s, 1).await;

    let started = Instant::now();
    let mut alter = Statement::new(
        "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
    );
    alter.set_consistency(Consistency::One);
    s.query_unpaged(alter, ()).await.expect("raise RF");
    wait_for_replicas(&s, 3).await;
    eprintln!("RF 1 -> 3 took {:?}", started.elapsed());
    // Every node now holds every row: each answers at ONE from its own copy.
    for node in &cluster.nodes {
        read_all(&node.session().await, Consistency::One).await;
    }

    let started = Instant::now();
    s.query_unpaged(
        "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
        (),
    )
    .await
    .expect("lower RF");
    wait_for_replicas(&s, 2).await;
    eprintln!("RF 3 -> 2 took {:?}", started.elapsed());
    for node in &cluster.nodes {
        read_all(&node.session().await, Consistency::Quorum).await;
    }
    let held: Vec<i32> = cluster::cluster_nodes(&s)
        .await
        .expect("cluster_nodes")
        .iter()
        .map(|n| n.groups_held)
        .collect();
    let (min, max) = (held.iter().min(), held.iter().max());
    assert!(
        max.zip(min).is_some_and(|(a, b)| a - b <= 1),
        "groups held per node: {held:?}"
    );
}
