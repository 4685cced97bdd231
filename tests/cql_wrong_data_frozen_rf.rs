//! Two wrong-data bugs, through the scylla driver against a real ringdb: frozen sets and maps
//! come back (and key, and compare) in Cassandra's order whatever order the client sent, and
//! consistency levels that need more replicas than this one node answer Unavailable as
//! Cassandra does for the keyspace's replication factor.

mod common;

use common::{run_all, TestServer};
use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::{Consistency, Statement};
use scylla::value::CqlValue;

fn ints(v: &[i32]) -> CqlValue {
    CqlValue::Set(v.iter().map(|i| CqlValue::Int(*i)).collect())
}

fn int_text_map(entries: &[(i32, &str)]) -> CqlValue {
    CqlValue::Map(
        entries
            .iter()
            .map(|(k, v)| (CqlValue::Int(*k), CqlValue::Text(v.to_string())))
            .collect(),
    )
}

fn holder(tag: &str, nums: CqlValue) -> CqlValue {
    CqlValue::UserDefinedType {
        keyspace: "fz".to_string(),
        name: "holder".to_string(),
        fields: vec![
            ("tag".to_string(), Some(CqlValue::Text(tag.to_string()))),
            ("nums".to_string(), Some(nums)),
        ],
    }
}

/// Every row of `cql` (run with `values`), each column as a `CqlValue` (None for null).
async fn rows(
    session: &Session,
    cql: &str,
    values: impl scylla::serialize::row::SerializeRow,
) -> Vec<Vec<Option<CqlValue>>> {
    let result = session
        .query_unpaged(cql, values)
        .await
        .unwrap_or_else(|e| panic!("{cql}: {e}"))
        .into_rows_result()
        .unwrap_or_else(|e| panic!("{cql}: rows expected: {e}"));
    result
        .rows::<scylla::value::Row>()
        .expect("untyped rows")
        .map(|r| r.expect("row").columns)
        .collect()
}

