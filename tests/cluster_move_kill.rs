//! A replica move whose receiving node dies part-way. Node 3 joins a loaded two-node cluster
//! and is killed (SIGKILL) while a replica is being copied to it: the move rolls back, the
//! balancer plans nothing while node 3 is down, and once node 3 restarts on its data the
//! cluster balances again. Writes go on throughout, and every acknowledged row reads back at
//! every node.

mod common;

use common::cluster::{self, TestCluster};
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
use uuid::Uuid;

/// The two tables: `ks` has replication factor 2, `ks1` replication factor 1.
const TABLES: [&str; 2] = ["ks.t", "ks1.t"];
/// Each table's keyspace and replication factor.
const KEYSPACES: [(&str, usize); 2] = [("ks", 2), ("ks1", 1)];
/// The level each table is written at: QUORUM (both replicas of RF 2), ONE (RF 1).
const WRITE_LEVELS: [Consistency; 2] = [Consistency::Quorum, Consistency::One];
/// Partitions each table is loaded with before node 3 joins: 12 MiB and 8 MiB, so a move
/// (a group's snapshot, 1 to 2 MiB) takes a moment.
const BULK_PARTITIONS: [i32; 2] = [600, 400];
/// Rows per loaded partition, and the bytes of each row's blob.
const BULK_ROWS: i32 = 5;
const BULK_BYTES: usize = 4096;
/// Rows the background load writes: into the loaded partitions (clustering keys from
/// `LOAD_C_BASE`) and into new partitions (from `LOAD_PK_BASE`), `LOAD_BYTES` each.
const LOAD_C_BASE: i32 = 1000;
const LOAD_PK_BASE: i32 = 1_000_000;
const LOAD_BYTES: usize = 256;
/// The background load writes 4 rows every `LOAD_EVERY`, at most `LOAD_MAX` in all.
const LOAD_EVERY: Duration = Duration::from_millis(50);
const LOAD_MAX: u64 = 24_000;
/// Requests in flight while loading and reading back.
const IN_FLIGHT: usize = 64;
/// Groups per table (the harness's `initial_physical_partitions`).
const GROUPS_PER_TABLE: usize = 6;
/// How long to look for a move to node 3 once it starts, and how often.
const MOVE_SEEN_WITHIN: Duration = Duration::from_secs(60);
const MOVE_POLL: Duration = Duration::from_millis(50);
/// How long the move to the dead node may take to roll back.
const ROLLBACK_WITHIN: Duration = Duration::from_secs(60);
/// How long nothing may be planned once it has (node 3 still down).
const QUIET_FOR: Duration = Duration::from_secs(5);
/// How long the cluster may take to balance once node 3 is back.
const REBALANCE_WITHIN: Duration = Duration::from_secs(180);

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
/// loaded partitions (which move), odd ones make new partitions.
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

/// Whether a client may see `e` while a node joins, dies and comes back: a timeout, too few
/// live replicas, a busy node, a connection lost or not yet made. Anything else is a bug.
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

