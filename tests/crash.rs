//! Durability through a real driver: writes are acknowledged, the server is killed with
//! SIGKILL mid-stream, restarted on the same data directory, and every acknowledged write is
//! read back.

mod common;

use common::{free_port, ServerProcess};
use scylla::client::session_builder::SessionBuilder;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_write_survives_sigkill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let server = ServerProcess::spawn(dir.path(), port);
    let session = Arc::new(
        SessionBuilder::new()
            .known_node(server.addr.to_string())
            .build()
            .await
            .expect("connect"),
    );
    session
        .query_unpaged(
            "CREATE KEYSPACE crash WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            &[],
        )
        .await
        .expect("keyspace");
    session
        .query_unpaged(
            "CREATE TABLE crash.t (pk int, c int, v text, PRIMARY KEY (pk, c))",
            &[],
        )
        .await
        .expect("table");
    let insert = session
        .prepare("INSERT INTO crash.t (pk, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare");

    // Four concurrent writers record what was acknowledged until the server dies.
    let acked: Arc<Mutex<BTreeMap<(i32, i32), String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4i32 {
        let (session, insert, acked, stop) =
            (session.clone(), insert.clone(), acked.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut i = 0i32;
            while !stop.load(Ordering::Relaxed) {
                let (pk, c) = (w * 1000 + i % 50, i);
                let v = format!("w{w}-{i}-{}", "x".repeat(40));
                match session.execute_unpaged(&insert, (pk, c, v.clone())).await {
                    Ok(_) => {
                        acked.lock().expect("lock").insert((pk, c), v);
                    }
                    Err(_) => break,
                }
                i += 1;
            }
        }));
    }
    // Let writes flow, then SIGKILL while they are in flight.
    while acked.lock().expect("lock").len() < 2000 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        let _ = w.await;
    }
    drop(session);
    let acked = acked.lock().expect("lock").clone();
    assert!(acked.len() >= 2000);

    let server = ServerProcess::spawn(dir.path(), port);
    let session = SessionBuilder::new()
        .known_node(server.addr.to_string())
        .build()
        .await
        .expect("reconnect");
    let select = session
        .prepare("SELECT v FROM crash.t WHERE pk = ? AND c = ?")
        .await
        .expect("prepare select");
    let mut missing = Vec::new();
    for ((pk, c), v) in &acked {
        let rows = session
            .execute_unpaged(&select, (*pk, *c))
            .await
            .expect("read")
            .into_rows_result()
            .expect("rows");
        let got: Option<(String,)> = rows.maybe_first_row::<(String,)>().expect("typed");
        if got.as_ref().map(|g| &g.0) != Some(v) {
            missing.push((*pk, *c));
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged writes lost after SIGKILL, e.g. {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
    assert!(server.terminate().success());
}
