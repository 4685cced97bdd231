//! Idle compaction: a physical partition that stopped taking writes is flushed and compacted
//! into one sorted run, so its slices and scans merge one table instead of several.
//!
//! fjall compacts only as writes arrive (an L0 table count reaching its threshold), so a tree
//! that was loaded and is now only read keeps its memtable and several overlapping tables for
//! good, and every range read seeks into each of them. Point reads are barely affected (bloom
//! filters skip the tables without the key), but a 10-row slice of a loaded 500 k-row table
//! cost ~15% less CPU once its memtable and three tables became one table.
//!
//! Point reads gain too once the data outgrew the memtable: a point read of a 10 M-row
//! table as loaded (a memtable, L0 tables and three levels) cost ~20 us of server CPU, ~14 us
//! once it was one run (no memtable search, one table per lookup).
//!
//! A background thread polls every physical partition's highest sequence number; one that
//! has not changed for [`IdleCompaction::after`] is compacted once (until it is written
//! again) when its tree is at most [`IdleCompaction::max_bytes`] and the file system has room
//! for a second copy of it; a larger one only has its memtable flushed. A tree held only in
//! its memtable is left alone: a memtable answers point reads faster than a table does.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fjall::{AbstractTree, Keyspace};

use crate::disk::DiskGuard;
use crate::open_tables::OpenTables;
use crate::physical::Physical;
use crate::worker::{Activity, Next, Signal};
use crate::{StorageError, TableId};

/// When a physical partition counts as idle and which ones are compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleCompaction {
    /// No write for this long makes a physical partition idle.
    pub after: Duration,
    /// Trees larger than this on disk are only flushed and left to fjall's leveled compaction
    /// (rewriting them whole would compete with the reads for too long).
    pub max_bytes: u64,
}

impl Default for IdleCompaction {
    fn default() -> Self {
        IdleCompaction {
            after: Duration::from_secs(1),
            max_bytes: 2 << 30,
        }
    }
}

/// How often the thread looks at the partitions (a quarter of the idle time, at most 1 s).
fn poll_interval(after: Duration) -> Duration {
    (after / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

/// After a compaction that took `d`, the thread compacts nothing for `DUTY_CYCLE * d`: idle
/// compaction takes at most 1/21 of a core however the writes come (a table written every
/// two seconds would otherwise be rewritten whole every two seconds).
const DUTY_CYCLE: u32 = 20;

/// What the thread remembers of one physical partition.
struct Watch {
    /// Highest sequence number seen.
    seqno: Option<u64>,
    /// When `seqno` last changed.
    since: Instant,
    /// Compacted (or found compact) at this `seqno`: nothing to do until it changes.
    done: bool,
}

/// The idle-compaction activity: watches every physical partition of the open tables.
pub(crate) struct IdleCompactor {
    tables: Arc<OpenTables>,
    /// Whether the file system has room for a compaction's second copy.
    disk: Arc<DiskGuard>,
    options: IdleCompaction,
    watches: HashMap<(TableId, u64), Watch>,
    /// No compaction before this (the duty cycle).
    resume_at: Instant,
}

impl IdleCompactor {
    /// Compacts the idle partitions of `tables` as `options` say, with room on `disk`.
    pub(crate) fn new(
        tables: Arc<OpenTables>,
        disk: Arc<DiskGuard>,
        options: IdleCompaction,
    ) -> IdleCompactor {
        IdleCompactor {
            tables,
            disk,
            options,
            watches: HashMap::new(),
            resume_at: Instant::now(),
        }
    }
}

impl Activity for IdleCompactor {
    fn name(&self) -> String {
        "storage-idle".into()
    }

    fn first(&self) -> Next {
        Next::After(poll_interval(self.options.after))
    }

    fn step(&mut self, _signal: &Signal) -> Next {
        let now = Instant::now();
        let spent = self.pass(now, now >= self.resume_at);
        self.resume_at = Instant::now() + spent * DUTY_CYCLE;
        Next::After(poll_interval(self.options.after))
    }
}

/// Sorted runs a range read merges: the memtables, each L0 table, each deeper level.
pub(crate) fn runs(keyspace: &Keyspace) -> usize {
    let tree = &keyspace.tree;
    let memtables = usize::from(tree.get_highest_memtable_seqno().is_some());
    let l0 = tree.level_table_count(0).unwrap_or(0);
    let levels = (1..7)
        .filter(|&l| tree.level_table_count(l).unwrap_or(0) > 0)
        .count();
    memtables + l0 + levels
}

impl IdleCompactor {
    /// One pass over every physical partition: notes which were written and, when `compact`,
    /// compacts the first one idle long enough. Returns the time spent compacting.
    fn pass(&mut self, now: Instant, compact: bool) -> Duration {
        let (options, watches) = (&self.options, &mut self.watches);
        let mut seen = HashSet::new();
        for table in self.tables.all() {
            let view = table.ring.current();
            for part in &view.parts {
                let key = (table.id, part.id);
                seen.insert(key);
                let seqno = part.keyspace.tree.get_highest_seqno();
                let watch = watches.entry(key).or_insert(Watch {
                    seqno,
                    since: now,
                    done: false,
                });
                if watch.seqno != seqno {
                    *watch = Watch {
                        seqno,
                        since: now,
                        done: false,
                    };
                    continue;
                }
                if !compact
                    || watch.done
                    || now.duration_since(watch.since) < options.after
                    || view.split.is_some()
                {
                    continue;
                }
                // Drop, truncate and splits hold this lock while they change the keyspaces.
                let Ok(_split) = table.ring.split_lock.try_lock() else {
                    continue;
                };
                watch.done = true;
                let started = Instant::now();
                let free = || self.disk.free_bytes();
                match compact_if_worth_it(part, options.max_bytes, free) {
                    // the rest waits for the duty cycle (and is looked at again next pass)
                    Ok(true) => return started.elapsed(),
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(table = %table.id, partition = part.id, "idle compaction failed: {e}");
                        return started.elapsed();
                    }
                }
            }
        }
        watches.retain(|k, _| seen.contains(k));
        Duration::ZERO
    }
}

/// What idle compaction does to a tree of `size` bytes on disk with `free` bytes free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Flush the memtable and merge every table into one run.
    Compact,
    /// Only flush the memtable: too large to rewrite (or no room for a second copy).
    Flush,
    /// Nothing worth doing.
    Nothing,
}

