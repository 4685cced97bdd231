//! The load half of `scripts/soak`: a mixed CQL workload over many connections against one
//! ringdb, sampling the server's RSS as it goes.
//!
//! ```text
//! soak-load --addr 127.0.0.1:9042 --pid 1234 [--seconds 600] [--connections 500]
//!           [--concurrency 128] [--sample-seconds 5] [--keys 20000]
//! ```
//!
//! One driver session holds `--connections` connections to the node (the driver spreads requests
//! over them); `--concurrency` tasks each run one operation at a time over a bounded key space
//! (so the data set, and with it the server's memory, should level off): inserts, updates,
//! point and slice reads, deletes, counter updates, unlogged and logged batches, LWT, and
//! unprepared queries. Every `--sample-seconds` it prints elapsed time, the server's RSS
//! (`/proc/<pid>/status` VmRSS), throughput and errors; at the end the RSS curve, error counts
//! by kind, latency percentiles per operation, and the plateau verdict: the mean RSS of the
//! last third of the samples is within 10% of (or below) the mean of the middle third.
//! Exits 1 if RSS did not plateau or the server died, 0 otherwise (errors are reported, not
//! fatal).

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::client::PoolSize;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{Counter, CqlValue};
use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Args {
    addr: String,
    pid: u32,
    seconds: u64,
    connections: usize,
    concurrency: usize,
    sample_seconds: u64,
    keys: i32,
}

fn parse_args() -> Args {
    let mut a = Args {
        addr: "127.0.0.1:9042".into(),
        pid: 0,
        seconds: 600,
        connections: 500,
        concurrency: 128,
        sample_seconds: 5,
        keys: 20_000,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let v = argv.get(i + 1).cloned().unwrap_or_default();
        let num = |v: &str| -> u64 {
            v.parse()
                .unwrap_or_else(|_| panic!("{}: not a number: {v:?}", argv[i]))
        };
        match argv[i].as_str() {
            "--addr" => a.addr = v,
            "--pid" => a.pid = num(&v) as u32,
            "--seconds" => a.seconds = num(&v),
            "--connections" => a.connections = num(&v) as usize,
            "--concurrency" => a.concurrency = num(&v) as usize,
            "--sample-seconds" => a.sample_seconds = num(&v).max(1),
            "--keys" => a.keys = num(&v) as i32,
            other => panic!("unknown argument {other} (see the source's module docs)"),
        }
        i += 2;
    }
    a
}

/// The server's resident set size in KiB, or None if it is gone.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// Open connections of the server (sockets in /proc/<pid>/fd).
fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .map(|t| t.to_string_lossy().starts_with("socket:"))
                        .unwrap_or(false)
                })
                .count()
        })
        .unwrap_or(0)
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

struct Statements {
    insert: PreparedStatement,
    update: PreparedStatement,
    read_row: PreparedStatement,
    read_slice: PreparedStatement,
    delete_row: PreparedStatement,
    count: PreparedStatement,
    lwt: PreparedStatement,
    /// Cassandra types the marker of `n = n + ?` as counter; ringdb (so far) as bigint.
    counter_marker_is_counter: bool,
}

impl Statements {
    fn delta(&self, d: i64) -> CqlValue {
        if self.counter_marker_is_counter {
            CqlValue::Counter(Counter(d))
        } else {
            CqlValue::BigInt(d)
        }
    }
}

const OPS: [&str; 10] = [
    "insert", "update", "read", "slice", "delete", "counter", "batch", "logged", "lwt", "query",
];

#[derive(Default)]
struct Stats {
    /// Latencies in µs per operation kind (index into OPS).
    latencies: Vec<Vec<u32>>,
    errors: BTreeMap<String, u64>,
}

