//! Two wrong-data bugs through the scylla driver: USING TTL and TIMESTAMP bind markers are
//! numbered in the order written (values bound as Cassandra binds them, PREPARE's metadata
//! named and ordered as Cassandra's), and decimal literals are kept exactly.

mod common;

use common::TestServer;
use num_bigint::BigInt;
use scylla::client::session::Session;
use scylla::cluster::metadata::{ColumnType, NativeType};
use scylla::value::{CqlDecimal, CqlValue};

/// The names and types of a prepared statement's bind markers, in order.
async fn marker_specs(session: &Session, cql: &str) -> Vec<(String, ColumnType<'static>)> {
    let prepared = session
        .prepare(cql)
        .await
        .unwrap_or_else(|e| panic!("{cql}: {e}"));
    prepared
        .get_variable_col_specs()
        .iter()
        .map(|spec| (spec.name().to_string(), spec.typ().clone().into_owned()))
        .collect()
}

fn spec(name: &str, ty: NativeType) -> (String, ColumnType<'static>) {
    (name.to_string(), ColumnType::Native(ty))
}

/// `writetime(v)` and `ttl(v)` of row `k` of `mk.t`.
async fn writetime_and_ttl(session: &Session, k: i32) -> (Option<i64>, Option<i32>) {
    session
        .query_unpaged("SELECT writetime(v), ttl(v) FROM mk.t WHERE k = ?", (k,))
        .await
        .expect("select")
        .into_rows_result()
        .expect("rows")
        .single_row::<(Option<i64>, Option<i32>)>()
        .expect("one row")
}

