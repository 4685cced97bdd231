//! The partition cache answers every slice as the tree does: a store with it and a store
//! without it take the same random writes (rows, cells, statics, deletions of rows, ranges
//! and partitions, TTLs) and must read alike, and readers racing a writer never read a
//! partition older than an acknowledged write.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering as AtomicOrdering};
use std::sync::Arc;

use cql::types::{DataType, NativeType};

use crate::tests::{insert_row, int, race_readers_with_a_writer};
use crate::*;

const T: TableId = TableId(0x2c);
const V: u32 = 1;
const W: u32 = 2;
const SET: u32 = 3;
const STATIC: u32 = 4;

/// A store with table `T` (`pk int, ck int, v text, w int, s set<int>, st int static`), its
/// partition cache
/// limited to `max` bytes (0: off), and the clock it reads.
fn open(max: u64, clock: &Arc<AtomicI64>) -> (tempfile::TempDir, Storage) {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = clock.clone();
    let db = Storage::open(
        dir.path(),
        StorageOptions {
            partition_cache_max_bytes: max,
            clock: Some(Arc::new(move || c.load(AtomicOrdering::SeqCst))),
            ..Default::default()
        },
    )
    .expect("open");
    db.create_table(
        T,
        TableLayout {
            partition_key: vec![NativeType::Int.into()],
            clustering: vec![(NativeType::Int.into(), Order::Asc)],
            columns: BTreeMap::from([
                (V, DataType::TEXT),
                (W, NativeType::Int.into()),
                (SET, DataType::Set(Box::new(NativeType::Int.into()))),
                (STATIC, NativeType::Int.into()),
            ]),
            ..TableLayout::default()
        },
    )
    .expect("table");
    (dir, db)
}

/// Deterministic pseudo-random numbers (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn set(column: u32, value: Vec<u8>, timestamp: i64, ttl: Option<u32>) -> ColumnWrite {
    ColumnWrite {
        column,
        op: ColumnOp::Set {
            value,
            timestamp,
            ttl,
        },
    }
}

/// A random write to partition `pk` at timestamp `ts`: an INSERT (sometimes with a TTL), an
/// UPDATE of one cell, a cell deletion, a row deletion, a set element, and rarely a static
/// cell, a range deletion or a partition deletion.
fn random_write(rng: &mut Rng, pk: i32, ts: i64) -> Mutation {
    let mut m = Mutation {
        partition_key: vec![int(pk)],
        ..Mutation::default()
    };
    match rng.below(40) {
        0 => {
            m.partition_deletion = Some(Deletion { timestamp: ts });
            return m;
        }
        1 | 2 => {
            m.static_columns = vec![set(STATIC, int(ts as i32), ts, None)];
            return m;
        }
        3 | 4 => {
            let lo = rng.below(12) as i32;
            m.range_deletions = vec![RangeDeletion {
                start: ClusteringBound::Inclusive(vec![int(lo)]),
                end: ClusteringBound::Exclusive(vec![int(lo + 1 + rng.below(4) as i32)]),
                deletion: Deletion { timestamp: ts },
            }];
            return m;
        }
        _ => {}
    }
    let ck = rng.below(12) as i32;
    let ttl = (rng.below(4) == 0).then_some(1 + rng.below(3) as u32);
    let mut row = RowWrite {
        clustering: vec![int(ck)],
        ..RowWrite::default()
    };
    match rng.below(6) {
        0 | 1 => {
            row.liveness = Some(Liveness { timestamp: ts, ttl });
            row.columns = vec![
                set(V, format!("v{ts}").into_bytes(), ts, ttl),
                set(W, int(ts as i32), ts, ttl),
            ];
        }
        2 => row.columns = vec![set(V, format!("u{ts}").into_bytes(), ts, ttl)],
        3 => {
            row.columns = vec![ColumnWrite {
                column: W,
                op: ColumnOp::Delete { timestamp: ts },
            }]
        }
        4 => row.deletion = Some(Deletion { timestamp: ts }),
        _ => {
            row.columns = vec![ColumnWrite {
                column: SET,
                op: ColumnOp::SetElement {
                    key: int(rng.below(5) as i32),
                    value: Vec::new(),
                    timestamp: ts,
                    ttl,
                },
            }]
        }
    }
    m.rows = vec![row];
    m
}

