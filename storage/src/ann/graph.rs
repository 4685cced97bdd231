//! One physical partition's HNSW graph for one vector column: the rows it holds, and the
//! vectors written since, which wait (searched exactly meanwhile) to be inserted.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use super::similarity::Similarity;

/// Links kept per node and layer (HNSW's `M`).
const LINKS: usize = 32;
/// Candidates weighed while inserting (HNSW's `ef_construction`).
const EF_CONSTRUCTION: usize = 256;
/// Candidates weighed while searching (HNSW's `ef`): high, as vectors of many dimensions
/// with little structure (the benchmark's random ones) need it for a recall of 0.95.
pub(crate) const EF_SEARCH: usize = 768;
/// Room the graph first reserves, in vectors (it doubles as it fills).
const FIRST_CAPACITY: usize = 1024;
/// Adds and searches one graph runs at once: the graph library keeps a context for each and
/// fails a call that finds none free, so callers past this many wait for one.
const SLOTS: usize = 8;

/// The row a graph node stands for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RowRef {
    /// Partition-key components, protocol-serialized.
    pub(crate) partition_key: Vec<Vec<u8>>,
    /// Clustering values, protocol-serialized.
    pub(crate) clustering: Vec<Vec<u8>>,
}

/// One of a graph's contexts, held (see [`PartGraph::slot`]).
struct Slot<'a>(&'a PartGraph);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// A vector waiting to be inserted.
type Waiting = (Arc<RowRef>, Vec<f32>);

/// One physical partition's graph for one vector column.
pub(crate) struct PartGraph {
    similarity: Similarity,
    /// The HNSW graph (usearch). Held shared to add and search, which it runs concurrently;
    /// alone to grow its capacity.
    graph: RwLock<Index>,
    /// Node id to row (ids are positions).
    rows: RwLock<Vec<Arc<RowRef>>>,
    /// Free contexts of the graph library (see [`SLOTS`]), and their waiters.
    free: Mutex<usize>,
    freed: Condvar,
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
    /// An empty graph for vectors of `dimension` elements, its build still to come.
    ///
    /// # Errors
    /// The graph library's, as text.
    pub(crate) fn new(similarity: Similarity, dimension: usize) -> Result<PartGraph, String> {
        let metric = match similarity {
            Similarity::Cosine => MetricKind::Cos,
            Similarity::Euclidean => MetricKind::L2sq,
            Similarity::DotProduct => MetricKind::IP,
        };
        let options = IndexOptions {
            dimensions: dimension,
            metric,
            quantization: ScalarKind::F32,
            connectivity: LINKS,
            expansion_add: EF_CONSTRUCTION,
            expansion_search: EF_SEARCH,
            multi: false,
        };
        let graph = Index::new(&options).map_err(|e| e.to_string())?;
        graph
            .reserve_capacity_and_threads(FIRST_CAPACITY, SLOTS)
            .map_err(|e| e.to_string())?;
        Ok(PartGraph {
            similarity,
            graph: RwLock::new(graph),
            free: Mutex::new(SLOTS),
            freed: Condvar::new(),
            rows: RwLock::new(Vec::new()),
            waiting: Mutex::new(VecDeque::new()),
            complete: AtomicBool::new(false),
            served: AtomicU64::new(0),
            stale: AtomicU64::new(0),
        })
    }

    /// Counts `stale` of `served` candidates; true once more than half of a sample of
    /// candidates were stale: the graph is to be built again from the rows (deleted and
    /// overwritten rows leave their nodes behind until then).
    pub(crate) fn worn_out(&self, served: usize, stale: usize) -> bool {
        let s = self.served.fetch_add(served as u64, Ordering::Relaxed) + served as u64;
        let t = self.stale.fetch_add(stale as u64, Ordering::Relaxed) + stale as u64;
        s >= WEAR_SAMPLE && t * 2 > s
    }

