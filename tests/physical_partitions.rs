//! Physical partitions through a real driver: with a 1 MiB threshold, loading data splits the
//! ring into many physical partitions that tile it exactly, with every row still readable,
//! a hot logical partition never cut, the logical-partition cap enforced, and splits that
//! survive SIGKILL.

mod common;

use common::{free_port, ServerProcess};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONFIG: &str =
    "physical_partition_max_bytes = 1048576\nlogical_partition_max_bytes = 8388608\n";

async fn connect(server: &ServerProcess) -> Session {
    SessionBuilder::new()
        .known_node(server.addr.to_string())
        .build()
        .await
        .expect("connect")
}

/// (id, start, end, bytes, state) of every physical partition of ks.t, in token order.
async fn partitions(session: &Session, table: &str) -> Vec<(i64, i64, i64, i64, String)> {
    let rows = session
        .query_unpaged(
            "SELECT id, start_token, end_token, bytes, state FROM system_views.physical_partitions WHERE keyspace_name = 'pp' AND table_name = ?",
            (table,),
        )
        .await
        .expect("physical_partitions")
        .into_rows_result()
        .expect("rows");
    let mut out: Vec<(i64, i64, i64, i64, String)> = rows
        .rows::<(i64, i64, i64, i64, String)>()
        .expect("typed")
        .map(|r| r.expect("row"))
        .collect();
    out.sort_by_key(|p| p.1);
    out
}

fn assert_tiles_the_ring(parts: &[(i64, i64, i64, i64, String)]) {
    assert!(!parts.is_empty());
    assert_eq!(
        parts[0].1,
        i64::MIN,
        "first range starts at the ring's start"
    );
    for w in parts.windows(2) {
        assert_eq!(
            w[0].2, w[1].1,
            "ranges are contiguous: {:?} then {:?}",
            w[0], w[1]
        );
    }
    let last = parts.last().map(|p| p.2);
    assert!(
        last == Some(i64::MAX) || last == Some(i64::MIN),
        "last range ends at the ring's end: {last:?}"
    );
}

