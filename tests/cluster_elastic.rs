//! An elastic cluster: one node loaded with data grows to three while writes go on; the
//! balancer gives the RF 3 keyspace's groups three replicas and spreads the RF 1 keyspace's
//! groups, moving replicas by snapshot, and every acknowledged row reads back at every node.

mod common;

use common::cluster::{ip_of, view_rows, ClusterNode, TestCluster};
use futures::stream::{self, StreamExt, TryStreamExt};
use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The two tables: `ks` has replication factor 3, `ks1` replication factor 1.
const TABLES: [&str; 2] = ["ks.t", "ks1.t"];
/// Partitions each table is loaded with before the cluster grows: 20 MiB and 5 MiB.
const BULK_PARTITIONS: [i32; 2] = [1000, 250];
/// Rows per loaded partition, and the bytes of each row's blob.
const BULK_ROWS: i32 = 5;
const BULK_BYTES: usize = 4096;
/// Rows the background load writes: into the loaded partitions (clustering keys from
/// `LOAD_C_BASE`) and into new partitions (from `LOAD_PK_BASE`), `LOAD_BYTES` each.
const LOAD_C_BASE: i32 = 1000;
const LOAD_PK_BASE: i32 = 1_000_000;
const LOAD_BYTES: usize = 256;
/// Most inserts the background load attempts (it writes at most 200 a second).
const LOAD_MAX: u64 = 16_000;
/// Requests in flight while loading and reading back.
const IN_FLIGHT: usize = 64;
/// Groups per table (the harness's `initial_physical_partitions`).
const GROUPS_PER_TABLE: i32 = 6;
/// How long the cluster may take to reach its balanced layout.
const REBALANCE_WITHIN: Duration = Duration::from_secs(240);

/// A row's key in table `TABLES[.0]`: (table, pk, c).
type Key = (usize, i32, i32);

/// The blob stored at `(pk, c)` of table `table`: its key, then bytes that do not compress.
fn value(table: usize, pk: i32, c: i32) -> Vec<u8> {
    let len = if pk >= LOAD_PK_BASE || c >= LOAD_C_BASE {
        LOAD_BYTES
    } else {
        BULK_BYTES
    };
    let tag = u8::try_from(table).expect("table index");
    let mut out = Vec::with_capacity(len + 8);
    out.push(tag);
    out.extend_from_slice(&pk.to_be_bytes());
    out.extend_from_slice(&c.to_be_bytes());
    let mut x = 0x9E37_79B9_7F4A_7C15u64
        ^ (u64::from(tag) << 56)
        ^ (u64::from(pk.unsigned_abs()) << 24)
        ^ u64::from(c.unsigned_abs());
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The key of the background load's `i`th insert into `table`: even ones add rows to the
/// loaded partitions (which the balancer moves), odd ones make new partitions.
fn load_key(table: usize, i: i32) -> (i32, i32) {
    if i % 2 == 0 {
        (i / 2 % BULK_PARTITIONS[table], LOAD_C_BASE + i)
    } else {
        (LOAD_PK_BASE + i / 8, i)
    }
}

/// A short name for an error: its protocol error, or the driver's variant.
fn error_kind(e: &ExecutionError) -> String {
    let debug = match e {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, _)) => format!("{db:?}"),
        ExecutionError::LastAttemptError(attempt) => format!("{attempt:?}"),
        other => format!("{other:?}"),
    };
    debug
        .split(|ch: char| !ch.is_alphanumeric() && ch != '_')
        .next()
        .unwrap_or("?")
        .to_string()
}

/// Whether a client may see `e` while nodes join and replicas move: a timeout, too few live
/// replicas, a busy node, a connection lost or not yet made. Anything else is a bug.
fn retryable(e: &ExecutionError) -> bool {
    match e {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, _)) => matches!(
            db,
            DbError::Unavailable { .. }
                | DbError::WriteTimeout { .. }
                | DbError::ReadTimeout { .. }
                | DbError::Overloaded
                | DbError::IsBootstrapping
        ),
        ExecutionError::LastAttemptError(
            RequestAttemptError::BrokenConnectionError(_)
            | RequestAttemptError::UnableToAllocStreamId,
        ) => true,
        ExecutionError::ConnectionPoolError(_)
        | ExecutionError::RequestTimeout(_)
        | ExecutionError::EmptyPlan => true,
        _ => false,
    }
}

/// `INSERT INTO table (pk, c, v)` prepared on `session` at `level`.
async fn prepare_insert(session: &Session, table: &str, level: Consistency) -> PreparedStatement {
    let mut insert = session
        .prepare(format!("INSERT INTO {table} (pk, c, v) VALUES (?, ?, ?)"))
        .await
        .expect("prepare insert");
    insert.set_consistency(level);
    insert.set_request_timeout(Some(Duration::from_secs(10)));
    insert
}

