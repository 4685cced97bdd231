//! Criterion micro-benchmarks of the storage engine: write, point read, 100-row slice, key encode,
//! and 10-row slices of a loaded table before and after its compaction into one sorted run.

use cql::types::{DataType, NativeType};
use criterion::{criterion_group, criterion_main, Criterion};
use std::collections::BTreeMap;
use std::hint::black_box;
use storage::{
    ClusteringBound, ColumnOp, ColumnWrite, Liveness, Mutation, Order, RowWrite, Slice, Storage,
    StorageOptions, TableId, TableLayout,
};

/// The server's allocator, so allocation costs what it costs there (glibc's malloc made the
/// allocations of a 10-row slice look several times dearer).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const TABLE: TableId = TableId(1);

fn row(pk: i64, c: i32, ts: i64) -> Mutation {
    Mutation {
        partition_key: vec![pk.to_be_bytes().to_vec()],
        rows: vec![RowWrite {
            clustering: vec![c.to_be_bytes().to_vec()],
            liveness: Some(Liveness {
                timestamp: ts,
                ttl: None,
            }),
            columns: vec![ColumnWrite {
                column: 2,
                op: ColumnOp::Set {
                    value: vec![b'x'; 100],
                    timestamp: ts,
                    ttl: None,
                },
            }],
            ..RowWrite::default()
        }],
        ..Mutation::default()
    }
}

fn open() -> (tempfile::TempDir, Storage) {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = Storage::open(dir.path(), StorageOptions::default()).expect("open");
    let layout = TableLayout {
        partition_key: vec![DataType::Native(NativeType::Bigint)],
        clustering: vec![(DataType::Native(NativeType::Int), Order::Asc)],
        columns: BTreeMap::from([(2, DataType::Native(NativeType::Text))]),
        ..TableLayout::default()
    };
    storage.create_table(TABLE, layout).expect("table");
    (dir, storage)
}

fn benches(c: &mut Criterion) {
    let (_dir, storage) = open();
    // 100 partitions of 100 rows, plus one partition of 10,000 rows for slices.
    for pk in 0..100i64 {
        for ck in 0..100i32 {
            storage.apply(TABLE, &row(pk, ck, 1)).expect("load");
        }
    }
    for ck in 0..10_000i32 {
        storage.apply(TABLE, &row(1_000_000, ck, 1)).expect("load");
    }
    let mut ts = 2i64;
    c.bench_function("storage/write_row_100B", |b| {
        b.iter(|| {
            ts += 1;
            storage
                .apply(TABLE, &row(ts % 1000 + 200, (ts % 100) as i32, ts))
                .expect("write");
        })
    });
    let mut i = 0i64;
    c.bench_function("storage/point_read", |b| {
        b.iter(|| {
            i += 1;
            let key = vec![(i % 100).to_be_bytes().to_vec()];
            let ck = vec![((i % 100) as i32).to_be_bytes().to_vec()];
            let slice = Slice {
                start: ClusteringBound::Inclusive(ck.clone()),
                end: ClusteringBound::Inclusive(ck),
                limit: Some(1),
                ..Slice::default()
            };
            black_box(storage.read_partition(TABLE, &key, &slice).expect("read"))
        })
    });
    c.bench_function("storage/slice_100_rows_of_10000", |b| {
        b.iter(|| {
            let key = vec![1_000_000i64.to_be_bytes().to_vec()];
            let slice = Slice {
                start: ClusteringBound::Inclusive(vec![5000i32.to_be_bytes().to_vec()]),
                limit: Some(100),
                ..Slice::default()
            };
            black_box(storage.read_partition(TABLE, &key, &slice).expect("slice"))
        })
    });
    let columns = vec![
        (DataType::Native(NativeType::Int), Order::Asc),
        (DataType::Native(NativeType::Text), Order::Desc),
    ];
    let values = vec![42i32.to_be_bytes().to_vec(), b"clustering-text".to_vec()];
    c.bench_function("storage/key_encode_clustering", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(64);
            storage::key::encode_clustering(&columns, black_box(&values), &mut out)
                .expect("encode");
            black_box(out)
        })
    });
}

/// 20 partitions of 10,000 rows written in three parts, the first two flushed: the shape a
/// loaded table has before idle compaction (a memtable and two tables).
fn loaded() -> (tempfile::TempDir, Storage) {
    let (dir, storage) = open();
    for part in 0..3i32 {
        for pk in 0..20i64 {
            for ck in (part * 3334)..((part + 1) * 3334).min(10_000) {
                storage.apply(TABLE, &row(pk, ck, 1)).expect("load");
            }
        }
        if part < 2 {
            storage.flush_table(TABLE).expect("flush");
        }
    }
    (dir, storage)
}

fn slice_benches(c: &mut Criterion) {
    let (_dir, storage) = loaded();
    let (_dir2, compacted) = loaded();
    assert_eq!(storage.sorted_runs(TABLE).expect("runs"), [3]);
    assert_eq!(compacted.compact_table(TABLE).expect("compact"), [1]);
    for (name, store) in [
        ("storage/slice_10_rows_3_runs", &storage),
        ("storage/slice_10_rows_1_run", &compacted),
    ] {
        let mut i = 0u64;
        c.bench_function(name, |b| {
            b.iter(|| {
                i = i
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let pk = ((i >> 33) % 20) as i64;
                let ck = ((i >> 12) % 9990) as i32;
                let slice = Slice {
                    start: ClusteringBound::Inclusive(vec![ck.to_be_bytes().to_vec()]),
                    end: ClusteringBound::Exclusive(vec![(ck + 10).to_be_bytes().to_vec()]),
                    ..Slice::default()
                };
                let key = vec![pk.to_be_bytes().to_vec()];
                black_box(store.read_partition(TABLE, &key, &slice).expect("slice"))
            })
        });
    }
}

criterion_group!(storage_benches, benches, slice_benches);
criterion_main!(storage_benches);
