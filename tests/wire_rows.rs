//! Rows written straight into wire form (plain column selections, `EncodedRows`) through the
//! scylla driver: every SELECT shape gives the rows that the same SELECT with a computed
//! selector (which takes the per-cell path) gives, pages, LIMIT, statics, nulls and
//! collections included.

mod common;

use common::{create_keyspace, paged_rows, run_all, TestServer};
use scylla::client::session::Session;
use scylla::value::{CqlValue, Row};

const COLUMNS: &str = "pk, c, s, v, l, m";

/// The rows of `SELECT <COLUMNS> <rest>` by the wire-form path, and by the per-cell path
/// (the same columns plus `writetime(v)`, dropped again before comparing).
async fn both_paths(
    session: &Session,
    rest: &str,
    pk: i64,
    page_size: i32,
) -> (Vec<Row>, Vec<Row>) {
    let wire = paged_rows::<Row>(
        session,
        &format!("SELECT {COLUMNS} {rest}"),
        (pk,),
        page_size,
    )
    .await;
    let mut cells = paged_rows::<Row>(
        session,
        &format!("SELECT {COLUMNS}, writetime(v) {rest}"),
        (pk,),
        page_size,
    )
    .await;
    for row in &mut cells {
        row.columns.pop();
    }
    (wire, cells)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_column_rows_match_the_per_cell_path() {
    let server = TestServer::start().await;
    let session = server.session().await;
    run_all(
        &session,
        &[
            &create_keyspace("ks"),
            "CREATE TABLE ks.t (pk bigint, c int, s text static, v text, l list<int>, \
             m map<text, int>, PRIMARY KEY (pk, c))",
        ],
    )
    .await;
    let insert = session
        .prepare("INSERT INTO ks.t (pk, c, v, l, m) VALUES (?, ?, ?, ?, ?)")
        .await
        .expect("prepare insert");
    for pk in 0..3i64 {
        for c in 0..25i32 {
            // Every third row has a null value, every fifth empty collections.
            let v = (c % 3 != 0).then(|| format!("v-{pk}-{c}"));
            let l: Option<Vec<i32>> = (c % 5 != 0).then(|| vec![c, c + 1, c]);
            let m: Option<Vec<(String, i32)>> = (c % 5 != 0).then(|| vec![("k".into(), c)]);
            let m = m.map(|m| m.into_iter().collect::<std::collections::HashMap<_, _>>());
            session
                .execute_unpaged(&insert, (pk, c, v, l, m))
                .await
                .expect("insert");
        }
    }
    run_all(
        &session,
        &[
            "UPDATE ks.t SET s = 'static-1' WHERE pk = 1",
            // A partition with its static column alone reads as one row of it.
            "UPDATE ks.t SET s = 'static-only' WHERE pk = 9",
            "DELETE FROM ks.t WHERE pk = 2 AND c = 4",
        ],
    )
    .await;

    for pk in [0i64, 1, 2, 9] {
        for page_size in [4, 1000] {
            let (wire, cells) = both_paths(&session, "FROM ks.t WHERE pk = ?", pk, page_size).await;
            let expected = match pk {
                9 => 1,
                2 => 24,
                _ => 25,
            };
            assert_eq!(wire.len(), expected, "partition {pk}, pages of {page_size}");
            assert_eq!(wire, cells, "partition {pk}, pages of {page_size}");
        }
        let (wire, cells) = both_paths(
            &session,
            "FROM ks.t WHERE pk = ? AND c >= 3 AND c < 13 ORDER BY c DESC LIMIT 7",
            pk,
            3,
        )
        .await;
        assert_eq!(wire, cells, "slice of partition {pk}");
    }

    // Spot checks of the wire rows' values themselves.
    let (wire, _) = both_paths(&session, "FROM ks.t WHERE pk = ?", 1, 10).await;
    let row = &wire[7].columns;
    assert_eq!(row[0], Some(CqlValue::BigInt(1)));
    assert_eq!(row[1], Some(CqlValue::Int(7)));
    assert_eq!(row[2], Some(CqlValue::Text("static-1".into())));
    assert_eq!(row[3], Some(CqlValue::Text("v-1-7".into())));
    assert_eq!(
        row[4],
        Some(CqlValue::List(vec![
            CqlValue::Int(7),
            CqlValue::Int(8),
            CqlValue::Int(7)
        ]))
    );
    assert_eq!(wire[6].columns[3], None, "a null value");
    assert_eq!(wire[5].columns[4], None, "an empty list reads as null");
    let (wire, _) = both_paths(&session, "FROM ks.t WHERE pk = ?", 9, 10).await;
    assert_eq!(
        wire[0].columns[1], None,
        "the static-only row has no clustering"
    );

    // A token-range scan of the whole table, paged: the same rows both ways.
    let mut scan_wire =
        paged_rows::<Row>(&session, &format!("SELECT {COLUMNS} FROM ks.t"), (), 6).await;
    let mut scan_cells = paged_rows::<Row>(
        &session,
        &format!("SELECT {COLUMNS}, token(pk) FROM ks.t"),
        (),
        6,
    )
    .await;
    for row in &mut scan_cells {
        row.columns.pop();
    }
    assert_eq!(scan_wire.len(), 25 + 25 + 24 + 1);
    scan_wire.sort_by_key(|r| format!("{:?}", r.columns));
    scan_cells.sort_by_key(|r| format!("{:?}", r.columns));
    assert_eq!(scan_wire, scan_cells);
    server.stop().await;
}