    /// Takes one of the graph library's contexts until the guard drops.
    fn slot(&self) -> Slot<'_> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        Slot(self)
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
        {
            let graph = self.graph.read().unwrap_or_else(|p| p.into_inner());
            let (size, capacity) = (graph.size(), graph.capacity());
            if size + batch.len() > capacity {
                drop(graph);
                let graph = self.graph.write().unwrap_or_else(|p| p.into_inner());
                let wanted = (capacity * 2).max(size + batch.len());
                if let Err(e) = graph.reserve_capacity_and_threads(wanted, SLOTS) {
                    tracing::warn!("growing a vector graph to {wanted}: {e}");
                    return 0;
                }
            }
        }
        // One by one on the caller's (lowered) thread: a parallel insert would take the
        // request threads' cores.
        let graph = self.graph.read().unwrap_or_else(|p| p.into_inner());
        for (i, (_, v)) in batch.iter().enumerate() {
            let _slot = self.slot();
            if let Err(e) = graph.add((first + i) as u64, v) {
                tracing::warn!("adding to a vector graph: {e}");
            }
        }
        drop(graph);
        self.waiting().drain(..batch.len());
        batch.len()
    }

    /// The rows whose vectors are nearest `query`, nearest first, each with the distance of
    /// the vector the graph holds ([`Similarity::distance`]): `k` from the graph, searched
    /// with [`EF_SEARCH`] candidates, and the `k` nearest of the waiting vectors; a row
    /// twice keeps its nearer entry. Returns them and how many repeats were dropped. Some
    /// may be stale (the caller reads each row again).
    pub(crate) fn candidates(&self, query: &[f32], k: usize) -> (Vec<(f32, Arc<RowRef>)>, usize) {
        let found: (Vec<u64>, Vec<f32>) = {
            let graph = self.graph.read().unwrap_or_else(|p| p.into_inner());
            if graph.size() == 0 {
                (Vec::new(), Vec::new())
            } else {
                let _slot = self.slot();
                match graph.search(query, k) {
                    Ok(found) => (found.keys, found.distances),
                    Err(e) => {
                        tracing::warn!("searching a vector graph: {e}");
                        (Vec::new(), Vec::new())
                    }
                }
            }
        };
        let mut all: Vec<(f32, Arc<RowRef>)> = Vec::new();
        {
            let rows = self.rows.read().unwrap_or_else(|p| p.into_inner());
            for (id, d) in found.0.into_iter().zip(found.1) {
                if let Some(r) = usize::try_from(id).ok().and_then(|i| rows.get(i)) {
                    all.push((d, r.clone()));
                }
            }
        }
        let mut waiting: Vec<(f32, Arc<RowRef>)> = self
            .waiting()
            .iter()
            .map(|(r, v)| (self.similarity.distance(query, v), r.clone()))
            .collect();
        waiting.sort_by(|a, b| a.0.total_cmp(&b.0));
        all.extend(waiting.into_iter().take(k));
        all.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut seen: HashSet<Arc<RowRef>> = HashSet::new();
        let before = all.len();
        all.retain(|(_, r)| seen.insert(r.clone()));
        let repeats = before - all.len();
        (all, repeats)
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
        let g = PartGraph::new(Similarity::Euclidean, 2).expect("graph");
        for i in 0..50u32 {
            g.push(row(i), vec![i as f32, 0.0]);
        }
        assert_eq!(g.insert_waiting(30), 30);
        assert_eq!(g.backlog(), 20);
        // 10 is in the graph, 40 still waits.
        for target in [10u32, 40] {
            let (found, _) = g.candidates(&[target as f32, 0.1], 1);
            assert!(
                found.iter().any(|(_, r)| *r == row(target)),
                "{target}: {found:?}"
            );
        }
        assert_eq!(g.insert_waiting(100), 20);
        assert_eq!(g.backlog(), 0);
        let (found, _) = g.candidates(&[40.0, 0.1], 3);
        assert_eq!(found[0].1, row(40));
        assert!(found.windows(2).all(|w| w[0].0 <= w[1].0), "nearest first");
    }

    #[test]
    fn many_threads_search_while_one_inserts() {
        // More searchers than the graph library has contexts: they wait for one, never fail.
        let g = Arc::new(PartGraph::new(Similarity::Euclidean, 2).expect("graph"));
        for i in 0..100u32 {
            g.push(row(i), vec![i as f32, 1.0]);
        }
        assert_eq!(g.insert_waiting(100), 100);
        for i in 100..3000u32 {
            g.push(row(i), vec![i as f32, 1.0]);
        }
        let searchers: Vec<_> = (0..SLOTS * 2)
            .map(|t| {
                let g = g.clone();
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let (found, _) = g.candidates(&[t as f32, 1.0], 1);
                        assert_eq!(found.first().map(|f| &f.1), Some(&row(t as u32)));
                    }
                })
            })
            .collect();
        while g.insert_waiting(64) > 0 {}
        for s in searchers {
            s.join().expect("searcher");
        }
    }

    #[test]
    fn the_graph_measures_distances_as_similarity_does() {
        // Queries tell a row written again from the graph's entry by comparing the two.
        let mut rng = 7u32;
        let mut next = || {
            rng = rng.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (rng >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
        };
        for s in [
            Similarity::Cosine,
            Similarity::Euclidean,
            Similarity::DotProduct,
        ] {
            let g = PartGraph::new(s, 16).expect("graph");
            let vectors: Vec<Vec<f32>> =
                (0..64).map(|_| (0..16).map(|_| next()).collect()).collect();
            for (i, v) in vectors.iter().enumerate() {
                g.push(row(i as u32), v.clone());
            }
            g.insert_waiting(64);
            let q: Vec<f32> = (0..16).map(|_| next()).collect();
            let (found, _) = g.candidates(&q, 10);
            assert!(!found.is_empty());
            for (d, r) in found {
                let i = u32::from_be_bytes(r.partition_key[0][..4].try_into().expect("key"));
                let want = s.distance(&q, &vectors[i as usize]);
                assert!(
                    (d - want).abs() <= 1e-4 * (1.0 + want.abs()),
                    "{s:?}: {d} vs {want}"
                );
            }
        }
    }

    #[test]
    fn a_graph_mostly_stale_wears_out() {
        let g = PartGraph::new(Similarity::Euclidean, 2).expect("graph");
        // Too few candidates served to judge; then more than half of them stale.
        assert!(!g.worn_out(999, 999));
        assert!(g.worn_out(1, 1));
        let fresh = PartGraph::new(Similarity::Euclidean, 2).expect("graph");
        assert!(!fresh.worn_out(1000, 400));
    }

    #[test]
    fn vectors_a_cosine_graph_cannot_hold_are_skipped() {
        let g = PartGraph::new(Similarity::Cosine, 2).expect("graph");
        g.push(row(1), vec![0.0, 0.0]);
        g.push(row(2), vec![f32::INFINITY, 1.0]);
        g.push(row(3), vec![1.0, 1.0]);
        assert_eq!(g.backlog(), 1);
    }
}
