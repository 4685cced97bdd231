//! A split followed by moves is how a growing table spreads: an RF 1 table that starts as one
//! physical partition on one of three nodes splits as it grows (a tiny threshold), and the
//! balancer moves the halves until every node holds about as many of its partitions. Every
//! acknowledged row reads back, and a count over all the groups is exact.

mod common;

use common::cluster::{self, TestCluster};
use scylla::client::session::Session;
use scylla::statement::{Consistency, Statement};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Rows written, about 1 KB each: 3 MB against a 256 KiB split threshold.
const ROWS: i32 = 3000;
/// Physical partitions the table must reach by splitting.
const AT_LEAST: usize = 6;
/// Looks in a row, half a second apart, that must find the spread layout with no move in
/// flight before the rows are read.
const SETTLED_LOOKS: usize = 6;
/// How long the splits and the moves may take.
const SPREAD_WITHIN: Duration = Duration::from_secs(120);

/// Why `ks.big` is not yet spread (`Err`), or its partitions per node (`Ok`): at least
/// `AT_LEAST` partitions, each on one replica with no move in flight, and the nodes holding
/// them within one of each other.
async fn spread(session: &Session, ips: &[IpAddr]) -> Result<BTreeMap<IpAddr, usize>, String> {
    let parts = cluster::physical_partitions(session, "ks").await?;
    let moving = cluster::moves(session).await?;
    if parts.len() < AT_LEAST || !moving.is_empty() {
        return Err(format!(
            "{} partitions, moves in flight {moving:?}",
            parts.len()
        ));
    }
    let mut per_node: BTreeMap<IpAddr, usize> = ips.iter().map(|ip| (*ip, 0)).collect();
    for p in &parts {
        match p.replicas.as_slice() {
            [one] if per_node.contains_key(one) => *per_node.entry(*one).or_default() += 1,
            other => return Err(format!("a partition on replicas {other:?}")),
        }
    }
    let least = per_node.values().min().copied().unwrap_or(0);
    let most = per_node.values().max().copied().unwrap_or(0);
    if most - least > 1 {
        return Err(format!("partitions per node {per_node:?}"));
    }
    Ok(per_node)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growing_table_splits_and_its_partitions_spread_over_the_nodes() {
    let cluster = TestCluster::start_with(
        3,
        "physical_partition_max_bytes = 262144\ninitial_physical_partitions = 1",
    );
    cluster.wait_until_formed().await;
    let session = cluster.nodes[0].session().await;
    common::run_all(
        &session,
        &[
            "CREATE KEYSPACE ks WITH replication = \
             {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE TABLE ks.big (k int PRIMARY KEY, v text)",
        ],
    )
    .await;
    let ips: Vec<IpAddr> = cluster.nodes.iter().map(|n| n.native.ip()).collect();
    let start = cluster::physical_partitions(&session, "ks")
        .await
        .expect("physical_partitions");
    assert_eq!(start.len(), 1, "one partition to start with: {start:?}");

    cluster::write_big_rows(&session, 0..ROWS, Consistency::One).await;

    let began = Instant::now();
    // Spread, and settled: the same layout with no move in flight for SETTLED_LOOKS looks in
    // a row (after the counts, the balancer may swap groups to even the bytes).
    let mut settled = 0;
    let mut layout = None;
    let per_node = loop {
        match spread(&session, &ips).await {
            Ok(per_node) => {
                settled = if layout.as_ref() == Some(&per_node) {
                    settled + 1
                } else {
                    1
                };
                layout = Some(per_node.clone());
                if settled >= SETTLED_LOOKS {
                    break per_node;
                }
            }
            Err(why) => {
                settled = 0;
                assert!(
                    began.elapsed() < SPREAD_WITHIN,
                    "ks.big does not spread within {SPREAD_WITHIN:?}: {why}"
                );
            }
        }
        assert!(
            began.elapsed() < SPREAD_WITHIN,
            "ks.big does not settle within {SPREAD_WITHIN:?}: {layout:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    eprintln!(
        "spread after {:?}: partitions per node {per_node:?}",
        began.elapsed()
    );
    assert!(
        per_node.values().all(|n| *n >= 1),
        "every node holds a partition: {per_node:?}"
    );

    // Every row reads back through every node, and the count over all groups is exact. A
    // read may time out while a leadership is handed over (the balancer evens the leaders
    // after the moves): each is tried up to ten times.
    for node in &cluster.nodes {
        let s = node.session().await;
        let mut read = Statement::new("SELECT v FROM ks.big WHERE k = ?");
        read.set_consistency(Consistency::One);
        for k in (0..ROWS).step_by(5) {
            let row = with_retries(&format!("read of {k}"), || async {
                s.query_unpaged(read.clone(), (k,))
                    .await
                    .map_err(|e| e.to_string())?
                    .into_rows_result()
                    .map_err(|e| e.to_string())?
                    .maybe_first_row::<(String,)>()
                    .map_err(|e| e.to_string())
            })
            .await;
            assert_eq!(
                row,
                Some((cluster::big_value(k),)),
                "key {k} through node {}",
                node.index
            );
        }
        let (n,): (i64,) = with_retries("count", || async {
            s.query_unpaged("SELECT count(*) FROM ks.big", ())
                .await
                .map_err(|e| e.to_string())?
                .into_rows_result()
                .map_err(|e| e.to_string())?
                .single_row()
                .map_err(|e| e.to_string())
        })
        .await;
        assert_eq!(n, i64::from(ROWS), "count through node {}", node.index);
    }
}

/// What `attempt` gives, tried up to ten times (a second apart) while it fails.
async fn with_retries<T, F, Fut>(what: &str, attempt: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let mut last = String::new();
    for _ in 0..10 {
        match attempt().await {
            Ok(v) => return v,
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("{what} failed ten times: {last}");
}
