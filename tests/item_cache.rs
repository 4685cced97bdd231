//! The item cache (`item_cache_mb`) through the scylla driver: point reads after overwrites,
//! older-timestamp writes, deletes, truncate and a restart answer with the newest write, with
//! a cache small enough to keep evicting.

mod common;

use common::{create_keyspace, run_all, TestServer};
use futures::future::join_all;
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;

const KEYS: i64 = 2_000;

/// Writes `value(k)` to every key, 200 at a time.
async fn write_all(session: &Session, insert: &PreparedStatement, value: impl Fn(i64) -> String) {
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(200) {
        let writes = chunk
            .iter()
            .map(|&k| session.execute_unpaged(insert, (k, 0i32, value(k))));
        for r in join_all(writes).await {
            r.expect("insert");
        }
    }
}

/// Every key's value (`None`: no row), 200 reads at a time.
async fn read_all(session: &Session, select: &PreparedStatement) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(200) {
        let reads = chunk
            .iter()
            .map(|&k| session.execute_unpaged(select, (k, 0i32)));
        for r in join_all(reads).await {
            let rows = r.expect("select").into_rows_result().expect("rows");
            out.push(
                rows.maybe_first_row::<(String,)>()
                    .expect("typed row")
                    .map(|(v,)| v),
            );
        }
    }
    out
}

fn all(value: impl Fn(i64) -> String) -> Vec<Option<String>> {
    (0..KEYS).map(|k| Some(value(k))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn point_reads_see_the_newest_write_through_a_small_item_cache() {
    let server = TestServer::start_with(|c| c.item_cache_mb = Some(1)).await;
    let session = server.session().await;
    run_all(
        &session,
        &[
            &create_keyspace("ks"),
            "CREATE TABLE ks.kv (pk bigint, c int, v text, PRIMARY KEY (pk, c))",
        ],
    )
    .await;
    let insert = session
        .prepare("INSERT INTO ks.kv (pk, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare");
    let select = session
        .prepare("SELECT v FROM ks.kv WHERE pk = ? AND c = ?")
        .await
        .expect("prepare");

    for round in 0..4 {
        let value = |k: i64| format!("round {round} key {k} {}", "x".repeat(100));
        write_all(&session, &insert, value).await;
        assert_eq!(
            read_all(&session, &select).await,
            all(value),
            "round {round}"
        );
    }
    let last = |k: i64| format!("round 3 key {k} {}", "x".repeat(100));

    // Older than what is stored (and cached): ignored.
    let old = session
        .prepare("INSERT INTO ks.kv (pk, c, v) VALUES (?, ?, ?) USING TIMESTAMP 1")
        .await
        .expect("prepare");
    write_all(&session, &old, |k| format!("stale {k}")).await;
    assert_eq!(read_all(&session, &select).await, all(last));

    session
        .query_unpaged("DELETE FROM ks.kv WHERE pk = 7 AND c = 0", ())
        .await
        .expect("delete");
    let mut want = all(last);
    want[7] = None;
    assert_eq!(read_all(&session, &select).await, want);

    session
        .query_unpaged("TRUNCATE ks.kv", ())
        .await
        .expect("truncate");
    assert_eq!(read_all(&session, &select).await, vec![None; KEYS as usize]);
    let after = |k: i64| format!("after truncate {k}");
    write_all(&session, &insert, after).await;
    assert_eq!(read_all(&session, &select).await, all(after));

    // The cache is memory: a restarted server answers from disk.
    drop(session);
    let dir = server.stop().await;
    let server = TestServer::start_in(dir).await;
    let session = server.session().await;
    let select = session
        .prepare("SELECT v FROM ks.kv WHERE pk = ? AND c = ?")
        .await
        .expect("prepare");
    assert_eq!(read_all(&session, &select).await, all(after));
    server.stop().await;
}
