//! The item cache never answers with an item older than the newest acknowledged write: after
//! overwrites, older-timestamp writes, truncates, splits, and with readers racing a writer.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering as AtomicOrdering};
use std::sync::Arc;

use cql::types::DataType;

use crate::key::ItemPath;
use crate::tests::{insert_row, int, race_readers_with_a_writer};
use crate::*;

const T: TableId = TableId(0x1c);
const VALUE: u32 = 1;

/// A store whose table `T` (`pk int, ck int, v text`) reads single rows with point lookups.
fn open(item_cache_bytes: u64) -> (tempfile::TempDir, Storage) {
    open_with(item_cache_bytes, None, DEFAULT_GC_GRACE_SECONDS)
}

fn open_with(
    item_cache_bytes: u64,
    clock: Option<Clock>,
    gc_grace_seconds: u32,
) -> (tempfile::TempDir, Storage) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Storage::open(
        dir.path(),
        StorageOptions {
            item_cache_bytes,
            clock,
            ..Default::default()
        },
    )
    .expect("open");
    db.create_table(
        T,
        TableLayout {
            partition_key: vec![cql::types::NativeType::Int.into()],
            clustering: vec![(cql::types::NativeType::Int.into(), Order::Asc)],
            columns: BTreeMap::from([(VALUE, DataType::TEXT)]),
            point_row_columns: Some(vec![VALUE]),
            gc_grace_seconds,
            ..TableLayout::default()
        },
    )
    .expect("table");
    (dir, db)
}

fn put(db: &Storage, pk: i32, value: &str, ts: i64) {
    db.apply(T, &insert_row(int(pk), int(0), VALUE, value.as_bytes(), ts))
        .expect("write");
}

/// The value of row (pk, 0), read by point lookup.
fn get(db: &Storage, pk: i32) -> Option<String> {
    let at = ClusteringBound::Inclusive(vec![int(0)]);
    let slice = Slice {
        start: at.clone(),
        end: at,
        limit: Some(1),
        ..Default::default()
    };
    let table = db.table(T).expect("table");
    assert!(crate::read::single_row(&table, &slice).is_some());
    let read = db.read_partition(T, &[int(pk)], &slice).expect("read");
    let row = read.rows.first()?;
    match row.cells.get(&VALUE) {
        Some(ColumnValue::Simple(cell)) => {
            Some(String::from_utf8(cell.value.clone()).expect("utf8"))
        }
        other => panic!("unexpected cell {other:?}"),
    }
}

/// Whether the item cache holds row (pk, 0)'s liveness item.
fn cached(db: &Storage, pk: i32) -> bool {
    let (part, k) = cache_key(db, pk);
    db.inner.item_cache.get(part, &k).is_some()
}

/// Row (pk, 0)'s liveness item in the item cache: its partition's cache id and its key.
fn cache_key(db: &Storage, pk: i32) -> (u64, Vec<u8>) {
    let table = db.table(T).expect("table");
    let addr = crate::partition_address::address(&table.layout, &[int(pk)]).expect("address");
    let view = table.ring.current();
    let part = view.part(addr.token).cache_id.load(AtomicOrdering::Relaxed);
    let mut k = addr.prefix.clone();
    k.push(key::SECTION_ROWS);
    key::encode_clustering(&table.layout.clustering, &[int(0)], &mut k).expect("clustering");
    k.push(key::CLUSTERING_END);
    ItemPath::Liveness.encode(&mut k);
    (part, k)
}

#[test]
fn reads_and_writes_go_through_the_cache_and_see_the_newest_write() {
    let (_dir, db) = open(1 << 20);
    put(&db, 1, "a", 10);
    assert_eq!(get(&db, 1).as_deref(), Some("a"));
    assert!(cached(&db, 1), "a point read caches the row it read");

    put(&db, 1, "b", 20);
    assert!(cached(&db, 1), "an overwrite caches what it wrote");
    assert_eq!(get(&db, 1).as_deref(), Some("b"));

    // Reconciled against the cached item: the older write loses.
    put(&db, 1, "old", 15);
    assert_eq!(get(&db, 1).as_deref(), Some("b"));

    let (old_part, k) = cache_key(&db, 1);
    db.truncate(T).expect("truncate");
    assert!(
        !cached(&db, 1),
        "a truncate retires the partition's entries"
    );
    assert!(
        db.inner.item_cache.get(old_part, &k).is_none(),
        "and frees them"
    );
    assert_eq!(get(&db, 1), None);
    put(&db, 1, "c", 5);
    assert_eq!(get(&db, 1).as_deref(), Some("c"));

    let (part, k) = cache_key(&db, 1);
    assert!(db.inner.item_cache.get(part, &k).is_some());
    db.drop_table(T).expect("drop");
    assert!(
        db.inner.item_cache.get(part, &k).is_none(),
        "a dropped table's entries are freed"
    );
}