/// Decides what idle compaction does. A tree without tables (held in memory only) or with
/// one run is left alone. A major compaction writes the whole tree again before it deletes
/// the old tables, so it needs the free space of a second copy on top of `min_free` (the
/// free-space guard's threshold for writes).
fn plan(tables: usize, runs: usize, memtable: bool, size: u64, limits: Limits) -> Plan {
    if tables == 0 || runs <= 1 {
        Plan::Nothing
    } else if size <= limits.max_bytes && limits.free >= size.saturating_add(limits.min_free) {
        Plan::Compact
    } else if memtable {
        Plan::Flush
    } else {
        Plan::Nothing
    }
}

/// The bounds [`plan`] checks a tree against.
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_bytes: u64,
    free: u64,
    min_free: u64,
}

/// Compacts (or, when too large, flushes) `part` as [`plan`] says; returns whether it did
/// anything.
fn compact_if_worth_it(
    part: &Physical,
    max_bytes: u64,
    free: impl Fn() -> (u64, u64),
) -> Result<bool, StorageError> {
    let ks = &part.keyspace;
    let before = runs(ks);
    let size = ks.disk_space();
    let memtable = ks.tree.get_highest_memtable_seqno().is_some();
    let (free, min_free) = free();
    let limits = Limits {
        max_bytes,
        free,
        min_free,
    };
    let started = Instant::now();
    match plan(ks.table_count(), before, memtable, size, limits) {
        Plan::Nothing => return Ok(false),
        Plan::Flush => ks.rotate_memtable_and_wait()?,
        Plan::Compact => compact(ks)?,
    }
    tracing::debug!(
        partition = part.id,
        bytes = size,
        runs_before = before,
        runs_after = runs(ks),
        ms = started.elapsed().as_millis() as u64,
        "idle compaction"
    );
    Ok(true)
}

