//! Vector search (Cassandra 5.0's `ORDER BY v ANN OF [...]`): an HNSW graph per physical
//! partition and vector-indexed column, kept in step with writes.
//!
//! # Design
//! - **Derived, in memory.** A graph is built from the physical partition's stored rows by
//!   the `ann` worker thread and rebuilt after a restart, a truncate or a moved-in range; the
//!   rows on disk stay the only truth. Each graph lives with its physical partition: a split
//!   leaves the old one behind and its halves get graphs of their own.
//! - **Writes** push a written vector onto its partition graph's waiting list after the
//!   batch commits (no graph work on the request thread); the worker inserts them. Waiting
//!   vectors are searched exactly, so a write is found at once.
//! - **Builds** register the graph first, then scan: a row written before registration is in
//!   the scan, one written after is pushed by its writer (some rows come twice; queries drop
//!   repeats). Until the scan is done the graph is incomplete, and queries read that physical
//!   partition exactly.
//! - **Queries** ([`crate::Storage::nearest`]) never trust a graph node: the candidates of
//!   all physical partitions, nearest first, are read again until k are live and scored on
//!   their stored vectors, so deleted, overwritten and expired rows never come back.

mod graph;
mod nearest;
mod similarity;
mod worker;

pub use nearest::NearestRow;
pub use similarity::{decode_vector, Similarity, VectorIndexSpec};

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::mutation::{ColumnOp, Mutation};
use crate::table::{TableId, TableLayout};
use crate::worker::Signal;
use graph::{PartGraph, RowRef};
pub(crate) use worker::AnnWorker;

/// Which graph: a table's vector column in one physical partition.
type GraphKey = (TableId, u32, u64);

/// Every graph of the store, and the builds to run.
#[derive(Default)]
pub(crate) struct AnnIndexes {
    state: Mutex<State>,
    /// Wakes the worker (a build queued, vectors waiting).
    pub(crate) signal: Signal,
}

#[derive(Default)]
struct State {
    graphs: HashMap<GraphKey, Arc<PartGraph>>,
    builds: VecDeque<GraphKey>,
}

impl AnnIndexes {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The graph of `spec`'s column in partition `part`, registered (and its build queued)
    /// when there was none; None when the graph library refuses to make one (queries then
    /// read the partition exactly).
    pub(crate) fn ensure(
        &self,
        table: TableId,
        spec: &VectorIndexSpec,
        part: u64,
    ) -> Option<Arc<PartGraph>> {
        let key = (table, spec.column, part);
        let mut state = self.state();
        if let Some(g) = state.graphs.get(&key) {
            return Some(g.clone());
        }
        let g = match PartGraph::new(spec.similarity, spec.dimension) {
            Ok(g) => Arc::new(g),
            Err(e) => {
                tracing::warn!(table = %table, part, "making a vector graph: {e}");
                return None;
            }
        };
        state.graphs.insert(key, g.clone());
        state.builds.push_back(key);
        drop(state);
        self.signal.wake();
        Some(g)
    }

    /// The graph of `column` in `part`, if registered.
    fn graph(&self, table: TableId, column: u32, part: u64) -> Option<Arc<PartGraph>> {
        self.state().graphs.get(&(table, column, part)).cloned()
    }

    /// Forgets every graph of `table` (dropped, truncated, a range moved in or out, its
    /// indexes changed): the next query or [`AnnIndexes::ensure`] builds them again.
    pub(crate) fn forget_table(&self, table: TableId) {
        let mut state = self.state();
        state.graphs.retain(|k, _| k.0 != table);
        state.builds.retain(|k| k.0 != table);
    }

    /// Forgets one graph (worn out): the next query builds it again.
    pub(crate) fn forget(&self, key: GraphKey) {
        self.state().graphs.remove(&key);
    }

    /// Forgets `table`'s graphs of partitions other than `parts` (split away).
    pub(crate) fn retain_parts(&self, table: TableId, parts: &[u64]) {
        let mut state = self.state();
        state
            .graphs
            .retain(|k, _| k.0 != table || parts.contains(&k.2));
        state
            .builds
            .retain(|k| k.0 != table || parts.contains(&k.2));
    }

    /// Takes the next build to run.
    fn next_build(&self) -> Option<(GraphKey, Arc<PartGraph>)> {
        let mut state = self.state();
        while let Some(key) = state.builds.pop_front() {
            if let Some(g) = state.graphs.get(&key) {
                return Some((key, g.clone()));
            }
        }
        None
    }

    /// Every registered graph.
    fn all(&self) -> Vec<Arc<PartGraph>> {
        self.state().graphs.values().cloned().collect()
    }

    /// Vectors waiting to be inserted, plus a graph's worth for each build not done: zero
    /// once every graph is built and caught up.
    pub(crate) fn backlog(&self) -> u64 {
        let state = self.state();
        state
            .graphs
            .values()
            .map(|g| g.backlog() as u64 + u64::from(!g.is_complete()))
            .sum()
    }

    /// After a committed write of `mutation` to `table` in physical partitions `parts`:
    /// pushes the vectors it set onto those partitions' graphs.
    pub(crate) fn written(
        &self,
        table: TableId,
        layout: &TableLayout,
        parts: &[u64],
        mutation: &Mutation,
    ) {
        let mut pushed = false;
        for spec in &layout.vector_indexes {
            for row in &mutation.rows {
                for c in row.columns.iter().filter(|c| c.column == spec.column) {
                    let ColumnOp::Set { value, .. } = &c.op else {
                        continue;
                    };
                    let Some(vector) = decode_vector(value, spec.dimension) else {
                        continue;
                    };
                    let row_ref = Arc::new(RowRef {
                        partition_key: mutation.partition_key.clone(),
                        clustering: row.clustering.clone(),
                    });
                    for part in parts {
                        if let Some(g) = self.graph(table, spec.column, *part) {
                            g.push(row_ref.clone(), vector.clone());
                            pushed = true;
                        }
                    }
                }
            }
        }
        if pushed {
            self.signal.wake();
        }
    }
}
