//! Partition filters against stored data: built on reopen, kept by writes, truncate.

use std::time::{Duration, Instant};

use crate::key::Order;
use crate::tests::{insert_row, int, layout, T};
use crate::*;

/// Bytes a partition may hold in these tests: a few rows of 100 bytes.
pub(crate) const CAP: u64 = 1_000;

/// A store at `dir` with table `T` (the layout of `crate::tests`) and a partition cap of
/// [`CAP`].
pub(crate) fn open(dir: &std::path::Path) -> Storage {
    let db = Storage::open(
        dir,
        StorageOptions {
            logical_partition_max_bytes: CAP,
            ..Default::default()
        },
    )
    .unwrap();
    db.create_table(T, layout(Order::Asc)).unwrap();
    db
}

/// Inserts row `ck` of partition `pk` with `value` in column 1 at `ts`.
pub(crate) fn write(
    db: &Storage,
    pk: i32,
    ck: i32,
    value: &[u8],
    ts: i64,
) -> Result<(), StorageError> {
    db.apply(T, &insert_row(int(pk), int(ck), 1, value, ts))
}

/// A store holding partitions `0..n` (one row each), closed and opened again: its filter
/// is being built.
fn reopened_with(n: i32) -> (tempfile::TempDir, Storage) {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        for pk in 0..n {
            write(&db, pk, 0, &[b'v'; 100], 1).unwrap();
        }
    }
    let db = open(dir.path());
    (dir, db)
}

fn wait_complete(db: &Storage) {
    let started = Instant::now();
    while !db.table(T).unwrap().ring.filter.is_complete() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "filter never built"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_reopened_table_still_knows_its_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let value = [b'v'; 100];
    {
        let db = open(dir.path());
        assert!(
            db.table(T).unwrap().ring.filter.is_complete(),
            "a new table is empty"
        );
        for pk in 0..500 {
            write(&db, pk, 0, &value, 1).unwrap();
        }
        // Partition 0 near the cap.
        for ck in 1..6 {
            write(&db, 0, ck, &value, 1).unwrap();
        }
        db.flush_table(T).unwrap();
    }
    let db = open(dir.path());
    wait_complete(&db);
    let before = db.table_stats(T).unwrap();
    assert_eq!(before.partitions, 500);
    // Overwrites of stored partitions find their size cells: no new partition, no growth
    // for a same-size overwrite, and the cap still holds for partition 0.
    for pk in 0..500 {
        write(&db, pk, 0, &value, 2).unwrap();
    }
    let after = db.table_stats(T).unwrap();
    assert_eq!(after.partitions, 500);
    assert_eq!(after.bytes, before.bytes);
    let err = write(&db, 0, 100, &value, 3).unwrap_err();
    assert!(
        matches!(err, StorageError::PartitionTooLarge { .. }),
        "{err}"
    );
    // A new partition is counted once, and found again by the next write.
    write(&db, 1_000, 0, &value, 3).unwrap();
    write(&db, 1_000, 0, &value, 4).unwrap();
    assert_eq!(db.table_stats(T).unwrap().partitions, 501);
}

#[test]
fn writes_before_the_build_completes_are_kept() {
    let (_dir, db) = reopened_with(20_000);
    let value = [b'v'; 100];
    // Racing the builder: new partitions and overwrites of stored ones.
    for pk in 19_000..21_000 {
        write(&db, pk, 0, &value, 2).unwrap();
    }
    wait_complete(&db);
    for pk in 19_000..21_000 {
        write(&db, pk, 0, &value, 3).unwrap();
    }
    assert_eq!(db.table_stats(T).unwrap().partitions, 21_000);
}

#[test]
fn truncate_leaves_a_complete_filter() {
    let (_dir, db) = reopened_with(20_000);
    let value = [b'v'; 100];
    db.truncate(T).unwrap();
    assert!(db.table(T).unwrap().ring.filter.is_complete());
    write(&db, 5, 0, &value, 2).unwrap();
    write(&db, 5, 0, &value, 3).unwrap();
    let stats = db.table_stats(T).unwrap();
    assert_eq!(stats.partitions, 1);
    assert_eq!(
        db.read_partition(T, &[int(5)], &Slice::default())
            .unwrap()
            .rows
            .len(),
        1
    );
}