async fn run_op(
    s: &Session,
    st: &Statements,
    rng: &mut Rng,
    keys: i32,
    payload: &str,
) -> (usize, Result<(), String>) {
    let pk = rng.below(keys as u64 / 10 + 1) as i32;
    let ck = rng.below(10) as i32;
    let e = |e: scylla::errors::ExecutionError| e.to_string();
    let pe = |e: scylla::errors::PagerExecutionError| e.to_string();
    let choice = rng.below(100);
    let kind = match choice {
        0..=24 => 0,
        25..=34 => 1,
        35..=59 => 2,
        60..=69 => 3,
        70..=76 => 4,
        77..=84 => 5,
        85..=89 => 6,
        90..=93 => 7,
        94..=95 => 8,
        _ => 9,
    };
    let v = &payload[..(rng.below(payload.len() as u64) as usize)];
    let r = match kind {
        0 => s
            .execute_unpaged(&st.insert, (pk, ck, v))
            .await
            .map(drop)
            .map_err(e),
        1 => s
            .execute_unpaged(&st.update, (v, pk, ck))
            .await
            .map(drop)
            .map_err(e),
        2 => s
            .execute_unpaged(&st.read_row, (pk, ck))
            .await
            .map(drop)
            .map_err(e),
        3 => {
            // A paged slice read: walk every page.
            match s.execute_iter(st.read_slice.clone(), (pk,)).await {
                Ok(pager) => match pager.rows_stream::<(i32, i32, Option<String>)>() {
                    Ok(mut rows) => {
                        use futures::StreamExt;
                        let mut r = Ok(());
                        while let Some(row) = rows.next().await {
                            if let Err(err) = row {
                                r = Err(err.to_string());
                                break;
                            }
                        }
                        r
                    }
                    Err(err) => Err(err.to_string()),
                },
                Err(err) => Err(pe(err)),
            }
        }
        4 => s
            .execute_unpaged(&st.delete_row, (pk, ck))
            .await
            .map(drop)
            .map_err(e),
        5 => s
            .execute_unpaged(
                &st.count,
                vec![st.delta(1 + rng.below(5) as i64), CqlValue::Int(pk)],
            )
            .await
            .map(drop)
            .map_err(e),
        6 | 7 => {
            let mut batch = Batch::new(if kind == 6 {
                BatchType::Unlogged
            } else {
                BatchType::Logged
            });
            let mut values = Vec::new();
            for i in 0..4 {
                batch.append_statement(st.insert.clone());
                values.push((pk, (ck + i) % 10, v));
            }
            s.batch(&batch, values).await.map(drop).map_err(e)
        }
        8 => s
            .execute_unpaged(&st.lwt, (pk, rng.below(10) as i32 + 100, v))
            .await
            .map(drop)
            .map_err(e),
        _ => s
            .query_unpaged(
                format!("SELECT ck, v FROM soak.kv WHERE pk = {pk} AND ck >= {ck} LIMIT 3"),
                (),
            )
            .await
            .map(drop)
            .map_err(e),
    };
    (kind, r)
}

