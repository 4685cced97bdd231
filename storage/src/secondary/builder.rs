//! The thread that builds secondary indexes from stored rows (a new index, or every index of
//! a table that took in a moved range), at the store's background priority.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::entry::{index_base, partition_entries, Indexer};
use super::IndexState;
use crate::engine::{Inner, Storage};
use crate::partition_address::address;
use crate::scan_page::TokenRange;
use crate::worker::{Activity, Next, Signal};
use crate::{StorageError, TableId};

/// Rows per page of a build's scan (their entries go in one batch).
const SCAN_PAGE: usize = 1000;
/// How long an idle builder sleeps (it is woken when an index needs a build).
const IDLE: Duration = Duration::from_secs(5);
/// The pause after a build failed.
const RETRY_BUILD: Duration = Duration::from_secs(30);

/// The builder: holds the store weakly, so it never keeps it open.
pub(crate) struct IndexBuilder {
    inner: Weak<Inner>,
}

impl IndexBuilder {
    /// A builder for the store `inner`.
    pub(crate) fn new(inner: Weak<Inner>) -> IndexBuilder {
        IndexBuilder { inner }
    }
}

impl Activity for IndexBuilder {
    fn name(&self) -> String {
        "ringdb-index".into()
    }

    fn first(&self) -> Next {
        Next::Now
    }

    fn step(&mut self, signal: &Signal) -> Next {
        let Some(inner) = self.inner.upgrade() else {
            return Next::Done;
        };
        let storage = Storage { inner };
        let Some((table, state)) = storage.inner.indexes.next_build() else {
            return Next::After(IDLE);
        };
        match storage.build_index(table, &state, signal) {
            Ok(rows) => {
                tracing::info!(table = %table, column = state.spec.column, rows, "secondary index built");
                Next::Now
            }
            Err(e) => {
                tracing::warn!(table = %table, column = state.spec.column, "building a secondary index failed: {e}");
                Next::After(RETRY_BUILD)
            }
        }
    }
}

impl Storage {
    /// Writes the entries of every stored row for one index, then marks it ready (unless it
    /// was dropped or invalidated meanwhile). Returns the rows scanned.
    fn build_index(
        &self,
        table_id: TableId,
        state: &Arc<IndexState>,
        signal: &Signal,
    ) -> Result<u64, StorageError> {
        let generation = state.generation.load(Ordering::Acquire);
        // Every writer that read the index list before this index was in it has committed
        // once every stripe was free: the scans below see its rows.
        drop(self.inner.stripes.lock(u64::MAX));
        let table = self.table(table_id)?;
        let base = index_base(table_id, &state.spec);
        let (mut cursor, mut rows) = (None, 0u64);
        if let Some(indexer) = Indexer::new(&state.spec, &table.layout) {
            loop {
                if signal.stopped() {
                    return Ok(rows);
                }
                let page = self.scan(table_id, TokenRange::FULL, SCAN_PAGE, cursor.as_ref())?;
                let mut keys = Vec::new();
                for p in &page.partitions {
                    rows += p.rows.len().max(1) as u64;
                    let addr = address(&table.layout, &p.partition_key)?;
                    partition_entries(&indexer, &table.layout, &base, &addr.prefix, p, &mut keys)?;
                }
                if !keys.is_empty() {
                    let mut batch = self.inner.durability.batch();
                    for k in keys {
                        batch.insert(&self.inner.indexes.ks, k, []);
                    }
                    batch.commit()?;
                }
                match page.cursor {
                    Some(c) => cursor = Some(c),
                    None => break,
                }
            }
        }
        self.inner.indexes.built(table_id, state, generation)?;
        Ok(rows)
    }
}
