//! Engine-level tests: reconciliation, TTL, deletions, collections, counters, slices, scans,
//! paging, durability and the meta store.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering as AtomicOrdering};
use std::sync::Arc;

use cql::types::{DataType, NativeType as N};

use crate::*;

pub(crate) const T: TableId = TableId(0xabc);

/// Three readers race one writer over `keys` keys: `write(n)` makes write `n` and returns its
/// key and the floor a read of that key must reach once the write returned; `read(k)` reads
/// key `k`. No read may fall below the floor of a write that returned before it started, and
/// at least one read must run. Returns each key's last floor (`start` for keys never written).
pub(crate) fn race_readers_with_a_writer(
    keys: usize,
    writes: i64,
    start: i64,
    write: impl Fn(i64) -> (usize, i64),
    read: impl Fn(usize) -> i64 + Sync,
) -> Vec<i64> {
    use std::sync::atomic::AtomicBool;
    let acked: Vec<AtomicI64> = (0..keys).map(|_| AtomicI64::new(start)).collect();
    let done = AtomicBool::new(false);
    let reads = AtomicI64::new(0);
    std::thread::scope(|s| {
        for r in 0..3 {
            let (acked, done, reads, read) = (&acked, &done, &reads, &read);
            s.spawn(move || {
                let mut k = r;
                while !done.load(AtomicOrdering::SeqCst) {
                    k = (k + 1) % keys;
                    let floor = acked[k].load(AtomicOrdering::SeqCst);
                    let got = read(k);
                    assert!(
                        got >= floor,
                        "key {k}: read {got} after {floor} was acknowledged"
                    );
                    reads.fetch_add(1, AtomicOrdering::Relaxed);
                }
            });
        }
        for n in 0..writes {
            let (k, floor) = write(n);
            acked[k].store(floor, AtomicOrdering::SeqCst);
        }
        done.store(true, AtomicOrdering::SeqCst);
    });
    assert!(reads.load(AtomicOrdering::Relaxed) > 0);
    acked
        .iter()
        .map(|a| a.load(AtomicOrdering::SeqCst))
        .collect()
}

/// A bare fjall database in a temporary directory with one keyspace `k`, for tests of the
/// helpers that watch fjall's files and memtables.
pub(crate) fn scratch_fjall() -> (tempfile::TempDir, fjall::Database, fjall::Keyspace) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = fjall::Database::builder(dir.path()).open().expect("open");
    let ks = db
        .keyspace("k", fjall::KeyspaceCreateOptions::default)
        .expect("keyspace");
    (dir, db, ks)
}

pub(crate) fn int(v: i32) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}

/// An INSERT of one row of partition `pk`: its liveness marker and cell `column`, both at `ts`.
pub(crate) fn insert_row(pk: Vec<u8>, ck: Vec<u8>, column: u32, value: &[u8], ts: i64) -> Mutation {
    Mutation {
        partition_key: vec![pk],
        rows: vec![RowWrite {
            clustering: vec![ck],
            liveness: Some(Liveness {
                timestamp: ts,
                ttl: None,
            }),
            columns: vec![ColumnWrite {
                column,
                op: ColumnOp::Set {
                    value: value.to_vec(),
                    timestamp: ts,
                    ttl: None,
                },
            }],
            ..RowWrite::default()
        }],
        ..Mutation::default()
    }
}

pub(crate) fn layout(order: Order) -> TableLayout {
    let mut columns = BTreeMap::new();
    columns.insert(1, DataType::TEXT);
    columns.insert(2, DataType::List(Box::new(N::Int.into())));
    columns.insert(3, DataType::Set(Box::new(DataType::TEXT)));
    columns.insert(
        4,
        DataType::Map(Box::new(N::Int.into()), Box::new(DataType::TEXT)),
    );
    columns.insert(9, N::Int.into());
    TableLayout {
        partition_key: vec![N::Int.into()],
        clustering: vec![(N::Int.into(), order)],
        columns,
        ..Default::default()
    }
}

