//! Two wrong answers, checked through the scylla driver against the real server: `IN` on the
//! partition key with `ORDER BY` merges the partitions' rows in the asked order and applies
//! LIMIT after sorting (and refuses paging, as Cassandra does), and a rejected conditional
//! batch answers one row per distinct row its conditions name.

mod common;

use common::TestServer;
use scylla::client::session::Session;
use scylla::response::query_result::QueryResult;
use scylla::response::PagingState;
use scylla::statement::batch::Batch;
use scylla::statement::unprepared::Statement;
use scylla::value::CqlValue;

/// Cassandra's SelectStatement refusal to page a post-ordered query.
const PAGED_IN_ORDER_BY: &str = "Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query";

/// Three partitions whose clustering values interleave: pk 1 holds c 1, 4, 7; pk 2 holds
/// 2, 5, 8; pk 3 holds 3, 6, 9 (v is `p<pk>c<c>`), in table `t` (c ASC) and `d` (c DESC).
async fn interleaved(server: &TestServer, keyspace: &str) -> Session {
    let session = server
        .session_with_keyspace(
            keyspace,
            &[
                &format!("CREATE TABLE {keyspace}.t (pk int, c int, v text, PRIMARY KEY (pk, c))"),
                &format!(
                    "CREATE TABLE {keyspace}.d (pk int, c int, v text, PRIMARY KEY (pk, c)) \
                     WITH CLUSTERING ORDER BY (c DESC)"
                ),
            ],
        )
        .await;
    for table in ["t", "d"] {
        for pk in 1..=3 {
            for c in [pk, pk + 3, pk + 6] {
                session
                    .query_unpaged(
                        format!(
                            "INSERT INTO {keyspace}.{table} (pk, c, v) VALUES ({pk}, {c}, 'p{pk}c{c}')"
                        ),
                        (),
                    )
                    .await
                    .expect("insert");
            }
        }
    }
    session
}

