//! Index builds: the thread that builds new secondary indexes from stored rows, at the store's
//! background priority, and the entries of an imported range.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::entry::{index_base, partition_entries, Indexer};
use super::{IndexSpec, IndexState};
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
        // Every writer that read the index list before this index was in it has committed
        // once every stripe was free: the scans below see its rows.
        drop(self.inner.stripes.lock(u64::MAX));
        let specs = [state.spec.clone()];
        let Some(rows) = self.write_entries(table_id, &specs, TokenRange::FULL, Some(signal))?
        else {
            return Ok(0);
        };
        self.inner.indexes.built(table_id, state)?;
        Ok(rows)
    }

    /// Writes the entries of every index of `table_id` for the rows of `(start, end]` (a
    /// range just imported, whose items came without entries).
    ///
    /// # Errors
    /// As [`Storage::scan`], or a fjall error.
    pub(crate) fn index_range(
        &self,
        table_id: TableId,
        start: i64,
        end: i64,
    ) -> Result<(), StorageError> {
        let Some(states) = self.inner.indexes.of(table_id) else {
            return Ok(());
        };
        let specs: Vec<_> = states.iter().map(|s| s.spec.clone()).collect();
        let range = TokenRange { start, end };
        self.write_entries(table_id, &specs, range, None)
            .map(|_| ())
    }

    /// Writes the entries of `specs` for every stored row of `range`, a page of rows per
    /// batch. Returns the rows scanned, or None when `signal` stopped it first.
    fn write_entries(
        &self,
        table_id: TableId,
        specs: &[IndexSpec],
        range: TokenRange,
        signal: Option<&Signal>,
    ) -> Result<Option<u64>, StorageError> {
        let table = self.table(table_id)?;
        let indexers: Vec<_> = specs
            .iter()
            .filter_map(|s| Some((Indexer::new(s, &table.layout)?, index_base(table_id, s))))
            .collect();
        let (mut cursor, mut rows) = (None, 0u64);
        loop {
            if signal.is_some_and(Signal::stopped) {
                return Ok(None);
            }
            let page = self.scan(table_id, range, SCAN_PAGE, cursor.as_ref())?;
            let mut keys = Vec::new();
            for p in &page.partitions {
                rows += p.rows.len().max(1) as u64;
                let addr = address(&table.layout, &p.partition_key)?;
                for (indexer, base) in &indexers {
                    partition_entries(indexer, &table.layout, base, &addr.prefix, p, &mut keys)?;
                }
            }
            if !keys.is_empty() {
                let mut batch = self.inner.db.batch();
                for k in keys {
                    batch.insert(&self.inner.indexes.ks, k, []);
                }
                batch.commit()?;
            }
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(Some(rows)),
            }
        }
    }
}
