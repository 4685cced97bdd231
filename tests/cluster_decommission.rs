//! Nodes leave a cluster. `ringdb decommission` marks a live node LEAVING, the balancer moves
//! its replicas to the others while writes go on, and the node is removed; `ringdb removenode`
//! re-creates a dead node's replicas on the survivors from their own copies, then removes it.
//! Either way the nodes that stay hold every group on `min(RF, nodes)` replicas, about as many
//! groups each, and every acknowledged row reads back from them.

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
/// Partitions each table is loaded with before a node leaves: 8 MiB and 2 MiB.
const BULK_PARTITIONS: [i32; 2] = [400, 100];
/// Partitions of `ks` loaded before a node dies (for `removenode`): 5 MiB.
const REMOVENODE_PARTITIONS: i32 = 250;
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
/// How long `ringdb decommission` and `ringdb removenode` may run.
const COMMAND_WITHIN: Duration = Duration::from_secs(240);
/// How long the nodes that stay may take to agree on the membership once the command is done.
const MEMBERSHIP_WITHIN: Duration = Duration::from_secs(20);
/// How long the groups may take to settle (replicas, counts, no move in flight) after that.
const SETTLE_WITHIN: Duration = Duration::from_secs(60);

/// Each test starts a cluster of three: one at a time, or two on two cores starve each other.
static ONE_CLUSTER_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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

/// Whether a client may see `e` while replicas move or a node is gone: a timeout, too few
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

/// Loads `partitions` partitions of `BULK_ROWS` rows into `table`; every write must be
/// acknowledged (each tried at most three times, and again only after an error a client may
/// see while a fresh table's groups elect their leaders). Returns the keys written.
async fn bulk_load(
    session: &Session,
    insert: &PreparedStatement,
    table: usize,
    partitions: i32,
) -> Vec<Key> {
    let keys: Vec<Key> = (0..partitions)
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
        "{} loading writes failed with every node up, first: {:?}",
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
    /// Errors no client should see while a node leaves (the first 20).
    unexpected: Vec<String>,
    /// The longest time without an acknowledged insert.
    longest_gap: Duration,
}

/// Inserts new rows into both tables (2 each every `LOAD_EVERY`, each at its table's level)
/// until `stop` or `LOAD_MAX` attempts, through `session` (the nodes that stay); counts
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decommissioning_one_of_three_keeps_every_row() {
    let _alone = ONE_CLUSTER_AT_A_TIME.lock().await;
    let test_start = Instant::now();
    let mut cluster = TestCluster::start(3);
    cluster.wait_until_formed().await;
    let first = cluster.nodes[0].session().await;
    create_tables(&first, &KEYSPACES).await;
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
    assert!(
        outcome.unexpected.is_empty(),
        "writes failed with errors a decommission should not give: {:?}",
        outcome.unexpected
    );
    assert!(
        acked_during > 0,
        "no insert was acknowledged during the decommission"
    );
    assert!(
        outcome.longest_gap < Duration::from_secs(30),
        "writes stalled for {:?}",
        outcome.longest_gap
    );
    acknowledged.extend(outcome.acknowledged.iter().copied());
    let maybe: BTreeSet<Key> = outcome.failed.iter().copied().collect();

    // Every acknowledged row reads back at nodes 1 and 2.
    let reading = Instant::now();
    for (ip, session) in &staying {
        for table in 0..TABLES.len() {
            read_back(*ip, session, table, &acknowledged, &maybe).await;
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
        read_back(*ip, session, 0, &acknowledged, &BTreeSet::new()).await;
    }
    eprintln!(
        "removenode took {:?}; read back {} rows on 2 nodes in {:?}; the test took {:?}",
        run.took,
        acknowledged.len(),
        reading.elapsed(),
        test_start.elapsed()
    );
}