/// The (pk, c) pairs of an unpaged SELECT.
async fn pk_c(session: &Session, cql: &str) -> Vec<(i32, i32)> {
    session
        .query_unpaged(cql, ())
        .await
        .unwrap_or_else(|e| panic!("{cql}: {e}"))
        .into_rows_result()
        .expect("rows")
        .rows::<(i32, i32)>()
        .expect("typed rows")
        .map(|r| r.expect("row"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_with_order_by_merges_partitions_then_limits() {
    let server = TestServer::start().await;
    let session = interleaved(&server, "ks_in_order").await;

    // Every partition's rows merged in clustering order, either way.
    assert_eq!(
        pk_c(
            &session,
            "SELECT pk, c FROM ks_in_order.t WHERE pk IN (1, 2, 3) ORDER BY c DESC"
        )
        .await,
        [
            (3, 9),
            (2, 8),
            (1, 7),
            (3, 6),
            (2, 5),
            (1, 4),
            (3, 3),
            (2, 2),
            (1, 1)
        ]
    );
    assert_eq!(
        pk_c(
            &session,
            "SELECT pk, c FROM ks_in_order.t WHERE pk IN (3, 1, 2) ORDER BY c ASC"
        )
        .await,
        [
            (1, 1),
            (2, 2),
            (3, 3),
            (1, 4),
            (2, 5),
            (3, 6),
            (1, 7),
            (2, 8),
            (3, 9)
        ]
    );
    // LIMIT counts the sorted rows, not the first partition's.
    assert_eq!(
        pk_c(
            &session,
            "SELECT pk, c FROM ks_in_order.t WHERE pk IN (1, 2, 3) ORDER BY c DESC LIMIT 4"
        )
        .await,
        [(3, 9), (2, 8), (1, 7), (3, 6)]
    );
    // PER PARTITION LIMIT keeps each partition's first rows in the asked order, then the
    // merge, then LIMIT.
    assert_eq!(
        pk_c(
            &session,
            "SELECT pk, c FROM ks_in_order.t WHERE pk IN (1, 2, 3) ORDER BY c DESC \
             PER PARTITION LIMIT 2 LIMIT 5"
        )
        .await,
        [(3, 9), (2, 8), (1, 7), (3, 6), (2, 5)]
    );
    // A table stored DESC, read ASC and DESC.
    assert_eq!(
        pk_c(
            &session,
            "SELECT pk, c FROM ks_in_order.d WHERE pk IN (1, 2, 3) ORDER BY c ASC LIMIT 3"
        )
        .await,
        [(1, 1), (2, 2), (3, 3)]
    );
    assert_eq!(
        pk_c(
            &session,
            "SELECT pk, c FROM ks_in_order.d WHERE pk IN (1, 2, 3) ORDER BY c DESC LIMIT 3"
        )
        .await,
        [(3, 9), (2, 8), (1, 7)]
    );

    // Prepared, IN and LIMIT bound, every selected column sorted with its row.
    let prepared = session
        .prepare("SELECT c, v, pk FROM ks_in_order.t WHERE pk IN ? ORDER BY c DESC LIMIT ?")
        .await
        .expect("prepare");
    let rows: Vec<(i32, String, i32)> = session
        .execute_unpaged(&prepared, (vec![1_i32, 3], 3_i32))
        .await
        .expect("execute")
        .into_rows_result()
        .expect("rows")
        .rows::<(i32, String, i32)>()
        .expect("typed rows")
        .map(|r| r.expect("row"))
        .collect();
    assert_eq!(
        rows,
        [
            (9, "p3c9".to_string(), 3),
            (7, "p1c7".to_string(), 1),
            (6, "p3c6".to_string(), 3)
        ]
    );

    // Computed selections (JSON) are sorted too.
    let json: Vec<String> = session
        .query_unpaged(
            "SELECT JSON pk, c FROM ks_in_order.t WHERE pk IN (1, 2) ORDER BY c DESC LIMIT 3",
            (),
        )
        .await
        .expect("select json")
        .into_rows_result()
        .expect("rows")
        .rows::<(String,)>()
        .expect("typed rows")
        .map(|r| r.expect("row").0)
        .collect();
    assert_eq!(
        json,
        [
            r#"{"pk": 2, "c": 8}"#,
            r#"{"pk": 1, "c": 7}"#,
            r#"{"pk": 2, "c": 5}"#
        ]
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_in_with_order_by_is_refused() {
    let server = TestServer::start().await;
    let session = interleaved(&server, "ks_in_order_paged").await;
    let cql = "SELECT pk, c FROM ks_in_order_paged.t WHERE pk IN (1, 2, 3) ORDER BY c DESC LIMIT 2";

    // Refused whenever a page size is set, even when the result would fit in one page.
    let mut statement = Statement::new(cql);
    statement.set_page_size(100);
    let err = session
        .query_single_page(statement, (), PagingState::start())
        .await
        .expect_err("paged IN with ORDER BY");
    assert!(err.to_string().contains(PAGED_IN_ORDER_BY), "{err}");
    let mut prepared = session.prepare(cql).await.expect("prepare");
    prepared.set_page_size(1);
    let err = session
        .execute_single_page(&prepared, (), PagingState::start())
        .await
        .expect_err("paged prepared IN with ORDER BY");
    assert!(err.to_string().contains(PAGED_IN_ORDER_BY), "{err}");

    // One partition, or a literal IN of one value (an `=` to Cassandra), pages as before.
    for one in [
        "SELECT pk, c FROM ks_in_order_paged.t WHERE pk = 2 ORDER BY c DESC",
        "SELECT pk, c FROM ks_in_order_paged.t WHERE pk IN (2) ORDER BY c DESC",
    ] {
        let rows: Vec<(i32, i32)> = common::paged_rows(&session, one, (), 2).await;
        assert_eq!(rows, [(2, 8), (2, 5), (2, 2)], "{one}");
    }
    // IN without ORDER BY pages partition after partition.
    let rows: Vec<(i32, i32)> = common::paged_rows(
        &session,
        "SELECT pk, c FROM ks_in_order_paged.t WHERE pk IN (1, 2)",
        (),
        2,
    )
    .await;
    assert_eq!(rows, [(1, 1), (1, 4), (1, 7), (2, 2), (2, 5), (2, 8)]);
    server.stop().await;
}

/// Column names and values of a result, each cell printed (`null` for none).
fn table_of(result: QueryResult) -> (Vec<String>, Vec<Vec<String>>) {
    let rows = result.into_rows_result().expect("rows");
    let names = rows
        .column_specs()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let values = rows
        .rows::<scylla::value::Row>()
        .expect("untyped rows")
        .map(|r| {
            r.expect("row")
                .columns
                .into_iter()
                .map(|c| match c {
                    Some(CqlValue::Boolean(b)) => b.to_string(),
                    Some(CqlValue::Int(i)) => i.to_string(),
                    Some(CqlValue::Text(s)) => format!("'{s}'"),
                    Some(other) => format!("{other:?}"),
                    None => "null".to_string(),
                })
                .collect()
        })
        .collect();
    (names, values)
}

/// A batch of the given literal statements.
fn batch_of(statements: &[&str]) -> Batch {
    let mut batch = Batch::default();
    for s in statements {
        batch.append_statement(*s);
    }
    batch
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_conditional_batch_answers_one_row_per_row() {
    let server = TestServer::start().await;
    let session = server
        .session_with_keyspace(
            "ks_lwt_rows",
            &[
                "CREATE TABLE ks_lwt_rows.t (k int, c int, v text, w int, PRIMARY KEY (k, c))",
                "INSERT INTO ks_lwt_rows.t (k, c, v, w) VALUES (1, 1, 'a', 10)",
                "INSERT INTO ks_lwt_rows.t (k, c, v, w) VALUES (1, 2, 'b', 20)",
            ],
        )
        .await;

    // Two statements on row c = 2 and one on c = 1; the statement order is not the
    // clustering order, and the conditions name v then w.
    let rejected = batch_of(&[
        "UPDATE ks_lwt_rows.t SET w = 21 WHERE k = 1 AND c = 2 IF v = 'nope'",
        "UPDATE ks_lwt_rows.t SET v = 'x' WHERE k = 1 AND c = 1 IF w = 10",
        "UPDATE ks_lwt_rows.t SET w = 22 WHERE k = 1 AND c = 2 IF w = 20",
    ]);
    let (names, rows) = table_of(session.batch(&rejected, ((), (), ())).await.expect("batch"));
    assert_eq!(names, ["[applied]", "k", "c", "v", "w"]);
    assert_eq!(
        rows,
        [
            ["false", "1", "1", "'a'", "10"],
            ["false", "1", "2", "'b'", "20"]
        ]
    );
    // Nothing was written.
    let (_, now) = table_of(
        session
            .query_unpaged("SELECT c, v, w FROM ks_lwt_rows.t WHERE k = 1", ())
            .await
            .expect("select"),
    );
    assert_eq!(now, [["1", "'a'", "10"], ["2", "'b'", "20"]]);

    // A batch of one conditional statement still shows the primary key.
    let one = batch_of(&["UPDATE ks_lwt_rows.t SET w = 0 WHERE k = 1 AND c = 2 IF w = 0"]);
    let (names, rows) = table_of(session.batch(&one, ((),)).await.expect("batch of one"));
    assert_eq!(names, ["[applied]", "k", "c", "w"]);
    assert_eq!(rows, [["false", "1", "2", "20"]]);

    // A single statement shows the condition columns alone.
    let (names, rows) = table_of(
        session
            .query_unpaged(
                "UPDATE ks_lwt_rows.t SET w = 0 WHERE k = 1 AND c = 2 IF w = 0",
                (),
            )
            .await
            .expect("update"),
    );
    assert_eq!(names, ["[applied]", "w"]);
    assert_eq!(rows, [["false", "20"]]);

    // The same shape accepted: one row, [applied] true, and the writes applied.
    let accepted = batch_of(&[
        "UPDATE ks_lwt_rows.t SET w = 21 WHERE k = 1 AND c = 2 IF v = 'b'",
        "UPDATE ks_lwt_rows.t SET v = 'x' WHERE k = 1 AND c = 1 IF w = 10",
        "UPDATE ks_lwt_rows.t SET v = 'y' WHERE k = 1 AND c = 2 IF w = 20",
    ]);
    let (names, rows) = table_of(session.batch(&accepted, ((), (), ())).await.expect("batch"));
    assert_eq!(names, ["[applied]"]);
    assert_eq!(rows, [["true"]]);
    let (_, now) = table_of(
        session
            .query_unpaged("SELECT c, v, w FROM ks_lwt_rows.t WHERE k = 1", ())
            .await
            .expect("select"),
    );
    assert_eq!(now, [["1", "'x'", "10"], ["2", "'y'", "21"]]);
    server.stop().await;
}
