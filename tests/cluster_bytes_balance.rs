//! The balancer evens bytes, not only counts: an RF 1 table whose data sits in half of its
//! physical partitions (large rows in the groups of negative tokens, tiny ones elsewhere)
//! grows from one node to three. Even counts alone could leave a node with only the empty
//! groups; the balancer swaps groups until the nodes hold about the same bytes (within 10%,
//! or one mean group). Every row reads back.

mod common;

use common::cluster::{self, TestCluster};
use scylla::client::session::Session;
use scylla::statement::{Consistency, Statement};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Keys written; those whose token is below this bound get a large value.
const KEYS: i32 = 1200;
const LARGE_BELOW: i64 = -2;
/// The large value's length (the small one is a few bytes).
const LARGE: usize = 4000;
/// Groups of the table (the harness's `initial_physical_partitions`).
const GROUPS: usize = 6;
/// How long the joins and the moves may take.
const BALANCED_WITHIN: Duration = Duration::from_secs(180);

fn value(k: i32) -> String {
    let token = storage::token::token(&k.to_be_bytes());
    if token < LARGE_BELOW {
        format!("{k:08}{}", "b".repeat(LARGE))
    } else {
        format!("{k:08}")
    }
}

/// Each node's bytes of `ks.t` as it reports them (`Err` while a move is in flight, a group
/// is not on one replica among `ips`, or the counts differ by more than one), with the mean
/// group's bytes.
async fn bytes_per_node(
    sessions: &[(IpAddr, Session)],
) -> Result<(BTreeMap<IpAddr, u64>, u64), String> {
    let ips: Vec<IpAddr> = sessions.iter().map(|(ip, _)| *ip).collect();
    let mut bytes: BTreeMap<IpAddr, u64> = BTreeMap::new();
    let mut counts: BTreeMap<IpAddr, usize> = BTreeMap::new();
    let mut total = 0;
    for (ip, session) in sessions {
        let moving = cluster::moves(session).await?;
        if !moving.is_empty() {
            return Err(format!("{ip} sees moves in flight: {moving:?}"));
        }
        let parts = cluster::physical_partitions(session, "ks").await?;
        if parts.len() < GROUPS {
            return Err(format!("{ip} lists {parts:?}"));
        }
        let mut own = 0;
        let mut held = 0;
        for p in &parts {
            match p.replicas.as_slice() {
                [one] if ips.contains(one) => {
                    if one == ip {
                        own += p.bytes;
                        held += 1;
                    }
                }
                other => return Err(format!("{ip}: a partition on replicas {other:?}")),
            }
        }
        total += own;
        bytes.insert(*ip, own);
        counts.insert(*ip, held);
    }
    let (least, most) = (
        counts.values().min().copied().unwrap_or(0),
        counts.values().max().copied().unwrap_or(0),
    );
    if most - least > 1 {
        return Err(format!("partitions per node {counts:?}"));
    }
    Ok((bytes, total / GROUPS as u64))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skewed_table_spreads_its_bytes_not_only_its_partitions() {
    let mut cluster = TestCluster::start_first_of(3, "initial_physical_partitions = 6");
    cluster
        .wait_until_running_formed(Duration::from_secs(60))
        .await;
    let first = cluster.nodes[0].session().await;
    common::run_all(
        &first,
        &[
            "CREATE KEYSPACE ks WITH replication = \
             {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
        ],
    )
    .await;
    let mut insert = first
        .prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        .await
        .expect("prepare");
    insert.set_consistency(Consistency::One);
    for chunk in (0..KEYS).collect::<Vec<i32>>().chunks(32) {
        let writes = chunk
            .iter()
            .map(|k| first.execute_unpaged(&insert, (*k, value(*k))));
        for (k, r) in chunk.iter().zip(futures::future::join_all(writes).await) {
            r.unwrap_or_else(|e| panic!("insert of {k}: {e}"));
        }
    }

    // Two nodes join; the balancer moves groups to them.
    for i in [2, 3] {
        tokio::task::block_in_place(|| cluster.node(i).start());
    }
    cluster
        .wait_until_running_formed(Duration::from_secs(60))
        .await;
    let mut sessions = Vec::new();
    for node in &cluster.nodes {
        sessions.push((node.native.ip(), node.session().await));
    }
    let began = Instant::now();
    let balanced = loop {
        let why = match bytes_per_node(&sessions).await {
            Ok((bytes, mean)) => {
                let most = bytes.values().max().copied().unwrap_or(0);
                let least = bytes.values().min().copied().unwrap_or(0);
                let diff = most - least;
                if most > 0 && (diff * 10 <= most || diff <= mean) {
                    break bytes;
                }
                format!("bytes per node {bytes:?}, mean group {mean}")
            }
            Err(why) => why,
        };
        assert!(
            began.elapsed() < BALANCED_WITHIN,
            "the nodes' bytes are not even within {BALANCED_WITHIN:?}: {why}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    eprintln!("bytes even after {:?}: {balanced:?}", began.elapsed());

    // Every row reads back through every node.
    let mut read = Statement::new("SELECT v FROM ks.t WHERE k = ?");
    read.set_consistency(Consistency::One);
    for (ip, session) in &sessions {
        for k in (0..KEYS).step_by(7) {
            let mut got = None;
            for _ in 0..5 {
                match session.query_unpaged(read.clone(), (k,)).await {
                    Ok(r) => {
                        got = Some(
                            r.into_rows_result()
                                .expect("rows")
                                .maybe_first_row::<(String,)>()
                                .expect("a text"),
                        );
                        break;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                }
            }
            assert_eq!(got, Some(Some((value(k),))), "key {k} through {ip}");
        }
    }
}