async fn setup(session: &Session) {
    session
        .query_unpaged("CREATE KEYSPACE pp WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", &[])
        .await
        .expect("keyspace");
    session
        .query_unpaged(
            "CREATE TABLE pp.t (pk bigint, c int, v blob, PRIMARY KEY (pk, c))",
            &[],
        )
        .await
        .expect("table");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loading_64_mib_splits_the_ring_into_tiles_and_keeps_every_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ServerProcess::spawn_with_config(dir.path(), free_port(), CONFIG);
    let session = Arc::new(connect(&server).await);
    setup(&session).await;
    let insert = session
        .prepare("INSERT INTO pp.t (pk, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare");
    let read = session
        .prepare("SELECT c FROM pp.t WHERE pk = ? AND c = ?")
        .await
        .expect("prepare");

    // Readers run while the load (and the splits) go on.
    let written = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (session, read, written, stop) =
            (session.clone(), read.clone(), written.clone(), stop.clone());
        tokio::spawn(async move {
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let n = written.load(Ordering::Relaxed);
                if n == 0 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
                let i = (reads * 7919) % n;
                let (pk, c) = ((i / 16) as i64, (i % 16) as i32);
                let rows = session
                    .execute_unpaged(&read, (pk, c))
                    .await
                    .expect("read during load");
                let rows = rows.into_rows_result().expect("rows");
                assert_eq!(rows.rows_num(), 1, "row ({pk}, {c}) readable during splits");
                reads += 1;
            }
            reads
        })
    };
    let value = vec![7u8; 1024];
    let total: u64 = 64 * 1024; // 64 MiB of 1 KiB values
    let mut pending = Vec::new();
    for i in 0..total {
        let (pk, c) = ((i / 16) as i64, (i % 16) as i32);
        pending.push(session.execute_unpaged(&insert, (pk, c, value.clone())));
        if pending.len() == 64 {
            for f in pending.drain(..) {
                f.await.expect("write");
            }
            written.store(i + 1, Ordering::Relaxed);
        }
    }
    for f in pending.drain(..) {
        f.await.expect("write");
    }
    written.store(total, Ordering::Relaxed);
    // Splits finish in the background.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut parts = partitions(&session, "t").await;
    while (parts.len() < 32 || parts.iter().any(|p| p.4.contains("splitting")))
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
        parts = partitions(&session, "t").await;
    }
    stop.store(true, Ordering::Relaxed);
    let reads = reader.await.expect("reader");
    assert!(reads > 0, "the reader ran during the load");
    assert!(
        parts.len() >= 32,
        "at least 32 physical partitions, got {}",
        parts.len()
    );
    assert_tiles_the_ring(&parts);
    let sizes: Vec<i64> = parts.iter().map(|p| p.3).collect();
    let (min, max) = (
        sizes.iter().min().copied().unwrap_or(0),
        sizes.iter().max().copied().unwrap_or(0),
    );
    // Halving at the threshold leaves sizes in (max/2, max]: within 2x, allowing for accounting slack.
    assert!(
        min > 0 && (max as f64) <= 2.05 * min as f64,
        "sizes within 2x of each other: min {min}, max {max}: {parts:?}"
    );

    // Every row readable, and a full scan sees each row exactly once.
    let count = session
        .query_unpaged("SELECT count(*) FROM pp.t", &[])
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .first_row::<(i64,)>()
        .expect("count row")
        .0;
    assert_eq!(count as u64, total);
    for i in (0..total).step_by(997) {
        let (pk, c) = ((i / 16) as i64, (i % 16) as i32);
        let rows = session
            .execute_unpaged(&read, (pk, c))
            .await
            .expect("read")
            .into_rows_result()
            .expect("rows");
        assert_eq!(rows.rows_num(), 1, "row ({pk}, {c}) after the load");
    }
    assert!(server.terminate().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_partition_stays_whole_and_the_logical_cap_is_enforced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ServerProcess::spawn_with_config(dir.path(), free_port(), CONFIG);
    let session = connect(&server).await;
    setup(&session).await;
    let insert = session
        .prepare("INSERT INTO pp.t (pk, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare");
    let value = vec![1u8; 4096];
    // One hot partition of ~4 MiB (well over the 1 MiB threshold), plus a few small ones.
    for c in 0..1000i32 {
        session
            .execute_unpaged(&insert, (42i64, c, value.clone()))
            .await
            .expect("hot write");
    }
    for pk in 0..200i64 {
        session
            .execute_unpaged(&insert, (pk + 1000, 0i32, value.clone()))
            .await
            .expect("write");
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let parts = partitions(&session, "t").await;
    assert_tiles_the_ring(&parts);
    // The hot key's token lies in exactly one physical partition.
    let token = session
        .query_unpaged("SELECT token(pk) FROM pp.t WHERE pk = 42 LIMIT 1", &[])
        .await
        .expect("token")
        .into_rows_result()
        .expect("rows")
        .first_row::<(i64,)>()
        .expect("token row")
        .0;
    let owners = parts.iter().filter(|p| p.1 < token && token <= p.2).count();
    assert_eq!(
        owners, 1,
        "the hot partition is in one physical partition: {parts:?}"
    );
    let count = session
        .query_unpaged("SELECT count(*) FROM pp.t WHERE pk = 42", &[])
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .first_row::<(i64,)>()
        .expect("row")
        .0;
    assert_eq!(count, 1000);

    // Past the 8 MiB logical cap a write to that key fails with a clear error; others work.
    let mut err = None;
    for c in 1000..4000i32 {
        if let Err(e) = session
            .execute_unpaged(&insert, (42i64, c, value.clone()))
            .await
        {
            err = Some(e.to_string());
            break;
        }
    }
    let err = err.expect("the logical partition cap is enforced");
    assert!(
        err.contains("pp.t") || err.contains("partition"),
        "clear error: {err}"
    );
    session
        .execute_unpaged(&insert, (7i64, 0i32, value.clone()))
        .await
        .expect("other partitions unaffected");
    assert!(server.terminate().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_splits_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let server = ServerProcess::spawn_with_config(dir.path(), port, CONFIG);
    let session = connect(&server).await;
    setup(&session).await;
    let insert = session
        .prepare("INSERT INTO pp.t (pk, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare");
    let value = vec![3u8; 1024];
    let mut acked = 0u64;
    let mut pending = Vec::new();
    for i in 0..12_000u64 {
        pending.push(
            session.execute_unpaged(&insert, ((i / 8) as i64, (i % 8) as i32, value.clone())),
        );
        if pending.len() == 32 {
            for f in pending.drain(..) {
                f.await.expect("write");
                acked += 1;
            }
        }
    }
    drop(pending);
    // Kill while splits are running.
    server.kill();
    drop(session);
    let server = ServerProcess::spawn_with_config(dir.path(), port, CONFIG);
    let session = connect(&server).await;
    let parts = partitions(&session, "t").await;
    assert_tiles_the_ring(&parts);
    let count = session
        .query_unpaged("SELECT count(*) FROM pp.t", &[])
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .first_row::<(i64,)>()
        .expect("row")
        .0;
    assert_eq!(
        count as u64, acked,
        "every acknowledged write is there after SIGKILL during splits"
    );
    assert!(server.terminate().success());
}