struct Env {
    _dir: tempfile::TempDir,
    db: Storage,
    clock: Arc<AtomicI64>,
}

/// A store in a fresh temporary directory whose clock (seconds) the test moves by hand.
pub(crate) fn open_clocked(sync: SyncPolicy) -> (tempfile::TempDir, Storage, Arc<AtomicI64>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let c = clock.clone();
    let db = Storage::open(
        dir.path(),
        StorageOptions {
            sync,
            clock: Some(Arc::new(move || c.load(AtomicOrdering::SeqCst))),
            ..Default::default()
        },
    )
    .unwrap();
    (dir, db, clock)
}

fn env_with(order: Order, sync: SyncPolicy) -> Env {
    let (dir, db, clock) = open_clocked(sync);
    db.create_table(T, layout(order)).unwrap();
    Env {
        _dir: dir,
        db,
        clock,
    }
}

fn env() -> Env {
    env_with(Order::Asc, SyncPolicy::default())
}

fn set(col: u32, v: &[u8], ts: i64) -> ColumnWrite {
    ColumnWrite {
        column: col,
        op: ColumnOp::Set {
            value: v.to_vec(),
            timestamp: ts,
            ttl: None,
        },
    }
}

fn row(ck: i32, columns: Vec<ColumnWrite>) -> RowWrite {
    RowWrite {
        clustering: vec![int(ck)],
        columns,
        ..Default::default()
    }
}

fn insert(ck: i32, ts: i64) -> RowWrite {
    RowWrite {
        liveness: Some(Liveness {
            timestamp: ts,
            ttl: None,
        }),
        ..row(ck, vec![set(1, format!("v{ck}").as_bytes(), ts)])
    }
}

fn put(db: &Storage, pk: i32, rows: Vec<RowWrite>) {
    db.apply(
        T,
        &Mutation {
            partition_key: vec![int(pk)],
            rows,
            ..Default::default()
        },
    )
    .unwrap();
}

fn read(db: &Storage, pk: i32, slice: &Slice) -> PartitionSlice {
    db.read_partition(T, &[int(pk)], slice).unwrap()
}

fn cks(p: &PartitionSlice) -> Vec<i32> {
    p.rows
        .iter()
        .map(|r| i32::from_be_bytes(r.clustering[0].clone().try_into().unwrap()))
        .collect()
}

fn text(r: &Row, col: u32) -> Option<String> {
    match r.cells.get(&col) {
        Some(ColumnValue::Simple(c)) => Some(String::from_utf8(c.value.clone()).unwrap()),
        _ => None,
    }
}

#[test]
fn higher_timestamp_wins_regardless_of_arrival_order() {
    let e = env();
    put(&e.db, 1, vec![row(1, vec![set(1, b"new", 20)])]);
    put(&e.db, 1, vec![row(1, vec![set(1, b"old", 10)])]);
    let p = read(&e.db, 1, &Slice::default());
    assert_eq!(text(&p.rows[0], 1).as_deref(), Some("new"));
    // Tie: the greater value wins; a tombstone beats both.
    put(&e.db, 1, vec![row(1, vec![set(1, b"zzz", 20)])]);
    assert_eq!(
        text(&read(&e.db, 1, &Slice::default()).rows[0], 1).as_deref(),
        Some("zzz")
    );
    let del = ColumnWrite {
        column: 1,
        op: ColumnOp::Delete { timestamp: 20 },
    };
    put(&e.db, 1, vec![row(1, vec![del])]);
    assert!(read(&e.db, 1, &Slice::default()).rows.is_empty());
}

#[test]
fn insert_keeps_row_alive_update_does_not() {
    let e = env();
    put(
        &e.db,
        1,
        vec![insert(1, 10), row(2, vec![set(1, b"u", 10)])],
    );
    let del = |ck| {
        row(
            ck,
            vec![ColumnWrite {
                column: 1,
                op: ColumnOp::Delete { timestamp: 11 },
            }],
        )
    };
    put(&e.db, 1, vec![del(1), del(2)]);
    let p = read(&e.db, 1, &Slice::default());
    assert_eq!(cks(&p), vec![1]);
    assert!(p.rows[0].cells.is_empty());
}