/// Flushes the memtable and merges every table into one run.
pub(crate) fn compact(ks: &Keyspace) -> Result<(), StorageError> {
    ks.rotate_memtable_and_wait()?;
    ks.major_compact()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::{Duration, Instant};

    use cql::types::{DataType, NativeType};

    use super::{IdleCompaction, IdleCompactor};
    use crate::*;

    const T: TableId = TableId(7);

    fn open(idle: Option<IdleCompaction>) -> (tempfile::TempDir, Storage) {
        open_tables(idle, &[T])
    }

    fn open_tables(
        idle: Option<IdleCompaction>,
        tables: &[TableId],
    ) -> (tempfile::TempDir, Storage) {
        let dir = tempfile::tempdir().unwrap();
        let db = Storage::open(
            dir.path(),
            StorageOptions {
                idle_compaction: idle,
                ..StorageOptions::default()
            },
        )
        .unwrap();
        let layout = TableLayout {
            partition_key: vec![DataType::Native(NativeType::Int)],
            clustering: vec![(DataType::Native(NativeType::Int), Order::Asc)],
            columns: BTreeMap::from([(1, DataType::TEXT)]),
            ..TableLayout::default()
        };
        for &t in tables {
            db.create_table(t, layout.clone()).unwrap();
        }
        (dir, db)
    }

    fn write(db: &Storage, pk: i32, c: i32, v: &str, ts: i64) {
        write_to(db, T, pk, c, v, ts);
    }

    fn write_to(db: &Storage, t: TableId, pk: i32, c: i32, v: &str, ts: i64) {
        let m = crate::tests::insert_row(
            pk.to_be_bytes().to_vec(),
            c.to_be_bytes().to_vec(),
            1,
            v.as_bytes(),
            ts,
        );
        db.apply(t, &m).unwrap();
    }

    /// Three generations of the same rows (the newest wins), each but the last flushed to
    /// its own table: a memtable and two tables, three runs.
    fn load(db: &Storage) {
        load_into(db, T);
    }

    fn load_into(db: &Storage, t: TableId) {
        for generation in 0..3i64 {
            for pk in 0..20 {
                for c in 0..50 {
                    let v = format!("g{generation}-{pk}-{c}");
                    write_to(db, t, pk, c, &v, generation + 1);
                }
            }
            if generation < 2 {
                let ks = db.table(t).unwrap().keyspace();
                ks.rotate_memtable_and_wait().unwrap();
            }
        }
        // a deleted row must stay deleted through the compaction
        let m = Mutation {
            partition_key: vec![3i32.to_be_bytes().to_vec()],
            rows: vec![RowWrite {
                clustering: vec![7i32.to_be_bytes().to_vec()],
                deletion: Some(Deletion { timestamp: 10 }),
                ..RowWrite::default()
            }],
            ..Mutation::default()
        };
        db.apply(t, &m).unwrap();
    }

    fn rows(db: &Storage, pk: i32) -> Vec<(i32, String)> {
        let slice = db
            .read_partition(T, &[pk.to_be_bytes().to_vec()], &Slice::default())
            .unwrap();
        slice
            .rows
            .iter()
            .map(|r| {
                let c = i32::from_be_bytes(r.clustering[0].as_slice().try_into().unwrap());
                let v = match r.cells.get(&1) {
                    Some(ColumnValue::Simple(v)) => String::from_utf8(v.value.clone()).unwrap(),
                    other => panic!("unexpected cell {other:?}"),
                };
                (c, v)
            })
            .collect()
    }

    fn expected(pk: i32) -> Vec<(i32, String)> {
        (0..50)
            .filter(|&c| !(pk == 3 && c == 7))
            .map(|c| (c, format!("g2-{pk}-{c}")))
            .collect()
    }

    /// Waits up to `limit` for the table to reach `runs` sorted runs; returns the last count.
    fn wait_runs(db: &Storage, runs: usize, limit: Duration) -> Vec<usize> {
        let start = Instant::now();
        loop {
            let now = db.sorted_runs(T).unwrap();
            if now == [runs] || start.elapsed() > limit {
                return now;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn an_idle_table_becomes_one_run_with_the_same_rows() {
        let (_dir, db) = open(Some(IdleCompaction {
            after: Duration::from_millis(500),
            max_bytes: u64::MAX,
        }));
        load(&db);
        assert_eq!(db.sorted_runs(T).unwrap()[0], 3, "memtable + two tables");
        assert_eq!(wait_runs(&db, 1, Duration::from_secs(10)), [1]);
        for pk in 0..20 {
            assert_eq!(rows(&db, pk), expected(pk), "partition {pk}");
        }
        // written again, it is compacted again once idle
        write(&db, 50, 0, "new", 20);
        db.table(T)
            .unwrap()
            .keyspace()
            .rotate_memtable_and_wait()
            .unwrap();
        write(&db, 51, 0, "newer", 20);
        assert_eq!(wait_runs(&db, 1, Duration::from_secs(10)), [1]);
        assert_eq!(rows(&db, 50), [(0, "new".to_string())]);
        assert_eq!(rows(&db, 51), [(0, "newer".to_string())]);
    }

    #[test]
    fn busy_large_or_memory_only_tables_are_left_alone() {
        // larger than max_bytes: only its memtable is flushed (three L0 tables, no merge)
        let (_dir, db) = open(Some(IdleCompaction {
            after: Duration::from_millis(50),
            max_bytes: 1,
        }));
        load(&db);
        let ks = db.table(T).unwrap().keyspace();
        assert_eq!(ks.table_count(), 2);
        let start = Instant::now();
        while ks.table_count() < 3 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(ks.table_count(), 3, "flushed, not merged");
        assert!(fjall::AbstractTree::get_highest_memtable_seqno(&ks.tree).is_none());
        assert_eq!(db.sorted_runs(T).unwrap(), [3]);
        for pk in 0..20 {
            assert_eq!(rows(&db, pk), expected(pk), "partition {pk}");
        }

        // held only in the memtable: not flushed
        let (_dir, db) = open(Some(IdleCompaction {
            after: Duration::from_millis(50),
            max_bytes: u64::MAX,
        }));
        write(&db, 1, 1, "only in memory", 1);
        std::thread::sleep(Duration::from_millis(600));
        let ks = db.table(T).unwrap().keyspace();
        assert_eq!(ks.table_count(), 0);

        // kept busy by writes: not compacted while they go on
        let (_dir, db) = open(Some(IdleCompaction {
            after: Duration::from_millis(1000),
            max_bytes: u64::MAX,
        }));
        load(&db);
        let until = Instant::now() + Duration::from_millis(1500);
        let mut ts = 100;
        while Instant::now() < until {
            ts += 1;
            write(&db, 0, 0, "busy", ts);
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(db.sorted_runs(T).unwrap(), [3]);
        assert_eq!(
            wait_runs(&db, 1, Duration::from_secs(10)),
            [1],
            "idle at last"
        );

        // off: never
        let (_dir, db) = open(None);
        load(&db);
        std::thread::sleep(Duration::from_millis(600));
        assert_eq!(db.sorted_runs(T).unwrap(), [3]);
    }

    #[test]
    fn a_pass_compacts_one_idle_partition_and_none_during_the_cooldown() {
        let other = TableId(8);
        let (_dir, db) = open_tables(None, &[T, other]);
        load_into(&db, T);
        load_into(&db, other);
        let options = IdleCompaction {
            after: Duration::from_secs(5),
            max_bytes: u64::MAX,
        };
        let mut compactor =
            IdleCompactor::new(db.inner.tables.clone(), db.inner.disk.clone(), options);
        let t0 = Instant::now();
        let runs = |db: &Storage| [db.sorted_runs(T).unwrap(), db.sorted_runs(other).unwrap()];
        // first seen: not idle yet
        assert_eq!(compactor.pass(t0, true), Duration::ZERO);
        let later = t0 + Duration::from_secs(6);
        // idle, but in the cooldown
        assert_eq!(compactor.pass(later, false), Duration::ZERO);
        assert_eq!(runs(&db), [[3], [3]]);
        // one partition per pass
        assert!(compactor.pass(later, true) > Duration::ZERO);
        let after_one = runs(&db);
        assert!(
            after_one == [[1], [3]] || after_one == [[3], [1]],
            "{after_one:?}"
        );
        assert!(compactor.pass(later, true) > Duration::ZERO);
        assert_eq!(runs(&db), [[1], [1]]);
        // compacted once: nothing more to do until written again
        assert_eq!(compactor.pass(later, true), Duration::ZERO);
        write_to(&db, other, 1, 1, "again", 50);
        assert_eq!(compactor.pass(later, true), Duration::ZERO);
        assert_eq!(runs(&db), [[1], [2]], "written: not idle");
    }

    #[test]
    fn compact_table_makes_one_run_and_dropping_the_store_stops_the_thread() {
        let (dir, db) = open(Some(IdleCompaction {
            after: Duration::from_secs(3600),
            max_bytes: u64::MAX,
        }));
        load(&db);
        assert_eq!(db.compact_table(T).unwrap(), [1]);
        assert_eq!(rows(&db, 3), expected(3));
        drop(db);
        // the thread let go of the store: it opens again
        let again = Storage::open(dir.path(), StorageOptions::default()).unwrap();
        drop(again);
    }

    #[test]
    fn plan_compacts_small_trees_with_room_and_only_flushes_the_rest() {
        use super::{plan, Limits, Plan};
        let roomy = Limits {
            max_bytes: 1000,
            free: 10_000,
            min_free: 100,
        };
        assert_eq!(plan(2, 3, true, 1000, roomy), Plan::Compact);
        assert_eq!(
            plan(2, 2, false, 500, roomy),
            Plan::Compact,
            "two tables, no memtable"
        );
        // nothing to merge: no tables (memory only) or a single run
        assert_eq!(plan(0, 1, true, 0, roomy), Plan::Nothing);
        assert_eq!(plan(1, 1, false, 500, roomy), Plan::Nothing);
        // too large: flush only, and nothing once the memtable is empty
        assert_eq!(plan(2, 3, true, 1001, roomy), Plan::Flush);
        assert_eq!(plan(3, 3, false, 1001, roomy), Plan::Nothing);
        // a second copy must fit above min_free
        let tight = Limits {
            free: 1099,
            ..roomy
        };
        assert_eq!(plan(2, 3, true, 1000, tight), Plan::Flush);
        assert_eq!(plan(2, 3, false, 1000, tight), Plan::Nothing);
        let exact = Limits {
            free: 1100,
            ..roomy
        };
        assert_eq!(plan(2, 3, false, 1000, exact), Plan::Compact);
    }
}