/// Normalises an error message into a short kind for counting.
fn error_kind(msg: &str) -> String {
    let short: String = msg.chars().take(90).collect();
    short
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn ms(us: u32) -> String {
    format!("{:.2}", f64::from(us) / 1000.0)
}

#[tokio::main]
async fn main() {
    let args = parse_args();
    let t0 = Instant::now();
    let session = SessionBuilder::new()
        .known_node(&args.addr)
        .pool_size(PoolSize::PerHost(
            NonZeroUsize::new(args.connections.max(1)).expect("nonzero"),
        ))
        .build()
        .await
        .unwrap_or_else(|e| panic!("connect to {}: {e}", args.addr));
    for q in [
        "CREATE KEYSPACE IF NOT EXISTS soak WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE IF NOT EXISTS soak.kv (pk int, ck int, v text, PRIMARY KEY (pk, ck))",
        "CREATE TABLE IF NOT EXISTS soak.counters (pk int PRIMARY KEY, n counter)",
    ] {
        session.query_unpaged(q, ()).await.unwrap_or_else(|e| panic!("{q}: {e}"));
    }
    let p = |q: &'static str| {
        let s = &session;
        async move { s.prepare(q).await.unwrap_or_else(|e| panic!("{q}: {e}")) }
    };
    let mut read_slice = p("SELECT pk, ck, v FROM soak.kv WHERE pk = ?").await;
    read_slice.set_page_size(4);
    let count = p("UPDATE soak.counters SET n = n + ? WHERE pk = ?").await;
    let counter_marker_is_counter = {
        use scylla::frame::response::result::{ColumnType, NativeType};
        matches!(
            count
                .get_variable_col_specs()
                .get_by_index(0)
                .map(|s| s.typ()),
            Some(ColumnType::Native(NativeType::Counter))
        )
    };
    let st = Arc::new(Statements {
        insert: p("INSERT INTO soak.kv (pk, ck, v) VALUES (?, ?, ?)").await,
        update: p("UPDATE soak.kv SET v = ? WHERE pk = ? AND ck = ?").await,
        read_row: p("SELECT v FROM soak.kv WHERE pk = ? AND ck = ?").await,
        read_slice,
        delete_row: p("DELETE FROM soak.kv WHERE pk = ? AND ck = ?").await,
        count,
        counter_marker_is_counter,
        lwt: p("INSERT INTO soak.kv (pk, ck, v) VALUES (?, ?, ?) IF NOT EXISTS").await,
    });
    // Let the driver open the whole pool before the clock starts.
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!(
        "soak-load: {} s, {} connections requested ({} server sockets open), {} concurrent \
         workers, {} keys; connected in {:.1} s",
        args.seconds,
        args.connections,
        sockets(args.pid),
        args.concurrency,
        args.keys,
        t0.elapsed().as_secs_f64()
    );

    let session = Arc::new(session);
    let stop = Arc::new(AtomicBool::new(false));
    let done_ops = Arc::new(AtomicU64::new(0));
    let error_count = Arc::new(AtomicU64::new(0));
    let stats = Arc::new(Mutex::new(Stats {
        latencies: vec![Vec::new(); OPS.len()],
        errors: BTreeMap::new(),
    }));
    let payload: Arc<str> = "soak-".repeat(60).into();
    let mut workers = Vec::new();
    for w in 0..args.concurrency {
        let (session, st, stop, done_ops, error_count, stats, payload) = (
            session.clone(),
            st.clone(),
            stop.clone(),
            done_ops.clone(),
            error_count.clone(),
            stats.clone(),
            payload.clone(),
        );
        let keys = args.keys;
        workers.push(tokio::spawn(async move {
            let mut rng = Rng(0x5eed ^ (w as u64 * 7919));
            let mut local: Vec<Vec<u32>> = vec![Vec::new(); OPS.len()];
            let mut errors: BTreeMap<String, u64> = BTreeMap::new();
            while !stop.load(Ordering::Relaxed) {
                let start = Instant::now();
                let (kind, r) = run_op(&session, &st, &mut rng, keys, &payload).await;
                let us = start.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                match r {
                    Ok(()) => local[kind].push(us),
                    Err(msg) => {
                        *errors
                            .entry(format!("{}: {}", OPS[kind], error_kind(&msg)))
                            .or_default() += 1;
                        error_count.fetch_add(1, Ordering::Relaxed);
                        // Do not spin on a dead server.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
                done_ops.fetch_add(1, Ordering::Relaxed);
            }
            let mut s = stats.lock().expect("stats");
            for (all, mine) in s.latencies.iter_mut().zip(local) {
                all.extend(mine);
            }
            for (k, n) in errors {
                *s.errors.entry(k).or_default() += n;
            }
        }));
    }

    // Sample RSS, throughput and errors.
    let start = Instant::now();
    let mut samples: Vec<(u64, u64)> = Vec::new(); // (seconds, KiB)
    let mut last_ops = 0;
    let mut server_died = false;
    println!(
        "{:>7} {:>10} {:>9} {:>9} {:>8}",
        "time_s", "rss_mib", "ops/s", "errors", "sockets"
    );
    loop {
        let rss = rss_kib(args.pid);
        let elapsed = start.elapsed().as_secs();
        let ops = done_ops.load(Ordering::Relaxed);
        let rate = (ops - last_ops) / args.sample_seconds.max(1);
        last_ops = ops;
        match rss {
            Some(kib) => {
                samples.push((elapsed, kib));
                println!(
                    "{:>7} {:>10.1} {:>9} {:>9} {:>8}",
                    elapsed,
                    kib as f64 / 1024.0,
                    if elapsed == 0 { 0 } else { rate },
                    error_count.load(Ordering::Relaxed),
                    sockets(args.pid)
                );
            }
            None => {
                println!("{elapsed:>7}   server process {} is gone", args.pid);
                server_died = true;
                break;
            }
        }
        if elapsed >= args.seconds {
            break;
        }
        tokio::time::sleep(Duration::from_secs(args.sample_seconds)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = tokio::time::timeout(Duration::from_secs(30), w).await;
    }
    let total_secs = start.elapsed().as_secs_f64();

    let s = stats.lock().expect("stats");
    let ok: usize = s.latencies.iter().map(Vec::len).sum();
    let errors: u64 = s.errors.values().sum();
    println!();
    println!(
        "operations: {ok} ok, {errors} errors in {total_secs:.0} s ({:.0} ops/s)",
        ok as f64 / total_secs
    );
    for (k, n) in &s.errors {
        println!("  error x{n}: {k}");
    }
    println!();
    println!(
        "{:<8} {:>9} {:>8} {:>8} {:>8} {:>9} {:>9}  (latency ms)",
        "op", "count", "p50", "p90", "p99", "p99.9", "max"
    );
    let mut all: Vec<u32> = Vec::with_capacity(ok);
    for (name, lat) in OPS.iter().zip(&s.latencies) {
        let mut l = lat.clone();
        l.sort_unstable();
        all.extend_from_slice(&l);
        println!(
            "{:<8} {:>9} {:>8} {:>8} {:>8} {:>9} {:>9}",
            name,
            l.len(),
            ms(percentile(&l, 0.5)),
            ms(percentile(&l, 0.9)),
            ms(percentile(&l, 0.99)),
            ms(percentile(&l, 0.999)),
            ms(l.last().copied().unwrap_or(0))
        );
    }
    all.sort_unstable();
    println!(
        "{:<8} {:>9} {:>8} {:>8} {:>8} {:>9} {:>9}",
        "all",
        all.len(),
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.9)),
        ms(percentile(&all, 0.99)),
        ms(percentile(&all, 0.999)),
        ms(all.last().copied().unwrap_or(0))
    );

    // RSS curve and plateau verdict.
    println!();
    let third = samples.len() / 3;
    let mean =
        |xs: &[(u64, u64)]| xs.iter().map(|x| x.1 as f64).sum::<f64>() / xs.len().max(1) as f64;
    let mib = |k: f64| k / 1024.0;
    let curve: Vec<String> = samples
        .iter()
        .step_by((samples.len() / 24).max(1))
        .map(|(t, k)| format!("{t}s:{:.0}", mib(*k as f64)))
        .collect();
    println!("RSS curve (MiB): {}", curve.join(" "));
    let plateau = if third == 0 {
        println!("plateau: too few samples ({})", samples.len());
        false
    } else {
        let middle = mean(&samples[third..2 * third]);
        let last = mean(&samples[2 * third..]);
        let first = mean(&samples[..third]);
        let max_last = samples[2 * third..].iter().map(|x| x.1).max().unwrap_or(0);
        let growth = (last - middle) / middle;
        let ok = growth <= 0.10;
        println!(
            "RSS mean by third (MiB): first {:.1}, middle {:.1}, last {:.1} (max {:.1}); \
             last vs middle {:+.1}% -> {}",
            mib(first),
            mib(middle),
            mib(last),
            mib(max_last as f64),
            growth * 100.0,
            if ok { "PLATEAU" } else { "STILL GROWING" }
        );
        ok
    };
    if server_died {
        println!("the server died during the soak");
    }
    std::process::exit(if plateau && !server_died { 0 } else { 1 });
}