/// Past gc-grace compaction purges an expired row; a write older than it is then accepted,
/// as it is without the cache, though the cache still holds the expired row.
#[test]
fn a_write_older_than_a_purged_cell_is_accepted() {
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let c = clock.clone();
    let (_dir, db) = open_with(
        1 << 20,
        Some(Arc::new(move || c.load(AtomicOrdering::SeqCst))),
        10,
    );
    let mut m = insert_row(int(1), int(0), VALUE, b"expiring", 100);
    for l in m.rows.iter_mut().filter_map(|r| r.liveness.as_mut()) {
        l.ttl = Some(5);
    }
    if let ColumnOp::Set { ttl, .. } = &mut m.rows[0].columns[0].op {
        *ttl = Some(5);
    }
    db.apply(T, &m).expect("write");
    assert_eq!(get(&db, 1).as_deref(), Some("expiring"));
    assert!(cached(&db, 1));
    // Expired 5 s after the write, purgeable 10 s after that.
    clock.fetch_add(60, AtomicOrdering::SeqCst);
    assert_eq!(get(&db, 1), None);
    let ks = db.table(T).expect("table").keyspace();
    ks.rotate_memtable_and_wait().expect("flush");
    ks.major_compact().expect("compact");
    assert!(cached(&db, 1), "the cache still holds the expired row");
    put(&db, 1, "older", 50);
    assert_eq!(get(&db, 1).as_deref(), Some("older"));
}

#[test]
fn a_zero_budget_reads_straight_from_fjall() {
    let (_dir, db) = open(0);
    put(&db, 1, "a", 10);
    assert_eq!(get(&db, 1).as_deref(), Some("a"));
    assert!(!cached(&db, 1));
    put(&db, 1, "b", 20);
    put(&db, 1, "old", 15);
    assert_eq!(get(&db, 1).as_deref(), Some("b"));
}

#[test]
fn cached_rows_stay_right_across_a_split() {
    let (_dir, db) = open(4 << 20);
    const ROWS: i32 = 400;
    for pk in 0..ROWS {
        put(&db, pk, &format!("first {pk}"), 10);
        assert_eq!(get(&db, pk), Some(format!("first {pk}")));
    }
    // Written while the split copies: overwrites that race the copy land in both halves.
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut ts = 20;
            while !done.load(AtomicOrdering::SeqCst) {
                for pk in (0..ROWS).step_by(7) {
                    put(&db, pk, &format!("racing {pk} {ts}"), ts);
                }
                ts += 1;
            }
        });
        assert!(db.split_now(T).expect("split"));
        done.store(true, AtomicOrdering::SeqCst);
    });
    assert_eq!(db.physical_partitions(T).expect("parts").len(), 2);
    for pk in 0..ROWS {
        let got = get(&db, pk).expect("row");
        if pk % 7 == 0 {
            assert!(got.starts_with(&format!("racing {pk} ")), "{got}");
        } else {
            assert_eq!(got, format!("first {pk}"));
        }
        put(&db, pk, &format!("after {pk}"), 1_000);
        assert_eq!(get(&db, pk), Some(format!("after {pk}")));
    }
}

/// Readers that miss the cache fill it while a writer overwrites the same rows: no reader
/// may read a value older than one whose write had returned before its read started. A
/// small cache keeps evicting, so reads keep missing and filling, and each fill waits a
/// little after its lookup.
#[test]
fn readers_filling_the_cache_never_undo_an_acknowledged_write() {
    // Room for ~25 of the 64 rows.
    let (_dir, db) = open(4 << 10);
    // Long enough for a writer to commit and cache its item in between, if it could.
    db.inner
        .item_cache
        .fill_delay_us
        .store(200, AtomicOrdering::Relaxed);
    const KEYS: i32 = 64;
    const WRITES: i64 = 2_000;
    let last = race_readers_with_a_writer(
        KEYS as usize,
        WRITES,
        -1,
        |n| {
            let k = (n % i64::from(KEYS)) as i32;
            put(&db, k, &n.to_string(), n + 1);
            (k as usize, n)
        },
        |k| get(&db, k as i32).map_or(-1, |v| v.parse::<i64>().expect("number")),
    );
    for (k, last) in (0..KEYS).zip(last) {
        assert_eq!(get(&db, k), Some(last.to_string()));
    }
}

#[test]
fn a_bulk_load_fills_at_most_an_eighth_of_the_cache() {
    let (_dir, db) = open(4 << 20);
    const ROWS: i32 = 40_000;
    for pk in 0..ROWS {
        put(&db, pk, "a value of some forty bytes, give or take", 1);
    }
    let cached_rows = (0..ROWS).filter(|pk| cached(&db, *pk)).count();
    // ~150 bytes an entry: the whole 4 MiB would hold ~28,000 rows, its first eighth ~3,500.
    // The weight is read every 4,096 writes, so admission stops at the first or second.
    assert!(cached_rows >= 3_000, "{cached_rows} new rows cached");
    assert!(
        cached_rows <= 8_192,
        "{cached_rows} of {ROWS} new rows cached"
    );
}
