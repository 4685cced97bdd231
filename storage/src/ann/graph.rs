//! One physical partition's HNSW graph for one vector column: the rows it holds, and the
//! vectors written since, which wait (searched exactly meanwhile) to be inserted.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use anndists::dist::Distance;
use hnsw_rs::hnsw::Hnsw;

use super::similarity::Similarity;

/// Links kept per node and layer (HNSW's `M`).
const LINKS: usize = 24;
/// Candidates weighed while inserting (HNSW's `ef_construction`).
const EF_CONSTRUCTION: usize = 128;
/// Graph layers at most.
const LAYERS: usize = 16;
/// Candidates weighed while searching, at least (HNSW's `ef`).
pub(crate) const EF_SEARCH: usize = 256;

/// The row a graph node stands for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RowRef {
    /// Partition-key components, protocol-serialized.
    pub(crate) partition_key: Vec<Vec<u8>>,
    /// Clustering values, protocol-serialized.
    pub(crate) clustering: Vec<Vec<u8>>,
}

/// The distance the graph walks by.
struct GraphDistance(Similarity);

impl Distance<f32> for GraphDistance {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        self.0.distance(a, b)
    }
}

/// A vector waiting to be inserted.
type Waiting = (Arc<RowRef>, Vec<f32>);

/// One physical partition's graph for one vector column.
pub(crate) struct PartGraph {
    similarity: Similarity,
    hnsw: Hnsw<'static, f32, GraphDistance>,
    /// Node id to row (ids are positions).
    rows: RwLock<Vec<Arc<RowRef>>>,
    /// Written or scanned vectors not in the graph yet, oldest first.
    waiting: Mutex<VecDeque<Waiting>>,
    /// Set once the build's scan has handed every stored row over: before that, queries
    /// read the partition exactly instead.
    complete: AtomicBool,
    /// Candidates queries were given, and how many of them were stale (a row deleted,
    /// expired, or found again under a newer vector): see [`PartGraph::worn_out`].
    served: AtomicU64,
    stale: AtomicU64,
}

/// Candidates served before staleness is judged.
const WEAR_SAMPLE: u64 = 1000;

impl PartGraph {
    /// An empty graph, its build still to come.
    pub(crate) fn new(similarity: Similarity) -> PartGraph {
        PartGraph {
            similarity,
            hnsw: Hnsw::new(
                LINKS,
                10_000,
                LAYERS,
                EF_CONSTRUCTION,
                GraphDistance(similarity),
            ),
            rows: RwLock::new(Vec::new()),
            waiting: Mutex::new(VecDeque::new()),
            complete: AtomicBool::new(false),
            served: AtomicU64::new(0),
            stale: AtomicU64::new(0),
        }
    }

    /// Counts `stale` of `served` candidates; true once more than half of a sample of
    /// candidates were stale: the graph is to be built again from the rows (deleted and
    /// overwritten rows leave their nodes behind until then).
    pub(crate) fn worn_out(&self, served: usize, stale: usize) -> bool {
        let s = self.served.fetch_add(served as u64, Ordering::Relaxed) + served as u64;
        let t = self.stale.fetch_add(stale as u64, Ordering::Relaxed) + stale as u64;
        s >= WEAR_SAMPLE && t * 2 > s
    }

    fn waiting(&self) -> MutexGuard<'_, VecDeque<Waiting>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a row's vector for insertion (skipped when the graph cannot hold it).
    pub(crate) fn push(&self, row: Arc<RowRef>, vector: Vec<f32>) {
        if self.similarity.indexable(&vector) {
            self.waiting().push_back((row, vector));
        }
    }

    /// Vectors waiting to be inserted.
    pub(crate) fn backlog(&self) -> usize {
        self.waiting().len()
    }

    /// Marks the build done: every row stored before it began has been pushed.
    pub(crate) fn mark_complete(&self) {
        self.complete.store(true, Ordering::Release);
    }

    /// Whether queries may use the graph (see [`PartGraph::mark_complete`]).
    pub(crate) fn is_complete(&self) -> bool {
        self.complete.load(Ordering::Acquire)
    }

