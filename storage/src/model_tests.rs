//! Model-based test: random writes, deletions, TTL, clock moves, flushes, compactions and
//! reopens, checked against a model that replays the operation log with Cassandra's rules
//! (independently of the key layout and of `cell.rs`). The op log is printed on failure.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering as AtomicOrdering};
use std::sync::Arc;

use cql::types::{DataType, NativeType as N};
use proptest::prelude::*;

use crate::tests::int;
use crate::*;

const T: TableId = TableId(7);
const PKS: i32 = 3;
const CKS: i32 = 6;

#[derive(Debug, Clone)]
enum Op {
    Insert {
        pk: i32,
        ck: i32,
        val: u8,
        ts: i64,
        ttl: Option<u32>,
    },
    Update {
        pk: i32,
        ck: i32,
        val: u8,
        ts: i64,
    },
    DeleteCell {
        pk: i32,
        ck: i32,
        ts: i64,
    },
    DeleteRow {
        pk: i32,
        ck: i32,
        ts: i64,
    },
    DeleteRange {
        pk: i32,
        lo: (i32, bool),
        hi: (i32, bool),
        ts: i64,
    },
    DeletePartition {
        pk: i32,
        ts: i64,
    },
    AddElem {
        pk: i32,
        ck: i32,
        elem: u8,
        ts: i64,
    },
    DelElem {
        pk: i32,
        ck: i32,
        elem: u8,
        ts: i64,
    },
    Advance(i64),
    Flush,
    Compact,
    Reopen,
    Check {
        pk: i32,
        lo: Option<(i32, bool)>,
        hi: Option<(i32, bool)>,
        reversed: bool,
        limit: usize,
    },
}

fn arb_op() -> impl Strategy<Value = Op> {
    let pk = 0..PKS;
    let ck = 0..CKS;
    let ts = 1..12i64;
    let bound = (0..CKS, any::<bool>());
    prop_oneof![
        6 => (pk.clone(), ck.clone(), 0..4u8, ts.clone(), prop::option::weighted(0.3, 1..30u32))
            .prop_map(|(pk, ck, val, ts, ttl)| Op::Insert { pk, ck, val, ts, ttl }),
        4 => (pk.clone(), ck.clone(), 0..4u8, ts.clone()).prop_map(|(pk, ck, val, ts)| Op::Update { pk, ck, val, ts }),
        2 => (pk.clone(), ck.clone(), ts.clone()).prop_map(|(pk, ck, ts)| Op::DeleteCell { pk, ck, ts }),
        2 => (pk.clone(), ck.clone(), ts.clone()).prop_map(|(pk, ck, ts)| Op::DeleteRow { pk, ck, ts }),
        1 => (pk.clone(), bound.clone(), bound.clone(), ts.clone())
            .prop_map(|(pk, lo, hi, ts)| Op::DeleteRange { pk, lo, hi, ts }),
        1 => (pk.clone(), ts.clone()).prop_map(|(pk, ts)| Op::DeletePartition { pk, ts }),
        3 => (pk.clone(), ck.clone(), 0..3u8, ts.clone()).prop_map(|(pk, ck, elem, ts)| Op::AddElem { pk, ck, elem, ts }),
        1 => (pk.clone(), ck.clone(), 0..3u8, ts.clone()).prop_map(|(pk, ck, elem, ts)| Op::DelElem { pk, ck, elem, ts }),
        1 => (1..20i64).prop_map(Op::Advance),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
        3 => (pk, prop::option::of(bound.clone()), prop::option::of(bound), any::<bool>(), 1..5usize)
            .prop_map(|(pk, lo, hi, reversed, limit)| Op::Check { pk, lo, hi, reversed, limit }),
    ]
}

/// A write as the model keeps it: (timestamp, value or None for a tombstone, local deletion
/// time: the expiry of a TTL cell, the deletion time of a tombstone).
type Version = (i64, Option<Vec<u8>>, Option<i64>);

/// Cassandra's winner among versions of one cell, with expired cells acting as tombstones.
fn winner(versions: &[Version], _now: i64) -> Option<Version> {
    // Cassandra's `Cells.resolveRegular` (CASSANDRA-14592): timestamp, then
    // tombstone > expiring > regular, then local deletion time, then value.
    versions.iter().cloned().reduce(|a, b| {
        let key = |v: &Version| {
            let rank = match (&v.1, v.2) {
                (None, _) => 2,
                (Some(_), Some(_)) => 1,
                (Some(_), None) => 0,
            };
            (v.0, rank, v.2.unwrap_or(0), v.1.clone())
        };
        if key(&b) > key(&a) {
            b
        } else {
            a
        }
    })
}

