//! Physical partitions: splits under load, routing across splits, the logical partition cap,
//! crash recovery of every split step, gc-grace purging.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use cql::types::{DataType, NativeType as N};

use crate::split::SplitStep;
use crate::token::{MAX_TOKEN, MIN_TOKEN};
use crate::*;

const T: TableId = TableId(0x5eed);
const ROWS_PER_PARTITION: i32 = 4;

fn int(v: i32) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}

fn layout() -> TableLayout {
    TableLayout {
        partition_key: vec![N::Int.into()],
        clustering: vec![(N::Int.into(), Order::Asc)],
        columns: BTreeMap::from([(1, DataType::TEXT)]),
        ..Default::default()
    }
}

fn options(physical: u64, clock: &Arc<AtomicI64>) -> StorageOptions {
    let c = clock.clone();
    StorageOptions {
        physical_partition_max_bytes: physical,
        clock: Some(Arc::new(move || c.load(Ordering::SeqCst))),
        ..Default::default()
    }
}

fn open(dir: &std::path::Path, opts: StorageOptions) -> Storage {
    let db = Storage::open(dir, opts).unwrap();
    db.create_table(T, layout()).unwrap();
    db
}

/// Storage that never splits, with logical partitions capped at 20 KiB.
fn open_capped(dir: &std::path::Path) -> Storage {
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let opts = StorageOptions {
        logical_partition_max_bytes: 20 << 10,
        ..options(u64::MAX, &clock)
    };
    open(dir, opts)
}

fn value(pk: i32, ck: i32, len: usize) -> Vec<u8> {
    format!("{pk}/{ck}/")
        .into_bytes()
        .into_iter()
        .chain(std::iter::repeat(b'x'))
        .take(len)
        .collect()
}