    /// Inserts up to `max` waiting vectors; returns how many. They stay searchable while
    /// they move: they leave the queue only once in the graph. One thread inserts at a time.
    pub(crate) fn insert_waiting(&self, max: usize) -> usize {
        let batch: Vec<Waiting> = self.waiting().iter().take(max).cloned().collect();
        if batch.is_empty() {
            return 0;
        }
        let first = {
            let mut rows = self.rows.write().unwrap_or_else(|p| p.into_inner());
            let first = rows.len();
            rows.extend(batch.iter().map(|(r, _)| r.clone()));
            first
        };
        // One by one on the caller's (lowered) thread: a parallel insert would take the
        // request threads' cores.
        for (i, (_, v)) in batch.iter().enumerate() {
            self.hnsw.insert_slice((v.as_slice(), first + i));
        }
        self.waiting().drain(..batch.len());
        batch.len()
    }

    /// The rows whose vectors are nearest `query`: about `k` from the graph, searched with
    /// at least [`EF_SEARCH`] candidates, plus the `k` nearest of the waiting vectors,
    /// without repeats, and how many repeats were dropped. Some may be stale (the caller
    /// reads each row again).
    pub(crate) fn candidates(&self, query: &[f32], k: usize) -> (Vec<Arc<RowRef>>, usize) {
        let mut out: Vec<Arc<RowRef>> = Vec::new();
        let mut seen: HashSet<Arc<RowRef>> = HashSet::new();
        let mut repeats = 0;
        let ids: Vec<usize> = {
            let rows = self.rows.read().unwrap_or_else(|p| p.into_inner());
            if rows.is_empty() {
                Vec::new()
            } else {
                drop(rows);
                self.hnsw
                    .search(query, k, k.max(EF_SEARCH))
                    .into_iter()
                    .map(|n| n.d_id)
                    .collect()
            }
        };
        {
            let rows = self.rows.read().unwrap_or_else(|p| p.into_inner());
            for id in ids {
                if let Some(r) = rows.get(id) {
                    if seen.insert(r.clone()) {
                        out.push(r.clone());
                    } else {
                        repeats += 1;
                    }
                }
            }
        }
        let mut waiting: Vec<(f32, Arc<RowRef>)> = self
            .waiting()
            .iter()
            .map(|(r, v)| (self.similarity.distance(query, v), r.clone()))
            .collect();
        waiting.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (_, r) in waiting.into_iter().take(k) {
            if seen.insert(r.clone()) {
                out.push(r);
            }
        }
        (out, repeats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: u32) -> Arc<RowRef> {
        Arc::new(RowRef {
            partition_key: vec![i.to_be_bytes().to_vec()],
            clustering: Vec::new(),
        })
    }

    #[test]
    fn waiting_and_inserted_vectors_are_both_found() {
        let g = PartGraph::new(Similarity::Euclidean);
        for i in 0..50u32 {
            g.push(row(i), vec![i as f32, 0.0]);
        }
        assert_eq!(g.insert_waiting(30), 30);
        assert_eq!(g.backlog(), 20);
        // 10 is in the graph, 40 still waits.
        for target in [10u32, 40] {
            let (found, _) = g.candidates(&[target as f32, 0.1], 1);
            assert!(found.contains(&row(target)), "{target}: {found:?}");
        }
        assert_eq!(g.insert_waiting(100), 20);
        assert_eq!(g.backlog(), 0);
        let (found, _) = g.candidates(&[40.0, 0.1], 3);
        assert_eq!(found[0], row(40));
    }

    #[test]
    fn a_graph_mostly_stale_wears_out() {
        let g = PartGraph::new(Similarity::Euclidean);
        assert!(!g.worn_out(900, 900));
        assert!(!g.worn_out(200, 0));
        assert!(g.worn_out(200, 200));
    }

    #[test]
    fn vectors_a_cosine_graph_cannot_hold_are_skipped() {
        let g = PartGraph::new(Similarity::Cosine);
        g.push(row(1), vec![0.0, 0.0]);
        g.push(row(2), vec![f32::INFINITY, 1.0]);
        g.push(row(3), vec![1.0, 1.0]);
        assert_eq!(g.backlog(), 1);
    }
}