/// Loads `BULK_PARTITIONS[table]` partitions of `BULK_ROWS` rows; every write must succeed
/// (one node, nothing moving). Returns the keys written.
async fn bulk_load(session: &Session, insert: &PreparedStatement, table: usize) -> Vec<Key> {
    let keys: Vec<Key> = (0..BULK_PARTITIONS[table])
        .flat_map(|pk| (0..BULK_ROWS).map(move |c| (table, pk, c)))
        .collect();
    let failures: Vec<String> = stream::iter(keys.iter().copied())
        .map(|(table, pk, c)| async move {
            session
                .execute_unpaged(insert, (pk, c, value(table, pk, c)))
                .await
                .err()
                .map(|e| format!("{} ({pk}, {c}): {e}", TABLES[table]))
        })
        .buffer_unordered(IN_FLIGHT)
        .filter_map(|failed| async move { failed })
        .collect()
        .await;
    assert!(
        failures.is_empty(),
        "{} loading writes failed on one node, first: {:?}",
        failures.len(),
        failures.first()
    );
    keys
}

/// What the background load did.
#[derive(Default)]
struct LoadOutcome {
    /// Inserts the cluster acknowledged.
    acknowledged: Vec<Key>,
    /// Inserts that failed: applied or not, either is correct.
    failed: Vec<Key>,
    /// Failed inserts by error kind.
    errors: BTreeMap<String, u64>,
    /// Errors no client should see while the cluster grows (the first 20).
    unexpected: Vec<String>,
    /// The longest time without an acknowledged insert.
    longest_gap: Duration,
}

/// Inserts new rows into both tables (4 every 20 ms, at ONE: the lone first node has one
/// replica of the RF 3 keyspace) until `stop` or `LOAD_MAX` attempts, through `session`,
/// which finds the nodes as they join; counts acknowledged inserts in `acked`.
async fn background_load(
    session: Arc<Session>,
    inserts: [PreparedStatement; 2],
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicU64>,
) -> LoadOutcome {
    let mut out = LoadOutcome::default();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_ack = Instant::now();
    let mut attempts = 0u64;
    let mut i = 0i32;
    while !stop.load(Ordering::Relaxed) && attempts < LOAD_MAX {
        tick.tick().await;
        let keys: Vec<Key> = (0..2usize)
            .flat_map(|table| {
                (i..i + 2).map(move |n| {
                    let (pk, c) = load_key(table, n);
                    (table, pk, c)
                })
            })
            .collect();
        i += 2;
        attempts += keys.len() as u64;
        let session = &session;
        let inserts = &inserts;
        let results = futures::future::join_all(keys.iter().map(|&(table, pk, c)| async move {
            session
                .execute_unpaged(&inserts[table], (pk, c, value(table, pk, c)))
                .await
        }))
        .await;
        for (key, result) in keys.into_iter().zip(results) {
            match result {
                Ok(_) => {
                    out.longest_gap = out.longest_gap.max(last_ack.elapsed());
                    last_ack = Instant::now();
                    out.acknowledged.push(key);
                    acked.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    *out.errors.entry(error_kind(&e)).or_default() += 1;
                    if !retryable(&e) && out.unexpected.len() < 20 {
                        out.unexpected
                            .push(format!("{} ({}, {}): {e}", TABLES[key.0], key.1, key.2));
                    }
                    out.failed.push(key);
                }
            }
        }
    }
    out.longest_gap = out.longest_gap.max(last_ack.elapsed());
    out
}

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

/// `SELECT v FROM table WHERE pk = ? AND c = ?` at `level`.
async fn prepare_read(session: &Session, table: &str, level: Consistency) -> PreparedStatement {
    let mut read = session
        .prepare(format!("SELECT v FROM {table} WHERE pk = ? AND c = ?"))
        .await
        .expect("prepare read");
    read.set_consistency(level);
    read.set_request_timeout(Some(Duration::from_secs(10)));
    read
}

/// The blob at `(pk, c)`, retrying a failed request three times.
async fn read_one(
    session: &Session,
    read: &PreparedStatement,
    pk: i32,
    c: i32,
) -> Result<Option<Vec<u8>>, String> {
    let mut last = String::new();
    for attempt in 1..=4u64 {
        match session.execute_unpaged(read, (pk, c)).await {
            Ok(result) => {
                return result
                    .into_rows_result()
                    .map_err(|e| e.to_string())?
                    .maybe_first_row::<(Vec<u8>,)>()
                    .map(|row| row.map(|(v,)| v))
                    .map_err(|e| e.to_string());
            }
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(250 * attempt)).await;
    }
    Err(last)
}

