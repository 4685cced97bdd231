//! Crash consistency under a mixed workload: writers drive the real binary through the scylla
//! driver (inserts, updates, row/range/partition deletes, logged batches, counter updates and
//! counter batches, LWT `IF NOT EXISTS` and conditional updates, `CREATE TABLE` / `DROP TABLE`
//! plus a write into each new table), the server is SIGKILLed at a random moment, restarted on
//! the same data directory, and the whole database is compared with the client-side log.
//!
//! The model: every writer owns disjoint keys and runs one operation at a time, so each key has
//! one acknowledged state, plus at most one in-flight operation per writer when the server dies.
//! After the restart a key must hold its acknowledged state, or (only if the in-flight operation
//! touched it) the state that operation would produce. A write to one partition must be all or
//! nothing. The verified state then becomes the model for the next cycle.
//!
//! `RINGDB_CRASH_CYCLES` (default 3) sets the number of kill/restart cycles,
//! `RINGDB_CRASH_SEED` replays a run (the seed is printed). A logged batch spanning several
//! partitions that survives only in part fails the run: ringdb writes a batch's partitions in
//! one atomic storage batch, so it is all there or not at all, as Cassandra's batchlog makes it.
//! `scripts/crash-cycles [N]` runs the long version in release mode.

mod common;

use common::{binary, free_port, ServerProcess};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{Counter, CqlValue, Row};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KV_WRITERS: i32 = 3;
const PARTITIONS_PER_WRITER: i32 = 5;
const ROWS_PER_PARTITION: i32 = 10;
const COUNTER_KEYS: i32 = 6;

// ---------------------------------------------------------------------------------------------
// Deterministic randomness

/// splitmix64: small, seedable, good enough for choosing operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn int(&mut self, lo: i32, hi_exclusive: i32) -> i32 {
        lo + self.below((hi_exclusive - lo) as u64) as i32
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

// ---------------------------------------------------------------------------------------------
// The model

/// One thing the database holds, keyed so that writers never share one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Item {
    Kv(i32, i32),
    Counter(i32),
    Lwt(i32),
    Table(String),
}

impl Item {
    /// The partition the item lives in: writes to one partition are atomic.
    fn partition(&self) -> String {
        match self {
            Item::Kv(pk, _) => format!("kv/{pk}"),
            Item::Counter(pk) => format!("counters/{pk}"),
            Item::Lwt(pk) => format!("lwt/{pk}"),
            Item::Table(name) => format!("schema/{name}"),
        }
    }
}

/// An item's state: a row value, a counter total, or a DDL table (`Some(row value)` if a row
/// was written into it). Absent items are not stored.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cell {
    Value(i32),
    Total(i64),
    Table(Option<i32>),
}

type State = BTreeMap<Item, Cell>;

#[derive(Debug, Clone)]
enum Effect {
    /// Sets (Some) or deletes (None) an item.
    Set(Item, Option<Cell>),
    /// Adds to a counter.
    Add(i32, i64),
    /// Writes the row of a DDL table, if the table exists.
    TableRow(String, i32),
}

#[derive(Debug, Clone)]
struct Op {
    what: String,
    effects: Vec<Effect>,
    /// A logged batch over several partitions (all-or-nothing in Cassandra, see module docs).
    logged_batch: bool,
}

fn apply(state: &mut State, effects: &[Effect]) {
    for e in effects {
        match e {
            Effect::Set(item, Some(cell)) => {
                state.insert(item.clone(), cell.clone());
            }
            Effect::Set(item, None) => {
                state.remove(item);
            }
            Effect::Add(pk, d) => {
                let total = match state.get(&Item::Counter(*pk)) {
                    Some(Cell::Total(t)) => *t,
                    _ => 0,
                };
                state.insert(Item::Counter(*pk), Cell::Total(total + d));
            }
            Effect::TableRow(name, v) => {
                if let Some(cell) = state.get_mut(&Item::Table(name.clone())) {
                    *cell = Cell::Table(Some(*v));
                }
            }
        }
    }
}

fn touched(effects: &[Effect]) -> BTreeSet<Item> {
    effects
        .iter()
        .map(|e| match e {
            Effect::Set(item, _) => item.clone(),
            Effect::Add(pk, _) => Item::Counter(*pk),
            Effect::TableRow(name, _) => Item::Table(name.clone()),
        })
        .collect()
}