fn rows(pk: i32, cks: std::ops::Range<i32>, len: usize) -> Mutation {
    Mutation {
        partition_key: vec![int(pk)],
        rows: cks
            .map(|ck| RowWrite {
                clustering: vec![int(ck)],
                liveness: Some(Liveness {
                    timestamp: 1,
                    ttl: None,
                }),
                columns: vec![ColumnWrite {
                    column: 1,
                    op: ColumnOp::Set {
                        value: value(pk, ck, len),
                        timestamp: 1,
                        ttl: None,
                    },
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn check_partition(db: &Storage, pk: i32, expected_rows: i32, len: usize) {
    let p = db.read_partition(T, &[int(pk)], &Slice::default()).unwrap();
    assert_eq!(p.rows.len(), expected_rows as usize, "partition {pk}");
    for (ck, row) in p.rows.iter().enumerate() {
        let want = ColumnValue::Simple(CellValue {
            value: value(pk, ck as i32, len),
            timestamp: 1,
            ttl: None,
        });
        assert_eq!(row.cells.get(&1), Some(&want), "partition {pk} row {ck}");
    }
}

/// Every partition key of a paged full scan (page size `page`).
fn scan_keys(db: &Storage, page: usize) -> Vec<i32> {
    let mut keys = Vec::new();
    let mut cursor = None;
    loop {
        let p = db.scan(T, TokenRange::FULL, page, cursor.as_ref()).unwrap();
        for part in &p.partitions {
            let k: [u8; 4] = part.partition_key[0].as_slice().try_into().unwrap();
            let k = i32::from_be_bytes(k);
            // A partition continued on the next page shows up on both: count it once.
            if keys.last() != Some(&k) {
                keys.push(k);
            }
        }
        match p.cursor {
            Some(c) => cursor = Some(c),
            None => return keys,
        }
    }
}

fn assert_tiles(parts: &[PhysicalPartitionInfo]) {
    assert_eq!(parts.first().unwrap().start_token, MIN_TOKEN);
    assert_eq!(parts.last().unwrap().end_token, MAX_TOKEN);
    for w in parts.windows(2) {
        assert_eq!(w[0].end_token, w[1].start_token, "gap or overlap");
    }
    for p in parts {
        assert!(p.start_token < p.end_token);
    }
}

/// Keyspaces holding keys of partition `pk`.
fn keyspaces_holding(db: &Storage, pk: i32) -> usize {
    let serialized = token::serialize_partition_key(&[&int(pk)]);
    let prefix = key::partition_prefix(token::token(&serialized), &serialized);
    let view = db.table(T).unwrap().ring.current();
    view.parts
        .iter()
        .filter(|p| p.keyspace.prefix(&prefix).next().is_some())
        .count()
}

#[test]
fn load_with_concurrent_reader_splits_into_balanced_tiling_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let db = open(dir.path(), options(64 << 10, &clock));
    const PARTITIONS: i32 = 2048;
    const LEN: usize = 1000;
    let done = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (db, done, stop) = (db.clone(), done.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut reads, mut scans) = (0u64, 0u64);
            let mut seed = 12345u64;
            while !stop.load(Ordering::SeqCst) {
                let written = done.load(Ordering::SeqCst);
                if written == 0 {
                    continue;
                }
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                check_partition(
                    &db,
                    (seed >> 33) as i32 % written as i32,
                    ROWS_PER_PARTITION,
                    LEN,
                );
                reads += 1;
                if reads % 3000 == 0 {
                    let keys = scan_keys(&db, 97);
                    let unique: HashSet<i32> = keys.iter().copied().collect();
                    assert_eq!(unique.len(), keys.len(), "a scan saw a partition twice");
                    assert!(unique.len() >= written, "a scan missed partitions");
                    scans += 1;
                }
            }
            (reads, scans)
        })
    };
    let started = Instant::now();
    for pk in 0..PARTITIONS {
        db.apply(T, &rows(pk, 0..ROWS_PER_PARTITION, LEN)).unwrap();
        done.store(pk as usize + 1, Ordering::SeqCst);
    }
    db.wait_for_splits();
    let elapsed = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let (reads, scans) = reader.join().unwrap();

    let parts = db.physical_partitions(T).unwrap();
    assert_tiles(&parts);
    let total: u64 = parts.iter().map(|p| p.bytes).sum();
    let (min, max) = (
        parts.iter().map(|p| p.bytes).min().unwrap(),
        parts.iter().map(|p| p.bytes).max().unwrap(),
    );
    println!(
        "{} physical partitions, {total} bytes, sizes {min}..{max}, {:?} load+split \
         ({:.1} ms/MiB), reader: {reads} reads, {scans} scans",
        parts.len(),
        elapsed,
        elapsed.as_secs_f64() * 1000.0 / (total as f64 / (1 << 20) as f64),
    );
    assert!(total > 8 << 20);
    assert!(parts.len() >= 32, "{} physical partitions", parts.len());
    assert!(max <= 2 * min, "sizes {min}..{max} not within 2x");
    assert!(parts.iter().all(|p| p.state == PartitionState::Active));
    assert_eq!(
        parts.iter().map(|p| p.partitions_estimate).sum::<u64>(),
        PARTITIONS as u64
    );
    // The counters are exact: compare with a recount of every keyspace.
    let view = db.table(T).unwrap().ring.current();
    for (i, p) in view.parts.iter().enumerate() {
        let (start, end) = (view.map.start(i), view.map.ranges[i].end);
        let (mut inside, mut outside) = (0u64, 0u64);
        let mut prefixes = std::collections::HashSet::new();
        for g in p.keyspace.iter() {
            let (k, v) = g.into_inner().unwrap();
            let t = key::token_of(&k);
            if start < t && t <= end {
                inside += (k.len() + v.len()) as u64;
            } else {
                outside += (k.len() + v.len()) as u64;
            }
            let (_, _, rest) = key::split_partition_prefix(&k).unwrap();
            prefixes.insert(k[..k.len() - rest.len()].to_vec());
        }
        assert_eq!(
            (inside, outside, prefixes.len() as u64),
            (p.bytes(), 0, p.partitions()),
            "physical partition {} ({start}, {end}]",
            p.id
        );
    }
    drop(view);
    for pk in 0..PARTITIONS {
        check_partition(&db, pk, ROWS_PER_PARTITION, LEN);
    }
    let mut keys = scan_keys(&db, 50);
    assert_eq!(keys.len(), PARTITIONS as usize);
    keys.sort();
    assert_eq!(keys, (0..PARTITIONS).collect::<Vec<_>>());
    // Splitting the ring into contiguous token ranges returns every partition once.
    let mut seen = 0;
    for e in db.size_estimates(T).unwrap() {
        let page = db
            .scan(
                T,
                TokenRange {
                    start: e.range_start,
                    end: e.range_end,
                },
                usize::MAX,
                None,
            )
            .unwrap();
        assert_eq!(page.partitions.len() as u64, e.partitions_count);
        seen += page.partitions.len();
    }
    assert_eq!(seen, PARTITIONS as usize);

    // The routing map and the statistics survive a reopen.
    drop(db);
    let db = open(dir.path(), options(64 << 10, &clock));
    assert_eq!(db.physical_partitions(T).unwrap(), parts);
    check_partition(&db, 77, ROWS_PER_PARTITION, LEN);
}

#[test]
fn scan_cursor_survives_a_split_between_pages() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let db = open(dir.path(), options(u64::MAX, &clock));
    for pk in 0..300 {
        db.apply(T, &rows(pk, 0..3, 100)).unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let p = db.scan(T, TokenRange::FULL, 7, cursor.as_ref()).unwrap();
        for part in &p.partitions {
            seen.push((part.token, part.rows.len()));
        }
        pages += 1;
        if pages % 10 == 0 {
            assert!(db.split_now(T).unwrap());
        }
        match p.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert!(db.physical_partitions(T).unwrap().len() >= 8);
    // Pages may cut partitions: merge consecutive pieces, then every partition has 3 rows.
    let mut merged: Vec<(i64, usize)> = Vec::new();
    for (t, n) in seen {
        match merged.last_mut() {
            Some((lt, ln)) if *lt == t => *ln += n,
            _ => merged.push((t, n)),
        }
    }
    assert_eq!(merged.len(), 300);
    assert!(merged.iter().all(|(_, n)| *n == 3));
    assert!(merged.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn hot_logical_partition_is_never_cut() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let db = open(dir.path(), options(32 << 10, &clock));
    const HOT: i32 = 424242;
    for i in 0..400 {
        db.apply(T, &rows(HOT, i * 2..i * 2 + 2, 500)).unwrap();
        db.apply(T, &rows(i, 0..1, 200)).unwrap();
        if i % 50 == 0 {
            // Routing never cuts it (keys being copied by a split exist twice until the trim).
            let t = token::token(&token::serialize_partition_key(&[&int(HOT)]));
            let owners = db.physical_partitions(T).unwrap();
            assert_eq!(
                owners
                    .iter()
                    .filter(|p| p.start_token < t && t <= p.end_token)
                    .count(),
                1
            );
        }
    }
    db.wait_for_splits();
    assert_eq!(keyspaces_holding(&db, HOT), 1);
    check_partition(&db, HOT, 800, 500);
    let parts = db.physical_partitions(T).unwrap();
    assert_tiles(&parts);
    let serialized = token::serialize_partition_key(&[&int(HOT)]);
    let hot_token = token::token(&serialized);
    let hot = parts
        .iter()
        .find(|p| p.start_token < hot_token && hot_token <= p.end_token)
        .unwrap();
    assert!(hot.bytes > 32 << 10);
    assert_eq!(hot.partitions_estimate, 1, "{parts:#?}");
    assert_eq!(hot.state, PartitionState::Oversized);
    // Its size is the largest any partition of the table reached. The others' marks stay
    // below it: a split resets the source's mark from the sizes it read, but a write to the
    // hot partition racing that split can leave the hot size of that moment on the source.
    assert!(hot.largest_partition_bytes >= 800 * 500, "{hot:?}");
    assert!(
        parts
            .iter()
            .filter(|p| p.id != hot.id)
            .all(|p| p.largest_partition_bytes < hot.largest_partition_bytes),
        "{parts:#?}"
    );
    // Most splits see no such race: most partitions hold only their small rows' mark.
    let small = parts
        .iter()
        .filter(|p| p.largest_partition_bytes < 4 * 500)
        .count();
    assert!(small * 2 >= parts.len(), "{parts:#?}");
    // A forced split of a single-partition physical partition refuses.
    let before = db.physical_partitions(T).unwrap().len();
    while db.split_now(T).unwrap() {}
    assert_eq!(keyspaces_holding(&db, HOT), 1);
    assert!(db.physical_partitions(T).unwrap().len() >= before);
}

#[test]
fn logical_partition_cap_rejects_only_the_big_partition() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_capped(dir.path());
    let mut accepted = 0;
    let err = loop {
        match db.apply(T, &rows(1, accepted..accepted + 1, 1000)) {
            Ok(()) => accepted += 1,
            Err(e) => break e,
        }
        assert!(accepted < 100);
    };
    assert!((15..=20).contains(&accepted), "{accepted}");
    let msg = err.to_string();
    match err {
        StorageError::PartitionTooLarge {
            table, bytes, max, ..
        } => {
            assert_eq!(table, T);
            assert_eq!(max, 20 << 10);
            assert!(bytes > max);
        }
        e => panic!("{e}"),
    }
    assert!(
        msg.contains(&T.to_string()) && msg.contains("partition"),
        "{msg}"
    );
    // The failed write left nothing behind; overwrites that do not grow it still work, and
    // other partitions are unaffected.
    check_partition(&db, 1, accepted, 1000);
    db.apply(T, &rows(1, 0..1, 1000)).unwrap();
    db.apply(T, &rows(2, 0..10, 1000)).unwrap();
    check_partition(&db, 2, 10, 1000);
}

#[test]
fn apply_all_writes_every_partition_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_capped(dir.path());
    // One partition of the batch is over the cap: nothing of the batch is written.
    let (small, big) = (rows(1, 0..3, 1000), rows(2, 0..40, 1000));
    let err = db.apply_all(&[(T, &small), (T, &big)]).unwrap_err();
    assert!(
        matches!(err, StorageError::PartitionTooLarge { .. }),
        "{err}"
    );
    check_partition(&db, 1, 0, 1000);
    check_partition(&db, 2, 0, 1000);
    // Within the cap both land, in one batch.
    let fits = rows(2, 0..5, 1000);
    db.apply_all(&[(T, &small), (T, &fits)]).unwrap();
    check_partition(&db, 1, 3, 1000);
    check_partition(&db, 2, 5, 1000);
}

#[test]
fn crash_at_every_split_step_loses_nothing() {
    for step in [
        SplitStep::Prepared,
        SplitStep::Copying,
        SplitStep::Copied,
        SplitStep::Switched,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(AtomicI64::new(1_000_000));
        let db = open(dir.path(), options(u64::MAX, &clock));
        for pk in 0..200 {
            db.apply(T, &rows(pk, 0..2, 2000)).unwrap();
        }
        *db.inner.splitter.crash_at.lock().unwrap() = Some(step);
        assert!(!db.split_now(T).unwrap());
        if step == SplitStep::Copied {
            // Stopped after the copy: the split shows every byte it copied, about as many as
            // the partitions' sizes said it would.
            let parts = db.physical_partitions(T).unwrap();
            let (copied, expected) = parts
                .iter()
                .find_map(|p| p.split_progress)
                .expect("a partition is splitting");
            assert!(copied > 150_000, "{copied} of {expected}");
            assert!(
                copied.abs_diff(expected) <= expected / 10,
                "{copied} of {expected}"
            );
        }
        // Writes acknowledged after the "crash", before the process dies.
        for pk in 200..300 {
            db.apply(T, &rows(pk, 0..2, 2000)).unwrap();
        }
        db.apply(T, &rows(5, 2..3, 2000)).unwrap();
        drop(db);

        let db = open(dir.path(), options(u64::MAX, &clock));
        let parts = db.physical_partitions(T).unwrap();
        assert_tiles(&parts);
        let expected = if step == SplitStep::Switched { 2 } else { 1 };
        assert_eq!(parts.len(), expected, "{step:?}");
        let mut names: Vec<String> = db
            .inner
            .db
            .list_keyspace_names()
            .iter()
            .map(|n| n.to_string())
            .filter(|n| n.starts_with('t'))
            .collect();
        names.sort();
        let mut want: Vec<String> = parts.iter().map(|p| format!("t{T}_p{}", p.id)).collect();
        want.sort();
        assert_eq!(names, want, "{step:?}: stray keyspaces");
        for pk in 0..300 {
            check_partition(&db, pk, if pk == 5 { 3 } else { 2 }, 2000);
        }
        assert_eq!(scan_keys(&db, 1000).len(), 300);
        // The largest logical partition (pk 5, three rows) is known after the restart,
        // whether its statistics were saved or counted again.
        let largest = parts.iter().map(|p| p.largest_partition_bytes).max();
        assert!(largest.is_some_and(|b| b > 3 * 2000), "{parts:#?}");
        assert!(
            parts.iter().all(|p| p.split_progress.is_none()),
            "{parts:#?}"
        );
        // Splitting works again after recovery.
        assert!(db.split_now(T).unwrap());
        assert_eq!(db.physical_partitions(T).unwrap().len(), expected + 1);
        for pk in 0..300 {
            check_partition(&db, pk, if pk == 5 { 3 } else { 2 }, 2000);
        }
    }
}

#[test]
fn drop_and_truncate_remove_every_physical_partition() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let db = open(dir.path(), options(u64::MAX, &clock));
    for pk in 0..100 {
        db.apply(T, &rows(pk, 0..2, 500)).unwrap();
    }
    assert!(db.split_now(T).unwrap());
    assert!(db.split_now(T).unwrap());
    db.truncate(T).unwrap();
    assert_eq!(scan_keys(&db, 10).len(), 0);
    assert!(db
        .physical_partitions(T)
        .unwrap()
        .iter()
        .all(|p| p.bytes == 0));
    db.apply(T, &rows(1, 0..2, 500)).unwrap();
    db.drop_table(T).unwrap();
    assert!(db
        .inner
        .db
        .list_keyspace_names()
        .iter()
        .all(|n| !n.starts_with("t")));
    db.create_table(T, layout()).unwrap();
    assert_eq!(db.physical_partitions(T).unwrap().len(), 1);
    assert_eq!(scan_keys(&db, 10).len(), 0);
    assert_eq!(db.list_tables(), vec![T]);
}

