//! Statements Cassandra refuses that ringdb accepted, through the scylla driver against a real
//! ringdb: a batch over several partitions larger than `batch_size_fail_threshold` (50 KiB by
//! default) is refused with Cassandra's "Batch too large" (`BatchStatement.verifyBatchSize`);
//! a single-partition batch of any size is not checked.

mod common;

use common::TestServer;
use scylla::statement::batch::{Batch, BatchType};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_over_several_partitions_past_the_fail_threshold_are_refused() {
    let server = TestServer::start().await;
    let session = server.session().await;
    for cql in [
        "CREATE KEYSPACE bs WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE bs.t (k int, c int, v text, PRIMARY KEY (k, c))",
    ] {
        session.query_unpaged(cql, ()).await.expect(cql);
    }
    let insert = session
        .prepare("INSERT INTO bs.t (k, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare");
    let big = "x".repeat(20 * 1024);
    let batch_of = |n: usize, kind: BatchType| {
        let mut b = Batch::new(kind);
        for _ in 0..n {
            b.append_statement(insert.clone());
        }
        b
    };
    // Three rows of 20 KiB in one partition: 60 KiB, but one partition is never checked.
    let one_partition: Vec<(i32, i32, &str)> = (0..3).map(|c| (1, c, big.as_str())).collect();
    session
        .batch(&batch_of(3, BatchType::Logged), one_partition)
        .await
        .expect("a single-partition batch of 60 KiB");
    // Two partitions, 40 KiB in all: under the threshold.
    let two_small: Vec<(i32, i32, &str)> = (0..2).map(|k| (10 + k, 0, big.as_str())).collect();
    session
        .batch(&batch_of(2, BatchType::Unlogged), two_small)
        .await
        .expect("a 40 KiB batch over two partitions");
    // Three partitions, 60 KiB: refused, nothing written.
    let three: Vec<(i32, i32, &str)> = (0..3).map(|k| (20 + k, 0, big.as_str())).collect();
    for kind in [BatchType::Logged, BatchType::Unlogged] {
        let err = session
            .batch(&batch_of(3, kind), three.clone())
            .await
            .expect_err("a 60 KiB batch over three partitions");
        assert!(err.to_string().contains("Batch too large"), "{err}");
    }
    let (n,): (i64,) = session
        .query_unpaged("SELECT count(*) FROM bs.t WHERE k IN (20, 21, 22)", ())
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(n, 0, "a refused batch writes nothing");
}