#[test]
fn deletions_shadow_only_older_cells() {
    let e = env();
    put(&e.db, 1, (0..10).map(|ck| insert(ck, 10)).collect());
    let m = Mutation {
        partition_key: vec![int(1)],
        range_deletions: vec![RangeDeletion {
            start: ClusteringBound::Exclusive(vec![int(2)]),
            end: ClusteringBound::Inclusive(vec![int(5)]),
            deletion: Deletion { timestamp: 15 },
        }],
        rows: vec![RowWrite {
            deletion: Some(Deletion { timestamp: 15 }),
            ..row(8, vec![])
        }],
        ..Default::default()
    };
    e.db.apply(T, &m).unwrap();
    assert_eq!(
        cks(&read(&e.db, 1, &Slice::default())),
        vec![0, 1, 2, 6, 7, 9]
    );
    // Newer writes survive the older deletions.
    put(&e.db, 1, vec![insert(4, 16), insert(8, 16)]);
    assert_eq!(
        cks(&read(&e.db, 1, &Slice::default())),
        vec![0, 1, 2, 4, 6, 7, 8, 9]
    );
    // A partition deletion shadows everything older, including statics.
    e.db.apply(
        T,
        &Mutation {
            partition_key: vec![int(1)],
            static_columns: vec![set(9, &int(5), 14)],
            ..Default::default()
        },
    )
    .unwrap();
    e.db.apply(
        T,
        &Mutation {
            partition_key: vec![int(1)],
            partition_deletion: Some(Deletion { timestamp: 15 }),
            ..Default::default()
        },
    )
    .unwrap();
    let p = read(&e.db, 1, &Slice::default());
    assert_eq!(cks(&p), vec![4, 8]);
    assert!(p.static_cells.is_empty());
}

#[test]
fn ttl_expires_at_read_time() {
    let e = env();
    let mut r = insert(1, 10);
    r.liveness = Some(Liveness {
        timestamp: 10,
        ttl: Some(100),
    });
    r.columns = vec![ColumnWrite {
        column: 1,
        op: ColumnOp::Set {
            value: b"x".to_vec(),
            timestamp: 10,
            ttl: Some(50),
        },
    }];
    put(&e.db, 1, vec![r]);
    let p = read(&e.db, 1, &Slice::default());
    match &p.rows[0].cells[&1] {
        ColumnValue::Simple(c) => assert_eq!(c.ttl, Some(50)),
        other => panic!("{other:?}"),
    }
    e.clock.fetch_add(60, AtomicOrdering::SeqCst);
    let p = read(&e.db, 1, &Slice::default());
    assert_eq!(cks(&p), vec![1]);
    assert!(p.rows[0].cells.is_empty());
    e.clock.fetch_add(60, AtomicOrdering::SeqCst);
    assert!(read(&e.db, 1, &Slice::default()).rows.is_empty());
}

#[test]
fn bundled_rows_read_in_a_slice_keep_their_time_and_ttl() {
    // An INSERT with a TTL: marker and cells share timestamp and TTL, so each row is one
    // bundled item, read by the slice's one-item path.
    let e = env();
    let rows = (1..=3)
        .map(|ck| {
            let mut r = insert(ck, 20 + i64::from(ck));
            r.liveness = Some(Liveness {
                timestamp: 20 + i64::from(ck),
                ttl: Some(100),
            });
            r.columns = vec![ColumnWrite {
                column: 1,
                op: ColumnOp::Set {
                    value: format!("v{ck}").into_bytes(),
                    timestamp: 20 + i64::from(ck),
                    ttl: Some(100),
                },
            }];
            r
        })
        .collect();
    put(&e.db, 1, rows);
    e.clock.fetch_add(30, AtomicOrdering::SeqCst);
    let slice = Slice {
        start: ClusteringBound::Inclusive(vec![int(2)]),
        ..Slice::default()
    };
    let p = read(&e.db, 1, &slice);
    assert_eq!(cks(&p), vec![2, 3]);
    for (row, ck) in p.rows.iter().zip(2..) {
        assert_eq!(text(row, 1), Some(format!("v{ck}")));
        match &row.cells[&1] {
            ColumnValue::Simple(c) => {
                assert_eq!((c.timestamp, c.ttl), (20 + i64::from(ck), Some(70)));
            }
            other => panic!("{other:?}"),
        }
    }
    e.clock.fetch_add(80, AtomicOrdering::SeqCst);
    assert!(read(&e.db, 1, &slice).rows.is_empty());
    assert!(read(&e.db, 1, &Slice::default()).rows.is_empty());
}

