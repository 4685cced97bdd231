//! Row bundles: INSERTs stored as one item keep Cassandra's per-cell reconciliation when
//! later writes overlap them (newer, older, tied, partial, UPDATE, null, TTL), through both the
//! point-lookup and the range read, before and after a flush and a reopen.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use cql::types::{DataType, NativeType as N};

use crate::content::{BUNDLES, SEPARATE_CELLS};
use crate::tests::{int, open_clocked, T};
use crate::*;

fn layout() -> TableLayout {
    let mut columns = BTreeMap::new();
    columns.insert(1, DataType::TEXT);
    columns.insert(2, DataType::TEXT);
    TableLayout {
        partition_key: vec![N::Int.into()],
        clustering: vec![(N::Int.into(), Order::Asc)],
        columns,
        point_row_columns: Some(vec![1, 2]),
        ..Default::default()
    }
}

fn set(column: u32, value: &str, ts: i64, ttl: Option<u32>) -> ColumnWrite {
    ColumnWrite {
        column,
        op: ColumnOp::Set {
            value: value.as_bytes().to_vec(),
            timestamp: ts,
            ttl,
        },
    }
}

fn write(db: &Storage, ck: i32, liveness: Option<(i64, Option<u32>)>, columns: Vec<ColumnWrite>) {
    let row = RowWrite {
        clustering: vec![int(ck)],
        liveness: liveness.map(|(timestamp, ttl)| Liveness { timestamp, ttl }),
        columns,
        ..Default::default()
    };
    let m = Mutation {
        partition_key: vec![int(1)],
        rows: vec![row],
        ..Default::default()
    };
    db.apply(T, &m).unwrap();
}

/// An INSERT of `values` (column, text) at `ts`.
fn insert(db: &Storage, ck: i32, ts: i64, ttl: Option<u32>, values: &[(u32, &str)]) {
    let columns = values.iter().map(|(c, v)| set(*c, v, ts, ttl)).collect();
    write(db, ck, Some((ts, ttl)), columns);
}

