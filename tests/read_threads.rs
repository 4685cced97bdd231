//! Reads answered on the read threads (`read_threads`) through the scylla driver: the same
//! rows as inline, pages included, under many concurrent requests on one connection.

mod common;

use common::{create_keyspace, run_all, TestServer};
use futures::future::join_all;
use scylla::statement::prepared::PreparedStatement;

const PARTITIONS: i64 = 20;
const ROWS: i32 = 200;

/// The value stored in row (`pk`, `c`).
fn value(pk: i64, c: i32) -> String {
    format!("v-{pk}-{c}")
}

/// Creates `ks.wide` and fills it with `PARTITIONS` x `ROWS` rows.
async fn fill(session: &scylla::client::session::Session) {
    run_all(
        session,
        &[
            &create_keyspace("ks"),
            "CREATE TABLE ks.wide (pk bigint, c int, v text, PRIMARY KEY (pk, c))",
        ],
    )
    .await;
    let insert = session
        .prepare("INSERT INTO ks.wide (pk, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare insert");
    for pk in 0..PARTITIONS {
        let writes = (0..ROWS).map(|c| session.execute_unpaged(&insert, (pk, c, value(pk, c))));
        for r in join_all(writes).await {
            r.expect("insert");
        }
    }
}

/// Runs `n` concurrent slices (10 rows each) and point reads and checks every answer.
async fn check_reads(
    session: &scylla::client::session::Session,
    slice: &PreparedStatement,
    point: &PreparedStatement,
    n: i32,
) {
    let slices = (0..n).map(|i| {
        let pk = i64::from(i) % PARTITIONS;
        let start = (i * 7) % (ROWS - 10);
        async move {
            let rows: Vec<(i32, String)> = session
                .execute_unpaged(slice, (pk, start, start + 10))
                .await
                .expect("slice")
                .into_rows_result()
                .expect("rows")
                .rows::<(i32, String)>()
                .expect("typed rows")
                .map(|r| r.expect("row"))
                .collect();
            let want: Vec<(i32, String)> = (start..start + 10).map(|c| (c, value(pk, c))).collect();
            assert_eq!(rows, want, "slice of partition {pk} from {start}");
        }
    });
    let points = (0..n).map(|i| {
        let pk = i64::from(i * 3) % PARTITIONS;
        let c = (i * 13) % ROWS;
        async move {
            let (v,): (String,) = session
                .execute_unpaged(point, (pk, c))
                .await
                .expect("point read")
                .into_rows_result()
                .expect("rows")
                .single_row::<(String,)>()
                .expect("one row");
            assert_eq!(v, value(pk, c), "row ({pk}, {c})");
        }
    });
    futures::join!(join_all(slices), join_all(points));
}

/// A filled server with `read_threads` read threads, handing over every read they have room
/// for, a session, and the prepared slice and point read.
async fn start(
    read_threads: usize,
) -> (
    TestServer,
    scylla::client::session::Session,
    PreparedStatement,
    PreparedStatement,
) {
    let server = TestServer::start_with(|c| {
        c.read_threads = Some(read_threads);
        c.read_offload_after_us = 0;
        c.read_offload_min_request_us = 0;
        c.read_offload_wake_us = 0;
    })
    .await;
    let session = server.session().await;
    fill(&session).await;
    let slice = session
        .prepare("SELECT c, v FROM ks.wide WHERE pk = ? AND c >= ? AND c < ?")
        .await
        .expect("prepare slice");
    let point = session
        .prepare("SELECT v FROM ks.wide WHERE pk = ? AND c = ?")
        .await
        .expect("prepare point");
    (server, session, slice, point)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_on_read_threads_return_the_rows_inline_reads_do() {
    let (server, session, slice, point) = start(2).await;
    let before = server.node.reads_handed_over();
    check_reads(&session, &slice, &point, 2000).await;
    let handed = server.node.reads_handed_over() - before;
    assert!(handed > 0, "no read went to a read thread");

    // A paged read: every page, whichever thread answers it, continues where the last ended.
    let mut paged = session
        .prepare("SELECT c FROM ks.wide WHERE pk = ?")
        .await
        .expect("prepare paged");
    paged.set_page_size(7);
    let pages = (0..PARTITIONS).map(|pk| {
        let paged = paged.clone();
        let session = &session;
        async move {
            use futures::TryStreamExt;
            let cs: Vec<i32> = session
                .execute_iter(paged, (pk,))
                .await
                .expect("paged read")
                .rows_stream::<(i32,)>()
                .expect("typed stream")
                .map_ok(|(c,)| c)
                .try_collect()
                .await
                .expect("pages");
            assert_eq!(cs, (0..ROWS).collect::<Vec<_>>(), "partition {pk}");
        }
    });
    join_all(pages).await;

    // Errors raised on a read thread come back as the request's own error, and the
    // connection goes on serving.
    let limited = session
        .prepare("SELECT c FROM ks.wide WHERE pk = ? LIMIT ?")
        .await
        .expect("prepare limited");
    // A statement's first execution plans it on the blocking pool; only planned ones can
    // run inline or on a read thread, so the concurrent ones below come after one alone.
    let first = session
        .execute_unpaged(&limited, (0i64, 0i32))
        .await
        .expect_err("LIMIT 0 is refused")
        .to_string();
    assert!(first.contains("LIMIT must be strictly positive"), "{first}");
    let before = server.node.reads_handed_over();
    let refused =
        (0..200).map(|i| session.execute_unpaged(&limited, (i64::from(i) % PARTITIONS, 0i32)));
    for r in join_all(refused).await {
        let e = r.expect_err("LIMIT 0 is refused").to_string();
        assert!(e.contains("LIMIT must be strictly positive"), "{e}");
    }
    assert!(
        server.node.reads_handed_over() > before,
        "no refused read went to a read thread"
    );
    check_reads(&session, &slice, &point, 100).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_read_threads_every_read_runs_inline() {
    let (server, session, slice, point) = start(0).await;
    check_reads(&session, &slice, &point, 500).await;
    assert_eq!(server.node.reads_handed_over(), 0);
    server.stop().await;
}