/// A random slice: bounds, direction and a limit.
fn random_slice(rng: &mut Rng) -> Slice {
    let bound = |rng: &mut Rng| match rng.below(4) {
        0 => ClusteringBound::Unbounded,
        1 => ClusteringBound::Exclusive(vec![int(rng.below(12) as i32)]),
        _ => ClusteringBound::Inclusive(vec![int(rng.below(12) as i32)]),
    };
    Slice {
        start: bound(rng),
        end: bound(rng),
        reversed: rng.below(3) == 0,
        limit: (rng.below(2) == 0).then(|| 1 + rng.below(4) as usize),
        cursor: None,
    }
}

/// Every page of `slice` of partition `pk`, without the items-read counts.
fn pages(db: &Storage, pk: i32, slice: &Slice) -> Vec<PartitionSlice> {
    let mut slice = slice.clone();
    let mut pages = Vec::new();
    loop {
        let mut page = db.read_partition(T, &[int(pk)], &slice).expect("read");
        page.items_read = 0;
        let next = page.cursor.clone();
        pages.push(page);
        match next {
            Some(c) if pages.len() < 40 => slice.cursor = Some(c),
            _ => return pages,
        }
    }
}

/// Whether partition `pk` has an entry (rows or too-large mark) in the item cache.
fn has_entry(db: &Storage, pk: i32) -> bool {
    let table = db.table(T).expect("table");
    let addr = crate::partition_address::address(&table.layout, &[int(pk)]).expect("address");
    let part = table.ring.current().part(addr.token).clone();
    let id = part.cache_id.load(AtomicOrdering::Relaxed);
    let key = crate::partition_cache::entry_key(&addr.prefix);
    db.inner.item_cache.get(id, &key).is_some()
}

#[test]
fn slices_of_cached_partitions_read_as_the_tree_does() {
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let (_a, cached) = open(16 << 10, &clock);
    let (_b, plain) = open(0, &clock);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut hits = 0;
    for step in 0..3_000i64 {
        let pk = rng.below(6) as i32;
        let m = random_write(&mut rng, pk, 100 + step);
        cached.apply(T, &m).expect("write");
        plain.apply(T, &m).expect("write");
        if rng.below(50) == 0 {
            clock.fetch_add(1, AtomicOrdering::SeqCst);
        }
        for _ in 0..2 {
            let pk = rng.below(6) as i32;
            let slice = random_slice(&mut rng);
            hits += usize::from(has_entry(&cached, pk));
            assert_eq!(
                pages(&cached, pk, &slice),
                pages(&plain, pk, &slice),
                "step {step}, partition {pk}, {slice:?}"
            );
        }
    }
    assert!(hits > 1_000, "reads found cached partitions {hits} times");
    assert!(!has_entry(&plain, 0), "a limit of 0 caches nothing");
}

#[test]
fn a_write_retires_the_entry_and_deletions_are_cached_too() {
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let (_dir, db) = open(16 << 10, &clock);
    let all = Slice::default();
    let insert = |ck: i32, v: &str, ts: i64| insert_row(int(1), int(ck), V, v.as_bytes(), ts);
    assert_eq!(pages(&db, 1, &all)[0].rows.len(), 0);
    assert!(!has_entry(&db, 1), "an empty partition is not cached");
    db.apply(T, &insert(1, "a", 10)).expect("write");
    db.apply(T, &insert(2, "b", 10)).expect("write");
    assert_eq!(pages(&db, 1, &all)[0].rows.len(), 2);
    assert!(has_entry(&db, 1), "a read caches the partition");
    db.apply(T, &insert(3, "c", 10)).expect("write");
    assert!(!has_entry(&db, 1), "a write forgets it");
    assert_eq!(pages(&db, 1, &all)[0].rows.len(), 3);
    assert!(has_entry(&db, 1));

    let delete = Mutation {
        partition_key: vec![int(1)],
        partition_deletion: Some(Deletion { timestamp: 20 }),
        ..Mutation::default()
    };
    db.apply(T, &delete).expect("delete");
    assert!(!has_entry(&db, 1));
    assert_eq!(pages(&db, 1, &all)[0].rows.len(), 0);
    assert!(has_entry(&db, 1), "the deletion and the rows it shadows");
    db.apply(T, &insert(4, "d", 30)).expect("write");
    assert_eq!(pages(&db, 1, &all)[0].rows.len(), 1);
    assert!(has_entry(&db, 1));
}