fn live(v: &Option<Version>, deleted: i64, now: i64) -> Option<Vec<u8>> {
    let v = v.as_ref()?;
    if v.0 <= deleted || v.2.is_some_and(|e| e <= now) {
        return None;
    }
    v.1.clone()
}

/// (pk, start bound, end bound, timestamp); bounds are (ck, inclusive) in clustering order.
type RangeDel = (i32, (i32, bool), (i32, bool), i64);

#[derive(Default)]
struct Model {
    now: i64,
    /// (pk, ck) -> versions of the liveness marker, column 1, set elements
    markers: BTreeMap<(i32, i32), Vec<Version>>,
    cells: BTreeMap<(i32, i32), Vec<Version>>,
    elems: BTreeMap<(i32, i32, u8), Vec<Version>>,
    row_dels: BTreeMap<(i32, i32), i64>,
    range_dels: Vec<RangeDel>,
    partition_dels: BTreeMap<i32, i64>,
}

type ModelRow = (i32, Option<Vec<u8>>, Vec<u8>);

impl Model {
    fn rows(&self, pk: i32, order: Order) -> Vec<ModelRow> {
        let mut out = Vec::new();
        for ck in 0..CKS {
            let mut del = self.partition_dels.get(&pk).copied().unwrap_or(i64::MIN);
            del = del.max(self.row_dels.get(&(pk, ck)).copied().unwrap_or(i64::MIN));
            for (p, lo, hi, ts) in &self.range_dels {
                if *p == pk && in_range(order, ck, Some(*lo), Some(*hi)) {
                    del = del.max(*ts);
                }
            }
            let get = |m: &BTreeMap<(i32, i32), Vec<Version>>| {
                live(
                    &winner(m.get(&(pk, ck)).map_or(&[][..], |v| v), self.now),
                    del,
                    self.now,
                )
            };
            let marker = get(&self.markers);
            let cell = get(&self.cells);
            let elems: Vec<u8> = (0..3u8)
                .filter(|e| {
                    live(
                        &winner(
                            self.elems.get(&(pk, ck, *e)).map_or(&[][..], |v| v),
                            self.now,
                        ),
                        del,
                        self.now,
                    )
                    .is_some()
                })
                .collect();
            if marker.is_some() || cell.is_some() || !elems.is_empty() {
                out.push((ck, cell, elems));
            }
        }
        if order == Order::Desc {
            out.reverse();
        }
        out
    }
}

/// Is `ck` within the bounds, given in clustering order?
fn in_range(order: Order, ck: i32, lo: Option<(i32, bool)>, hi: Option<(i32, bool)>) -> bool {
    let pos = |v: i32| if order == Order::Desc { -v } else { v };
    let after_lo = lo.is_none_or(|(b, incl)| {
        if incl {
            pos(ck) >= pos(b)
        } else {
            pos(ck) > pos(b)
        }
    });
    let before_hi = hi.is_none_or(|(b, incl)| {
        if incl {
            pos(ck) <= pos(b)
        } else {
            pos(ck) < pos(b)
        }
    });
    after_lo && before_hi
}

fn bound(b: Option<(i32, bool)>) -> ClusteringBound {
    match b {
        None => ClusteringBound::Unbounded,
        Some((v, true)) => ClusteringBound::Inclusive(vec![int(v)]),
        Some((v, false)) => ClusteringBound::Exclusive(vec![int(v)]),
    }
}

fn table_layout(order: Order) -> TableLayout {
    TableLayout {
        partition_key: vec![N::Int.into()],
        clustering: vec![(N::Int.into(), order)],
        columns: [(3, DataType::Set(Box::new(N::Tinyint.into())))]
            .into_iter()
            .collect(),
        ..Default::default()
    }
}

