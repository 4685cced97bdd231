//! Single-row point reads (`TableLayout::point_row_columns`) agree with range reads of the same
//! row under random writes, deletions, TTLs, flushes and compactions.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering as AtomicOrdering;

use cql::types::{DataType, NativeType as N};
use proptest::prelude::RngExt;
use proptest::test_runner::{RngAlgorithm, TestRng};

use crate::tests::{int, open_clocked};
use crate::*;

/// Reads rows as ranges (the reference).
const RANGED: TableId = TableId(0x1);
/// Reads single rows with point lookups.
const POINT: TableId = TableId(0x2);
const STATIC_COL: u32 = 5;

/// A seeded generator, so a failure replays exactly.
struct Rng(TestRng);

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        Rng(TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n)
    }
}

fn layout(point: bool, clustering: bool) -> TableLayout {
    TableLayout {
        partition_key: vec![N::Int.into()],
        clustering: if clustering {
            vec![(N::Int.into(), Order::Asc)]
        } else {
            Vec::new()
        },
        columns: BTreeMap::from([
            (1, DataType::TEXT),
            (9, N::Int.into()),
            (STATIC_COL, DataType::TEXT),
        ]),
        point_row_columns: point.then(|| vec![1, 9]),
        ..Default::default()
    }
}

fn clustering_of(ck: i32, clustering: bool) -> Vec<Vec<u8>> {
    if clustering {
        vec![int(ck)]
    } else {
        Vec::new()
    }
}

fn random_mutation(rng: &mut Rng, ts: i64, clustering: bool) -> Mutation {
    let pk = rng.below(3) as i32;
    let ck = rng.below(6) as i32;
    let ttl = (rng.below(4) == 0).then(|| 1 + rng.below(20) as u32);
    let mut m = Mutation {
        partition_key: vec![int(pk)],
        ..Default::default()
    };
    let mut row = RowWrite {
        clustering: clustering_of(ck, clustering),
        ..Default::default()
    };
    let column = if rng.below(2) == 0 { 1 } else { 9 };
    let value = if column == 1 {
        format!("v{}", rng.below(100)).into_bytes()
    } else {
        int(rng.below(100) as i32)
    };
    match rng.below(8) {
        0 | 1 => {
            row.liveness = Some(Liveness { timestamp: ts, ttl });
            row.columns.push(ColumnWrite {
                column,
                op: ColumnOp::Set {
                    value,
                    timestamp: ts,
                    ttl,
                },
            });
        }
        2 => row.columns.push(ColumnWrite {
            column,
            op: ColumnOp::Set {
                value,
                timestamp: ts,
                ttl,
            },
        }),
        3 => row.columns.push(ColumnWrite {
            column,
            op: ColumnOp::Delete { timestamp: ts },
        }),
        4 => row.deletion = Some(Deletion { timestamp: ts }),
        5 if clustering => {
            let lo = rng.below(6) as i32;
            m.range_deletions.push(RangeDeletion {
                start: ClusteringBound::Inclusive(vec![int(lo)]),
                end: ClusteringBound::Exclusive(vec![int(lo + 2)]),
                deletion: Deletion { timestamp: ts },
            });
        }
        6 if clustering => m.static_columns.push(ColumnWrite {
            column: STATIC_COL,
            op: ColumnOp::Set {
                value: b"s".to_vec(),
                timestamp: ts,
                ttl,
            },
        }),
        _ => m.partition_deletion = Some(Deletion { timestamp: ts }),
    }
    if row.liveness.is_some() || row.deletion.is_some() || !row.columns.is_empty() {
        m.rows.push(row);
    }
    m
}

fn check_agreement(clustering: bool, seed: u64) {
    let (_dir, db, clock) = open_clocked(SyncPolicy::default());
    db.create_table(RANGED, layout(false, clustering)).unwrap();
    db.create_table(POINT, layout(true, clustering)).unwrap();
    let mut rng = Rng::new(seed);
    let mut point_hits = 0;
    for step in 0..600i64 {
        // Timestamps mostly rise but sometimes arrive late, so older writes must lose.
        let ts = step * 10 - rng.below(40) as i64;
        let m = random_mutation(&mut rng, ts, clustering);
        db.apply(RANGED, &m).unwrap();
        db.apply(POINT, &m).unwrap();
        match rng.below(40) {
            0 => {
                for t in [RANGED, POINT] {
                    db.table(t)
                        .unwrap()
                        .keyspace()
                        .rotate_memtable_and_wait()
                        .unwrap();
                }
            }
            1 => {
                for t in [RANGED, POINT] {
                    db.table(t).unwrap().keyspace().major_compact().unwrap();
                }
            }
            2 => {
                clock.fetch_add(rng.below(15) as i64, AtomicOrdering::SeqCst);
            }
            _ => {}
        }
        for pk in 0..3 {
            for ck in 0..6 {
                let slice = if clustering {
                    let at = ClusteringBound::Inclusive(vec![int(ck)]);
                    Slice {
                        start: at.clone(),
                        end: at,
                        limit: Some(1),
                        ..Default::default()
                    }
                } else {
                    Slice::default()
                };
                let point_table = db.table(POINT).unwrap();
                assert!(crate::read::single_row(&point_table, &slice).is_some());
                let expected = db.read_partition(RANGED, &[int(pk)], &slice).unwrap();
                let got = db.read_partition(POINT, &[int(pk)], &slice).unwrap();
                assert_eq!(
                    (&got.rows, &got.static_cells, &got.cursor),
                    (&expected.rows, &expected.static_cells, &expected.cursor),
                    "step {step}, pk {pk}, ck {ck}"
                );
                point_hits += got.rows.len();
            }
        }
    }
    assert!(point_hits > 0, "the point path never returned a row");
}

#[test]
fn point_reads_of_one_row_match_range_reads() {
    for seed in [7, 1234, 987_654_321] {
        check_agreement(true, seed);
    }
}

#[test]
fn point_reads_of_tables_without_clustering_match_range_reads() {
    for seed in [11, 4321] {
        check_agreement(false, seed);
    }
}