#[test]
fn split_at_cuts_where_asked_and_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let db = open(dir.path(), options(u64::MAX, &clock));
    for pk in 0..200 {
        db.apply(T, &rows(pk, 0..3, 100)).unwrap();
    }
    // Empty ranges and exact boundaries split too; a cut where one already ends is a no-op.
    assert!(db.split_at(T, 0).unwrap());
    assert!(db.split_at(T, -1_000).unwrap());
    assert!(db.split_at(T, i64::MAX / 2).unwrap());
    assert!(!db.split_at(T, 0).unwrap());
    assert!(!db.split_at(T, MAX_TOKEN).unwrap());
    let parts = db.physical_partitions(T).unwrap();
    assert_tiles(&parts);
    let ends: Vec<i64> = parts.iter().map(|p| p.end_token).collect();
    assert_eq!(ends, vec![-1_000, 0, i64::MAX / 2, MAX_TOKEN]);
    let total: u64 = parts.iter().map(|p| p.partitions_estimate).sum();
    assert_eq!(total, 200);
    assert_eq!(scan_keys(&db, 7).len(), 200);
    for pk in 0..200 {
        check_partition(&db, pk, 3, 100);
        assert_eq!(keyspaces_holding(&db, pk), 1, "partition {pk} left behind");
    }
}