/// Opens the store and its table; an `old_layout` table is one from a data directory made
/// before row items (one item per cell, see `crate::bundle`).
fn open(dir: &std::path::Path, clock: &Arc<AtomicI64>, order: Order, old_layout: bool) -> Storage {
    let open = || {
        let c = clock.clone();
        let db = Storage::open(
            dir,
            StorageOptions {
                clock: Some(Arc::new(move || c.load(AtomicOrdering::SeqCst))),
                ..Default::default()
            },
        )
        .unwrap();
        db.create_table(T, table_layout(order)).unwrap();
        db
    };
    let db = open();
    if old_layout
        && !db
            .table(T)
            .unwrap()
            .ring
            .content
            .may_have(content::SEPARATE_CELLS)
    {
        let mut k = content::ContentFlags::meta_prefix(T);
        k.extend_from_slice(b"cells_tracked");
        db.inner.meta.remove(k).unwrap();
        drop(db);
        let db = open();
        assert!(db
            .table(T)
            .unwrap()
            .ring
            .content
            .may_have(content::SEPARATE_CELLS));
        return db;
    }
    db
}

fn storage_rows(db: &Storage, pk: i32, slice: &Slice) -> (Vec<ModelRow>, usize) {
    let mut out = Vec::new();
    let mut pages = 0;
    let mut slice = slice.clone();
    loop {
        let p = db.read_partition(T, &[int(pk)], &slice).unwrap();
        assert!(p.rows.len() <= slice.limit.unwrap_or(usize::MAX));
        pages += 1;
        out.extend(p.rows.iter().map(row_of));
        match p.cursor {
            Some(c) => slice.cursor = Some(c),
            None => return (out, pages),
        }
    }
}

fn row_of(r: &Row) -> ModelRow {
    let ck = i32::from_be_bytes(r.clustering[0].clone().try_into().unwrap());
    let cell = match r.cells.get(&1) {
        Some(ColumnValue::Simple(c)) => Some(c.value.clone()),
        _ => None,
    };
    let elems = match r.cells.get(&3) {
        Some(ColumnValue::Collection(l)) => l.iter().map(|(k, _)| k[0]).collect(),
        _ => Vec::new(),
    };
    (ck, cell, elems)
}