/// A counter that was never written reads as absent; model it as 0.
fn normalized(item: &Item, cell: Option<&Cell>) -> Option<Cell> {
    match (item, cell) {
        (Item::Counter(_), None) => Some(Cell::Total(0)),
        (_, c) => c.cloned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Writers

struct Statements {
    insert: PreparedStatement,
    update: PreparedStatement,
    delete_row: PreparedStatement,
    delete_partition: PreparedStatement,
    delete_range: PreparedStatement,
    count: PreparedStatement,
    lwt_insert: PreparedStatement,
    lwt_update: PreparedStatement,
    /// Does the server type the marker of `n = n + ?` as counter (Cassandra) or bigint?
    counter_marker_is_counter: bool,
}

impl Statements {
    async fn prepare(s: &Session) -> Statements {
        let p = |q: &'static str| async move { s.prepare(q).await.expect(q) };
        Statements {
            insert: p("INSERT INTO cm.kv (pk, ck, v) VALUES (?, ?, ?)").await,
            update: p("UPDATE cm.kv SET v = ? WHERE pk = ? AND ck = ?").await,
            delete_row: p("DELETE FROM cm.kv WHERE pk = ? AND ck = ?").await,
            delete_partition: p("DELETE FROM cm.kv WHERE pk = ?").await,
            delete_range: p("DELETE FROM cm.kv WHERE pk = ? AND ck >= ? AND ck < ?").await,
            count: p("UPDATE cm.counters SET n = n + ? WHERE pk = ?").await,
            lwt_insert: p("INSERT INTO cm.lwt (pk, v) VALUES (?, ?) IF NOT EXISTS").await,
            lwt_update: p("UPDATE cm.lwt SET v = ? WHERE pk = ? IF v = ?").await,
            counter_marker_is_counter: false,
        }
        .with_counter_marker_type()
    }

    fn with_counter_marker_type(mut self) -> Self {
        use scylla::frame::response::result::{ColumnType, NativeType};
        let specs = self.count.get_variable_col_specs();
        self.counter_marker_is_counter = matches!(
            specs.get_by_index(0).map(|s| s.typ()),
            Some(ColumnType::Native(NativeType::Counter))
        );
        self
    }

    /// A counter delta bound as the marker's type.
    fn delta(&self, d: i64) -> CqlValue {
        if self.counter_marker_is_counter {
            CqlValue::Counter(Counter(d))
        } else {
            CqlValue::BigInt(d)
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Role {
    Kv(i32),
    Counters,
    Lwt,
    Ddl,
}

struct Shared {
    session: Session,
    st: Statements,
    /// Set just before the SIGKILL: errors after it are expected.
    killing: AtomicBool,
}

#[derive(Default)]
struct Report {
    acked: Vec<Op>,
    pending: Option<(Op, String)>,
    /// Errors before the kill and wrong LWT answers.
    violations: Vec<String>,
    /// Statements the server refused as not prepared (not executed, so not in flight).
    unprepared: usize,
}

fn is_unprepared(e: &str) -> bool {
    e.contains("not prepared") || e.contains("Prepared query with ID")
}

/// Runs one writer until its first error (normally the one the SIGKILL causes).
async fn writer(shared: Arc<Shared>, role: Role, mut state: State, seed: u64, uid: i32) -> Report {
    let mut rng = Rng(seed);
    let mut report = Report::default();
    let mut seq = 0i32;
    loop {
        seq += 1;
        // Values are unique per writer and cycle, so "before" and "after" always differ.
        let value = uid * 100_000 + seq;
        let (op, result) = match role {
            Role::Kv(w) => kv_op(&shared, &state, &mut rng, w, value).await,
            Role::Counters => counter_op(&shared, &mut rng).await,
            Role::Lwt => match lwt_op(&shared, &state, &mut rng, value).await {
                (op, Ok(Some(problem))) => {
                    report.violations.push(problem);
                    (op, Ok(()))
                }
                (op, Ok(None)) => (op, Ok(())),
                (op, Err(e)) => (op, Err(e)),
            },
            Role::Ddl => {
                // DDL paced so the other writers' prepared statements are not evicted nonstop.
                tokio::time::sleep(Duration::from_millis(20)).await;
                ddl_op(&shared, &state, value).await
            }
        };
        match result {
            Ok(()) => {
                apply(&mut state, &op.effects);
                report.acked.push(op);
            }
            Err(e) if !shared.killing.load(Ordering::SeqCst) && is_unprepared(&e) => {
                // UNPREPARED twice in a row (every DDL clears ringdb's whole prepared cache,
                // and the driver re-prepares only once): the statement was not executed.
                report.unprepared += 1;
            }
            Err(e) => {
                if !shared.killing.load(Ordering::SeqCst) {
                    report.violations.push(format!(
                        "{role:?}: error before the kill on {}: {e}",
                        op.what
                    ));
                }
                report.pending = Some((op, e));
                return report;
            }
        }
    }
}

type OpResult = Result<(), String>;

async fn kv_op(sh: &Shared, state: &State, rng: &mut Rng, w: i32, v: i32) -> (Op, OpResult) {
    let s = &sh.session;
    let pk = w * 100 + rng.int(0, PARTITIONS_PER_WRITER);
    let ck = rng.int(0, ROWS_PER_PARTITION);
    let set = |pk, ck, v| Effect::Set(Item::Kv(pk, ck), Some(Cell::Value(v)));
    let del = |pk, ck| Effect::Set(Item::Kv(pk, ck), None);
    let err = |e: scylla::errors::ExecutionError| e.to_string();
    let op = |what: String, effects| Op {
        what,
        effects,
        logged_batch: false,
    };
    match rng.below(100) {
        0..=34 => (
            op(
                format!("INSERT kv ({pk}, {ck}) = {v}"),
                vec![set(pk, ck, v)],
            ),
            s.execute_unpaged(&sh.st.insert, (pk, ck, v))
                .await
                .map(drop)
                .map_err(err),
        ),
        35..=54 => (
            op(
                format!("UPDATE kv ({pk}, {ck}) = {v}"),
                vec![set(pk, ck, v)],
            ),
            s.execute_unpaged(&sh.st.update, (v, pk, ck))
                .await
                .map(drop)
                .map_err(err),
        ),
        55..=69 => (
            op(format!("DELETE kv ({pk}, {ck})"), vec![del(pk, ck)]),
            s.execute_unpaged(&sh.st.delete_row, (pk, ck))
                .await
                .map(drop)
                .map_err(err),
        ),
        70..=74 => {
            let effects = state
                .keys()
                .filter_map(|i| match i {
                    Item::Kv(p, c) if *p == pk => Some(del(pk, *c)),
                    _ => None,
                })
                .collect();
            (
                op(format!("DELETE kv partition {pk}"), effects),
                s.execute_unpaged(&sh.st.delete_partition, (pk,))
                    .await
                    .map(drop)
                    .map_err(err),
            )
        }
        75..=79 => {
            let hi = (ck + 1 + rng.int(0, 4)).min(ROWS_PER_PARTITION);
            let effects = state
                .keys()
                .filter_map(|i| match i {
                    Item::Kv(p, c) if *p == pk && (ck..hi).contains(c) => Some(del(pk, *c)),
                    _ => None,
                })
                .collect();
            (
                op(format!("DELETE kv {pk} ck in [{ck}, {hi})"), effects),
                s.execute_unpaged(&sh.st.delete_range, (pk, ck, hi))
                    .await
                    .map(drop)
                    .map_err(err),
            )
        }
        _ => {
            // A logged batch over one or two of this writer's partitions, distinct rows (one
            // batch shares one timestamp, so two writes to one cell would tie).
            let n = rng.int(2, 6);
            let mut batch = Batch::new(BatchType::Logged);
            let mut values: Vec<Vec<CqlValue>> = Vec::new();
            let mut effects = Vec::new();
            let mut seen = BTreeSet::new();
            let other = w * 100 + rng.int(0, PARTITIONS_PER_WRITER);
            for i in 0..n {
                let p = if i % 2 == 0 { pk } else { other };
                let c = rng.int(0, ROWS_PER_PARTITION);
                if !seen.insert((p, c)) {
                    continue;
                }
                if rng.chance(75) {
                    let bv = v * 8 + i; // distinct from every other value of this writer
                    batch.append_statement(sh.st.insert.clone());
                    values.push(vec![CqlValue::Int(p), CqlValue::Int(c), CqlValue::Int(bv)]);
                    effects.push(set(p, c, bv));
                } else {
                    batch.append_statement(sh.st.delete_row.clone());
                    values.push(vec![CqlValue::Int(p), CqlValue::Int(c)]);
                    effects.push(del(p, c));
                }
            }
            let partitions: BTreeSet<_> = seen.iter().map(|(p, _)| *p).collect();
            let op = Op {
                what: format!("logged BATCH {seen:?}"),
                effects,
                logged_batch: partitions.len() > 1,
            };
            let r = s.batch(&batch, values).await.map(drop).map_err(err);
            (op, r)
        }
    }
}

async fn counter_op(sh: &Shared, rng: &mut Rng) -> (Op, OpResult) {
    let pk = rng.int(0, COUNTER_KEYS);
    let mut d = i64::from(rng.int(-5, 11));
    if d == 0 {
        d = 1;
    }
    if rng.chance(80) {
        let op = Op {
            what: format!("counter {pk} += {d}"),
            effects: vec![Effect::Add(pk, d)],
            logged_batch: false,
        };
        let r = sh
            .session
            .execute_unpaged(&sh.st.count, vec![sh.st.delta(d), CqlValue::Int(pk)])
            .await
            .map(drop)
            .map_err(|e| e.to_string());
        (op, r)
    } else {
        let other = (pk + 1 + rng.int(0, COUNTER_KEYS - 1)) % COUNTER_KEYS;
        let mut batch = Batch::new(BatchType::Counter);
        batch.append_statement(sh.st.count.clone());
        batch.append_statement(sh.st.count.clone());
        let op = Op {
            what: format!("COUNTER BATCH {pk} += {d}, {other} += 1"),
            effects: vec![Effect::Add(pk, d), Effect::Add(other, 1)],
            logged_batch: false,
        };
        let r = sh
            .session
            .batch(
                &batch,
                vec![
                    vec![sh.st.delta(d), CqlValue::Int(pk)],
                    vec![sh.st.delta(1), CqlValue::Int(other)],
                ],
            )
            .await
            .map(drop)
            .map_err(|e| e.to_string());
        (op, r)
    }
}

/// The `[applied]` column of an LWT result.
fn applied(result: scylla::response::query_result::QueryResult) -> Result<bool, String> {
    let rows = result.into_rows_result().map_err(|e| e.to_string())?;
    let row: Row = rows.first_row::<Row>().map_err(|e| e.to_string())?;
    match row.columns.first() {
        Some(Some(CqlValue::Boolean(b))) => Ok(*b),
        other => Err(format!("no [applied] column: {other:?}")),
    }
}

/// Returns `Ok(Some(problem))` when the server's `[applied]` answer is wrong.
async fn lwt_op(
    sh: &Shared,
    state: &State,
    rng: &mut Rng,
    v: i32,
) -> (Op, Result<Option<String>, String>) {
    let existing: Vec<(i32, i32)> = state
        .iter()
        .filter_map(|(i, c)| match (i, c) {
            (Item::Lwt(pk), Cell::Value(v)) => Some((*pk, *v)),
            _ => None,
        })
        .collect();
    let (op, result, expect) = if existing.is_empty() || rng.chance(60) {
        // A fresh key: v is unique, so it is a fresh pk too.
        let pk = v;
        let op = Op {
            what: format!("INSERT lwt {pk} IF NOT EXISTS"),
            effects: vec![Effect::Set(Item::Lwt(pk), Some(Cell::Value(v)))],
            logged_batch: false,
        };
        (
            op,
            sh.session.execute_unpaged(&sh.st.lwt_insert, (pk, v)).await,
            true,
        )
    } else if rng.chance(50) {
        let (pk, _) = existing[rng.below(existing.len() as u64) as usize];
        let op = Op {
            what: format!("INSERT lwt {pk} IF NOT EXISTS (exists)"),
            effects: vec![],
            logged_batch: false,
        };
        (
            op,
            sh.session.execute_unpaged(&sh.st.lwt_insert, (pk, v)).await,
            false,
        )
    } else {
        let (pk, current) = existing[rng.below(existing.len() as u64) as usize];
        // Half of the conditional updates name the wrong current value and must not apply.
        let matches = rng.chance(50);
        let expected = if matches { current } else { current + 1 };
        let op = Op {
            what: format!("UPDATE lwt {pk} = {v} IF v = {expected} (current {current})"),
            effects: if matches {
                vec![Effect::Set(Item::Lwt(pk), Some(Cell::Value(v)))]
            } else {
                vec![]
            },
            logged_batch: false,
        };
        let r = sh
            .session
            .execute_unpaged(&sh.st.lwt_update, (v, pk, expected))
            .await;
        (op, r, matches)
    };
    let r = match result.map_err(|e| e.to_string()).and_then(applied) {
        Ok(got) if got == expect => Ok(None),
        Ok(got) => Ok(Some(format!(
            "{}: [applied] = {got}, expected {expect}",
            op.what
        ))),
        Err(e) => Err(e),
    };
    (op, r)
}

async fn ddl_op(sh: &Shared, state: &State, v: i32) -> (Op, OpResult) {
    let tables: Vec<(String, Option<i32>)> = state
        .iter()
        .filter_map(|(i, c)| match (i, c) {
            (Item::Table(n), Cell::Table(row)) => Some((n.clone(), *row)),
            _ => None,
        })
        .collect();
    let s = &sh.session;
    let (op, r) = if let Some((name, _)) = tables.iter().find(|(_, row)| row.is_none()) {
        let op = Op {
            what: format!("INSERT into new table {name}"),
            effects: vec![Effect::TableRow(name.clone(), v)],
            logged_batch: false,
        };
        let q = format!("INSERT INTO cm.{name} (k, v) VALUES (0, ?)");
        (op, s.query_unpaged(q, (v,)).await)
    } else if tables.len() >= 3 {
        let name = &tables[0].0;
        let op = Op {
            what: format!("DROP TABLE {name}"),
            effects: vec![Effect::Set(Item::Table(name.clone()), None)],
            logged_batch: false,
        };
        (
            op,
            s.query_unpaged(format!("DROP TABLE cm.{name}"), ()).await,
        )
    } else {
        let name = format!("d{v}");
        let op = Op {
            what: format!("CREATE TABLE {name}"),
            effects: vec![Effect::Set(
                Item::Table(name.clone()),
                Some(Cell::Table(None)),
            )],
            logged_batch: false,
        };
        let q = format!("CREATE TABLE cm.{name} (k int PRIMARY KEY, v int)");
        (op, s.query_unpaged(q, ()).await)
    };
    (op, r.map(drop).map_err(|e| e.to_string()))
}

// ---------------------------------------------------------------------------------------------
// Reading the database back and checking it

async fn connect(addr: std::net::SocketAddr) -> Session {
    // One node: no schema agreement to wait for (the driver's wait retries for 60 s once the
    // server is killed mid-DDL).
    SessionBuilder::new()
        .known_node(addr.to_string())
        .auto_await_schema_agreement(false)
        .build()
        .await
        .expect("scylla driver connects")
}

async fn rows<T>(s: &Session, q: &str) -> Vec<T>
where
    T: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm>,
{
    s.query_unpaged(q, ())
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .into_rows_result()
        .expect("rows")
        .rows::<T>()
        .expect("typed rows")
        .collect::<Result<Vec<T>, _>>()
        .expect("row")
}

async fn read_state(s: &Session) -> State {
    let mut state = State::new();
    for (pk, ck, v) in rows::<(i32, i32, Option<i32>)>(s, "SELECT pk, ck, v FROM cm.kv").await {
        // A row without v would be a liveness marker without its cell: record it as -1.
        state.insert(Item::Kv(pk, ck), Cell::Value(v.unwrap_or(-1)));
    }
    for (pk, n) in rows::<(i32, Option<Counter>)>(s, "SELECT pk, n FROM cm.counters").await {
        state.insert(Item::Counter(pk), Cell::Total(n.map_or(0, |c| c.0)));
    }
    for (pk, v) in rows::<(i32, Option<i32>)>(s, "SELECT pk, v FROM cm.lwt").await {
        state.insert(Item::Lwt(pk), Cell::Value(v.unwrap_or(-1)));
    }
    let tables = rows::<(String,)>(
        s,
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'cm'",
    )
    .await;
    for (name,) in tables {
        if !name.starts_with('d') {
            continue;
        }
        let row = rows::<(Option<i32>,)>(s, &format!("SELECT v FROM cm.{name} WHERE k = 0")).await;
        let v = row.first().map(|(v,)| v.unwrap_or(-1));
        state.insert(Item::Table(name), Cell::Table(v));
    }
    state
}

#[derive(Default)]
struct Verdict {
    violations: Vec<String>,
    partial_batches: Vec<String>,
    maybe_applied: usize,
    maybe_lost: usize,
}

/// Compares `actual` with the acknowledged state `base` and the in-flight ops.
fn check(base: &State, pending: &[Op], actual: &State) -> Verdict {
    let mut verdict = Verdict::default();
    let mut maybe: BTreeMap<Item, usize> = BTreeMap::new();
    let mut afters = Vec::new();
    for (i, op) in pending.iter().enumerate() {
        let mut after = base.clone();
        apply(&mut after, &op.effects);
        for item in touched(&op.effects) {
            maybe.insert(item, i);
        }
        afters.push(after);
    }
    let items: BTreeSet<Item> = base
        .keys()
        .chain(actual.keys())
        .chain(maybe.keys())
        .cloned()
        .collect();
    // Per op and partition: did each item changed by the op end up before or after it?
    let mut outcome: BTreeMap<(usize, String), BTreeSet<bool>> = BTreeMap::new();
    for item in items {
        let got = normalized(&item, actual.get(&item));
        let before = normalized(&item, base.get(&item));
        match maybe.get(&item) {
            None => {
                if got != before {
                    verdict
                        .violations
                        .push(format!("{item:?}: acknowledged {before:?}, found {got:?}"));
                }
            }
            Some(&i) => {
                let after = normalized(&item, afters[i].get(&item));
                if before == after {
                    if got != before {
                        verdict.violations.push(format!(
                            "{item:?}: acknowledged {before:?}, found {got:?} (in flight: {})",
                            pending[i].what
                        ));
                    }
                } else if got == before || got == after {
                    outcome
                        .entry((i, item.partition()))
                        .or_default()
                        .insert(got == after);
                } else {
                    verdict.violations.push(format!(
                        "{item:?}: acknowledged {before:?}, in-flight {} gives {after:?}, found {got:?}",
                        pending[i].what
                    ));
                }
            }
        }
    }
    let mut per_op: BTreeMap<usize, BTreeSet<bool>> = BTreeMap::new();
    for ((i, partition), seen) in outcome {
        if seen.len() > 1 {
            verdict.violations.push(format!(
                "partition {partition} partly written by in-flight {}",
                pending[i].what
            ));
        }
        per_op.entry(i).or_default().extend(seen);
    }
    for (i, seen) in per_op {
        if seen.len() > 1 && pending[i].logged_batch {
            verdict.partial_batches.push(pending[i].what.clone());
        }
        if seen.contains(&true) {
            verdict.maybe_applied += 1;
        } else {
            verdict.maybe_lost += 1;
        }
    }
    verdict
}

// ---------------------------------------------------------------------------------------------
// The test

/// Like `ServerProcess::spawn`, but waits up to 120 s: recovery after many kills (the journal
/// replay) can take longer than the common 20 s in a debug build on a loaded machine.
fn spawn_server(dir: &std::path::Path, port: u16) -> ServerProcess {
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let child = std::process::Command::new(binary())
        .arg("--listen")
        .arg(addr.to_string())
        .arg("--data-dir")
        .arg(dir)
        .arg("--log-level")
        .arg("warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn ringdb");
    let mut server = ServerProcess { child, addr };
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(addr).is_ok() {
            return server;
        }
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("ringdb exited during startup with {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("ringdb did not start listening on {addr} within 120 s");
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

async fn create_schema(s: &Session) {
    for q in [
        "CREATE KEYSPACE cm WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE cm.kv (pk int, ck int, v int, PRIMARY KEY (pk, ck))",
        "CREATE TABLE cm.counters (pk int PRIMARY KEY, n counter)",
        "CREATE TABLE cm.lwt (pk int PRIMARY KEY, v int)",
    ] {
        s.query_unpaged(q, ()).await.unwrap_or_else(|e| panic!("{q}: {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_operations_survive_sigkill_under_mixed_load() {
    let cycles = env_u64("RINGDB_CRASH_CYCLES").unwrap_or(3);
    let seed = env_u64("RINGDB_CRASH_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    println!("crash_mixed: seed {seed} (replay with RINGDB_CRASH_SEED={seed}), {cycles} cycles");
    let mut rng = Rng(seed);
    let started = Instant::now();

    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let mut server = spawn_server(dir.path(), port);
    create_schema(&connect(server.addr).await).await;

    let mut state = State::new();
    let mut totals = (0usize, 0usize, 0usize, 0usize); // acked, in flight, applied, lost
    let mut partial_batches = Vec::new();
    let mut max_restart_ms = 0;
    let mut unprepared = 0;
    for cycle in 0..cycles {
        let session = connect(server.addr).await;
        let st = Statements::prepare(&session).await;
        let shared = Arc::new(Shared {
            session,
            st,
            killing: AtomicBool::new(false),
        });
        let mut roles: Vec<Role> = (0..KV_WRITERS).map(Role::Kv).collect();
        roles.extend([Role::Counters, Role::Lwt, Role::Ddl]);
        let tasks: Vec<_> = roles
            .iter()
            .enumerate()
            .map(|(i, role)| {
                let uid = (cycle as i32 + 1) * 10 + i as i32;
                tokio::spawn(writer(
                    shared.clone(),
                    *role,
                    state.clone(),
                    rng.next(),
                    uid,
                ))
            })
            .collect();

        // Kill at a random moment: mostly well into the load, sometimes right at its start.
        let delay = if rng.chance(15) {
            rng.below(60)
        } else {
            150 + rng.below(1200)
        };
        tokio::time::sleep(Duration::from_millis(delay)).await;
        shared.killing.store(true, Ordering::SeqCst);
        server.kill();

        let t_kill = Instant::now();
        let mut reports = Vec::new();
        for (t, role) in tasks.into_iter().zip(&roles) {
            let report = tokio::time::timeout(Duration::from_secs(30), t)
                .await
                .unwrap_or_else(|_| panic!("{role:?} writer did not stop within 30 s of the kill"))
                .expect("writer task");
            reports.push(report);
        }
        let stop_ms = t_kill.elapsed().as_millis();
        drop(shared);

        let mut violations = Vec::new();
        let mut pending = Vec::new();
        let mut acked = 0;
        for r in reports {
            acked += r.acked.len();
            unprepared += r.unprepared;
            for op in &r.acked {
                apply(&mut state, &op.effects);
            }
            violations.extend(r.violations);
            if let Some((op, _err)) = r.pending {
                pending.push(op);
            }
        }

        let t_restart = Instant::now();
        server = spawn_server(dir.path(), port);
        let restart_ms = t_restart.elapsed().as_millis();
        max_restart_ms = max_restart_ms.max(restart_ms);
        let session = connect(server.addr).await;
        let actual = read_state(&session).await;
        drop(session);
        let verdict = check(&state, &pending, &actual);
        violations.extend(verdict.violations);
        println!(
            "cycle {cycle}: killed after {delay} ms, {acked} acknowledged, {} in flight \
             ({} applied, {} not), {} items, writers stopped in {} ms, restart took {restart_ms} ms",
            pending.len(),
            verdict.maybe_applied,
            verdict.maybe_lost,
            actual.len(),
            stop_ms
        );
        for b in &verdict.partial_batches {
            println!(
                "cycle {cycle}: NOTE logged batch over several partitions partly applied: {b}"
            );
        }
        partial_batches.extend(verdict.partial_batches);
        assert!(
            violations.is_empty(),
            "seed {seed}, cycle {cycle}: {} violations:\n{}",
            violations.len(),
            violations
                .iter()
                .take(30)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
        totals.0 += acked;
        totals.1 += pending.len();
        totals.2 += verdict.maybe_applied;
        totals.3 += verdict.maybe_lost;
        // The in-flight operations are resolved now: the database is the model.
        state = actual;
    }
    println!(
        "crash_mixed: seed {seed}: {cycles} cycles in {:.1} s, {} acknowledged operations \
         verified, {} in flight at a kill ({} applied, {} not), {} partly applied \
         multi-partition logged batches, slowest restart {max_restart_ms} ms, \
         {unprepared} statements refused as not prepared (DDL clears the prepared cache)",
        started.elapsed().as_secs_f64(),
        totals.0,
        totals.1,
        totals.2,
        totals.3,
        partial_batches.len(),
    );
    assert!(
        partial_batches.is_empty(),
        "logged batches partly applied: {partial_batches:?}"
    );
    assert!(
        server.terminate().success(),
        "ringdb exits cleanly on SIGTERM"
    );
}