#[test]
fn truncate_range_removes_exactly_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let db = open(dir.path(), options(u64::MAX, &clock));
    for pk in 0..300 {
        db.apply(T, &rows(pk, 0..2, 50)).unwrap();
    }
    let token_of = |pk: i32| token::token(&token::serialize_partition_key(&[&int(pk)]));
    // One partition wholly inside the range (cleared), two cut by it (trimmed).
    assert!(db.split_at(T, -(1 << 62)).unwrap());
    assert!(db.split_at(T, 0).unwrap());
    assert!(db.split_at(T, 1 << 62).unwrap());
    let (start, end) = (-(1 << 62) - (1 << 60), (1 << 62) + (1 << 60));
    db.truncate_range(T, start, end).unwrap();
    let kept: Vec<i32> = {
        let mut k = scan_keys(&db, 13);
        k.sort();
        k
    };
    let want: Vec<i32> = (0..300)
        .filter(|pk| !(start < token_of(*pk) && token_of(*pk) <= end))
        .collect();
    assert!(want.len() > 50 && want.len() < 250, "{}", want.len());
    assert_eq!(kept, want);
    for pk in 0..300 {
        let p = db.read_partition(T, &[int(pk)], &Slice::default()).unwrap();
        assert_eq!(p.rows.len(), if want.contains(&pk) { 2 } else { 0 }, "{pk}");
    }
    // The trimmed partitions' counters lost what was removed: they match a recount.
    for part in db.table(T).unwrap().ring.current().parts.iter() {
        let (bytes, partitions, _) = crate::counting::recount(&part.keyspace).unwrap();
        assert_eq!(
            (part.bytes(), part.partitions()),
            (bytes, partitions),
            "{}",
            part.id
        );
    }
    db.truncate(T).unwrap();
    assert!(scan_keys(&db, 13).is_empty());
}