/// The keys of `keys` that `read` does not return with their value, each with what it got.
async fn wrong_reads(
    session: &Session,
    read: &PreparedStatement,
    keys: &[Key],
) -> Vec<(Key, String)> {
    stream::iter(keys.iter().copied())
        .map(|(table, pk, c)| async move {
            let wrong = match read_one(session, read, pk, c).await {
                Ok(Some(v)) if v == value(table, pk, c) => return None,
                Ok(Some(v)) => format!("another value of {} bytes", v.len()),
                Ok(None) => "no row".to_string(),
                Err(e) => format!("error: {e}"),
            };
            Some(((table, pk, c), wrong))
        })
        .buffer_unordered(IN_FLIGHT)
        .filter_map(|wrong| async move { wrong })
        .collect()
        .await
}

/// Every (pk, c) of `table`, by a paged scan at QUORUM, retried twice on an error.
async fn scan_keys(session: &Session, table: &str) -> BTreeSet<(i32, i32)> {
    let mut scan = session
        .prepare(format!("SELECT pk, c FROM {table}"))
        .await
        .expect("prepare scan");
    scan.set_consistency(Consistency::Quorum);
    scan.set_page_size(1000);
    scan.set_request_timeout(Some(Duration::from_secs(20)));
    let mut last = String::new();
    for attempt in 1..=3u64 {
        let keys = async {
            session
                .execute_iter(scan.clone(), ())
                .await
                .map_err(|e| e.to_string())?
                .rows_stream::<(i32, i32)>()
                .map_err(|e| e.to_string())?
                .try_collect::<BTreeSet<(i32, i32)>>()
                .await
                .map_err(|e| e.to_string())
        };
        match keys.await {
            Ok(keys) => return keys,
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(500 * attempt)).await;
    }
    panic!("scan of {table} at QUORUM failed three times: {last}");
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
        acknowledged.extend(bulk_load(&first, &insert, table).await);
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
    assert!(
        outcome.unexpected.is_empty(),
        "writes failed with errors a growing cluster should not give: {:?}",
        outcome.unexpected
    );
    assert!(
        acked_during > 0,
        "no insert was acknowledged while the cluster grew"
    );
    assert!(
        outcome.longest_gap < Duration::from_secs(30),
        "writes stalled for {:?}",
        outcome.longest_gap
    );
    acknowledged.extend(outcome.acknowledged.iter().copied());
    let maybe: BTreeSet<Key> = outcome.failed.iter().copied().collect();

    // Every acknowledged row reads back at every node, at ONE (a replica's own copy, which
    // may trail its leader for a moment) and at QUORUM (the leader's).
    let reading = Instant::now();
    for (node, session) in nodes.iter().zip(&sessions) {
        for (table, name) in TABLES.iter().enumerate() {
            let keys: Vec<Key> = acknowledged
                .iter()
                .copied()
                .filter(|k| k.0 == table)
                .collect();
            let at_one = prepare_read(session, name, Consistency::One).await;
            let mut wrong = wrong_reads(session, &at_one, &keys).await;
            let catch_up = Instant::now() + Duration::from_secs(20);
            while !wrong.is_empty() && Instant::now() < catch_up {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let again: Vec<Key> = wrong.iter().map(|(k, _)| *k).collect();
                wrong = wrong_reads(session, &at_one, &again).await;
            }
            assert!(
                wrong.is_empty(),
                "node {} at ONE: {} of {} acknowledged rows of {name} read wrong, first: {:?}",
                node.index,
                wrong.len(),
                keys.len(),
                &wrong[..wrong.len().min(5)]
            );
            let at_quorum = prepare_read(session, name, Consistency::Quorum).await;
            let wrong = wrong_reads(session, &at_quorum, &keys).await;
            assert!(
                wrong.is_empty(),
                "node {} at QUORUM: {} of {} acknowledged rows of {name} read wrong, first: {:?}",
                node.index,
                wrong.len(),
                keys.len(),
                &wrong[..wrong.len().min(5)]
            );

            // A full scan finds every acknowledged row, and nothing but them and the failed
            // inserts (a write that timed out may have applied).
            let scanned = scan_keys(session, name).await;
            let expected: BTreeSet<(i32, i32)> = keys.iter().map(|&(_, pk, c)| (pk, c)).collect();
            let missing: Vec<_> = expected.difference(&scanned).take(5).collect();
            let extra: Vec<_> = scanned
                .difference(&expected)
                .filter(|&&(pk, c)| !maybe.contains(&(table, pk, c)))
                .take(5)
                .collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "node {}: a QUORUM scan of {name} finds {} rows for {} acknowledged; missing \
                 (first 5) {missing:?}, never written (first 5) {extra:?}",
                node.index,
                scanned.len(),
                expected.len()
            );
        }
    }
    eprintln!(
        "read back {} rows at ONE and QUORUM on 3 nodes in {:?}; the test took {:?}",
        acknowledged.len(),
        reading.elapsed(),
        test_start.elapsed()
    );
}
