//! Rows written while a cluster changes, and the checks that every acknowledged one reads
//! back: the keys and their blobs, a bulk load, a paced background load that sorts its
//! errors, and reads at ONE, at QUORUM and by a full scan. Shared by the elastic cluster
//! tests (joins, moves, decommission, removenode).

use futures::stream::{self, StreamExt, TryStreamExt};
use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The two tables, each `(pk int, c int, v blob, PRIMARY KEY (pk, c))`.
pub const TABLES: [&str; 2] = ["ks.t", "ks1.t"];
/// Rows per bulk-loaded partition, and the bytes of each row's blob.
pub const BULK_ROWS: i32 = 5;
pub const BULK_BYTES: usize = 4096;
/// Rows the background load writes: into the loaded partitions (clustering keys from
/// `LOAD_C_BASE`) and into new partitions (from `LOAD_PK_BASE`), `LOAD_BYTES` each.
pub const LOAD_C_BASE: i32 = 1000;
pub const LOAD_PK_BASE: i32 = 1_000_000;
pub const LOAD_BYTES: usize = 256;
/// Requests in flight while loading and reading back.
pub const IN_FLIGHT: usize = 64;

/// A row's key in table `TABLES[.0]`: (table, pk, c).
pub type Key = (usize, i32, i32);