const FROZEN_SCHEMA: &[&str] = &[
    "CREATE KEYSPACE fz WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TYPE fz.holder (tag text, nums frozen<set<int>>)",
    "CREATE TABLE fz.t (k int PRIMARY KEY, s frozen<set<int>>, m frozen<map<int, text>>, \
     l frozen<list<frozen<set<int>>>>, u frozen<holder>, plain set<int>)",
    "CREATE TABLE fz.c (k int, c frozen<set<int>>, v int, PRIMARY KEY (k, c))",
    "CREATE TABLE fz.p (k frozen<set<int>> PRIMARY KEY, v int)",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_sets_and_maps_are_stored_in_cassandra_order() {
    let server = TestServer::start().await;
    let session = server.session().await;
    run_all(&session, FROZEN_SCHEMA).await;

    // Prepared: the driver sends the elements in the order given, duplicates included.
    let insert = session
        .prepare("INSERT INTO fz.t (k, s, m, l, u, plain) VALUES (?, ?, ?, ?, ?, ?)")
        .await
        .expect("prepare insert");
    session
        .execute_unpaged(
            &insert,
            (
                1,
                ints(&[3, 5, -1, 3]),
                int_text_map(&[(3, "c"), (-1, "a"), (5, "e"), (3, "C")]),
                CqlValue::List(vec![ints(&[3, 5, -1]), ints(&[2, 2, -7])]),
                holder("x", ints(&[3, 5, -1])),
                ints(&[3, 5, -1]),
            ),
        )
        .await
        .expect("prepared insert");
    // Literals.
    session
        .query_unpaged(
            "INSERT INTO fz.t (k, s, m, l, u, plain) VALUES (2, {3, 5, -1, 3}, \
             {3: 'c', -1: 'a', 5: 'e'}, [{3, 5, -1}, {2, 2, -7}], \
             {tag: 'x', nums: {3, 5, -1}}, {3, 5, -1})",
            (),
        )
        .await
        .expect("literal insert");

    let sorted = ints(&[-1, 3, 5]);
    let nested = CqlValue::List(vec![ints(&[-1, 3, 5]), ints(&[-7, 2])]);
    let select = "SELECT s, m, l, u, plain FROM fz.t WHERE k = ?";
    // A bound map keeps the last value given for a key, as Cassandra's TreeMap does.
    let got = rows(&session, select, (1,)).await;
    assert_eq!(
        got,
        vec![vec![
            Some(sorted.clone()),
            Some(int_text_map(&[(-1, "a"), (3, "C"), (5, "e")])),
            Some(nested.clone()),
            Some(holder("x", sorted.clone())),
            Some(sorted.clone()),
        ]],
        "prepared values"
    );
    let got = rows(&session, select, (2,)).await;
    assert_eq!(
        got,
        vec![vec![
            Some(sorted.clone()),
            Some(int_text_map(&[(-1, "a"), (3, "c"), (5, "e")])),
            Some(nested),
            Some(holder("x", sorted.clone())),
            Some(sorted.clone()),
        ]],
        "literals"
    );
    // One canonical form: a condition with the elements in another order matches.
    let matched = rows(
        &session,
        "SELECT k FROM fz.t WHERE s = ? ALLOW FILTERING",
        (ints(&[5, -1, 3]),),
    )
    .await;
    assert_eq!(matched.len(), 2, "{matched:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_set_keys_order_and_match_as_cassandra() {
    let server = TestServer::start().await;
    let session = server.session().await;
    run_all(&session, FROZEN_SCHEMA).await;

    // Clustering: sets compare element by element in the element type's order.
    let insert = session
        .prepare("INSERT INTO fz.c (k, c, v) VALUES (0, ?, ?)")
        .await
        .expect("prepare");
    for (set, v) in [(&[3, -1][..], 1), (&[-2][..], 2), (&[10, -5, 0][..], 4)] {
        session
            .execute_unpaged(&insert, (ints(set), v))
            .await
            .expect("insert clustering");
    }
    session
        .query_unpaged("INSERT INTO fz.c (k, c, v) VALUES (0, {5, 3}, 3)", ())
        .await
        .expect("literal clustering");
    let got = rows(&session, "SELECT c, v FROM fz.c WHERE k = 0", ()).await;
    let want: Vec<Vec<Option<CqlValue>>> = [
        (&[-5, 0, 10][..], 4),
        (&[-2][..], 2),
        (&[-1, 3][..], 1),
        (&[3, 5][..], 3),
    ]
    .into_iter()
    .map(|(set, v)| vec![Some(ints(set)), Some(CqlValue::Int(v))])
    .collect();
    assert_eq!(got, want);
    for (cql, values) in [
        (
            "SELECT v FROM fz.c WHERE k = 0 AND c = ?",
            Some(ints(&[3, -1])),
        ),
        ("SELECT v FROM fz.c WHERE k = 0 AND c = {3, -1}", None),
    ] {
        let got = match values {
            Some(v) => rows(&session, cql, (v,)).await,
            None => rows(&session, cql, ()).await,
        };
        assert_eq!(got, vec![vec![Some(CqlValue::Int(1))]], "{cql}");
    }

    // Partition key: the token is the one of the canonical bytes.
    let insert = session
        .prepare("INSERT INTO fz.p (k, v) VALUES (?, 7)")
        .await
        .expect("prepare");
    session
        .execute_unpaged(&insert, (ints(&[3, 5, -1]),))
        .await
        .expect("insert partition");
    let got = rows(&session, "SELECT k, v FROM fz.p WHERE k = {-1, 3, 5}", ()).await;
    assert_eq!(
        got,
        vec![vec![Some(ints(&[-1, 3, 5])), Some(CqlValue::Int(7))]]
    );
    let got = rows(
        &session,
        "SELECT v FROM fz.p WHERE k = ?",
        (ints(&[5, -1, 3]),),
    )
    .await;
    assert_eq!(got, vec![vec![Some(CqlValue::Int(7))]]);
    server.stop().await;
}

/// The Unavailable error of a failed request: (consistency, required, alive, message).
fn unavailable(
    result: Result<impl std::fmt::Debug, ExecutionError>,
) -> (Consistency, i32, i32, String) {
    match result {
        Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(
            DbError::Unavailable {
                consistency,
                required,
                alive,
            },
            message,
        ))) => (consistency, required, alive, message),
        other => panic!("Unavailable expected, got {other:?}"),
    }
}