fn run(ops: &[Op], order: Order, old_layout: bool) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_000));
    let mut db = open(dir.path(), &clock, order, old_layout);
    let mut model = Model {
        now: 1_000,
        ..Default::default()
    };
    for (i, op) in ops.iter().enumerate() {
        let now = model.now;
        let version = |ts: i64, val: Option<Vec<u8>>, ttl: Option<u32>| {
            (ts, val, ttl.map(|t| now + i64::from(t)))
        };
        let mut m = Mutation::default();
        fn rw(m: &mut Mutation, pk: i32, ck: i32) -> &mut RowWrite {
            m.partition_key = vec![int(pk)];
            m.rows.push(RowWrite {
                clustering: vec![int(ck)],
                ..Default::default()
            });
            m.rows.last_mut().unwrap()
        }
        match op {
            Op::Insert {
                pk,
                ck,
                val,
                ts,
                ttl,
            } => {
                let r = rw(&mut m, *pk, *ck);
                r.liveness = Some(Liveness {
                    timestamp: *ts,
                    ttl: *ttl,
                });
                r.columns.push(ColumnWrite {
                    column: 1,
                    op: ColumnOp::Set {
                        value: vec![*val],
                        timestamp: *ts,
                        ttl: *ttl,
                    },
                });
                model
                    .markers
                    .entry((*pk, *ck))
                    .or_default()
                    .push(version(*ts, Some(vec![]), *ttl));
                model.cells.entry((*pk, *ck)).or_default().push(version(
                    *ts,
                    Some(vec![*val]),
                    *ttl,
                ));
            }
            Op::Update { pk, ck, val, ts } => {
                rw(&mut m, *pk, *ck).columns.push(ColumnWrite {
                    column: 1,
                    op: ColumnOp::Set {
                        value: vec![*val],
                        timestamp: *ts,
                        ttl: None,
                    },
                });
                model.cells.entry((*pk, *ck)).or_default().push(version(
                    *ts,
                    Some(vec![*val]),
                    None,
                ));
            }
            Op::DeleteCell { pk, ck, ts } => {
                rw(&mut m, *pk, *ck).columns.push(ColumnWrite {
                    column: 1,
                    op: ColumnOp::Delete { timestamp: *ts },
                });
                model
                    .cells
                    .entry((*pk, *ck))
                    .or_default()
                    .push((*ts, None, Some(now)));
            }
            Op::DeleteRow { pk, ck, ts } => {
                rw(&mut m, *pk, *ck).deletion = Some(Deletion { timestamp: *ts });
                let d = model.row_dels.entry((*pk, *ck)).or_insert(*ts);
                *d = (*d).max(*ts);
            }
            Op::AddElem { pk, ck, elem, ts } => {
                rw(&mut m, *pk, *ck).columns.push(ColumnWrite {
                    column: 3,
                    op: ColumnOp::SetElement {
                        key: vec![*elem],
                        value: vec![],
                        timestamp: *ts,
                        ttl: None,
                    },
                });
                model
                    .elems
                    .entry((*pk, *ck, *elem))
                    .or_default()
                    .push(version(*ts, Some(vec![]), None));
            }
            Op::DelElem { pk, ck, elem, ts } => {
                rw(&mut m, *pk, *ck).columns.push(ColumnWrite {
                    column: 3,
                    op: ColumnOp::DeleteElement {
                        key: vec![*elem],
                        timestamp: *ts,
                    },
                });
                model
                    .elems
                    .entry((*pk, *ck, *elem))
                    .or_default()
                    .push((*ts, None, Some(now)));
            }
            Op::DeleteRange { pk, lo, hi, ts } => {
                m.partition_key = vec![int(*pk)];
                m.range_deletions.push(RangeDeletion {
                    start: bound(Some(*lo)),
                    end: bound(Some(*hi)),
                    deletion: Deletion { timestamp: *ts },
                });
                model.range_dels.push((*pk, *lo, *hi, *ts));
            }
            Op::DeletePartition { pk, ts } => {
                m.partition_key = vec![int(*pk)];
                m.partition_deletion = Some(Deletion { timestamp: *ts });
                let d = model.partition_dels.entry(*pk).or_insert(*ts);
                *d = (*d).max(*ts);
            }
            Op::Advance(s) => {
                model.now += s;
                clock.store(model.now, AtomicOrdering::SeqCst);
            }
            Op::Flush => db
                .table(T)
                .unwrap()
                .keyspace()
                .rotate_memtable_and_wait()
                .unwrap(),
            Op::Compact => db.table(T).unwrap().keyspace().major_compact().unwrap(),
            Op::Reopen => {
                drop(db);
                db = open(dir.path(), &clock, order, old_layout);
            }
            Op::Check {
                pk,
                lo,
                hi,
                reversed,
                limit,
            } => {
                let mut want: Vec<ModelRow> = model
                    .rows(*pk, order)
                    .into_iter()
                    .filter(|r| in_range(order, r.0, *lo, *hi))
                    .collect();
                if *reversed {
                    want.reverse();
                }
                let slice = Slice {
                    start: bound(*lo),
                    end: bound(*hi),
                    reversed: *reversed,
                    limit: Some(*limit),
                    cursor: None,
                };
                let (got, _) = storage_rows(&db, *pk, &slice);
                prop_assert_eq!(&got, &want, "op #{} {:?} (order {:?})", i, op, order);
            }
        }
        if !m.partition_key.is_empty() {
            db.apply(T, &m).unwrap();
        }
    }
    // Finally a paged full scan equals the model for every partition.
    let mut got: BTreeMap<i32, Vec<ModelRow>> = BTreeMap::new();
    let mut cursor = None;
    loop {
        let page = db.scan(T, TokenRange::FULL, 3, cursor.as_ref()).unwrap();
        for p in &page.partitions {
            let pk = i32::from_be_bytes(p.partition_key[0].clone().try_into().unwrap());
            got.entry(pk).or_default().extend(p.rows.iter().map(row_of));
        }
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let want: BTreeMap<i32, Vec<ModelRow>> = (0..PKS)
        .map(|pk| (pk, model.rows(pk, order)))
        .filter(|(_, r)| !r.is_empty())
        .collect();
    prop_assert_eq!(got, want, "final scan (order {:?})", order);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, max_shrink_iters: 300, ..ProptestConfig::default() })]

    #[test]
    fn storage_matches_model(
        ops in prop::collection::vec(arb_op(), 1..120),
        desc in any::<bool>(),
        old_layout in any::<bool>(),
    ) {
        let order = if desc { Order::Desc } else { Order::Asc };
        let result = run(&ops, order, old_layout);
        if result.is_err() {
            eprintln!("op log ({order:?}, old layout {old_layout}):");
            for (i, op) in ops.iter().enumerate() {
                eprintln!("  #{i}: {op:?}");
            }
        }
        result?;
    }
}
