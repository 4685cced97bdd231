//! The thread that builds vector graphs from stored rows and inserts written vectors, at the
//! store's background priority.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::graph::{PartGraph, RowRef};
use super::nearest::part_range;
use super::{decode_vector, GraphKey};
use crate::engine::{Inner, Storage};
use crate::row::ColumnValue;
use crate::worker::{Activity, Next, Signal};
use crate::StorageError;

/// Vectors inserted per graph before the worker looks at the others (and at a stop).
const INSERT_BATCH: usize = 256;
/// Rows per page of a build's scan.
const SCAN_PAGE: usize = 1000;
/// How long an idle worker sleeps before it looks for new physical partitions.
const IDLE: Duration = Duration::from_secs(1);
/// The pause after a build failed.
const RETRY_BUILD: Duration = Duration::from_secs(30);

/// The worker: holds the store weakly, so it never keeps it open.
pub(crate) struct AnnWorker {
    inner: Weak<Inner>,
}

impl AnnWorker {
    /// A worker for the store `inner`.
    pub(crate) fn new(inner: Weak<Inner>) -> AnnWorker {
        AnnWorker { inner }
    }
}

impl Activity for AnnWorker {
    fn name(&self) -> String {
        "ringdb-ann".into()
    }

    fn first(&self) -> Next {
        Next::After(Duration::from_secs(1))
    }

    fn step(&mut self, signal: &Signal) -> Next {
        let Some(inner) = self.inner.upgrade() else {
            return Next::Done;
        };
        let storage = Storage { inner };
        storage.follow_splits();
        if let Some((key, graph)) = storage.inner.ann.next_build() {
            match storage.build_graph(key, &graph, signal) {
                Ok(rows) => {
                    tracing::debug!(table = %key.0, part = key.2, rows, "vector graph scanned")
                }
                Err(e) => {
                    // Queries read the partition exactly meanwhile; the next try comes after
                    // a pause (the graphs are registered again by `follow_splits`).
                    tracing::warn!(table = %key.0, part = key.2, "building a vector graph failed: {e}");
                    storage.inner.ann.forget_table(key.0);
                    return Next::After(RETRY_BUILD);
                }
            }
            return Next::Now;
        }
        let mut inserted = 0;
        for g in storage.inner.ann.all() {
            if signal.stopped() {
                break;
            }
            inserted += g.insert_waiting(INSERT_BATCH);
        }
        if inserted > 0 {
            Next::Now
        } else {
            Next::After(IDLE)
        }
    }
}

impl Storage {
    /// Gives every physical partition of every vector-indexed table its graphs, and forgets
    /// those of partitions gone: a split's halves get theirs built without waiting for a
    /// query.
    fn follow_splits(&self) {
        for table in self.inner.tables.all() {
            if table.layout.vector_indexes.is_empty() {
                continue;
            }
            let view = table.ring.current();
            let ids: Vec<u64> = view.parts.iter().map(|p| p.id).collect();
            self.inner.ann.retain_parts(table.id, &ids);
            for spec in &table.layout.vector_indexes {
                for id in &ids {
                    self.inner.ann.ensure(table.id, spec, *id);
                }
            }
        }
    }

    /// Pushes every stored vector of the graph's column and partition onto it, then marks it
    /// complete. Returns the rows pushed.
    fn build_graph(
        &self,
        (table_id, column, part): GraphKey,
        graph: &PartGraph,
        signal: &Signal,
    ) -> Result<usize, StorageError> {
        let table = self.table(table_id)?;
        let Some(spec) = table
            .layout
            .vector_indexes
            .iter()
            .find(|s| s.column == column)
            .copied()
        else {
            return Ok(0);
        };
        let view = table.ring.current();
        let Some(index) = view.position(part) else {
            return Ok(0);
        };
        let range = part_range(&view, index);
        drop(view);
        let (mut cursor, mut pushed) = (None, 0);
        loop {
            if signal.stopped() {
                return Ok(pushed);
            }
            let page = self.scan(table_id, range, SCAN_PAGE, cursor.as_ref())?;
            for p in page.partitions {
                for row in p.rows {
                    let Some(ColumnValue::Simple(cell)) = row.cells.get(&column) else {
                        continue;
                    };
                    if let Some(v) = decode_vector(&cell.value, spec.dimension) {
                        let r = RowRef {
                            partition_key: p.partition_key.clone(),
                            clustering: row.clustering,
                        };
                        graph.push(Arc::new(r), v);
                        pushed += 1;
                    }
                }
            }
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        graph.mark_complete();
        Ok(pushed)
    }
}
