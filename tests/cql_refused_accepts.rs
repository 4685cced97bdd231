//! Statements Cassandra accepts that ringdb refused, through the scylla driver against a real
//! ringdb: native functions on system tables (the drivers' and tools' liveness query
//! `SELECT now(), uuid(), toTimestamp(now()) FROM system.local`).

mod common;

use common::TestServer;
use scylla::value::CqlValue;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_functions_work_on_system_tables() {
    let server = TestServer::start().await;
    let session = server.session().await;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let result = session
        .query_unpaged(
            "SELECT now(), uuid(), toTimestamp(now()), blobAsText(textAsBlob(cluster_name)) \
             FROM system.local",
            (),
        )
        .await
        .expect("native functions on system.local")
        .into_rows_result()
        .expect("rows");
    // Cassandra 4.1 names native function columns with their keyspace.
    let names: Vec<String> = result
        .column_specs()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "system.now()",
            "system.uuid()",
            "system.totimestamp(system.now())",
            "system.blobastext(system.textasblob(cluster_name))"
        ]
    );
    let row = result
        .rows::<scylla::value::Row>()
        .expect("untyped")
        .next()
        .expect("one row")
        .expect("row")
        .columns;
    match &row[0] {
        Some(CqlValue::Timeuuid(t)) => assert_eq!(uuid::Uuid::from(*t).get_version_num(), 1),
        other => panic!("now() is a timeuuid: {other:?}"),
    }
    match &row[1] {
        Some(CqlValue::Uuid(u)) => assert_eq!(u.get_version_num(), 4),
        other => panic!("uuid() is a random uuid: {other:?}"),
    }
    match &row[2] {
        Some(CqlValue::Timestamp(t)) => {
            assert!(
                (t.0 - before).abs() < 60_000,
                "toTimestamp(now()) is now: {t:?}"
            )
        }
        other => panic!("toTimestamp(now()) is a timestamp: {other:?}"),
    }
    assert_eq!(row[3], Some(CqlValue::Text("Test Cluster".into())));

    // What a generated row cannot answer is still refused, with the selector named.
    let err = session
        .query_unpaged("SELECT writetime(cluster_name) FROM system.local", ())
        .await
        .expect_err("writetime of a generated row");
    assert!(
        err.to_string()
            .contains("Selector writetime(cluster_name) is not supported on system table"),
        "{err}"
    );
    // Functions mix with count(*) and filters on the other generated tables too.
    let (n, now): (i64, uuid::Uuid) = session
        .query_unpaged(
            "SELECT count(*), uuid() FROM system_schema.keyspaces WHERE keyspace_name = 'system'",
            (),
        )
        .await
        .expect("count with a function")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(n, 1);
    assert_eq!(now.get_version_num(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_json_takes_collections_as_json_encoded_strings() {
    // Cassandra's ListType/SetType/MapType.fromJSONObject decode a string value once.
    let server = TestServer::start().await;
    let session = server.session().await;
    for cql in [
        "CREATE KEYSPACE js WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE js.t (k int PRIMARY KEY, l list<int>, s set<int>, m map<text, int>, \
         f frozen<tuple<int, text>>)",
    ] {
        session.query_unpaged(cql, ()).await.expect(cql);
    }
    session
        .query_unpaged(
            r#"INSERT INTO js.t JSON '{"k": 1, "l": "[7, 8]", "s": "[3, 1]", "m": "{\"a\": 1}", "f": "[2, \"x\"]"}'"#,
            (),
        )
        .await
        .expect("INSERT JSON with JSON-encoded collections");
    let (json,): (String,) = session
        .query_unpaged("SELECT JSON l, s, m, f FROM js.t WHERE k = 1", ())
        .await
        .expect("select json")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(
        json,
        r#"{"l": [7, 8], "s": [1, 3], "m": {"a": 1}, "f": [2, "x"]}"#
    );
    // A string that does not decode to the type is refused, naming the column.
    let err = session
        .query_unpaged(r#"INSERT INTO js.t JSON '{"k": 2, "l": "[7, "}'"#, ())
        .await
        .expect_err("undecodable string");
    assert!(
        err.to_string().contains("Error decoding JSON value for l"),
        "{err}"
    );
}

/// A statement, its bound values and the (c1, c2) keys it selects.
type Case = (&'static str, Vec<i32>, Vec<(i32, i32)>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_multi_column_relations_take_one_marker_per_column() {
    let server = TestServer::start().await;
    let session = server.session().await;
    for cql in [
        "CREATE KEYSPACE mc WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE mc.t (p int, c1 int, c2 int, v int, PRIMARY KEY (p, c1, c2))",
    ] {
        session.query_unpaged(cql, ()).await.expect(cql);
    }
    for c1 in 0..3i32 {
        for c2 in 0..3i32 {
            session
                .query_unpaged(
                    "INSERT INTO mc.t (p, c1, c2, v) VALUES (0, ?, ?, 1)",
                    (c1, c2),
                )
                .await
                .expect("insert");
        }
    }
    let keys = |rows: scylla::response::query_result::QueryResult| -> Vec<(i32, i32)> {
        rows.into_rows_result()
            .expect("rows")
            .rows::<(i32, i32)>()
            .expect("typed")
            .map(|r| r.expect("row"))
            .collect()
    };
    let cases: [Case; 4] = [
        (
            "SELECT c1, c2 FROM mc.t WHERE p = 0 AND (c1, c2) > (?, ?)",
            vec![1, 1],
            vec![(1, 2), (2, 0), (2, 1), (2, 2)],
        ),
        (
            "SELECT c1, c2 FROM mc.t WHERE p = 0 AND (c1, c2) >= (?, ?) AND (c1, c2) < (?, ?)",
            vec![0, 2, 2, 1],
            vec![(0, 2), (1, 0), (1, 1), (1, 2), (2, 0)],
        ),
        (
            "SELECT c1, c2 FROM mc.t WHERE p = 0 AND (c1, c2) IN ((?, ?), (?, ?))",
            vec![0, 2, 2, 1],
            vec![(0, 2), (2, 1)],
        ),
        (
            "SELECT c1, c2 FROM mc.t WHERE p = 0 AND (c1, c2) = (?, 1)",
            vec![2],
            vec![(2, 1)],
        ),
    ];
    for (cql, values, want) in cases {
        let prepared = session
            .prepare(cql)
            .await
            .unwrap_or_else(|e| panic!("{cql}: {e}"));
        // Cassandra names each component's marker after its column.
        let names: Vec<String> = prepared
            .get_variable_col_specs()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        let expected: Vec<&str> = ["c1", "c2"]
            .iter()
            .cycle()
            .take(values.len())
            .copied()
            .collect();
        if values.len() > 1 {
            assert_eq!(names, expected, "{cql}");
        } else {
            assert_eq!(names, ["c1"], "{cql}");
        }
        let rows = session
            .execute_unpaged(&prepared, values)
            .await
            .unwrap_or_else(|e| panic!("{cql}: {e}"));
        assert_eq!(keys(rows), want, "{cql}");
    }
    // An unset component is refused (Cassandra: "Invalid unset value for tuple field").
    let prepared = session
        .prepare("SELECT c1 FROM mc.t WHERE p = 0 AND (c1, c2) > (?, ?)")
        .await
        .expect("prepare");
    let err = session
        .execute_unpaged(&prepared, (1i32, scylla::value::Unset))
        .await
        .expect_err("unset component");
    assert!(
        err.to_string()
            .contains("Invalid unset value for tuple field number 1"),
        "{err}"
    );
}