/// Loads `BULK_PARTITIONS[table]` partitions of `BULK_ROWS` rows; every write must be
/// acknowledged (each tried at most three times, and again only after an error a client may
/// see while a fresh table's groups elect their leaders). Returns the keys written.
async fn bulk_load(session: &Session, insert: &PreparedStatement, table: usize) -> Vec<Key> {
    let keys: Vec<Key> = (0..BULK_PARTITIONS[table])
        .flat_map(|pk| (0..BULK_ROWS).map(move |c| (table, pk, c)))
        .collect();
    let outcomes: Vec<(u32, Option<String>)> = stream::iter(keys.iter().copied())
        .map(|(table, pk, c)| async move {
            let mut retries = 0;
            loop {
                match session
                    .execute_unpaged(insert, (pk, c, value(table, pk, c)))
                    .await
                {
                    Ok(_) => return (retries, None),
                    Err(e) if retryable(&e) && retries < 2 => {
                        retries += 1;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    Err(e) => {
                        return (retries, Some(format!("{} ({pk}, {c}): {e}", TABLES[table])))
                    }
                }
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    let retried: u32 = outcomes.iter().map(|(r, _)| r).sum();
    let failures: Vec<&String> = outcomes.iter().filter_map(|(_, f)| f.as_ref()).collect();
    assert!(
        failures.is_empty(),
        "{} loading writes failed with both nodes up, first: {:?}",
        failures.len(),
        failures.first()
    );
    if retried > 0 {
        eprintln!("loading {}: {retried} writes tried again", TABLES[table]);
    }
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
    /// Errors no client should see while a node dies mid-move (the first 20).
    unexpected: Vec<String>,
    /// The longest time without an acknowledged insert.
    longest_gap: Duration,
}

/// Inserts new rows into both tables (2 each every `LOAD_EVERY`, each at its table's level)
/// until `stop` or `LOAD_MAX` attempts, through `session` (nodes 1 and 2); counts
/// acknowledged inserts in `acked`.
async fn background_load(
    session: Arc<Session>,
    inserts: [PreparedStatement; 2],
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicU64>,
) -> LoadOutcome {
    let mut out = LoadOutcome::default();
    let mut tick = tokio::time::interval(LOAD_EVERY);
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

/// Every key of `acknowledged` in `TABLES[table]` reads back with its value through `session`
/// (node `ip`) at ONE (its own replica when it holds one, given 20 s to catch up) and at
/// QUORUM (the leader's), and a QUORUM scan finds them all and nothing but them and the
/// `maybe` keys (failed inserts, which may have applied).
async fn read_back(
    ip: IpAddr,
    session: &Session,
    table: usize,
    acknowledged: &[Key],
    maybe: &BTreeSet<Key>,
) {
    let name = TABLES[table];
    let keys: Vec<Key> = acknowledged
        .iter()
        .copied()
        .filter(|k| k.0 == table)
        .collect();
    let at_one = prepare_read(session, name, Consistency::One).await;
    let mut wrong = wrong_reads(session, &at_one, &keys).await;
    let catch_up = Instant::now() + Duration::from_secs(20);
    for _ in 0..20 {
        if wrong.is_empty() || Instant::now() >= catch_up {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let again: Vec<Key> = wrong.iter().map(|(k, _)| *k).collect();
        wrong = wrong_reads(session, &at_one, &again).await;
    }
    assert!(
        wrong.is_empty(),
        "{ip} at ONE: {} of {} acknowledged rows of {name} read wrong, first: {:?}",
        wrong.len(),
        keys.len(),
        &wrong[..wrong.len().min(5)]
    );
    let at_quorum = prepare_read(session, name, Consistency::Quorum).await;
    let wrong = wrong_reads(session, &at_quorum, &keys).await;
    assert!(
        wrong.is_empty(),
        "{ip} at QUORUM: {} of {} acknowledged rows of {name} read wrong, first: {:?}",
        wrong.len(),
        keys.len(),
        &wrong[..wrong.len().min(5)]
    );
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
        "{ip}: a QUORUM scan of {name} finds {} rows for {} acknowledged; missing (first 5) \
         {missing:?}, never written (first 5) {extra:?}",
        scanned.len(),
        expected.len()
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_receiving_node_mid_move_loses_nothing() {
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
        acknowledged.extend(bulk_load(&first, &insert, table).await);
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
        stop.clone(),
        acked.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Node 3 joins; the balancer starts moving replicas to it, and while one is on its way,
    // node 3 is killed.
    let joining = Instant::now();
    tokio::task::block_in_place(|| cluster.node(3).start());
    let (three_id, caught) = wait_for_move_to(&first, three.ip()).await;
    cluster.node(3).kill();
    let killed = Instant::now();
    eprintln!(
        "killed node 3 ({three_id}) {:?} after it started, mid-move: {caught:?}",
        joining.elapsed()
    );

    // The move rolls back: none is left in flight once node 1 sees node 3 down, and every
    // group is whole (moves that finished before the kill may have left replicas on node 3).
    let ips = [one.ip(), two.ip(), three.ip()];
    let mut state = String::new();
    let mut rolled_back = false;
    for _ in 0..(ROLLBACK_WITHIN.as_millis() / 250) {
        let down = cluster::cluster_nodes(&first).await.map(|rows| {
            rows.iter()
                .any(|r| r.host_id == three_id && r.status == "DOWN")
        });
        let moving = cluster::moves(&first).await;
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
    whole_groups(&first, &ips)
        .await
        .unwrap_or_else(|why| panic!("after the roll back, on node 1: {why}"));

    // With node 3 down, the balancer plans nothing.
    let quiet_until = Instant::now() + QUIET_FOR;
    for _ in 0..(QUIET_FOR.as_millis() / 250) {
        let moving = cluster::moves(&first).await.expect("moves on node 1");
        assert!(
            moving.is_empty(),
            "a move was planned with node 3 down: {moving:?}"
        );
        if Instant::now() >= quiet_until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Node 3 restarts on its data; the balancer plans again, and the cluster balances.
    let restarting = Instant::now();
    tokio::task::block_in_place(|| cluster.node(3).start());
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
    for _ in 0..(REBALANCE_WITHIN.as_secs()) {
        layout = balance(&nodes).await;
        if layout.is_ok() || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let layout = layout.unwrap_or_else(|why| {
        panic!("not balanced {REBALANCE_WITHIN:?} after node 3 restarted: {why}")
    });
    eprintln!(
        "balanced {:?} after node 3 restarted: {layout}",
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
            read_back(*ip, session, table, &acknowledged, &maybe).await;
        }
    }
    eprintln!(
        "read back {} rows at ONE and QUORUM on 3 nodes in {:?}; the test took {:?}",
        acknowledged.len(),
        reading.elapsed(),
        test_start.elapsed()
    );
}
