//! Partitions without a size cell (a new partition without head items gets none): reads,
//! reconciliation after a reopen, the exact cap once they grow, and head writes.

use std::time::{Duration, Instant};

use crate::key;
use crate::partition_filter_tests::{open, write, CAP};
use crate::tests::{int, T};
use crate::*;

/// The value of column 1 in each row of partition `pk`, in clustering order.
fn values(db: &Storage, pk: i32) -> Vec<Vec<u8>> {
    db.read_partition(T, &[int(pk)], &Slice::default())
        .unwrap()
        .rows
        .into_iter()
        .map(|r| match r.cells.get(&1) {
            Some(ColumnValue::Simple(v)) => v.value.clone(),
            other => panic!("column 1: {other:?}"),
        })
        .collect()
}

fn delete_partition(db: &Storage, pk: i32, timestamp: i64) {
    let deletion = Mutation {
        partition_key: vec![int(pk)],
        partition_deletion: Some(Deletion { timestamp }),
        ..Default::default()
    };
    db.apply(T, &deletion).unwrap();
}

fn prefix(pk: i32) -> Vec<u8> {
    let serialized = crate::token::serialize_partition_key(&[int(pk).as_slice()]);
    key::partition_prefix(crate::token::token(&serialized), &serialized)
}

/// The partition's stored size cell (size, flags), if it has one, and the bytes of its other
/// items.
fn size_cell_and_bytes(db: &Storage, pk: i32) -> (Option<(u64, u8)>, u64) {
    let prefix = prefix(pk);
    let cell_key = key::size_cell_key(&prefix);
    let view = db.table(T).unwrap().ring.current();
    let ks = &view.parts[0].keyspace;
    let cell = ks
        .get(&cell_key)
        .unwrap()
        .map(|v| key::decode_size_cell(&v).unwrap());
    let bytes = ks
        .prefix(&prefix)
        .map(|g| g.into_inner().unwrap())
        .filter(|(k, _)| **k != *cell_key)
        .map(|(k, v)| (k.len() + v.len()) as u64)
        .sum();
    (cell, bytes)
}

#[test]
fn a_one_write_partition_has_no_size_cell_until_its_size_changes() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    write(&db, 1, 0, &[b'a'; 100], 1).unwrap();
    let (cell, first) = size_cell_and_bytes(&db, 1);
    assert_eq!(cell, None);
    assert_eq!(db.table_stats(T).unwrap().bytes, first);
    // A same-size overwrite leaves it without one; a second row gives it an exact one.
    write(&db, 1, 0, &[b'b'; 100], 2).unwrap();
    assert_eq!(size_cell_and_bytes(&db, 1), (None, first));
    write(&db, 1, 1, &[b'c'; 100], 3).unwrap();
    let (cell, bytes) = size_cell_and_bytes(&db, 1);
    assert_eq!(cell, Some((bytes, 0)));
    assert_eq!(bytes, 2 * first);
    let stats = db.table_stats(T).unwrap();
    assert_eq!(stats.partitions, 1);
    let cell_bytes = (key::size_cell_key(&prefix(1)).len() + 9) as u64;
    assert_eq!(
        stats.bytes,
        bytes + cell_bytes,
        "the table counts the size cell too"
    );
    assert_eq!(values(&db, 1), vec![vec![b'b'; 100], vec![b'c'; 100]]);
}

#[test]
fn growth_from_one_write_is_capped_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    write(&db, 7, 0, &[b'v'; 100], 1).unwrap();
    let (_, row) = size_cell_and_bytes(&db, 7);
    let mut ck = 1;
    let err = loop {
        match write(&db, 7, ck, &[b'v'; 100], 1) {
            Ok(()) => ck += 1,
            Err(e) => break e,
        }
        assert!(ck < 100, "never capped");
    };
    assert!(
        matches!(err, StorageError::PartitionTooLarge { .. }),
        "{err}"
    );
    let rows = ck as u64;
    assert!(
        rows * row <= CAP && CAP < (rows + 1) * row,
        "{rows} rows of {row}"
    );
    assert_eq!(
        size_cell_and_bytes(&db, 7),
        (Some((rows * row, 0)), rows * row)
    );
}

#[test]
fn a_reopened_filter_knows_partitions_without_size_cells() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        for pk in 0..300 {
            write(&db, pk, 0, b"newer", 10).unwrap();
        }
        assert!((0..300).all(|pk| size_cell_and_bytes(&db, pk).0.is_none()));
        db.flush_table(T).unwrap();
    }
    let db = open(dir.path());
    let started = Instant::now();
    while !db.table(T).unwrap().ring.filter.is_complete() {
        assert!(started.elapsed() < Duration::from_secs(30), "never built");
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = db.table_stats(T).unwrap();
    assert_eq!(before.partitions, 300);
    // Older writes must lose to what is stored: the filter may not call these partitions
    // new (which would skip the lookup that reconciles them).
    for pk in 0..300 {
        write(&db, pk, 0, b"older", 5).unwrap();
    }
    assert!((0..300).all(|pk| values(&db, pk) == vec![b"newer".to_vec()]));
    assert_eq!(db.table_stats(T).unwrap(), before);
}

#[test]
fn a_partition_without_a_size_cell_reads_in_a_table_with_heads() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    // Partition 1 gets a head (a partition deletion), so reads of the table look for heads.
    delete_partition(&db, 1, 5);
    write(&db, 1, 0, b"after the deletion", 6).unwrap();
    write(&db, 1, 1, b"shadowed", 4).unwrap();
    assert!(
        matches!(size_cell_and_bytes(&db, 1).0, Some((_, flags)) if flags & key::SIZE_FLAG_HEAD != 0)
    );
    write(&db, 2, 0, b"no head", 1).unwrap();
    assert_eq!(size_cell_and_bytes(&db, 2).0, None);
    assert_eq!(values(&db, 1), vec![b"after the deletion".to_vec()]);
    assert_eq!(values(&db, 2), vec![b"no head".to_vec()]);
    // A head written later to a partition without a cell gives it one, sized exactly.
    let (_, before) = size_cell_and_bytes(&db, 2);
    delete_partition(&db, 2, 2);
    let (cell, after) = size_cell_and_bytes(&db, 2);
    assert!(after > before);
    assert_eq!(cell, Some((after, key::SIZE_FLAG_HEAD)));
    assert!(values(&db, 2).is_empty(), "the deletion shadows the row");
    assert_eq!(db.table_stats(T).unwrap().partitions, 2);
}