#[test]
fn collections_are_one_cell_per_element() {
    let e = env();
    let elem = |col, key: Vec<u8>, value: &[u8], ts| ColumnWrite {
        column: col,
        op: ColumnOp::SetElement {
            key,
            value: value.to_vec(),
            timestamp: ts,
            ttl: None,
        },
    };
    let tu = |n: u8| {
        let mut u = [0u8; 16];
        u[6] = 0x10;
        u[7] = n;
        u.to_vec()
    };
    put(
        &e.db,
        1,
        vec![row(
            1,
            vec![
                elem(2, tu(2), &int(20), 10),
                elem(2, tu(1), &int(10), 10),
                elem(3, b"b".to_vec(), b"", 10),
                elem(3, b"a".to_vec(), b"", 10),
                elem(4, int(7), b"seven", 10),
                elem(4, int(-1), b"minus", 10),
            ],
        )],
    );
    let p = read(&e.db, 1, &Slice::default());
    let list = |p: &PartitionSlice, col| match &p.rows[0].cells[&col] {
        ColumnValue::Collection(l) => l
            .iter()
            .map(|(k, c)| (k.clone(), c.value.clone()))
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(list(&p, 2), vec![(tu(1), int(10)), (tu(2), int(20))]);
    assert_eq!(
        list(&p, 3),
        vec![(b"a".to_vec(), vec![]), (b"b".to_vec(), vec![])]
    );
    assert_eq!(
        list(&p, 4),
        vec![(int(-1), b"minus".to_vec()), (int(7), b"seven".to_vec())]
    );
    // Overwrite the map: collection tombstone at ts-1 plus new elements at ts.
    put(
        &e.db,
        1,
        vec![row(
            1,
            vec![
                ColumnWrite {
                    column: 4,
                    op: ColumnOp::DeleteCollection { timestamp: 19 },
                },
                elem(4, int(3), b"three", 20),
                ColumnWrite {
                    column: 3,
                    op: ColumnOp::DeleteElement {
                        key: b"a".to_vec(),
                        timestamp: 20,
                    },
                },
            ],
        )],
    );
    let p = read(&e.db, 1, &Slice::default());
    assert_eq!(list(&p, 4), vec![(int(3), b"three".to_vec())]);
    assert_eq!(list(&p, 3), vec![(b"b".to_vec(), vec![])]);
}

#[test]
fn concurrent_counter_increments_are_not_lost() {
    let e = env();
    std::thread::scope(|s| {
        for t in 0..4 {
            let db = e.db.clone();
            s.spawn(move || {
                for i in 0..250 {
                    let m = Mutation {
                        partition_key: vec![int(1)],
                        rows: vec![row(
                            1,
                            vec![ColumnWrite {
                                column: 5,
                                op: ColumnOp::AddCounter {
                                    delta: 2,
                                    timestamp: t * 1000 + i,
                                },
                            }],
                        )],
                        ..Default::default()
                    };
                    db.apply(T, &m).unwrap();
                }
            });
        }
    });
    let p = read(&e.db, 1, &Slice::default());
    match &p.rows[0].cells[&5] {
        ColumnValue::Simple(c) => assert_eq!(c.value, 2000i64.to_be_bytes()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn slices_reverse_and_paging() {
    for order in [Order::Asc, Order::Desc] {
        let e = env_with(order, SyncPolicy::default());
        put(&e.db, 1, (0..20).map(|ck| insert(ck, 1)).collect());
        let mut expected: Vec<i32> = (5..15).collect();
        if order == Order::Desc {
            expected.reverse();
        }
        let (lo, hi) = match order {
            Order::Asc => (5, 14),
            Order::Desc => (14, 5),
        };
        let base = Slice {
            start: ClusteringBound::Inclusive(vec![int(lo)]),
            end: ClusteringBound::Inclusive(vec![int(hi)]),
            ..Default::default()
        };
        assert_eq!(cks(&read(&e.db, 1, &base)), expected);
        for reversed in [false, true] {
            let mut want = expected.clone();
            if reversed {
                want.reverse();
            }
            let mut got = Vec::new();
            let mut cursor = None;
            loop {
                let s = Slice {
                    reversed,
                    limit: Some(3),
                    cursor: cursor.take(),
                    ..base.clone()
                };
                let p = read(&e.db, 1, &s);
                assert!(p.rows.len() <= 3);
                got.extend(cks(&p));
                match p.cursor {
                    Some(c) => cursor = Some(Cursor::from_bytes(c.as_bytes().to_vec())),
                    None => break,
                }
            }
            assert_eq!(got, want, "{order:?} reversed={reversed}");
        }
        let excl = Slice {
            start: ClusteringBound::Exclusive(vec![int(lo)]),
            end: ClusteringBound::Exclusive(vec![int(hi)]),
            ..Default::default()
        };
        assert_eq!(
            cks(&read(&e.db, 1, &excl)),
            expected[1..expected.len() - 1].to_vec()
        );
    }
}

#[test]
fn middle_of_a_large_partition_reads_only_what_it_returns() {
    let e = env();
    const ROWS: i32 = 100_000;
    for chunk in 0..(ROWS / 10_000) {
        let rows = (chunk * 10_000..(chunk + 1) * 10_000)
            .map(|ck| row(ck, vec![set(1, b"0123456789", 1)]))
            .collect();
        put(&e.db, 1, rows);
    }
    for reversed in [false, true] {
        let s = Slice {
            start: ClusteringBound::Inclusive(vec![int(ROWS / 2)]),
            reversed,
            limit: Some(100),
            ..Default::default()
        };
        let s = if reversed {
            Slice {
                start: ClusteringBound::Unbounded,
                end: ClusteringBound::Inclusive(vec![int(ROWS / 2)]),
                ..s
            }
        } else {
            s
        };
        let p = read(&e.db, 1, &s);
        assert_eq!(p.rows.len(), 100);
        // Forward from the middle up, or reverse from the middle down: both start there.
        assert_eq!(cks(&p)[0], ROWS / 2);
        assert!(p.items_read <= 102, "read {} items", p.items_read);
    }
}

#[test]
fn scan_follows_token_order_and_pages() {
    let e = env();
    for pk in 0..30 {
        put(&e.db, pk, vec![insert(1, 1), insert(2, 1)]);
    }
    let page = e.db.scan(T, TokenRange::FULL, 1000, None).unwrap();
    let tokens: Vec<i64> = page.partitions.iter().map(|p| p.token).collect();
    assert_eq!(tokens.len(), 30);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]));
    for p in &page.partitions {
        assert_eq!(p.token, token::token(&p.partition_key[0]));
    }
    // Paging with an odd page size cuts partitions in the middle.
    let mut rows = 0;
    let mut cursor: Option<Cursor> = None;
    let mut seen = Vec::new();
    loop {
        let page = e.db.scan(T, TokenRange::FULL, 7, cursor.as_ref()).unwrap();
        rows += page.partitions.iter().map(|p| p.rows.len()).sum::<usize>();
        seen.extend(page.partitions.iter().map(|p| p.token));
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(rows, 60);
    seen.dedup();
    assert_eq!(seen, tokens);
    // (t5, t20] holds exactly partitions 6..=20 in token order.
    let range = TokenRange {
        start: tokens[5],
        end: tokens[20],
    };
    let page = e.db.scan(T, range, 1000, None).unwrap();
    let got: Vec<i64> = page.partitions.iter().map(|p| p.token).collect();
    assert_eq!(got, tokens[6..=20].to_vec());
    let to_end = TokenRange {
        start: tokens[25],
        end: token::MIN_TOKEN,
    };
    assert_eq!(
        e.db.scan(T, to_end, 1000, None).unwrap().partitions.len(),
        4
    );
    let empty = TokenRange {
        start: tokens[20],
        end: tokens[5],
    };
    assert!(e
        .db
        .scan(T, empty, 1000, None)
        .unwrap()
        .partitions
        .is_empty());
}

#[test]
fn writes_survive_reopen_and_meta_store_works() {
    let dir = tempfile::tempdir().unwrap();
    for sync in [SyncPolicy::Batch, SyncPolicy::default()] {
        {
            let db = Storage::open(
                dir.path(),
                StorageOptions {
                    sync,
                    ..Default::default()
                },
            )
            .unwrap();
            db.create_table(T, layout(Order::Asc)).unwrap();
            put(&db, 1, (0..10).map(|ck| insert(ck, 1)).collect());
            db.put_meta(b"schema/ks", b"v1").unwrap();
            db.put_meta(b"schema/ks2", b"v2").unwrap();
            db.delete_meta(b"schema/ks2").unwrap();
        }
        let db = Storage::open(dir.path(), StorageOptions::default()).unwrap();
        db.create_table(T, layout(Order::Asc)).unwrap();
        assert_eq!(
            cks(&read(&db, 1, &Slice::default())),
            (0..10).collect::<Vec<_>>()
        );
        assert_eq!(db.get_meta(b"schema/ks").unwrap(), Some(b"v1".to_vec()));
        assert_eq!(db.scan_meta(b"schema/").unwrap().len(), 1);
        db.truncate(T).unwrap();
        assert!(read(&db, 1, &Slice::default()).rows.is_empty());
    }
}

#[test]
fn batch_sync_groups_concurrent_writers() {
    let e = env_with(Order::Asc, SyncPolicy::Batch);
    std::thread::scope(|s| {
        for t in 0..4 {
            let db = e.db.clone();
            s.spawn(move || {
                for i in 0..25 {
                    put(&db, t * 100 + i, vec![insert(1, 1)]);
                }
            });
        }
    });
    assert_eq!(
        e.db.scan(T, TokenRange::FULL, 1000, None)
            .unwrap()
            .partitions
            .len(),
        100
    );
}

#[test]
fn bad_requests_and_corrupt_data_are_errors() {
    let e = env();
    let bad = Mutation {
        partition_key: vec![int(1), int(2)],
        ..Default::default()
    };
    assert!(matches!(
        e.db.apply(T, &bad),
        Err(StorageError::InvalidRequest(_))
    ));
    let bad_ck = Mutation {
        partition_key: vec![int(1)],
        rows: vec![RowWrite {
            clustering: vec![vec![1, 2]],
            ..Default::default()
        }],
        ..Default::default()
    };
    assert!(matches!(
        e.db.apply(T, &bad_ck),
        Err(StorageError::InvalidValue { .. })
    ));
    assert!(matches!(
        e.db.read_partition(TableId(9), &[int(1)], &Slice::default()),
        Err(StorageError::UnknownTable(_))
    ));
    let s = Slice {
        cursor: Some(Cursor::from_bytes(vec![9, 9])),
        ..Default::default()
    };
    assert!(matches!(
        e.db.read_partition(T, &[int(1)], &s),
        Err(StorageError::InvalidCursor)
    ));
    // Garbage written under a row key reads back as an error, not a panic.
    put(&e.db, 1, vec![insert(1, 1)]);
    let table = e.db.table(T).unwrap();
    let (k, _) = table
        .keyspace()
        .iter()
        .next()
        .unwrap()
        .into_inner()
        .unwrap();
    table.keyspace().insert(k.clone(), vec![7u8]).unwrap();
    assert!(matches!(
        e.db.read_partition(T, &[int(1)], &Slice::default()),
        Err(StorageError::Corrupt(_))
    ));
    let mut garbage_key = k.to_vec();
    garbage_key.truncate(10);
    garbage_key.push(0x03);
    garbage_key.push(0x77);
    table.keyspace().insert(k, StoredCellBytes::live()).unwrap();
    table
        .keyspace()
        .insert(garbage_key, StoredCellBytes::live())
        .unwrap();
    assert!(e.db.scan(T, TokenRange::FULL, 100, None).is_err());
}

struct StoredCellBytes;

impl StoredCellBytes {
    fn live() -> Vec<u8> {
        crate::cell::StoredCell::Live {
            timestamp: 1,
            value: vec![],
        }
        .encode()
    }
}

/// Child half of the crash test: writes forever, printing each acknowledged partition key.
fn crash_child(dir: &str) {
    use std::io::Write;
    let db = Storage::open(dir, StorageOptions::default()).unwrap();
    db.create_table(T, layout(Order::Asc)).unwrap();
    let mut out = std::io::stdout().lock();
    for pk in 0.. {
        put(&db, pk, vec![insert(1, 1)]);
        writeln!(out, "ack {pk}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    use std::io::BufRead;
    if let Ok(dir) = std::env::var("STORAGE_CRASH_CHILD") {
        crash_child(&dir);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tests::acknowledged_writes_survive_sigkill",
            "--nocapture",
        ])
        .env("STORAGE_CRASH_CHILD", dir.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = -1;
    for line in std::io::BufReader::new(stdout).lines() {
        if let Some(n) = line.unwrap().strip_prefix("ack ") {
            acked = n.parse().unwrap();
            if acked >= 500 {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL: no destructor, no final fsync
    child.wait().unwrap();
    assert!(acked >= 500);
    let db = Storage::open(dir.path(), StorageOptions::default()).unwrap();
    db.create_table(T, layout(Order::Asc)).unwrap();
    for pk in 0..=acked {
        assert_eq!(
            cks(&read(&db, pk, &Slice::default())),
            vec![1],
            "pk {pk} lost"
        );
    }
}

/// Rough figures, run with `cargo test -p storage --release -- --ignored --nocapture measure`.
#[test]
#[ignore]
fn measure_throughput() {
    use std::time::Instant;
    let e = env();
    let n = 100_000;
    let value = vec![b'x'; 100];
    let t = Instant::now();
    for i in 0..n {
        put(
            &e.db,
            i % 1000,
            vec![row(i / 1000, vec![set(1, &value, 1)])],
        );
    }
    let write_ns = t.elapsed().as_nanos() / n as u128;
    let t = Instant::now();
    for i in 0..n {
        let s = Slice {
            start: ClusteringBound::Inclusive(vec![int(i / 1000)]),
            end: ClusteringBound::Inclusive(vec![int(i / 1000)]),
            ..Default::default()
        };
        assert_eq!(read(&e.db, i % 1000, &s).rows.len(), 1);
    }
    let read_ns = t.elapsed().as_nanos() / n as u128;
    let t = Instant::now();
    let mut rows = 0;
    for pk in 0..1000 {
        rows += read(&e.db, pk, &Slice::default()).rows.len();
    }
    let slice_rows_s = rows as f64 / t.elapsed().as_secs_f64();
    let table = e.db.table(T).unwrap();
    table.keyspace().rotate_memtable_and_wait().unwrap();
    table.keyspace().major_compact().unwrap();
    let bytes = e.db.table_stats(T).unwrap().disk_bytes;
    println!(
        "write {write_ns} ns/row, point read {read_ns} ns, slice {slice_rows_s:.0} rows/s, \
         {:.1} bytes on disk per 100-byte row",
        bytes as f64 / n as f64
    );
}

/// A partition compacted into one table (read straight from the table, `crate::one_table`)
/// answers every slice as it did before, when the memtable and three tables held it
/// (read through fjall's merge): overwritten cells, deleted rows, a range deletion and an
/// expired cell included.
#[test]
fn slices_read_the_same_once_the_partition_is_one_table() {
    let e = env();
    for part in 0..3 {
        put(&e.db, 1, (0..300).map(|ck| insert(ck, 10 + part)).collect());
        put(&e.db, 2, (0..50).map(|ck| insert(ck, 10 + part)).collect());
        e.db.flush_table(T).unwrap();
    }
    put(
        &e.db,
        1,
        (0..300)
            .step_by(7)
            .map(|ck| row(ck, vec![set(1, b"newer", 20)]))
            .collect(),
    );
    put(
        &e.db,
        1,
        (0..300)
            .step_by(11)
            .map(|ck| RowWrite {
                deletion: Some(Deletion { timestamp: 20 }),
                ..row(ck, vec![])
            })
            .collect(),
    );
    e.db.apply(
        T,
        &Mutation {
            partition_key: vec![int(1)],
            range_deletions: vec![RangeDeletion {
                start: ClusteringBound::Inclusive(vec![int(100)]),
                end: ClusteringBound::Exclusive(vec![int(120)]),
                deletion: Deletion { timestamp: 20 },
            }],
            ..Default::default()
        },
    )
    .unwrap();
    let mut ttl = row(5, vec![set(1, b"short-lived", 30)]);
    if let ColumnOp::Set { ttl: t, .. } = &mut ttl.columns[0].op {
        *t = Some(10);
    }
    put(&e.db, 1, vec![ttl]);
    e.clock.fetch_add(20, AtomicOrdering::SeqCst);
    let bounded = |lo, hi| Slice {
        start: ClusteringBound::Inclusive(vec![int(lo)]),
        end: ClusteringBound::Exclusive(vec![int(hi)]),
        ..Default::default()
    };
    let slices = [
        Slice::default(),
        bounded(0, 10),
        bounded(95, 125),
        bounded(290, 400),
        Slice {
            limit: Some(7),
            ..bounded(40, 80)
        },
        Slice {
            reversed: true,
            limit: Some(5),
            ..bounded(10, 60)
        },
    ];
    let reads = |db: &Storage| -> Vec<PartitionSlice> {
        let mut all: Vec<_> = slices.iter().map(|s| read(db, 1, s)).collect();
        all.push(read(db, 2, &Slice::default()));
        // Paging on from the cursor of the limited slice.
        let next = Slice {
            cursor: all[4].cursor.clone(),
            ..slices[4].clone()
        };
        all.push(read(db, 1, &next));
        all
    };
    let before = reads(&e.db);
    assert!(e.db.sorted_runs(T).unwrap()[0] > 1);
    assert_eq!(e.db.compact_table(T).unwrap(), [1]);
    // The partition is one table now, which the slices read directly.
    let ks = e.db.table(T).unwrap().keyspace();
    assert_eq!(fjall::AbstractTree::table_count(&ks.tree), 1);
    let version = crate::one_table::version_before_snapshot(&ks.tree);
    let snap = e.db.inner.db.snapshot();
    assert!(crate::one_table::forward(&ks.tree, version, &[], snap.seqno()).is_some());
    drop(snap);
    assert_eq!(reads(&e.db), before);
    // The reads compared something: deletions, overwrites and the expiry show.
    let all = &before[0];
    assert_eq!(cks(&before[1]), vec![1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(text(&all.rows[6], 1).as_deref(), Some("newer"));
    // The expired cell still shadows the older value it overwrote.
    assert_eq!(text(&all.rows[4], 1), None);
    assert!(!cks(all).iter().any(|ck| (100..120).contains(ck)));
    assert_eq!(before[6].rows.len(), 50);
}
