//! The partition cache (`partition_cache_max_kb`) through the scylla driver: slices of small
//! partitions (whole, bounded, reversed, paged) and their static column, read after every
//! kind of write (rows, cells, statics, deletions of cells, rows, ranges and partitions),
//! answer as a model of the partitions says, so no cached partition outlives a write.

mod common;

use std::collections::BTreeMap;

use common::{create_keyspace, run_all, TestServer};
use futures::TryStreamExt;
use scylla::client::session::Session;
use scylla::statement::unprepared::Statement;

const PARTITIONS: i64 = 8;
const CLUSTERINGS: i32 = 12;

/// A row as the model keeps it: its liveness marker and its two columns.
#[derive(Clone, Default)]
struct ModelRow {
    marker: bool,
    v: Option<String>,
    w: Option<i32>,
}

type Model = BTreeMap<(i64, i32), ModelRow>;
/// The static column of each partition that has one.
type Statics = BTreeMap<i64, i32>;
type Got = Vec<(Option<i32>, Option<String>, Option<i32>)>;

/// The live rows of partition `pk` with `lo <= c < hi`, in clustering order.
fn expected(model: &Model, pk: i64, lo: i32, hi: i32) -> Got {
    model
        .range((pk, lo)..(pk, hi))
        .filter(|(_, r)| r.marker || r.v.is_some() || r.w.is_some())
        .map(|((_, c), r)| (Some(*c), r.v.clone(), r.w))
        .collect()
}

async fn select(session: &Session, cql: String, page: i32) -> Got {
    let mut q = Statement::new(cql);
    q.set_page_size(page);
    session
        .query_iter(q, ())
        .await
        .expect("query")
        .rows_stream::<(Option<i32>, Option<String>, Option<i32>)>()
        .expect("typed rows")
        .try_collect()
        .await
        .expect("rows")
}

/// Deterministic pseudo-random numbers (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slices_of_small_partitions_follow_every_write() {
    let server = TestServer::start_with(|c| c.partition_cache_max_kb = 4).await;
    let session = server.session().await;
    run_all(
        &session,
        &[
            &create_keyspace("ks"),
            "CREATE TABLE ks.t (pk bigint, c int, v text, w int, s int static, \
             PRIMARY KEY (pk, c))",
        ],
    )
    .await;
    let mut model = Model::new();
    let mut statics = Statics::new();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for step in 0..600 {
        let pk = rng.below(PARTITIONS as u64) as i64;
        let c = rng.below(CLUSTERINGS as u64) as i32;
        // One partition grows past the cache's limit (4 KiB) and back, through big values.
        let v = if pk == 0 && rng.below(2) == 0 {
            format!("{step}-{}", "x".repeat(600))
        } else {
            format!("v{step}")
        };
        let cql = match rng.below(24) {
            20 | 21 => {
                statics.insert(pk, step);
                format!("UPDATE ks.t SET s = {step} WHERE pk = {pk}")
            }
            22 => {
                let hi = c + 1 + rng.below(4) as i32;
                model.retain(|&(p, k), _| p != pk || k < c || k >= hi);
                format!("DELETE FROM ks.t WHERE pk = {pk} AND c >= {c} AND c < {hi}")
            }
            23 => {
                model.retain(|&(p, _), _| p != pk);
                statics.remove(&pk);
                format!("DELETE FROM ks.t WHERE pk = {pk}")
            }
            0..=7 => {
                let row = model.entry((pk, c)).or_default();
                *row = ModelRow {
                    marker: true,
                    v: Some(v.clone()),
                    w: Some(step),
                };
                format!("INSERT INTO ks.t (pk, c, v, w) VALUES ({pk}, {c}, '{v}', {step})")
            }
            8..=11 => {
                model.entry((pk, c)).or_default().v = Some(v.clone());
                format!("UPDATE ks.t SET v = '{v}' WHERE pk = {pk} AND c = {c}")
            }
            12..=15 => {
                model.entry((pk, c)).or_default().w = None;
                format!("DELETE w FROM ks.t WHERE pk = {pk} AND c = {c}")
            }
            _ => {
                model.remove(&(pk, c));
                format!("DELETE FROM ks.t WHERE pk = {pk} AND c = {c}")
            }
        };
        session.query_unpaged(cql, ()).await.expect("write");
        // Read the written partition and another one, as a whole, backwards in pages and by
        // a clustering range.
        for pk in [pk, rng.below(PARTITIONS as u64) as i64] {
            let mut all = expected(&model, pk, i32::MIN, i32::MAX);
            // A partition with static content alone reads as one row of it when the query
            // restricts no clustering column (Cassandra's `queriesFullPartitions`).
            if all.is_empty() && statics.contains_key(&pk) {
                all.push((None, None, None));
            }
            let base = format!("SELECT c, v, w FROM ks.t WHERE pk = {pk}");
            assert_eq!(
                select(&session, base.clone(), 100).await,
                all,
                "step {step}"
            );
            let mut reversed = all.clone();
            reversed.reverse();
            assert_eq!(
                select(&session, format!("{base} ORDER BY c DESC"), 3).await,
                reversed,
                "step {step}, reversed"
            );
            // One row: the static column beside the first row, or alone.
            let has_rows = all.iter().any(|r| r.0.is_some());
            let st: Vec<(Option<i32>,)> = match statics.get(&pk) {
                Some(&s) => vec![(Some(s),)],
                None if has_rows => vec![(None,)],
                None => Vec::new(),
            };
            let got: Vec<(Option<i32>,)> = session
                .query_unpaged(format!("SELECT s FROM ks.t WHERE pk = {pk} LIMIT 1"), ())
                .await
                .expect("static")
                .into_rows_result()
                .expect("rows")
                .rows::<(Option<i32>,)>()
                .expect("typed")
                .collect::<Result<_, _>>()
                .expect("row");
            assert_eq!(got, st, "step {step}, static");
            let (lo, hi) = (3, 9);
            assert_eq!(
                select(&session, format!("{base} AND c >= {lo} AND c < {hi}"), 2).await,
                expected(&model, pk, lo, hi),
                "step {step}, {lo} <= c < {hi}"
            );
        }
    }
}
