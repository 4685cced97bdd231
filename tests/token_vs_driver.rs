//! Tokens identical to Cassandra's as the drivers compute them: ringdb's Murmur3 against the
//! scylla driver's own implementation over random keys (bytes >= 0x80 and composite keys), and
//! `SELECT token(...)` from the server against the driver's token for the same prepared values.

mod common;

use common::TestServer;
use proptest::prelude::*;
use scylla::routing::partitioner::{Murmur3Partitioner, Partitioner};

fn ours(components: &[Vec<u8>]) -> i64 {
    let parts: Vec<&[u8]> = components.iter().map(Vec::as_slice).collect();
    storage::token::token(&storage::token::serialize_partition_key(&parts))
}

fn drivers(components: &[Vec<u8>]) -> i64 {
    let parts: Vec<&[u8]> = components.iter().map(Vec::as_slice).collect();
    Murmur3Partitioner
        .hash_one(&storage::token::serialize_partition_key(&parts))
        .value()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn single_component_tokens_match_the_driver(key in proptest::collection::vec(any::<u8>(), 1..80)) {
        prop_assert_eq!(ours(std::slice::from_ref(&key)), drivers(&[key]));
    }

    #[test]
    fn composite_tokens_match_the_driver(
        parts in proptest::collection::vec(proptest::collection::vec(128u8..=255, 0..40), 2..4)
    ) {
        prop_assert_eq!(ours(&parts), drivers(&parts));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_tokens_equal_driver_tokens_for_composite_keys() {
    let server = TestServer::start().await;
    let session = server.session().await;
    session
        .query_unpaged(
            "CREATE KEYSPACE tk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            &[],
        )
        .await
        .expect("keyspace");
    session
        .query_unpaged(
            "CREATE TABLE tk.t (p1 text, p2 int, c int, PRIMARY KEY ((p1, p2), c))",
            &[],
        )
        .await
        .expect("table");
    let insert = session
        .prepare("INSERT INTO tk.t (p1, p2, c) VALUES (?, ?, 0)")
        .await
        .expect("prepare");
    let select = session
        .prepare("SELECT token(p1, p2) FROM tk.t WHERE p1 = ? AND p2 = ?")
        .await
        .expect("prepare");
    for (p1, p2) in [
        ("a", 1),
        ("é", -1),
        ("naïve café", 128),
        ("", 0),
        ("k", i32::MIN),
    ] {
        let values = (p1.to_string(), p2);
        session
            .execute_unpaged(&insert, &values)
            .await
            .expect("insert");
        let driver = select
            .calculate_token(&values)
            .expect("token computable")
            .expect("pk_indexes let the driver route")
            .value();
        let server_token = session
            .execute_unpaged(&select, &values)
            .await
            .expect("select")
            .into_rows_result()
            .expect("rows")
            .first_row::<(i64,)>()
            .expect("one row")
            .0;
        assert_eq!(server_token, driver, "token of ({p1:?}, {p2})");
    }
    server.stop().await;
}
