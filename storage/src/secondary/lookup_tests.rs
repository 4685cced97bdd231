//! Index lookups against the engine: entries written with rows, built for rows stored before
//! the index, pages that match one whole page, ranges, element targets and a truncate.

use std::time::{Duration, Instant};

use crate::tests::{insert_row, int, layout, open_clocked};
use crate::*;

const T: TableId = TableId(77);

fn spec(column: u32, target: IndexTarget, place: IndexPlace) -> IndexSpec {
    IndexSpec {
        column,
        target,
        place,
    }
}

fn wait_ready(db: &Storage) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while db.inner.indexes.backlog() > 0 {
        assert!(Instant::now() < deadline, "index build did not finish");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every (partition, clustering) an index scan returns, page by page of `limit` rows.
fn scan_all(db: &Storage, lookup: &IndexLookup, limit: usize) -> Vec<(i32, i32)> {
    let (mut out, mut cursor) = (Vec::new(), None);
    loop {
        let page = db
            .index_scan(T, lookup, TokenRange::FULL, limit, cursor.as_ref())
            .unwrap();
        for p in &page.partitions {
            let pk = i32::from_be_bytes(p.partition_key[0].clone().try_into().unwrap());
            for r in &p.rows {
                let ck = i32::from_be_bytes(r.clustering[0].clone().try_into().unwrap());
                out.push((pk, ck));
            }
        }
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

fn text_eq(v: &str) -> IndexLookup {
    IndexLookup {
        index: spec(1, IndexTarget::Simple, IndexPlace::Regular),
        values: IndexValues::Eq(v.as_bytes().to_vec()),
    }
}

#[test]
fn built_entries_and_written_entries_name_the_rows_in_token_order() {
    let (_dir, db, _clock) = open_clocked(SyncPolicy::default());
    db.create_table(T, layout(Order::Asc)).unwrap();
    for k in 0..40 {
        for c in 0..3 {
            let v = if (k + c) % 4 == 0 { "a" } else { "b" };
            db.apply(T, &insert_row(int(k), int(c), 1, v.as_bytes(), 10))
                .unwrap();
        }
    }
    let mut with_index = layout(Order::Asc);
    with_index.indexes = vec![spec(1, IndexTarget::Simple, IndexPlace::Regular)];
    db.create_table(T, with_index).unwrap();
    wait_ready(&db);
    for k in 40..60 {
        db.apply(T, &insert_row(int(k), int(0), 1, b"a", 10))
            .unwrap();
    }
    let whole = scan_all(&db, &text_eq("a"), 10_000);
    let mut want: Vec<(i32, i32)> = (0..40)
        .flat_map(|k| (0..3).map(move |c| (k, c)))
        .filter(|(k, c)| (k + c) % 4 == 0)
        .chain((40..60).map(|k| (k, 0)))
        .collect();
    let mut sorted = whole.clone();
    sorted.sort();
    want.sort();
    assert_eq!(sorted, want);
    // Token order: the order of a full scan restricted to the same rows.
    let scanned: Vec<(i32, i32)> = {
        let page = db.scan(T, TokenRange::FULL, 10_000, None).unwrap();
        page.partitions
            .iter()
            .flat_map(|p| {
                let pk = i32::from_be_bytes(p.partition_key[0].clone().try_into().unwrap());
                p.rows.iter().map(move |r| {
                    (
                        pk,
                        i32::from_be_bytes(r.clustering[0].clone().try_into().unwrap()),
                    )
                })
            })
            .filter(|r| want.contains(r))
            .collect()
    };
    assert_eq!(whole, scanned);
    for limit in [1, 2, 7] {
        assert_eq!(scan_all(&db, &text_eq("a"), limit), whole, "limit {limit}");
    }
    // The index reads what it names, not the table: an entry and an item (the INSERT's
    // bundled row) per row named, and the entry past the last.
    let page = db
        .index_scan(T, &text_eq("a"), TokenRange::FULL, 10_000, None)
        .unwrap();
    let all = db.scan(T, TokenRange::FULL, 10_000, None).unwrap();
    let named = whole.len() as u64;
    assert!(
        page.items_read <= 2 * named + 1 && page.items_read < all.items_read,
        "{} for {named} rows vs {}",
        page.items_read,
        all.items_read
    );
}

#[test]
fn ranges_elements_and_truncate() {
    let (_dir, db, _clock) = open_clocked(SyncPolicy::default());
    let mut l = layout(Order::Asc);
    l.indexes = vec![
        spec(9, IndexTarget::Simple, IndexPlace::Regular),
        spec(4, IndexTarget::Keys, IndexPlace::Regular),
        spec(0, IndexTarget::Simple, IndexPlace::Clustering(0)),
    ];
    db.create_table(T, l).unwrap();
    wait_ready(&db);
    for k in 0..30 {
        let mut m = insert_row(int(k), int(k % 3), 9, &int(k - 15), 10);
        m.rows[0].columns.push(ColumnWrite {
            column: 4,
            op: ColumnOp::SetElement {
                key: int(k % 5),
                value: b"x".to_vec(),
                timestamp: 10,
                ttl: None,
            },
        });
        db.apply(T, &m).unwrap();
    }
    let range = |lower: Option<(i32, bool)>, upper: Option<(i32, bool)>| IndexLookup {
        index: spec(9, IndexTarget::Simple, IndexPlace::Regular),
        values: IndexValues::Range {
            lower: lower.map(|(v, i)| (int(v), i)),
            upper: upper.map(|(v, i)| (int(v), i)),
        },
    };
    let keys = |rows: Vec<(i32, i32)>| {
        let mut k: Vec<i32> = rows.into_iter().map(|(k, _)| k).collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(scan_all(&db, &range(Some((-2, false)), Some((3, true))), 2)),
        (14..=18).collect::<Vec<_>>()
    );
    assert_eq!(
        keys(scan_all(&db, &range(None, Some((-13, false))), 3)),
        vec![0, 1]
    );
    assert_eq!(
        keys(scan_all(&db, &range(Some((13, true)), None), 1)),
        vec![28, 29]
    );
    let map_key = IndexLookup {
        index: spec(4, IndexTarget::Keys, IndexPlace::Regular),
        values: IndexValues::Eq(int(2)),
    };
    assert_eq!(keys(scan_all(&db, &map_key, 4)), vec![2, 7, 12, 17, 22, 27]);
    let clustering = IndexLookup {
        index: spec(0, IndexTarget::Simple, IndexPlace::Clustering(0)),
        values: IndexValues::Eq(int(1)),
    };
    assert_eq!(
        keys(scan_all(&db, &clustering, 5)),
        (0..30).filter(|k| k % 3 == 1).collect::<Vec<_>>()
    );
    db.truncate(T).unwrap();
    assert!(scan_all(&db, &map_key, 4).is_empty());
    let left = db.inner.indexes.ks.prefix(T.0.to_be_bytes()).count();
    assert_eq!(left, 0, "truncate leaves no entry");
}

#[test]
fn a_lookup_before_the_build_is_the_scan() {
    let (_dir, db, _clock) = open_clocked(SyncPolicy::default());
    db.create_table(T, layout(Order::Asc)).unwrap();
    db.apply(T, &insert_row(int(1), int(1), 1, b"a", 10))
        .unwrap();
    db.apply(T, &insert_row(int(2), int(1), 1, b"b", 10))
        .unwrap();
    // No index: every row comes back, for the caller to filter.
    assert_eq!(scan_all(&db, &text_eq("a"), 10).len(), 2);
}

#[test]
fn a_lookup_purges_the_entries_its_rows_no_longer_hold() {
    let (_dir, db, clock) = open_clocked(SyncPolicy::default());
    let mut l = layout(Order::Asc);
    l.indexes = vec![spec(1, IndexTarget::Simple, IndexPlace::Regular)];
    db.create_table(T, l).unwrap();
    wait_ready(&db);
    for k in 0..20 {
        db.apply(T, &insert_row(int(k), int(0), 1, b"a", 10))
            .unwrap();
    }
    // Overwritten, deleted, expired: 10 entries of "a" go stale.
    for k in 0..5 {
        db.apply(T, &insert_row(int(k), int(0), 1, b"b", 20))
            .unwrap();
    }
    for k in 5..8 {
        let m = Mutation {
            partition_key: vec![int(k)],
            partition_deletion: Some(Deletion { timestamp: 30 }),
            ..Mutation::default()
        };
        db.apply(T, &m).unwrap();
    }
    for k in 8..10 {
        let mut m = insert_row(int(k), int(0), 1, b"a", 40);
        m.rows[0].liveness = Some(Liveness {
            timestamp: 40,
            ttl: Some(5),
        });
        if let ColumnOp::Set { ttl, .. } = &mut m.rows[0].columns[0].op {
            *ttl = Some(5);
        }
        db.apply(T, &m).unwrap();
    }
    clock.fetch_add(10, std::sync::atomic::Ordering::SeqCst);
    let entries_of_a = || {
        let mut base = T.0.to_be_bytes().to_vec();
        base.extend_from_slice(&spec(1, IndexTarget::Simple, IndexPlace::Regular).tag());
        crate::key::encode_value(&cql::types::DataType::TEXT, b"a", &mut base).unwrap();
        db.inner.indexes.ks.prefix(base).count()
    };
    assert_eq!(entries_of_a(), 20);
    let first: Vec<i32> = scan_all(&db, &text_eq("a"), 3)
        .into_iter()
        .map(|r| r.0)
        .collect();
    // The overwritten rows are live and come back for the caller to check; the gone do not.
    assert_eq!(first.len(), 15);
    assert_eq!(entries_of_a(), 10);
    let mut second: Vec<i32> = scan_all(&db, &text_eq("a"), 3)
        .into_iter()
        .map(|r| r.0)
        .collect();
    second.sort();
    assert_eq!(second, (10..20).collect::<Vec<_>>());
}

#[test]
fn an_imported_range_comes_with_its_entries() {
    let mut l = layout(Order::Asc);
    l.indexes = vec![spec(1, IndexTarget::Simple, IndexPlace::Regular)];
    let (_a_dir, a, _) = open_clocked(SyncPolicy::default());
    let (_b_dir, b, _) = open_clocked(SyncPolicy::default());
    a.create_table(T, l.clone()).unwrap();
    b.create_table(T, l).unwrap();
    wait_ready(&b);
    for k in 0..50 {
        a.apply(
            T,
            &insert_row(int(k), int(0), 1, if k % 2 == 0 { b"a" } else { b"b" }, 10),
        )
        .unwrap();
    }
    let mut sink = crate::range_transfer::Collected::default();
    a.export_range(T, i64::MIN, i64::MAX, &mut sink).unwrap();
    let mut items = sink.items.into_iter().map(Ok);
    b.import_range(T, i64::MIN, i64::MAX, sink.flags, &mut items)
        .unwrap();
    assert_eq!(b.inner.indexes.backlog(), 0);
    let mut got: Vec<i32> = scan_all(&b, &text_eq("a"), 4)
        .into_iter()
        .map(|r| r.0)
        .collect();
    got.sort();
    assert_eq!(got, (0..50).filter(|k| k % 2 == 0).collect::<Vec<_>>());
}
