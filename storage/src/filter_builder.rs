//! The partition filter builder: the background activity that fills the
//! [`crate::partition_filter::PartitionFilter`] of a table opened from disk with every
//! partition it stores, so writes to new partitions can skip their lookups (see the filter's
//! module docs for why a build and concurrent writes never miss a partition).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use fjall::{Database, Readable};

use crate::blocked_bloom::KeyBits;
use crate::counting::PartitionCounter;
use crate::error::StorageError;
use crate::ring::TableRing;
use crate::table::TableId;
use crate::worker::{Activity, Next, Signal};

/// Keys scanned between checks for a cancelled build or a stopping storage.
const CHECK_EVERY: usize = 4096;

/// How a build ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Build {
    /// Every stored partition was added and the filter marked complete.
    Complete,
    /// Drop or truncate asked the table's background work to stop, or the storage stopped.
    Stopped,
}

/// Adds every partition `ring` stores to its partition filter, from one snapshot, holding the
/// table's `split_lock`; marks the filter complete unless `stop` says to give up (checked
/// every few thousand keys, and the table's cancel flag with it: drop and truncate).
pub(crate) fn build(
    db: &Database,
    ring: &TableRing,
    stop: &dyn Fn() -> bool,
) -> Result<Build, StorageError> {
    let _split = ring.split_lock.lock().unwrap_or_else(|p| p.into_inner());
    if ring.filter.is_complete() {
        return Ok(Build::Complete);
    }
    let snapshot = db.snapshot();
    let mut scanned = 0usize;
    for part in &ring.current().parts {
        let mut partitions = PartitionCounter::default();
        for guard in snapshot.iter(&part.keyspace) {
            let key = guard.key()?;
            if partitions.see(&key)? {
                let size_key = crate::key::size_cell_key(partitions.prefix());
                ring.filter.add(KeyBits::of(&size_key));
            }
            scanned += 1;
            if scanned % CHECK_EVERY == 0 && (stop() || ring.cancel.load(Ordering::SeqCst)) {
                return Ok(Build::Stopped);
            }
        }
    }
    ring.filter.mark_complete();
    Ok(Build::Complete)
}

/// The activity building one table's filter (one step, then done).
pub(crate) struct FilterBuilder {
    db: Database,
    table: TableId,
    ring: Arc<TableRing>,
}

impl FilterBuilder {
    /// Builds the filter of `ring`, table `table`'s, from `db`.
    pub(crate) fn new(db: Database, table: TableId, ring: Arc<TableRing>) -> FilterBuilder {
        FilterBuilder { db, table, ring }
    }
}

impl Activity for FilterBuilder {
    fn name(&self) -> String {
        "storage-filter".into()
    }

    fn step(&mut self, signal: &Signal) -> Next {
        let (table, ring) = (self.table, &self.ring);
        let started = Instant::now();
        match build(&self.db, ring, &|| signal.stopped()) {
            Ok(Build::Complete) => tracing::info!(
                %table,
                seconds = started.elapsed().as_secs_f64(),
                filter_bytes = ring.filter.memory_bytes(),
                "partition filter built"
            ),
            Ok(Build::Stopped) => tracing::debug!(%table, "partition filter build stopped"),
            Err(e) => tracing::warn!(
                %table,
                error = %e,
                "partition filter build failed; writes keep looking partitions up"
            ),
        }
        Next::Done
    }
}