#[test]
fn a_partition_over_the_limit_is_marked_and_read_from_the_tree() {
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let (_dir, db) = open(1 << 10, &clock);
    for ck in 0..100 {
        let m = insert_row(int(7), int(ck), V, &[b'x'; 40], 1);
        db.apply(T, &m).expect("write");
    }
    for _ in 0..2 {
        let rows = &pages(&db, 7, &Slice::default())[0].rows;
        assert_eq!(rows.len(), 100);
        assert!(has_entry(&db, 7), "the too-large mark");
    }
    // An append keeps the mark (the next read does not measure the partition again), and
    // reads still see every row.
    let m = insert_row(int(7), int(100), V, b"", 2);
    db.apply(T, &m).expect("write");
    assert!(has_entry(&db, 7), "the mark outlives a write");
    assert_eq!(pages(&db, 7, &Slice::default())[0].rows.len(), 101);
}

/// Readers that miss fill the cache while a writer adds rows to the same partitions: no
/// reader may see fewer rows than a write that had returned before its read started. Each
/// fill waits a little after its read, long enough for a writer to slip in if it could.
#[test]
fn readers_filling_partitions_never_undo_an_acknowledged_write() {
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let (_dir, db) = open(16 << 10, &clock);
    db.inner
        .item_cache
        .fill_delay_us
        .store(200, AtomicOrdering::Relaxed);
    const KEYS: i32 = 8;
    const WRITES: i64 = 800;
    let rows = |k: i32| pages(&db, k, &Slice::default())[0].rows.len() as i64;
    let last = race_readers_with_a_writer(
        KEYS as usize,
        WRITES,
        0,
        |n| {
            let (k, ck) = ((n % i64::from(KEYS)) as i32, (n / i64::from(KEYS)) as i32);
            let m = insert_row(int(k), int(ck), V, b"", 1);
            db.apply(T, &m).expect("write");
            (k as usize, i64::from(ck) + 1)
        },
        |k| rows(k as i32),
    );
    for (k, last) in (0..KEYS).zip(last) {
        assert_eq!(rows(k), last, "key {k}");
    }
}

/// Partitions cached before a split, and overwritten while it copies, read right from
/// either half afterwards.
#[test]
fn cached_partitions_stay_right_across_a_split() {
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let (_dir, db) = open(16 << 10, &clock);
    const KEYS: i32 = 300;
    let row =
        |pk: i32, ck: i32, v: String, ts: i64| insert_row(int(pk), int(ck), V, v.as_bytes(), ts);
    let values = |db: &Storage, pk: i32| -> Vec<String> {
        pages(db, pk, &Slice::default())[0]
            .rows
            .iter()
            .map(|r| match r.cells.get(&V) {
                Some(ColumnValue::Simple(c)) => String::from_utf8(c.value.clone()).expect("utf8"),
                other => panic!("unexpected cell {other:?}"),
            })
            .collect()
    };
    for pk in 0..KEYS {
        for ck in 0..3 {
            db.apply(T, &row(pk, ck, format!("first {pk}"), 10))
                .expect("write");
        }
        assert_eq!(values(&db, pk).len(), 3);
        assert!(has_entry(&db, pk));
    }
    // Overwrites racing the copy land in both halves and forget both entries.
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut ts = 20;
            while !done.load(AtomicOrdering::SeqCst) {
                for pk in (0..KEYS).step_by(7) {
                    db.apply(T, &row(pk, 1, format!("racing {ts}"), ts))
                        .expect("write");
                    values(&db, pk);
                }
                ts += 1;
            }
        });
        assert!(db.split_now(T).expect("split"));
        done.store(true, AtomicOrdering::SeqCst);
    });
    assert_eq!(db.physical_partitions(T).expect("parts").len(), 2);
    for pk in 0..KEYS {
        let got = values(&db, pk);
        assert_eq!(got[0], format!("first {pk}"));
        if pk % 7 == 0 {
            assert!(got[1].starts_with("racing "), "{got:?}");
        } else {
            assert_eq!(got[1], format!("first {pk}"));
        }
        db.apply(T, &row(pk, 2, format!("after {pk}"), 1_000))
            .expect("write");
        assert_eq!(values(&db, pk)[2], format!("after {pk}"));
    }
}