fn at(cql: &str, cl: Consistency) -> Statement {
    let mut s = Statement::new(cql);
    s.set_consistency(cl);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn levels_beyond_one_node_are_unavailable_by_replication_factor() {
    let server = TestServer::start().await;
    let session = server.session().await;
    run_all(
        &session,
        &[
            "CREATE KEYSPACE rf3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
            "CREATE KEYSPACE nts3 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3}",
            "CREATE KEYSPACE rf1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE TABLE rf3.t (k int PRIMARY KEY, v int)",
            "CREATE TABLE nts3.t (k int PRIMARY KEY, v int)",
            "CREATE TABLE rf1.t (k int PRIMARY KEY, v int)",
        ],
    )
    .await;

    for ks in ["rf3", "nts3"] {
        let write = format!("INSERT INTO {ks}.t (k, v) VALUES (1, 1)");
        let read = format!("SELECT v FROM {ks}.t WHERE k = 1");
        for (cl, name, required) in [
            (Consistency::Quorum, "QUORUM", 2),
            (Consistency::LocalQuorum, "LOCAL_QUORUM", 2),
            (Consistency::All, "ALL", 3),
        ] {
            for cql in [&write, &read] {
                let (got_cl, got_required, alive, message) =
                    unavailable(session.query_unpaged(at(cql, cl), ()).await);
                assert_eq!(
                    (got_cl, got_required, alive),
                    (cl, required, 1),
                    "{cql} at {name}"
                );
                assert_eq!(message, format!("Cannot achieve consistency level {name}"));
            }
        }
        // Prepared statements and batches meet the same check.
        let mut prepared = session.prepare(write.as_str()).await.expect("prepare");
        prepared.set_consistency(Consistency::Quorum);
        let (_, required, alive, _) = unavailable(session.execute_unpaged(&prepared, ()).await);
        assert_eq!((required, alive), (2, 1), "prepared {write}");
        let mut batch = Batch::new(BatchType::Logged);
        batch.append_statement(write.as_str());
        batch.set_consistency(Consistency::Quorum);
        let (_, required, alive, _) = unavailable(session.batch(&batch, ((),)).await);
        assert_eq!((required, alive), (2, 1), "batch into {ks}");
        // The refused writes wrote nothing; ONE, LOCAL_ONE and ANY need only this node.
        let none = session
            .query_unpaged(at(&read, Consistency::One), ())
            .await
            .expect("read at ONE")
            .into_rows_result()
            .expect("rows")
            .rows_num();
        assert_eq!(none, 0, "{ks}: a refused write was applied");
        for cl in [Consistency::One, Consistency::LocalOne, Consistency::Any] {
            session
                .query_unpaged(at(&write, cl), ())
                .await
                .unwrap_or_else(|e| panic!("{write} at {cl:?}: {e}"));
        }
        session
            .query_unpaged(at(&read, Consistency::LocalOne), ())
            .await
            .expect("read at LOCAL_ONE");
    }
    // EACH_QUORUM: per datacenter for NetworkTopologyStrategy (Cassandra names the DC),
    // QUORUM for SimpleStrategy.
    let (_, required, alive, message) = unavailable(
        session
            .query_unpaged(
                at(
                    "INSERT INTO nts3.t (k, v) VALUES (2, 2)",
                    Consistency::EachQuorum,
                ),
                (),
            )
            .await,
    );
    assert_eq!((required, alive), (2, 1));
    assert_eq!(
        message,
        "Cannot achieve consistency level EACH_QUORUM in DC datacenter1"
    );
    let (_, required, alive, message) = unavailable(
        session
            .query_unpaged(
                at("SELECT v FROM rf3.t WHERE k = 1", Consistency::EachQuorum),
                (),
            )
            .await,
    );
    assert_eq!((required, alive), (2, 1));
    assert_eq!(message, "Cannot achieve consistency level EACH_QUORUM");

    // Replication factor 1: every quorum is this node.
    for cl in [
        Consistency::Quorum,
        Consistency::LocalQuorum,
        Consistency::EachQuorum,
        Consistency::All,
    ] {
        session
            .query_unpaged(at("INSERT INTO rf1.t (k, v) VALUES (1, 1)", cl), ())
            .await
            .unwrap_or_else(|e| panic!("rf1 write at {cl:?}: {e}"));
        let n = session
            .query_unpaged(at("SELECT v FROM rf1.t WHERE k = 1", cl), ())
            .await
            .unwrap_or_else(|e| panic!("rf1 read at {cl:?}: {e}"))
            .into_rows_result()
            .expect("rows")
            .rows_num();
        assert_eq!(n, 1, "rf1 read at {cl:?}");
    }
    // TWO is more than one node whatever the keyspace.
    let (_, required, alive, _) = unavailable(
        session
            .query_unpaged(at("SELECT v FROM rf1.t WHERE k = 1", Consistency::Two), ())
            .await,
    );
    assert_eq!((required, alive), (2, 1));
    server.stop().await;
}

/// The ConfigurationException message of a failed request.
fn config_error(result: Result<impl std::fmt::Debug, ExecutionError>) -> String {
    match result {
        Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(
            DbError::ConfigError,
            message,
        ))) => message,
        other => panic!("ConfigurationException expected, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_datacenter_is_a_configuration_error() {
    let server = TestServer::start().await;
    let session = server.session().await;
    let message = config_error(
        session
            .query_unpaged(
                "CREATE KEYSPACE dcs WITH replication = \
                 {'class': 'NetworkTopologyStrategy', 'datacenter1': 1, 'dc2': 1}",
                (),
            )
            .await,
    );
    assert_eq!(
        message,
        "Unrecognized strategy option {dc2} passed to NetworkTopologyStrategy for keyspace dcs"
    );
    run_all(
        &session,
        &["CREATE KEYSPACE dcs WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"],
    )
    .await;
    let message = config_error(
        session
            .query_unpaged(
                "ALTER KEYSPACE dcs WITH replication = \
                 {'class': 'NetworkTopologyStrategy', 'DC1': 3}",
                (),
            )
            .await,
    );
    assert_eq!(
        message,
        "Unrecognized strategy option {DC1} passed to NetworkTopologyStrategy for keyspace dcs"
    );
    // The refused ALTER changed nothing: RF 1 still answers QUORUM.
    run_all(&session, &["CREATE TABLE dcs.t (k int PRIMARY KEY)"]).await;
    session
        .query_unpaged(
            at("INSERT INTO dcs.t (k) VALUES (1)", Consistency::Quorum),
            (),
        )
        .await
        .expect("QUORUM on RF 1");
    server.stop().await;
}
