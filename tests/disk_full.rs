//! A disk running out of space: writes fail with WriteFailure and a clear message before the
//! store fills the disk, reads keep working, nothing acknowledged is lost, and writes succeed
//! again once space returns. Space is taken for real with `fallocate` on the data directory's
//! file system; the server's threshold is set just below the free space measured at start.

mod common;

use common::{int_column, TestServer};
use std::time::Duration;

/// Free bytes on the file system holding `path` (from `df`, so the test does not share the
/// server's own measurement code).
fn free_bytes(path: &std::path::Path) -> u64 {
    let out = std::process::Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(path)
        .output()
        .expect("df runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .expect("df prints the available bytes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_disk_fails_writes_cleanly_and_recovers() {
    const MIB: u64 = 1 << 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let free = free_bytes(dir.path());
    if free < 6 << 30 {
        eprintln!("skipping: only {free} bytes free, the test needs 6 GiB");
        return;
    }
    // Writes are refused once less than (free - 1 GiB) is left: taking 3 GiB crosses it.
    let threshold_mb = (free - (1 << 30)) / MIB;
    let server = TestServer::start_with(|c| {
        c.data_dir = dir.path().to_path_buf();
        c.min_free_disk_mb = threshold_mb;
    })
    .await;
    let session = server
        .session_with_keyspace("ks", &["CREATE TABLE ks.t (k int PRIMARY KEY, v text)"])
        .await;
    let insert = session
        .prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        .await
        .expect("prepare");
    for k in 0..100i32 {
        session
            .execute_unpaged(&insert, (k, format!("before-{k}")))
            .await
            .expect("write with space left");
    }

    let filler = dir.path().join("filler");
    let status = std::process::Command::new("fallocate")
        .args(["-l", &(3u64 << 30).to_string()])
        .arg(&filler)
        .status()
        .expect("fallocate runs");
    assert!(status.success(), "fallocate takes 3 GiB");
    // The server measures free space at most every 100 ms.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let err = session
        .execute_unpaged(&insert, (1000i32, "while full".to_string()))
        .await
        .expect_err("a write with the disk below the threshold fails");
    let text = format!("{err:?} {err}");
    assert!(text.contains("WriteFailure"), "WriteFailure error: {text}");
    assert!(text.contains("free disk space"), "clear message: {text}");
    // Reads keep working and every acknowledged write is there; the refused one is not.
    let rows = int_column(&session, "SELECT k FROM ks.t").await.len();
    assert_eq!(rows, 100, "all acknowledged rows and nothing else");

    std::fs::remove_file(&filler).expect("free the space");
    tokio::time::sleep(Duration::from_millis(300)).await;
    session
        .execute_unpaged(&insert, (1001i32, "after".to_string()))
        .await
        .expect("writes succeed again once space returns");
    let count = int_column(&session, "SELECT k FROM ks.t").await.len();
    assert_eq!(count, 101);
    server.stop().await;
}