#[test]
fn compaction_purges_expired_cells_and_tombstones_after_gc_grace() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let db = Storage::open(dir.path(), options(u64::MAX, &clock)).unwrap();
    db.create_table(
        T,
        TableLayout {
            gc_grace_seconds: 100,
            ..layout()
        },
    )
    .unwrap();
    let mut m = rows(1, 0..1, 10);
    if let ColumnOp::Set { ttl, .. } = &mut m.rows[0].columns[0].op {
        *ttl = Some(10);
    }
    db.apply(T, &m).unwrap();
    let delete = |ck| Mutation {
        partition_key: vec![int(1)],
        rows: vec![RowWrite {
            clustering: vec![int(ck)],
            columns: vec![ColumnWrite {
                column: 1,
                op: ColumnOp::Delete { timestamp: 2 },
            }],
            ..Default::default()
        }],
        partition_deletion: None,
        ..Default::default()
    };
    db.apply(T, &delete(5)).unwrap();
    let partition_deletion = Mutation {
        partition_key: vec![int(2)],
        partition_deletion: Some(Deletion { timestamp: 2 }),
        ..Default::default()
    };
    db.apply(T, &partition_deletion).unwrap();
    // partition 3: an INSERT with a TTL, then an UPDATE without one that outlives it.
    let mut m = rows(3, 0..1, 10);
    m.rows[0].liveness = Some(Liveness {
        timestamp: 1,
        ttl: Some(10),
    });
    if let ColumnOp::Set { ttl, .. } = &mut m.rows[0].columns[0].op {
        *ttl = Some(10);
    }
    db.apply(T, &m).unwrap();
    let mut m = rows(3, 0..1, 7);
    m.rows[0].liveness = None;
    if let ColumnOp::Set { timestamp, .. } = &mut m.rows[0].columns[0].op {
        *timestamp = 2;
    }
    db.apply(T, &m).unwrap();
    let ks = db.table(T).unwrap().keyspace();
    let count = || ks.iter().count();
    let compact = || {
        ks.rotate_memtable_and_wait().unwrap();
        ks.major_compact().unwrap();
    };
    // Partition 1: row 0's item (a marker with the TTL cell), row 5's item (the cell
    // tombstone), a size cell; partition 2: deletion, size cell; partition 3: the row's item
    // (its expiring marker, the UPDATE's cell), a size cell.
    assert_eq!(count(), 7);
    clock.fetch_add(50, Ordering::SeqCst);
    compact();
    assert_eq!(count(), 7, "within gc-grace nothing is purged");
    clock.fetch_add(100, Ordering::SeqCst);
    compact();
    // Row 5's tombstone is gone; row 0's item stays whole (its marker has no TTL), as do
    // the partition deletion (it shadows other keys) and the size cells. Partition 3's row
    // sheds its expired marker and keeps the UPDATE's cell.
    assert_eq!(count(), 6);
    let p = db.read_partition(T, &[int(1)], &Slice::default()).unwrap();
    assert_eq!(p.rows.len(), 1);
    assert!(p.rows[0].cells.is_empty());
    let p = db.read_partition(T, &[int(3)], &Slice::default()).unwrap();
    assert_eq!(p.rows.len(), 1);
    let cell = |p: &PartitionSlice| match p.rows[0].cells.get(&1) {
        Some(ColumnValue::Simple(c)) => (c.value.clone(), c.timestamp, c.ttl),
        other => panic!("{other:?}"),
    };
    assert_eq!(cell(&p), (value(3, 0, 7), 2, None));
}

