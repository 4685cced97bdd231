//! Idle compaction through the scylla driver: a table written in three generations (two
//! flushed to tables, one in the memtable), with overwrites, row and range deletions, is
//! compacted into one sorted run by the server's idle thread once writes stop, and reads
//! (slices both ways, pages, token-range scans) return what they returned before.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::TestServer;
use scylla::client::session::Session;
use scylla::statement::unprepared::Statement;

const PARTITIONS: i64 = 12;
const ROWS: i32 = 60;

type Model = BTreeMap<(i64, i32), String>;

/// Every read the test checks: each partition forward and backward (in pages of 7), a slice
/// of it, the table from token 0 on and the whole table (both in token order).
async fn snapshot(session: &Session) -> Vec<Vec<(i64, i32, String)>> {
    let mut out = Vec::new();
    for pk in 0..PARTITIONS {
        for order in ["ASC", "DESC"] {
            let mut q = Statement::new(format!(
                "SELECT pk, c, v FROM ks.wide WHERE pk = {pk} ORDER BY c {order}"
            ));
            q.set_page_size(7);
            out.push(rows(session, q).await);
        }
        let q = Statement::new(format!(
            "SELECT pk, c, v FROM ks.wide WHERE pk = {pk} AND c >= 10 AND c < 20"
        ));
        out.push(rows(session, q).await);
    }
    let mut q = Statement::new("SELECT pk, c, v FROM ks.wide WHERE token(pk) > 0");
    q.set_page_size(50);
    out.push(rows(session, q).await);
    let mut q = Statement::new("SELECT pk, c, v FROM ks.wide");
    q.set_page_size(50);
    out.push(rows(session, q).await);
    out
}

/// What [`snapshot`] must return for the rows in `model`.
fn expected(model: &Model) -> Vec<Vec<(i64, i32, String)>> {
    let part = |pk: i64| -> Vec<(i64, i32, String)> {
        model
            .range((pk, i32::MIN)..=(pk, i32::MAX))
            .map(|((p, c), v)| (*p, *c, v.clone()))
            .collect()
    };
    let mut out = Vec::new();
    for pk in 0..PARTITIONS {
        let rows = part(pk);
        out.push(rows.clone());
        out.push(rows.iter().rev().cloned().collect());
        out.push(
            rows.into_iter()
                .filter(|r| (10..20).contains(&r.1))
                .collect(),
        );
    }
    let mut by_token: Vec<(i64, i64)> = (0..PARTITIONS)
        .map(|pk| (storage::token::token(&pk.to_be_bytes()), pk))
        .collect();
    by_token.sort();
    let from = |min: i64| -> Vec<(i64, i32, String)> {
        by_token
            .iter()
            .filter(|(t, _)| *t > min)
            .flat_map(|(_, pk)| part(*pk))
            .collect()
    };
    out.push(from(0));
    out.push(from(i64::MIN));
    out
}

async fn rows(session: &Session, q: Statement) -> Vec<(i64, i32, String)> {
    use futures::TryStreamExt;
    session
        .query_iter(q, ())
        .await
        .expect("query")
        .rows_stream::<(i64, i32, String)>()
        .expect("typed rows")
        .try_collect()
        .await
        .expect("rows")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_table_is_compacted_and_reads_the_same() {
    let server = TestServer::start_with(|c| c.idle_compaction_after_ms = 1500).await;
    let session = server
        .session_with_keyspace(
            "ks",
            &["CREATE TABLE ks.wide (pk bigint, c int, v text, PRIMARY KEY (pk, c))"],
        )
        .await;
    let table = {
        let catalog = server.node.catalog();
        ringdb::schema::table_id(&catalog.keyspaces["ks"].tables["wide"])
    };
    let storage = server.node.storage().clone();
    let insert = session
        .prepare("INSERT INTO ks.wide (pk, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare");
    let mut model = Model::new();
    for generation in 0..3 {
        for pk in 0..PARTITIONS {
            for c in (generation..ROWS).step_by(2) {
                model.insert((pk, c), format!("g{generation}-{pk}-{c}"));
                session
                    .execute_unpaged(&insert, (pk, c, format!("g{generation}-{pk}-{c}")))
                    .await
                    .expect("insert");
            }
        }
        // deletions land in different generations than the rows they shadow
        let pk = i64::from(generation);
        model.remove(&(pk, 4));
        model.retain(|(p, c), _| !(*p == pk + 5 && *c > 30 && *c <= 40));
        session
            .query_unpaged(format!("DELETE FROM ks.wide WHERE pk = {pk} AND c = 4"), ())
            .await
            .expect("row deletion");
        session
            .query_unpaged(
                format!(
                    "DELETE FROM ks.wide WHERE pk = {} AND c > 30 AND c <= 40",
                    pk + 5
                ),
                (),
            )
            .await
            .expect("range deletion");
        if generation < 2 {
            let flush = storage.clone();
            tokio::task::spawn_blocking(move || flush.flush_table(table))
                .await
                .expect("join")
                .expect("flush");
        }
    }
    assert_eq!(
        storage.sorted_runs(table).expect("runs"),
        [3],
        "memtable + two tables"
    );
    let want = expected(&model);
    assert_eq!(snapshot(&session).await, want, "before the compaction");

    // writes stopped: the idle thread compacts the table into one run
    let start = Instant::now();
    while storage.sorted_runs(table).expect("runs") != [1] {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "not compacted: {:?} runs",
            storage.sorted_runs(table)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(snapshot(&session).await, want, "after the compaction");
    server.stop().await;
}