/// The write time is the timestamp bound, and the TTL read back counts down from the TTL
/// bound (never from the timestamp).
fn assert_written(got: (Option<i64>, Option<i32>), timestamp: i64, ttl: i32, what: &str) {
    assert_eq!(got.0, Some(timestamp), "{what}: writetime(v)");
    let left = got.1.unwrap_or_else(|| panic!("{what}: no TTL"));
    assert!(
        (ttl - 60..=ttl).contains(&left),
        "{what}: ttl(v) is {left}, {ttl} was bound"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn using_markers_bind_in_the_order_written() {
    use NativeType::{BigInt as Bigint, Int};
    let server = TestServer::start().await;
    let session = server
        .session_with_keyspace("mk", &["CREATE TABLE mk.t (k int PRIMARY KEY, v int)"])
        .await;

    // INSERT and UPDATE, both orders: PREPARE names the markers and types them as Cassandra
    // does, and each value lands where it was written. UPDATE's USING comes before SET and
    // WHERE. Each case: statement, marker specs, row key, timestamp, TTL.
    let ts = |t: i64| ("[timestamp]", Bigint, CqlValue::BigInt(t));
    let ttl = |t: i32| ("[ttl]", Int, CqlValue::Int(t));
    let k = |k: i32| ("k", Int, CqlValue::Int(k));
    let v = |v: i32| ("v", Int, CqlValue::Int(v));
    let cases = [
        (
            "INSERT INTO mk.t (k, v) VALUES (?, ?) USING TIMESTAMP ? AND TTL ?",
            [k(1), v(10), ts(100), ttl(777)],
        ),
        (
            "INSERT INTO mk.t (k, v) VALUES (?, ?) USING TTL ? AND TIMESTAMP ?",
            [k(2), v(20), ttl(888), ts(200)],
        ),
        (
            "UPDATE mk.t USING TIMESTAMP ? AND TTL ? SET v = ? WHERE k = ?",
            [ts(300), ttl(999), v(30), k(3)],
        ),
        (
            "UPDATE mk.t USING TTL ? AND TIMESTAMP ? SET v = ? WHERE k = ?",
            [ttl(1111), ts(400), v(40), k(4)],
        ),
    ];
    for (cql, markers) in cases {
        assert_eq!(
            marker_specs(&session, cql).await,
            markers
                .iter()
                .map(|(name, ty, _)| spec(name, ty.clone()))
                .collect::<Vec<_>>(),
            "{cql}: PREPARE's markers"
        );
        let bound = |name: &str| {
            markers
                .iter()
                .find(|(n, _, _)| *n == name)
                .map(|(_, _, value)| value.clone())
                .unwrap_or_else(|| panic!("{cql}: no {name}"))
        };
        let (CqlValue::Int(key), CqlValue::BigInt(timestamp), CqlValue::Int(ttl)) =
            (bound("k"), bound("[timestamp]"), bound("[ttl]"))
        else {
            panic!("{cql}: case values");
        };
        let prepared = session.prepare(cql).await.expect("prepare");
        let values: Vec<CqlValue> = markers.iter().map(|(_, _, value)| value.clone()).collect();
        session
            .execute_unpaged(&prepared, values)
            .await
            .unwrap_or_else(|e| panic!("{cql}: {e}"));
        assert_written(writetime_and_ttl(&session, key).await, timestamp, ttl, cql);
    }

    // DELETE: the deletion column's marker, then USING TIMESTAMP, then WHERE.
    let delete = "DELETE v FROM mk.t USING TIMESTAMP ? WHERE k = ?";
    assert_eq!(
        marker_specs(&session, delete).await,
        vec![spec("[timestamp]", Bigint), spec("k", Int)]
    );
    session
        .query_unpaged(
            "INSERT INTO mk.t (k, v) VALUES (5, 50) USING TIMESTAMP 1000",
            (),
        )
        .await
        .expect("insert");
    let prepared = session.prepare(delete).await.expect("prepare");
    // Older than the write: the value stays.
    session
        .execute_unpaged(&prepared, (999i64, 5i32))
        .await
        .expect("delete at 999");
    assert_eq!(writetime_and_ttl(&session, 5).await, (Some(1000), None));
    // Newer: the value goes.
    session
        .execute_unpaged(&prepared, (1001i64, 5i32))
        .await
        .expect("delete at 1001");
    let v: (Option<i32>,) = session
        .query_unpaged("SELECT v FROM mk.t WHERE k = 5", ())
        .await
        .expect("select")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(v, (None,));

    // A BATCH takes no TTL of its own (Cassandra's message), rather than dropping it.
    let err = session
        .query_unpaged(
            "BEGIN BATCH USING TTL 100 INSERT INTO mk.t (k, v) VALUES (6, 60) APPLY BATCH",
            (),
        )
        .await
        .expect_err("a BATCH-level TTL is refused");
    assert!(
        err.to_string()
            .contains("Global TTL on the BATCH statement is not supported."),
        "{err}"
    );
    let rows = session
        .query_unpaged("SELECT v FROM mk.t WHERE k = 6", ())
        .await
        .expect("select")
        .into_rows_result()
        .expect("rows")
        .rows_num();
    assert_eq!(rows, 0, "the refused batch wrote nothing");
    server.stop().await;
}

/// A decimal's unscaled value (as decimal text) and scale.
fn unscaled_and_scale(d: &CqlDecimal) -> (String, i32) {
    let (bytes, scale) = d.as_signed_be_bytes_slice_and_exponent();
    (BigInt::from_signed_bytes_be(bytes).to_string(), scale)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decimal_literals_are_stored_exactly() {
    let server = TestServer::start().await;
    let session = server
        .session_with_keyspace("dl", &["CREATE TABLE dl.t (k int PRIMARY KEY, v decimal)"])
        .await;
    // Each literal and Cassandra's `new BigDecimal(text)` of it: (unscaled, scale).
    let cases: &[(&str, &str, i32)] = &[
        (
            "-123456789012345678901234567890.000000000123",
            "-123456789012345678901234567890000000000123",
            12,
        ),
        (
            "98765432109876543210.98765432109876543210",
            "9876543210987654321098765432109876543210",
            20,
        ),
        ("1.5E+3", "15", -2),
        ("-2e-5", "-2", 5),
        ("1e10", "1", -10),
        ("-0.0010", "-10", 4),
        ("12345678901234567890123", "12345678901234567890123", 0),
    ];
    for (k, (literal, _, _)) in (0i32..).zip(cases) {
        let cql = format!("INSERT INTO dl.t (k, v) VALUES ({k}, {literal})");
        session
            .query_unpaged(cql.as_str(), ())
            .await
            .unwrap_or_else(|e| panic!("{cql}: {e}"));
    }
    for (k, (literal, unscaled, scale)) in (0i32..).zip(cases) {
        let (v,): (CqlDecimal,) = session
            .query_unpaged("SELECT v FROM dl.t WHERE k = ?", (k,))
            .await
            .expect("select")
            .into_rows_result()
            .expect("rows")
            .single_row()
            .expect("one row");
        assert_eq!(
            unscaled_and_scale(&v),
            (unscaled.to_string(), *scale),
            "{literal}"
        );
    }
    server.stop().await;
}