/// The blob stored at `(pk, c)` of table `table`: its key, then bytes that do not compress.
pub fn value(table: usize, pk: i32, c: i32) -> Vec<u8> {
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

/// A short name for an error: its protocol error, or the driver's variant.
pub fn error_kind(e: &ExecutionError) -> String {
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

/// Whether a client may see `e` while nodes join, leave, die and replicas move: a timeout,
/// too few live replicas, a busy node, a connection lost or not yet made. Anything else is a
/// bug.
pub fn retryable(e: &ExecutionError) -> bool {
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
pub async fn prepare_insert(
    session: &Session,
    table: &str,
    level: Consistency,
) -> PreparedStatement {
    prepare_at(
        session,
        &format!("INSERT INTO {table} (pk, c, v) VALUES (?, ?, ?)"),
        level,
    )
    .await
}

/// `cql` prepared on `session` at `level`, with a 10 s request timeout.
async fn prepare_at(session: &Session, cql: &str, level: Consistency) -> PreparedStatement {
    let mut statement = session
        .prepare(cql)
        .await
        .unwrap_or_else(|e| panic!("prepare {cql}: {e}"));
    statement.set_consistency(level);
    statement.set_request_timeout(Some(Duration::from_secs(10)));
    statement
}

/// Loads `partitions` partitions of `BULK_ROWS` rows into `TABLES[table]`; every write must
/// be acknowledged (each tried at most nine times, and again only after an error a client
/// may see while a fresh table's groups elect their leaders or are placed). Returns the keys
/// written.
pub async fn bulk_load(
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
                    // A group whose leader just moved itself away may take several seconds
                    // to elect another (its replicas' elections can collide): a client sees
                    // WriteTimeout, retryable, meanwhile.
                    Err(e) if retryable(&e) && retries < 8 => {
                        retries += 1;
                        tokio::time::sleep(Duration::from_millis(300)).await;
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

/// The pace and extent of a background load.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// Each tick writes 2 rows into each table.
    pub every: Duration,
    /// Most inserts attempted in all.
    pub max: u64,
    /// Partitions bulk-loaded into each table (half the load's rows go into them).
    pub bulk_partitions: [i32; 2],
}

impl Load {
    /// The key of the load's `i`th insert into `table`: even ones add rows to the loaded
    /// partitions (which move), odd ones make new partitions.
    pub fn key(&self, table: usize, i: i32) -> Key {
        if i % 2 == 0 {
            (table, i / 2 % self.bulk_partitions[table], LOAD_C_BASE + i)
        } else {
            (table, LOAD_PK_BASE + i / 8, i)
        }
    }
}

/// What the background load did.
#[derive(Default)]
pub struct LoadOutcome {
    /// Inserts the cluster acknowledged.
    pub acknowledged: Vec<Key>,
    /// Inserts that failed: applied or not, either is correct.
    pub failed: Vec<Key>,
    /// Failed inserts by error kind.
    pub errors: BTreeMap<String, u64>,
    /// Errors no client should see while the cluster changes (the first 20).
    pub unexpected: Vec<String>,
    /// The longest time without an acknowledged insert.
    pub longest_gap: Duration,
}

/// Inserts new rows into both tables at `load`'s pace (`inserts[t]` for table `t`) until
/// `stop` or `load.max` attempts, through `session`; counts acknowledged inserts in `acked`.
pub async fn background_load(
    session: Arc<Session>,
    inserts: [PreparedStatement; 2],
    load: Load,
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicU64>,
) -> LoadOutcome {
    let mut out = LoadOutcome::default();
    let mut tick = tokio::time::interval(load.every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_ack = Instant::now();
    let mut attempts = 0u64;
    let mut i = 0i32;
    while !stop.load(Ordering::Relaxed) && attempts < load.max {
        tick.tick().await;
        let keys: Vec<Key> = (0..2usize)
            .flat_map(|table| (i..i + 2).map(move |n| load.key(table, n)))
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

/// `SELECT v FROM table WHERE pk = ? AND c = ?` at `level`.
pub async fn prepare_read(session: &Session, table: &str, level: Consistency) -> PreparedStatement {
    prepare_at(
        session,
        &format!("SELECT v FROM {table} WHERE pk = ? AND c = ?"),
        level,
    )
    .await
}

/// The blob at `(pk, c)`, retrying a failed request three times.
pub async fn read_one(
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
pub async fn wrong_reads(
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
pub async fn scan_keys(session: &Session, table: &str) -> BTreeSet<(i32, i32)> {
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
/// (the node `who`) at ONE (its own replica when it holds one, given 20 s to catch up) and at
/// QUORUM (the leader's), and a QUORUM scan finds them all and nothing but them and the
/// `maybe` keys (failed inserts, which may have applied).
pub async fn read_back(
    who: &str,
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
    while !wrong.is_empty() && Instant::now() < catch_up {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let again: Vec<Key> = wrong.iter().map(|(k, _)| *k).collect();
        wrong = wrong_reads(session, &at_one, &again).await;
    }
    assert!(
        wrong.is_empty(),
        "{who} at ONE: {} of {} acknowledged rows of {name} read wrong, first: {:?}",
        wrong.len(),
        keys.len(),
        &wrong[..wrong.len().min(5)]
    );
    let at_quorum = prepare_read(session, name, Consistency::Quorum).await;
    let wrong = wrong_reads(session, &at_quorum, &keys).await;
    assert!(
        wrong.is_empty(),
        "{who} at QUORUM: {} of {} acknowledged rows of {name} read wrong, first: {:?}",
        wrong.len(),
        keys.len(),
        &wrong[..wrong.len().min(5)]
    );
    // A full scan finds every acknowledged row, and nothing but them and the failed inserts
    // (a write that timed out may have applied).
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
        "{who}: a QUORUM scan of {name} finds {} rows for {} acknowledged; missing (first 5) \
         {missing:?}, never written (first 5) {extra:?}",
        scanned.len(),
        expected.len()
    );
}

/// Asserts what a background load saw while the cluster changed (`during`: what changed):
/// no error a client should not see, an insert acknowledged meanwhile, no stall of 30 s.
pub fn assert_load_went_on(outcome: &LoadOutcome, acked_during: u64, during: &str) {
    assert!(
        outcome.unexpected.is_empty(),
        "writes failed with errors a client should not see while {during}: {:?}",
        outcome.unexpected
    );
    assert!(
        acked_during > 0,
        "no insert was acknowledged while {during}"
    );
    assert!(
        outcome.longest_gap < Duration::from_secs(30),
        "writes stalled for {:?}",
        outcome.longest_gap
    );
}
