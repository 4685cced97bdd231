//! Row items through the scylla driver: a row's cells live in one stored item that INSERTs,
//! UPDATEs, nulls and older writes merge into cell by cell (`storage/src/bundle.rs`). Each
//! cell keeps its own write time and TTL, a row written only by UPDATEs lives while one of its
//! cells does, and point reads, range reads and a restart all agree.

mod common;

use common::{create_keyspace, run_all, TestServer};
use scylla::client::session::Session;

/// (a, b, writetime(a), writetime(b), ttl(a) is set, ttl(b) is set) of row (1, c).
type Cells = (
    Option<String>,
    Option<i32>,
    Option<i64>,
    Option<i64>,
    bool,
    bool,
);

/// Row (1, `c`) read by a point read and within a range read of its partition, which must
/// agree; None when the row is absent.
async fn row(session: &Session, c: i32) -> Option<Cells> {
    let columns = "c, a, b, writetime(a), writetime(b), ttl(a), ttl(b)";
    type Wire = (
        i32,
        Option<String>,
        Option<i32>,
        Option<i64>,
        Option<i64>,
        Option<i32>,
        Option<i32>,
    );
    let read = |cql: String| async move {
        let result = session.query_unpaged(cql.clone(), ()).await;
        let rows = result
            .unwrap_or_else(|e| panic!("{cql}: {e}"))
            .into_rows_result()
            .expect("rows");
        let all: Vec<Wire> = rows
            .rows::<Wire>()
            .expect("typed rows")
            .map(|r| r.expect("row"))
            .collect();
        all.into_iter()
            .find(|r| r.0 == c)
            .map(|(_, a, b, wa, wb, ta, tb)| (a, b, wa, wb, ta.is_some(), tb.is_some()))
    };
    let point = read(format!(
        "SELECT {columns} FROM ks.t WHERE pk = 1 AND c = {c}"
    ))
    .await;
    let range = read(format!("SELECT {columns} FROM ks.t WHERE pk = 1")).await;
    assert_eq!(point, range, "point and range reads of row {c} disagree");
    point
}

fn text(s: &str) -> Option<String> {
    Some(s.to_string())
}

/// The rows after the writes of `row_items_merge_writes_cell_by_cell`.
async fn expected_rows(session: &Session) {
    // Row 1: the INSERT's a (time 10, TTL), the UPDATE's b (time 20, no TTL); the older
    // INSERT lost both cells.
    assert_eq!(
        row(session, 1).await,
        Some((text("x"), Some(2), Some(10), Some(20), true, false))
    );
    // Row 2: written by UPDATEs only, and nulled: gone.
    assert_eq!(row(session, 2).await, None);
    // Row 3: written by UPDATEs only, one cell left.
    assert_eq!(
        row(session, 3).await,
        Some((None, Some(7), None, Some(31), false, false))
    );
    // Row 4: an INSERT, then a null of one of its cells: the marker keeps the row.
    assert_eq!(
        row(session, 4).await,
        Some((None, Some(4), None, Some(40), false, false))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_items_merge_writes_cell_by_cell() {
    let server = TestServer::start().await;
    let session = server.session().await;
    run_all(
        &session,
        &[
            &create_keyspace("ks"),
            "CREATE TABLE ks.t (pk int, c int, a text, b int, PRIMARY KEY (pk, c))",
            "INSERT INTO ks.t (pk, c, a, b) VALUES (1, 1, 'x', 1) USING TTL 1000 AND TIMESTAMP 10",
            "UPDATE ks.t USING TIMESTAMP 20 SET b = 2 WHERE pk = 1 AND c = 1",
            "INSERT INTO ks.t (pk, c, a, b) VALUES (1, 1, 'old', 0) USING TIMESTAMP 5",
            "UPDATE ks.t USING TIMESTAMP 30 SET a = 'u' WHERE pk = 1 AND c = 2",
            "UPDATE ks.t USING TIMESTAMP 31 SET a = 'v', b = 7 WHERE pk = 1 AND c = 3",
            "INSERT INTO ks.t (pk, c, a, b) VALUES (1, 4, 'y', 4) USING TIMESTAMP 40",
        ],
    )
    .await;
    assert_eq!(
        row(&session, 2).await,
        Some((text("u"), None, Some(30), None, false, false))
    );
    run_all(
        &session,
        &[
            "UPDATE ks.t USING TIMESTAMP 32 SET a = null WHERE pk = 1 AND c = 2",
            "DELETE a FROM ks.t USING TIMESTAMP 33 WHERE pk = 1 AND c = 3",
            "UPDATE ks.t USING TIMESTAMP 41 SET a = null WHERE pk = 1 AND c = 4",
            // Older than the null: loses to it.
            "UPDATE ks.t USING TIMESTAMP 39 SET a = 'late' WHERE pk = 1 AND c = 4",
        ],
    )
    .await;
    expected_rows(&session).await;

    // The same after a restart on the same data directory.
    drop(session);
    let dir = server.stop().await;
    let server = TestServer::start_in(dir).await;
    let session = server.session().await;
    expected_rows(&session).await;
    server.stop().await;
}