/// Split time per MiB and client latency while a split runs (not a timed test):
/// `cargo test -p storage --release bench_split -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_split() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_000_000));
    let db = open(dir.path(), options(u64::MAX, &clock));
    let mib: i32 = std::env::var("BENCH_SPLIT_MIB").map_or(32, |v| v.parse().unwrap());
    let partitions = mib * 256; // 4 rows of ~1 KiB each
    for pk in 0..partitions {
        db.apply(T, &rows(pk, 0..4, 1000)).unwrap();
    }
    let bytes = db.physical_partitions(T).unwrap()[0].bytes;
    let stop = Arc::new(AtomicBool::new(false));
    let client = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut writes, mut reads) = (Vec::new(), Vec::new());
            let mut pk = 0;
            while !stop.load(Ordering::SeqCst) {
                pk = (pk + 7919) % partitions;
                let t = Instant::now();
                db.apply(T, &rows(pk, 4..5, 1000)).unwrap();
                writes.push(t.elapsed());
                let t = Instant::now();
                check_partition(&db, (pk + 13) % partitions, 4, 1000);
                reads.push(t.elapsed());
            }
            (writes, reads)
        })
    };
    let t = Instant::now();
    assert!(db.split_now(T).unwrap());
    let took = t.elapsed();
    stop.store(true, Ordering::SeqCst);
    let (mut writes, mut reads) = client.join().unwrap();
    writes.sort();
    reads.sort();
    let pct = |v: &[std::time::Duration], p: f64| v[((v.len() - 1) as f64 * p) as usize];
    println!(
        "split of {:.1} MiB took {took:?}: {:.0} ms/GiB; during it {} writes (p50 {:?}, p99 {:?}, \
         max {:?}) and {} reads (p50 {:?}, p99 {:?}, max {:?})",
        bytes as f64 / (1 << 20) as f64,
        took.as_secs_f64() * 1000.0 / (bytes as f64 / (1 << 30) as f64),
        writes.len(),
        pct(&writes, 0.5),
        pct(&writes, 0.99),
        writes.last().unwrap(),
        reads.len(),
        pct(&reads, 0.5),
        pct(&reads, 0.99),
        reads.last().unwrap(),
    );
    for pk in 0..partitions {
        let n = db
            .read_partition(T, &[int(pk)], &Slice::default())
            .unwrap()
            .rows
            .len();
        assert!(n == 4 || n == 5);
    }
}
