//! The null server under the scylla driver (latte's driver), as `scripts/bench` uses it: the
//! schema reaches the driver's metadata, prepared writes are acknowledged, and reads answer
//! rows of the shape the settings give.

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A null server process, killed on drop.
struct NullServer {
    child: Child,
    addr: String,
}

impl Drop for NullServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(slice_rows: usize, value_size: usize) -> NullServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_nullserver"))
        .env("NULLSERVER_ADDR", &addr)
        .env("NULLSERVER_SLICE_ROWS", slice_rows.to_string())
        .env("NULLSERVER_VALUE_SIZE", value_size.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nullserver starts");
    NullServer { child, addr }
}

async fn connect(addr: &str) -> Session {
    for _ in 0..100 {
        if let Ok(s) = SessionBuilder::new().known_node(addr).build().await {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no session to {addr}");
}

async fn rows_of(
    session: &Session,
    statement: &scylla::statement::prepared::PreparedStatement,
    values: impl scylla::serialize::row::SerializeRow,
) -> Vec<(i32, String)> {
    session
        .execute_unpaged(statement, values)
        .await
        .expect("read")
        .into_rows_result()
        .expect("rows")
        .rows::<(i32, String)>()
        .expect("typed rows")
        .collect::<Result<_, _>>()
        .expect("rows decode")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scylla_driver_writes_and_reads_through_the_null_server() {
    let server = start(7, 40);
    let session = connect(&server.addr).await;
    for ddl in [
        "CREATE KEYSPACE bench WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE bench.kv (pk bigint, c int, v text, PRIMARY KEY (pk, c))",
    ] {
        session.query_unpaged(ddl, &[]).await.expect(ddl);
    }
    session.refresh_metadata().await.expect("metadata");
    let state = session.get_cluster_state();
    let table = state
        .get_keyspace("bench")
        .and_then(|ks| ks.tables.get("kv"))
        .expect("bench.kv in the driver's metadata");
    assert_eq!(table.partition_key, vec!["pk"]);
    assert_eq!(table.clustering_key, vec!["c"]);

    let insert = session
        .prepare("INSERT INTO bench.kv (pk, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare insert");
    assert_eq!(insert.get_variable_pk_indexes().len(), 1);
    session
        .execute_unpaged(&insert, (1i64, 2i32, "x"))
        .await
        .expect("write acknowledged");

    let point = session
        .prepare("SELECT c, v FROM bench.kv WHERE pk = ? AND c = ?")
        .await
        .expect("prepare point read");
    let rows = rows_of(&session, &point, (1i64, 2i32)).await;
    assert_eq!(rows.len(), 1, "a whole primary key reads one row");
    assert_eq!(rows[0].1.len(), 40, "text values have the value size");

    let slice = session
        .prepare("SELECT c, v FROM bench.kv WHERE pk = ? AND c >= ? LIMIT ?")
        .await
        .expect("prepare slice");
    assert_eq!(rows_of(&session, &slice, (1i64, 0i32, 3i32)).await.len(), 3);
    assert_eq!(
        rows_of(&session, &slice, (1i64, 0i32, 50i32)).await.len(),
        7
    );

    let scan = session
        .prepare("SELECT c, v FROM bench.kv WHERE token(pk) > ? AND token(pk) <= ?")
        .await
        .expect("prepare scan");
    assert_eq!(rows_of(&session, &scan, (i64::MIN, 0i64)).await.len(), 7);

    let conditional = session
        .query_unpaged(
            "INSERT INTO bench.kv (pk, c, v) VALUES (1, 1, 'a') IF NOT EXISTS",
            &[],
        )
        .await
        .expect("conditional write")
        .into_rows_result()
        .expect("[applied] row");
    let applied: Vec<(bool,)> = conditional
        .rows::<(bool,)>()
        .expect("typed")
        .collect::<Result<_, _>>()
        .expect("decode");
    assert_eq!(applied, vec![(true,)]);

    let missing = session
        .query_unpaged("SELECT * FROM bench.missing", &[])
        .await
        .expect_err("no such table");
    assert!(
        missing.to_string().contains("unconfigured table missing"),
        "{missing}"
    );
}