/// The row as (live, column 1, column 2), read by point lookups and by a range read, which
/// must agree.
fn row(db: &Storage, ck: i32) -> (bool, Option<String>, Option<String>) {
    let read = |start: ClusteringBound, end: ClusteringBound| {
        let slice = Slice {
            start,
            end,
            ..Default::default()
        };
        let p = db.read_partition(T, &[int(1)], &slice).unwrap();
        let row = p.rows.into_iter().find(|r| r.clustering == vec![int(ck)]);
        let text = |r: &Row, c: u32| match r.cells.get(&c) {
            Some(ColumnValue::Simple(v)) => Some(String::from_utf8(v.value.clone()).unwrap()),
            _ => None,
        };
        match row {
            Some(r) => (true, text(&r, 1), text(&r, 2)),
            None => (false, None, None),
        }
    };
    let point = read(
        ClusteringBound::Inclusive(vec![int(ck)]),
        ClusteringBound::Inclusive(vec![int(ck)]),
    );
    let range = read(ClusteringBound::Unbounded, ClusteringBound::Unbounded);
    assert_eq!(point, range, "point and range reads of row {ck} disagree");
    point
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

#[test]
fn bundled_rows_reconcile_per_cell() {
    let (_dir, db, clock) = open_clocked(SyncPolicy::default());
    db.create_table(T, layout()).unwrap();
    let flags = |db: &Storage| {
        let t = db.table(T).unwrap();
        (
            t.ring.content.may_have(BUNDLES),
            t.ring.content.may_have(SEPARATE_CELLS),
        )
    };

    // Newer INSERTs of a superset replace the bundle; older ones lose whole; ties pick the
    // greater value per cell.
    insert(&db, 1, 10, None, &[(1, "a"), (2, "b")]);
    insert(&db, 1, 20, None, &[(1, "c"), (2, "d")]);
    insert(&db, 1, 15, None, &[(1, "x"), (2, "y")]);
    assert_eq!(row(&db, 1), (true, s("c"), s("d")));
    assert_eq!(flags(&db), (true, false), "these inserts keep rows bundled");
    let p = db
        .read_partition(
            T,
            &[int(1)],
            &Slice {
                start: ClusteringBound::Inclusive(vec![int(1)]),
                end: ClusteringBound::Inclusive(vec![int(1)]),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(p.items_read, 1, "a bundled row is one lookup");
    insert(&db, 2, 10, None, &[(1, "b"), (2, "a")]);
    insert(&db, 2, 10, None, &[(1, "a"), (2, "b")]);
    assert_eq!(row(&db, 2), (true, s("b"), s("b")));

    // A newer INSERT of fewer columns keeps the older cell of the other column.
    insert(&db, 3, 10, None, &[(1, "a"), (2, "b")]);
    insert(&db, 3, 20, None, &[(1, "c")]);
    assert_eq!(row(&db, 3), (true, s("c"), s("b")));
    // An older INSERT with a column the row lacks adds only that column.
    insert(&db, 4, 20, None, &[(1, "a")]);
    insert(&db, 4, 10, None, &[(1, "z"), (2, "w")]);
    assert_eq!(row(&db, 4), (true, s("a"), s("w")));
    assert_eq!(
        flags(&db),
        (true, false),
        "rows merge cell by cell in their item"
    );

    // UPDATE and null over a bundle, then an INSERT between the two timestamps.
    insert(&db, 5, 10, None, &[(1, "a"), (2, "b")]);
    write(&db, 5, None, vec![set(1, "u", 15, None)]);
    assert_eq!(row(&db, 5), (true, s("u"), s("b")));
    insert(&db, 5, 12, None, &[(1, "i"), (2, "j")]);
    assert_eq!(row(&db, 5), (true, s("u"), s("j")));
    write(
        &db,
        5,
        None,
        vec![ColumnWrite {
            column: 2,
            op: ColumnOp::Delete { timestamp: 13 },
        }],
    );
    assert_eq!(row(&db, 5), (true, s("u"), None));

    // TTL: the bundle's cells expire with its marker; a later UPDATE outlives them.
    insert(&db, 6, 10, Some(5), &[(1, "a"), (2, "b")]);
    write(&db, 6, None, vec![set(2, "kept", 11, None)]);
    assert_eq!(row(&db, 6), (true, s("a"), s("kept")));
    clock.fetch_add(6, Ordering::SeqCst);
    assert_eq!(row(&db, 6), (true, None, s("kept")));
    insert(&db, 7, 10, Some(5), &[(1, "a")]);
    clock.fetch_add(6, Ordering::SeqCst);
    assert_eq!(row(&db, 7), (false, None, None));

    // Rows written by UPDATEs alone have no marker: they live while a cell does.
    write(
        &db,
        8,
        None,
        vec![set(1, "u", 10, None), set(2, "v", 10, Some(5))],
    );
    assert_eq!(row(&db, 8), (true, s("u"), s("v")));
    write(
        &db,
        8,
        None,
        vec![ColumnWrite {
            column: 1,
            op: ColumnOp::Delete { timestamp: 11 },
        }],
    );
    assert_eq!(row(&db, 8), (true, None, s("v")));
    clock.fetch_add(6, Ordering::SeqCst);
    assert_eq!(row(&db, 8), (false, None, None), "no marker, no live cell");
    insert(&db, 8, 9, None, &[(1, "old"), (2, "w")]);
    // Column 2's expired cell (timestamp 10) still beats the INSERT's older one.
    assert_eq!(row(&db, 8), (true, None, None), "the marker alone keeps it");

    // However written, every row is still its one item.
    assert_eq!(flags(&db), (true, false));
    for ck in 1..=8 {
        let slice = Slice {
            start: ClusteringBound::Inclusive(vec![int(ck)]),
            end: ClusteringBound::Inclusive(vec![int(ck)]),
            ..Default::default()
        };
        let p = db.read_partition(T, &[int(1)], &slice).unwrap();
        assert_eq!(p.items_read, 1, "row {ck}");
    }
    let expected: Vec<_> = (1..=8).map(|ck| row(&db, ck)).collect();
    db.persist().unwrap();
    let after: Vec<_> = (1..=8).map(|ck| row(&db, ck)).collect();
    assert_eq!(expected, after);
}

#[test]
fn bundles_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Storage::open(dir.path(), StorageOptions::default()).unwrap();
        db.create_table(T, layout()).unwrap();
        insert(&db, 1, 10, None, &[(1, "a"), (2, "b")]);
        insert(&db, 2, 10, None, &[(1, "c")]);
    }
    let db = Storage::open(dir.path(), StorageOptions::default()).unwrap();
    db.create_table(T, layout()).unwrap();
    assert_eq!(row(&db, 1), (true, s("a"), s("b")));
    assert_eq!(row(&db, 2), (true, s("c"), None));
}

/// An overwrite as long as the row it replaces leaves the partition's size as it is; the sizes
/// stay exact anyway: the table's bytes do not move, a longer overwrite adds exactly its
/// growth (and the partition's size cell, which its first write did not store), and after a
/// reopen the logical-partition cap sees the true size.
#[test]
fn same_size_overwrite_keeps_sizes_exact() {
    let dir = tempfile::tempdir().unwrap();
    let open = |cap: u64| {
        let options = StorageOptions {
            logical_partition_max_bytes: cap,
            ..Default::default()
        };
        let db = Storage::open(dir.path(), options).unwrap();
        db.create_table(T, layout()).unwrap();
        db
    };
    let bytes = |db: &Storage| db.table_stats(T).unwrap().bytes;
    // The table's bytes count the size cell itself; the logical size does not.
    let serialized = crate::token::serialize_partition_key(&[int(1).as_slice()]);
    let prefix = crate::key::partition_prefix(crate::token::token(&serialized), &serialized);
    let size_cell = (crate::key::size_cell_key(&prefix).len() + 9) as u64;
    let size = {
        let db = open(1 << 20);
        insert(&db, 1, 10, None, &[(1, "aaaa"), (2, "bbbb")]);
        let first = bytes(&db);
        insert(&db, 1, 11, None, &[(1, "cccc"), (2, "dddd")]);
        assert_eq!(bytes(&db), first, "same-size overwrite");
        assert_eq!(row(&db, 1), (true, s("cccc"), s("dddd")));
        insert(&db, 1, 12, None, &[(1, "eeeeeeee"), (2, "ffff")]);
        assert_eq!(
            bytes(&db),
            first + 4 + size_cell,
            "overwrite 4 bytes longer"
        );
        bytes(&db)
    };
    // Reopened with a cap of exactly the partition's logical size: a same-size overwrite
    // still fits, one byte more does not.
    let db = open(size - size_cell);
    insert(&db, 1, 13, None, &[(1, "gggggggg"), (2, "hhhh")]);
    let err = db
        .apply(
            T,
            &Mutation {
                partition_key: vec![int(1)],
                rows: vec![RowWrite {
                    clustering: vec![int(1)],
                    liveness: Some(Liveness {
                        timestamp: 14,
                        ttl: None,
                    }),
                    columns: vec![set(1, "iiiiiiiii", 14, None), set(2, "jjjj", 14, None)],
                    ..Default::default()
                }],
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(err, StorageError::PartitionTooLarge { .. }),
        "{err}"
    );
    assert_eq!(row(&db, 1), (true, s("gggggggg"), s("hhhh")));
}

/// A write that knows its partition is new (the partition filter) and one that must look
/// everything up (an incomplete filter: items, size cell, and a sum of the partition's items
/// when it has no cell) store the same thing: the same sequence of INSERTs, UPDATEs, nulls
/// and deletions on two tables reads back the same rows with the same byte and partition
/// counts.
#[test]
fn writes_with_and_without_the_partition_filter_agree() {
    const U: TableId = TableId(0xabd);
    let (_dir, db, _clock) = open_clocked(SyncPolicy::default());
    db.create_table(T, layout()).unwrap();
    db.create_table(U, layout()).unwrap();
    let text = |i: i64| "x".repeat(1 + (i % 5) as usize);
    for i in 0..200i64 {
        let pk = (i * 7) % 13;
        let ck = (i % 3) as i32;
        let row = |liveness: bool, columns: Vec<ColumnWrite>| RowWrite {
            clustering: vec![int(ck)],
            liveness: liveness.then_some(Liveness {
                timestamp: i,
                ttl: None,
            }),
            columns,
            ..Default::default()
        };
        let mut m = Mutation {
            partition_key: vec![int(pk as i32)],
            ..Default::default()
        };
        match i % 7 {
            // UPDATE of one column, and a null
            3 => m.rows.push(row(false, vec![set(1, &text(i), i, None)])),
            5 => m.rows.push(row(
                false,
                vec![ColumnWrite {
                    column: 2,
                    op: ColumnOp::Delete { timestamp: i },
                }],
            )),
            6 if i % 3 == 0 => m.rows.push(RowWrite {
                clustering: vec![int(ck)],
                deletion: Some(Deletion { timestamp: i }),
                ..Default::default()
            }),
            // INSERTs, often as long as the row they overwrite
            _ => m.rows.push(row(
                true,
                vec![set(1, &text(i / 10), i, None), set(2, "yy", i, None)],
            )),
        }
        for (table, complete) in [(T, true), (U, false)] {
            db.table(table).unwrap().ring.filter.set_complete(complete);
            db.apply(table, &m).unwrap();
        }
    }
    let read = |table: TableId| {
        (0..13)
            .map(|pk| {
                db.read_partition(table, &[int(pk)], &Slice::default())
                    .unwrap()
                    .rows
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(read(T), read(U));
    let (t, u) = (db.table_stats(T).unwrap(), db.table_stats(U).unwrap());
    assert_eq!((t.bytes, t.partitions), (u.bytes, u.partitions));
    assert!(t.bytes > 0 && t.partitions == 13);
}

/// A row item past `bundle::MERGE_MAX` is not rewritten for a small write: the write explodes
/// it and the table keeps one item per cell from then on, reading alike before and after.
#[test]
fn a_row_too_large_to_merge_into_turns_its_table_to_one_item_per_cell() {
    let (_dir, db, _clock) = open_clocked(SyncPolicy::default());
    db.create_table(T, layout()).unwrap();
    let separate = |db: &Storage| db.table(T).unwrap().ring.content.may_have(SEPARATE_CELLS);
    let big = "x".repeat(crate::bundle::MERGE_MAX + 1);
    insert(&db, 1, 9, None, &[(1, &big), (2, "b")]);
    insert(&db, 1, 10, None, &[(1, &big), (2, "b")]);
    insert(&db, 2, 10, None, &[(1, "a"), (2, "b")]);
    write(&db, 2, None, vec![set(2, "u", 11, None)]);
    assert!(
        !separate(&db),
        "a new row is one item whatever its size; small rows merge"
    );
    write(&db, 1, None, vec![set(2, "c", 11, None)]);
    assert!(separate(&db));
    assert_eq!(row(&db, 1), (true, s(&big), s("c")));
    assert_eq!(row(&db, 2), (true, s("a"), s("u")));
    // Later writes of the table, large or small rows, store one item per cell.
    write(&db, 2, None, vec![set(1, "v", 12, None)]);
    insert(&db, 3, 10, None, &[(1, "a"), (2, "b")]);
    write(
        &db,
        3,
        None,
        vec![set(1, "w", 9, None), set(2, "z", 11, None)],
    );
    assert_eq!(row(&db, 2), (true, s("v"), s("u")));
    assert_eq!(row(&db, 3), (true, s("a"), s("z")));
    let items = |ck: i32| {
        let slice = Slice {
            start: ClusteringBound::Inclusive(vec![int(ck)]),
            end: ClusteringBound::Inclusive(vec![int(ck)]),
            ..Default::default()
        };
        db.read_partition(T, &[int(1)], &slice).unwrap().items_read
    };
    assert_eq!(items(3), 3, "a marker and two cells");
    db.persist().unwrap();
    assert_eq!(row(&db, 1), (true, s(&big), s("c")));
    assert_eq!(row(&db, 2), (true, s("v"), s("u")));
}

/// A write into a row item leaves out what of it is past gc-grace (as compaction would):
/// cells expired or deleted longer ago than that, even while the row's marker lives.
#[test]
fn writes_shed_what_is_past_gc_grace() {
    let (_dir, db, clock) = open_clocked(SyncPolicy::default());
    db.create_table(
        T,
        TableLayout {
            gc_grace_seconds: 100,
            ..layout()
        },
    )
    .unwrap();
    let stored_cells = |db: &Storage| {
        let ks = db.table(T).unwrap().keyspace();
        let items: Vec<_> = ks
            .iter()
            .map(|kv| kv.into_inner().unwrap().1)
            .filter_map(|v| crate::cell::StoredCell::decode(&v).ok())
            .filter(crate::bundle::has_cells)
            .collect();
        assert_eq!(items.len(), 1, "one row item");
        crate::bundle::RowItem::decode(&items[0])
            .unwrap()
            .cells
            .len()
    };
    insert(&db, 1, 10, None, &[(1, "a")]);
    write(&db, 1, None, vec![set(2, "t", 11, Some(5))]);
    assert_eq!(stored_cells(&db), 2);
    clock.fetch_add(50, Ordering::SeqCst);
    write(&db, 1, None, vec![set(1, "b", 12, None)]);
    assert_eq!(stored_cells(&db), 2, "expired, but within gc-grace");
    clock.fetch_add(100, Ordering::SeqCst);
    write(&db, 1, None, vec![set(1, "c", 13, None)]);
    assert_eq!(stored_cells(&db), 1, "past gc-grace: left out");
    assert_eq!(row(&db, 1), (true, s("c"), None));
}
