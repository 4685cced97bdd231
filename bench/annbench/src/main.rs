//! `annbench`: the vector search benchmark of `scripts/bench ann`. It loads random vectors into
//! a ringdb server, waits until the server's vector graphs hold them all
//! (`ringdb_vector_index_backlog` reaches 0), then runs ANN queries and compares each answer
//! with the exact ranking computed here: recall@k, and the queries' latency.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use futures::stream::{self, StreamExt, TryStreamExt};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::statement::Consistency;
use storage::Similarity;

/// Command-line options.
#[derive(Parser, Debug)]
struct Args {
    /// The server's CQL address.
    #[arg(long, default_value = "127.0.0.1:9042")]
    address: String,
    /// The server's metrics URL, polled for the graphs' backlog.
    #[arg(long)]
    metrics: Option<String>,
    /// Vectors loaded.
    #[arg(long, default_value_t = 100_000)]
    rows: usize,
    /// Their dimension.
    #[arg(long, default_value_t = 128)]
    dimension: usize,
    /// Queries measured.
    #[arg(long, default_value_t = 100)]
    queries: usize,
    /// LIMIT of each query (the k of recall@k).
    #[arg(long, default_value_t = 10)]
    k: usize,
    /// The index's similarity function: cosine, euclidean or dot_product.
    #[arg(long, default_value = "euclidean")]
    similarity: String,
    /// Inserts in flight while loading.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Seed of the random vectors.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Longest wait for the graphs, in seconds.
    #[arg(long, default_value_t = 1800)]
    build_timeout: u64,
}

fn random_vectors(rng: &mut fastrand::Rng, n: usize, dimension: usize) -> Vec<Vec<f32>> {
    (0..n)
        .map(|_| (0..dimension).map(|_| rng.f32() * 2.0 - 1.0).collect())
        .collect()
}

/// The backlog the metrics report, or None when it cannot be read.
fn backlog(url: &str) -> Option<u64> {
    let body = ureq::get(url)
        .call()
        .ok()?
        .body_mut()
        .read_to_string()
        .ok()?;
    body.lines()
        .find(|l| l.starts_with("ringdb_vector_index_backlog "))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map(|v| v as u64)
}

async fn load(session: &Session, args: &Args, data: &[Vec<f32>]) -> anyhow::Result<Duration> {
    let insert = session
        .prepare("INSERT INTO annbench.v (id, v) VALUES (?, ?)")
        .await?;
    let started = Instant::now();
    stream::iter(data.iter().enumerate())
        .map(|(i, v)| {
            let insert = &insert;
            async move {
                let id = i32::try_from(i).context("row id")?;
                session.execute_unpaged(insert, (id, v)).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(args.concurrency)
        .try_collect::<()>()
        .await?;
    Ok(started.elapsed())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let Some(similarity) = Similarity::from_option(&args.similarity) else {
        bail!("unknown similarity {}", args.similarity);
    };
    let session = SessionBuilder::new()
        .known_node(&args.address)
        .build()
        .await
        .context("connecting")?;
    for ddl in [
        "DROP KEYSPACE IF EXISTS annbench".to_string(),
        "CREATE KEYSPACE annbench WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}".to_string(),
        format!("CREATE TABLE annbench.v (id int PRIMARY KEY, v vector<float, {}>)", args.dimension),
        format!(
            "CREATE CUSTOM INDEX ON annbench.v (v) USING 'sai' WITH OPTIONS = {{'similarity_function': '{}'}}",
            args.similarity
        ),
    ] {
        session.query_unpaged(ddl, ()).await?;
    }
    let mut rng = fastrand::Rng::with_seed(args.seed);
    let data = random_vectors(&mut rng, args.rows, args.dimension);
    let loaded = load(&session, &args, &data).await?;
    println!(
        "loaded {} vectors of {} floats in {:.1} s ({:.0} rows/s)",
        args.rows,
        args.dimension,
        loaded.as_secs_f64(),
        args.rows as f64 / loaded.as_secs_f64()
    );
    if let Some(url) = &args.metrics {
        let started = Instant::now();
        loop {
            match backlog(url) {
                Some(0) => break,
                Some(_) | None if started.elapsed() > Duration::from_secs(args.build_timeout) => {
                    bail!(
                        "the vector graphs were not built within {} s",
                        args.build_timeout
                    )
                }
                _ => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
        println!(
            "graphs built {:.1} s after the load ended",
            started.elapsed().as_secs_f64()
        );
    }
    let mut select = session
        .prepare(format!(
            "SELECT id FROM annbench.v ORDER BY v ANN OF ? LIMIT {}",
            args.k
        ))
        .await?;
    // Top-K queries run at ONE (Cassandra downgrades other levels, with a warning).
    select.set_consistency(Consistency::One);
    let queries = random_vectors(&mut rng, args.queries, args.dimension);
    let (mut hits, mut latencies) = (0usize, Vec::new());
    for q in &queries {
        let started = Instant::now();
        let rows = session
            .execute_unpaged(&select, (q,))
            .await?
            .into_rows_result()?;
        latencies.push(started.elapsed());
        let got: Vec<i32> = rows
            .rows::<(i32,)>()?
            .map(|r| r.map(|(id,)| id))
            .collect::<Result<_, _>>()?;
        let mut exact: Vec<(f32, usize)> = data
            .iter()
            .enumerate()
            .map(|(i, v)| (similarity.score(q, v), i))
            .collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        hits += exact[..args.k.min(exact.len())]
            .iter()
            .filter(|(_, i)| got.iter().any(|g| usize::try_from(*g).ok() == Some(*i)))
            .count();
    }
    latencies.sort();
    let at = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p) as usize];
    println!(
        "recall@{}: {:.3} over {} queries (target >= 0.95); query latency p50 {:.2} ms, p99 {:.2} ms",
        args.k,
        hits as f64 / (args.k * args.queries) as f64,
        args.queries,
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3
    );
    Ok(())
}
