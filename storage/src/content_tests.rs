//! Content flags: reads skip head and row-deletion lookups only while a table never stored
//! such items, and the flags survive a reopen.

use std::collections::BTreeMap;

use cql::types::{DataType, NativeType as N};

use crate::content::{HEAD, ROW_DELETIONS, SEPARATE_CELLS};
use crate::tests::{insert_row, int, T};
use crate::*;

fn point_layout() -> TableLayout {
    let mut columns = BTreeMap::new();
    columns.insert(1, DataType::TEXT);
    TableLayout {
        partition_key: vec![N::Int.into()],
        clustering: vec![(N::Int.into(), Order::Asc)],
        columns,
        point_row_columns: Some(vec![1]),
        ..Default::default()
    }
}

fn open(dir: &std::path::Path) -> Storage {
    let db = Storage::open(dir, StorageOptions::default()).unwrap();
    db.create_table(T, point_layout()).unwrap();
    db
}

fn insert(db: &Storage, pk: i32, ck: i32, ts: i64) {
    db.apply(T, &insert_row(int(pk), int(ck), 1, b"v", ts))
        .unwrap();
}

/// Reads one row through the point-lookup path; true when it is live.
fn row_exists(db: &Storage, pk: i32, ck: i32) -> bool {
    let bound = ClusteringBound::Inclusive(vec![int(ck)]);
    let slice = Slice {
        start: bound.clone(),
        end: bound,
        ..Default::default()
    };
    let table = db.table(T).unwrap();
    assert!(crate::read::single_row(&table, &slice).is_some());
    !db.read_partition(T, &[int(pk)], &slice)
        .unwrap()
        .rows
        .is_empty()
}

fn flags(db: &Storage) -> (bool, bool) {
    let table = db.table(T).unwrap();
    let c = &table.ring.content;
    (c.may_have(HEAD), c.may_have(ROW_DELETIONS))
}

#[test]
fn deletions_set_sticky_flags_that_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        for (pk, ck) in [(1, 1), (1, 2), (2, 1), (3, 1)] {
            insert(&db, pk, ck, 1);
        }
        assert_eq!(flags(&db), (false, false), "inserts set no flag");
        assert!(row_exists(&db, 1, 1));

        let row_delete = Mutation {
            partition_key: vec![int(1)],
            rows: vec![RowWrite {
                clustering: vec![int(1)],
                deletion: Some(Deletion { timestamp: 2 }),
                ..Default::default()
            }],
            ..Default::default()
        };
        db.apply(T, &row_delete).unwrap();
        assert_eq!(flags(&db), (false, true));
        assert!(!row_exists(&db, 1, 1), "the row deletion is honoured");
        assert!(row_exists(&db, 1, 2));

        let partition_delete = Mutation {
            partition_key: vec![int(2)],
            partition_deletion: Some(Deletion { timestamp: 2 }),
            ..Default::default()
        };
        db.apply(T, &partition_delete).unwrap();
        assert_eq!(flags(&db), (true, true));
        assert!(!row_exists(&db, 2, 1), "the partition deletion is honoured");
    }
    let db = open(dir.path());
    assert_eq!(flags(&db), (true, true), "flags are persisted");
    assert!(!row_exists(&db, 1, 1));
    assert!(!row_exists(&db, 2, 1));
    assert!(row_exists(&db, 1, 2));
    assert!(row_exists(&db, 3, 1));
}

#[test]
fn a_table_without_deletions_keeps_its_flags_clear_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        insert(&db, 1, 1, 1);
    }
    let db = open(dir.path());
    assert_eq!(flags(&db), (false, false));
    assert!(row_exists(&db, 1, 1));
    assert!(!row_exists(&db, 1, 2));
    assert!(!row_exists(&db, 9, 1), "an absent partition reads empty");
}

#[test]
fn untracked_tables_assume_every_flag() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        insert(&db, 1, 1, 1);
        // A data directory from before the flags existed has no `tracked` key.
        let mut k = crate::content::ContentFlags::meta_prefix(T);
        k.extend_from_slice(b"tracked");
        db.inner.meta.remove(k).unwrap();
    }
    let db = open(dir.path());
    assert_eq!(flags(&db), (true, true));
    assert!(row_exists(&db, 1, 1));
}

#[test]
fn tables_tracked_before_bundles_assume_separate_cells() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        // An UPDATE-only row: its cell is a separate item, with no liveness item.
        let update = Mutation {
            partition_key: vec![int(1)],
            rows: vec![RowWrite {
                clustering: vec![int(1)],
                columns: vec![ColumnWrite {
                    column: 1,
                    op: ColumnOp::Set {
                        value: b"v".to_vec(),
                        timestamp: 1,
                        ttl: None,
                    },
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        db.apply(T, &update).unwrap();
        // What a data directory from before row bundles holds: the table is tracked, but
        // neither its separate cells nor that they are tracked.
        for name in ["separate_cells", "cells_tracked"] {
            let mut k = crate::content::ContentFlags::meta_prefix(T);
            k.extend_from_slice(name.as_bytes());
            db.inner.meta.remove(k).unwrap();
        }
    }
    let db = open(dir.path());
    let table = db.table(T).unwrap();
    assert!(table.ring.content.may_have(SEPARATE_CELLS));
    assert!(row_exists(&db, 1, 1), "the separate cell is looked up");
}
