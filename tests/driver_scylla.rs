//! The scylla Rust driver against a real ringdb: connect, schema metadata as created,
//! schema agreement, errors, restart and SIGKILL recovery of the schema.

mod common;

use common::{free_port, int_column, paged_rows, ServerProcess, TestServer};
use scylla::cluster::metadata::{CollectionType, ColumnKind, ColumnType, NativeType, Strategy};

const DDL: &[&str] = &[
    "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE KEYSPACE nts WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3} AND durable_writes = false",
    "CREATE TYPE ks.address (street text, zip int)",
    "CREATE TABLE ks.compound (pk int, c1 text, c2 bigint, v map<text, frozen<list<int>>>, s set<uuid> static, addr frozen<address>, PRIMARY KEY (pk, c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC) AND comment = 'hello'",
    "CREATE TABLE ks.composite (p1 text, p2 int, c1 timeuuid, v tuple<int, text>, PRIMARY KEY ((p1, p2), c1))",
    "CREATE TABLE ks.single (k uuid PRIMARY KEY, a ascii, b blob, d date, e decimal, f float, g double, h inet, i smallint, j tinyint, l time, m timestamp, n varint, o duration, p boolean, q varchar)",
    "CREATE TABLE ks.counts (k int PRIMARY KEY, c counter)",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scylla_driver_sees_the_schema_as_created() {
    let server = TestServer::start().await;
    let session = server.session().await;
    for ddl in DDL {
        session
            .query_unpaged(*ddl, &[])
            .await
            .unwrap_or_else(|e| panic!("{ddl}: {e}"));
    }
    session
        .await_schema_agreement()
        .await
        .expect("schema agreement");
    session.refresh_metadata().await.expect("metadata refresh");
    let state = session.get_cluster_state();
    let ks = state.get_keyspace("ks").expect("keyspace ks");
    assert_eq!(
        ks.strategy,
        Strategy::SimpleStrategy {
            replication_factor: 1
        }
    );
    let nts = state.get_keyspace("nts").expect("keyspace nts");
    assert!(!nts.durable_writes);
    match &nts.strategy {
        Strategy::NetworkTopologyStrategy {
            datacenter_repfactors,
        } => {
            assert_eq!(datacenter_repfactors.get("datacenter1"), Some(&3))
        }
        other => panic!("NTS expected, got {other:?}"),
    }
    assert!(ks.user_defined_types.contains_key("address"));

    let t = ks.tables.get("compound").expect("table compound");
    assert_eq!(t.partition_key, vec!["pk"]);
    assert_eq!(t.clustering_key, vec!["c1", "c2"]);
    assert_eq!(t.columns["pk"].typ, ColumnType::Native(NativeType::Int));
    assert_eq!(t.columns["c2"].typ, ColumnType::Native(NativeType::BigInt));
    assert_eq!(t.columns["s"].kind, ColumnKind::Static);
    match &t.columns["v"].typ {
        ColumnType::Collection {
            frozen: false,
            typ: CollectionType::Map(k, v),
        } => {
            assert_eq!(**k, ColumnType::Native(NativeType::Text));
            assert!(matches!(
                **v,
                ColumnType::Collection {
                    frozen: true,
                    typ: CollectionType::List(_)
                }
            ));
        }
        other => panic!("map expected, got {other:?}"),
    }
    assert!(matches!(
        t.columns["addr"].typ,
        ColumnType::UserDefinedType { frozen: true, .. }
    ));

    let t = ks.tables.get("composite").expect("table composite");
    assert_eq!(t.partition_key, vec!["p1", "p2"]);
    assert_eq!(t.clustering_key, vec!["c1"]);
    assert_eq!(
        t.columns["c1"].typ,
        ColumnType::Native(NativeType::Timeuuid)
    );
    assert!(matches!(t.columns["v"].typ, ColumnType::Tuple(_)));

    let t = ks.tables.get("single").expect("table single");
    let expected = [
        ("a", NativeType::Ascii),
        ("b", NativeType::Blob),
        ("d", NativeType::Date),
        ("e", NativeType::Decimal),
        ("f", NativeType::Float),
        ("g", NativeType::Double),
        ("h", NativeType::Inet),
        ("i", NativeType::SmallInt),
        ("j", NativeType::TinyInt),
        ("l", NativeType::Time),
        ("m", NativeType::Timestamp),
        ("n", NativeType::Varint),
        ("o", NativeType::Duration),
        ("p", NativeType::Boolean),
        ("q", NativeType::Text),
    ];
    for (name, ty) in expected {
        assert_eq!(t.columns[name].typ, ColumnType::Native(ty), "column {name}");
    }
    let t = ks.tables.get("counts").expect("counter table");
    assert_eq!(t.columns["c"].typ, ColumnType::Native(NativeType::Counter));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_errors_are_cassandra_errors_and_the_session_keeps_working() {
    let server = TestServer::start().await;
    let session = server.session().await;
    session.query_unpaged(DDL[0], &[]).await.expect("create ks");
    let err = session
        .query_unpaged(DDL[0], &[])
        .await
        .expect_err("already exists");
    assert!(format!("{err:?}").contains("AlreadyExists"), "{err:?}");
    session
        .query_unpaged(
            "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            &[],
        )
        .await
        .expect("IF NOT EXISTS is quiet");
    let err = session
        .query_unpaged("SELECT * FROM ks.nope", &[])
        .await
        .expect_err("unknown table");
    assert!(format!("{err:?}").contains("Invalid"), "{err:?}");
    let err = session
        .query_unpaged("SELEKT 1", &[])
        .await
        .expect_err("syntax");
    assert!(format!("{err:?}").contains("SyntaxError"), "{err:?}");
    let err = session
        .query_unpaged("SELECT * FROM system_schema.scylla_tables", &[])
        .await
        .expect_err("scylla-only table");
    assert!(format!("{err:?}").contains("Invalid"), "{err:?}");
    let rows = session
        .query_unpaged("SELECT keyspace_name FROM system_schema.keyspaces", &[])
        .await
        .expect("still serving")
        .into_rows_result()
        .expect("rows");
    let names: Vec<String> = rows
        .rows::<(String,)>()
        .expect("typed")
        .map(|r| r.expect("row").0)
        .collect();
    assert!(names.contains(&"ks".to_string()) && names.contains(&"system".to_string()));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_survives_graceful_restart_and_sigkill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let proc = ServerProcess::spawn(dir.path(), port);
    {
        let session = scylla::client::session_builder::SessionBuilder::new()
            .known_node(proc.addr.to_string())
            .build()
            .await
            .expect("connect");
        for ddl in &DDL[..4] {
            session.query_unpaged(*ddl, &[]).await.expect("ddl");
        }
    }
    let status = proc.terminate();
    assert!(status.success(), "SIGTERM exits 0, got {status:?}");

    let proc = ServerProcess::spawn(dir.path(), port);
    {
        let session = scylla::client::session_builder::SessionBuilder::new()
            .known_node(proc.addr.to_string())
            .build()
            .await
            .expect("reconnect");
        let state = session.get_cluster_state();
        let ks = state.get_keyspace("ks").expect("ks after restart");
        assert!(ks.tables.contains_key("compound"));
        session
            .query_unpaged("CREATE TABLE ks.after_restart (k int PRIMARY KEY)", &[])
            .await
            .expect("ddl acknowledged");
    }
    proc.kill();

    let proc = ServerProcess::spawn(dir.path(), port);
    let session = scylla::client::session_builder::SessionBuilder::new()
        .known_node(proc.addr.to_string())
        .build()
        .await
        .expect("reconnect after SIGKILL");
    let state = session.get_cluster_state();
    let ks = state.get_keyspace("ks").expect("ks after SIGKILL");
    assert!(
        ks.tables.contains_key("after_restart"),
        "acknowledged DDL survives SIGKILL"
    );
    let status = proc.terminate();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_over_max_value_bytes_are_refused_and_the_session_keeps_working() {
    let server = TestServer::start_with(|c| c.max_value_bytes = 1000).await;
    let session = server
        .session_with_keyspace("mv", &["CREATE TABLE mv.t (k int PRIMARY KEY, v blob)"])
        .await;
    let insert = session
        .prepare("INSERT INTO mv.t (k, v) VALUES (?, ?)")
        .await
        .expect("prepare");
    let err = session
        .execute_unpaged(&insert, (1i32, vec![7u8; 1001]))
        .await
        .expect_err("a value over the limit is refused");
    let text = err.to_string();
    assert!(text.contains("max_value_bytes"), "clear message: {text}");
    session
        .execute_unpaged(&insert, (2i32, vec![7u8; 1000]))
        .await
        .expect("a value at the limit is accepted");
    let keys = int_column(&session, "SELECT k FROM mv.t").await;
    assert_eq!(keys, vec![2], "only the accepted write is stored");
    server.stop().await;
}

/// A row of `bk.t`: `(pk, c, v)`.
type KeyRow = (i32, String, i32);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bound_keys_select_their_rows_and_oversized_clustering_values_are_refused() {
    let server = TestServer::start().await;
    let session = server
        .session_with_keyspace(
            "bk",
            &["CREATE TABLE bk.t (pk int, c text, v int, PRIMARY KEY (pk, c))"],
        )
        .await;
    let insert = session
        .prepare("INSERT INTO bk.t (pk, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare");
    for pk in 0..4i32 {
        for c in 0..6i32 {
            session
                .execute_unpaged(&insert, (pk, format!("c{c}"), pk * 10 + c))
                .await
                .expect("insert");
        }
    }
    let row = |pk: i32, c: i32| (pk, format!("c{c}"), pk * 10 + c);

    // One key and one clustering value: the row, or nothing.
    let point = "SELECT pk, c, v FROM bk.t WHERE pk = ? AND c = ?";
    assert_eq!(
        paged_rows::<KeyRow>(&session, point, (2i32, "c3"), 100).await,
        vec![row(2, 3)]
    );
    assert!(paged_rows::<KeyRow>(&session, point, (2i32, "c9"), 100)
        .await
        .is_empty());

    // IN on both: each partition once (the repeated key too), clustering in order; the same
    // rows whatever the page size, so every page and key reads its own slice.
    let both = "SELECT pk, c, v FROM bk.t WHERE pk IN (?, ?, ?, ?) AND c IN (?, ?)";
    let values = (3i32, 1i32, 3i32, 9i32, "c4", "c1");
    let want = vec![row(3, 1), row(3, 4), row(1, 1), row(1, 4)];
    for page_size in [1, 2, 3, 100] {
        assert_eq!(
            paged_rows::<KeyRow>(&session, both, values, page_size).await,
            want,
            "pages of {page_size}"
        );
    }
    // A range of clustering values in several partitions, paged.
    let range = "SELECT pk, c, v FROM bk.t WHERE pk IN (?, ?) AND c >= ? AND c < ?";
    let want = vec![
        row(0, 1),
        row(0, 2),
        row(0, 3),
        row(2, 1),
        row(2, 2),
        row(2, 3),
    ];
    for page_size in [1, 2, 4, 100] {
        assert_eq!(
            paged_rows::<KeyRow>(&session, range, (0i32, 2i32, "c1", "c4"), page_size).await,
            want,
            "pages of {page_size}"
        );
    }

    // PER PARTITION LIMIT with IN on clustering: a partition that reaches its limit at the
    // first value skips the second, and the next partition still reads that second value
    // (its first is deleted), not the whole partition.
    session
        .query_unpaged("DELETE FROM bk.t WHERE pk = 3 AND c = 'c1'", ())
        .await
        .expect("delete");
    let limited =
        "SELECT pk, c, v FROM bk.t WHERE pk IN (?, ?) AND c IN (?, ?) PER PARTITION LIMIT 1";
    assert_eq!(
        paged_rows::<KeyRow>(&session, limited, (1i32, 3i32, "c1", "c4"), 100).await,
        vec![row(1, 1), row(3, 4)]
    );

    // A clustering value past 64 KiB is refused, by `=` and by IN, and the session goes on.
    let huge = "x".repeat(70_000);
    for (cql, what) in [
        (point, "="),
        ("SELECT pk, c, v FROM bk.t WHERE pk = ? AND c IN (?)", "IN"),
        ("INSERT INTO bk.t (pk, c, v) VALUES (?, ?, 1)", "INSERT"),
    ] {
        let prepared = session.prepare(cql).await.expect("prepare");
        let err = session
            .execute_unpaged(&prepared, (1i32, huge.as_str()))
            .await
            .expect_err("an oversized clustering value is refused");
        let text = err.to_string();
        assert!(
            text.contains("Key length of 70000 is longer than maximum of 65535"),
            "{what}: {text}"
        );
    }
    assert_eq!(
        paged_rows::<KeyRow>(&session, point, (1i32, "c5"), 100).await,
        vec![row(1, 5)]
    );
    server.stop().await;
}
