//! Table administration on [`Storage`]: create (or reopen), drop and truncate tables; split,
//! flush and compact them on demand; inspect them (sizes, physical partitions, sorted runs,
//! write stalls).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::engine::Storage;
use crate::filter_builder::FilterBuilder;
use crate::idle_compaction::{compact, runs};
use crate::item_cache;
use crate::open_tables::Table;
use crate::physical::{clear_range, delete_keyspace};
use crate::ring_recovery::open_ring;
use crate::routing_map::token_key_bounds;
use crate::table_info::PartitionOf;
use crate::table_info::{PhysicalPartitionInfo, SizeEstimate, TableStats};
use crate::token::{MAX_TOKEN, MIN_TOKEN};
use crate::{StorageError, TableId, TableLayout};

/// Sealed memtables at which a write is treated as stalling (fjall halts writers at 4).
const STALL_SEALED_MEMTABLES: usize = 3;
/// L0 tables at which a write is treated as stalling (fjall slows writers from 20).
const STALL_L0_TABLES: usize = 16;

impl Storage {
    /// Creates a table, or opens it (after a restart, or to update its layout). Idempotent.
    /// Opening loads the table's routing map and finishes or rolls back a split that a crash
    /// interrupted.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] when a keyspace cannot be created, [`StorageError::Corrupt`]
    /// for an unreadable routing map.
    pub fn create_table(&self, id: TableId, layout: TableLayout) -> Result<(), StorageError> {
        let existing = self.table(id).ok();
        let ring = match &existing {
            Some(t) => t.ring.clone(),
            None => {
                let ring = Arc::new(open_ring(&self.inner.rings, id)?);
                if !ring.filter.is_complete() {
                    let builder = FilterBuilder::new(self.inner.db.clone(), id, ring.clone());
                    self.inner.workers.start(builder)?;
                }
                ring
            }
        };
        self.inner.gc.register(id, &layout);
        let vectors = layout.vector_indexes.clone();
        if existing.is_some_and(|t| t.layout.vector_indexes != vectors) {
            self.inner.ann.forget_table(id);
        }
        self.inner.tables.insert(Table {
            id,
            layout,
            ring: ring.clone(),
        });
        // After the table is open: a build may start at once.
        self.inner.indexes.set(id, &self.table(id)?.layout)?;
        for p in &ring.current().parts {
            self.inner.splitter.maybe_queue(id, p);
            for spec in &vectors {
                self.inner.ann.ensure(id, spec, p.id);
            }
        }
        Ok(())
    }

    /// Drops a table and all its data (a running split of it is rolled back first).
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], or [`StorageError::Fjall`] on I/O failure.
    pub fn drop_table(&self, id: TableId) -> Result<(), StorageError> {
        let table = self.table(id)?;
        table.ring.cancel.store(true, Ordering::SeqCst);
        let _split = table
            .ring
            .split_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        self.inner.tables.remove(id);
        self.inner.gc.unregister(id);
        self.inner.ann.forget_table(id);
        self.inner.indexes.forget_table(id)?;
        let view = table.ring.current();
        let cached: Vec<u64> = view
            .parts
            .iter()
            .map(|p| p.cache_id.load(Ordering::Relaxed))
            .collect();
        self.inner.item_cache.forget_partitions(&cached);
        for p in &view.parts {
            self.inner.db.delete_keyspace(p.keyspace.clone())?;
        }
        for name in self.inner.db.list_keyspace_names() {
            if let Some((t, pid)) = crate::names::parse_keyspace_name(&name) {
                if t == id {
                    delete_keyspace(&self.inner.db, id, pid)?;
                }
            }
        }
        self.inner.rings.forget(id)?;
        self.after_write()
    }

    /// Removes every row of a table (the table and its physical partitions stay).
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], or [`StorageError::Fjall`] on I/O failure.
    pub fn truncate(&self, id: TableId) -> Result<(), StorageError> {
        self.truncate_range(id, MIN_TOKEN, MAX_TOKEN)
    }

    /// Removes every row of a table whose token is in `(start, end]` (a cluster truncates
    /// group by group). Physical partitions wholly inside are cleared; others lose the range's
    /// keys, and their size counters the keys' bytes and logical partitions.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], or [`StorageError::Fjall`] on I/O failure.
    pub fn truncate_range(&self, id: TableId, start: i64, end: i64) -> Result<(), StorageError> {
        self.clear_token_range(id, start, end, true).map(|_| ())
    }

    /// Removes every row of a table whose token is in `(start, end]` that nothing writes any
    /// more (a cluster replica that moved away): as [`Storage::truncate_range`], but other
    /// writes of the store go on meanwhile (it holds no write-lock stripe while it deletes).
    /// Returns the bytes (keys and values) removed.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], or [`StorageError::Fjall`] on I/O failure.
    pub fn drop_range(&self, id: TableId, start: i64, end: i64) -> Result<u64, StorageError> {
        self.clear_token_range(id, start, end, false)
    }

    fn clear_token_range(
        &self,
        id: TableId,
        start: i64,
        end: i64,
        fence_writes: bool,
    ) -> Result<u64, StorageError> {
        let table = self.table(id)?;
        table.ring.cancel.store(true, Ordering::SeqCst);
        let _split = table
            .ring
            .split_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        table.ring.cancel.store(false, Ordering::SeqCst);
        let all = fence_writes.then(|| self.inner.stripes.lock(u64::MAX));
        let mut retired = Vec::new();
        let mut cleared = Ok(());
        let mut removed = 0u64;
        let view = table.ring.current();
        for (i, p) in view.parts.iter().enumerate() {
            let (p_start, p_end) = (view.map.start(i), view.map.ranges[i].end);
            if p_end <= start || p_start >= end {
                continue;
            }
            // Before the clear: a clear that fails part-way leaves no entry in use.
            retired.push(p.cache_id.swap(item_cache::fresh_id(), Ordering::Relaxed));
            if start <= p_start && p_end <= end {
                if let Err(e) = p.keyspace.clear() {
                    cleared = Err(e.into());
                    break;
                }
                removed += p.bytes();
                p.bytes.store(0, Ordering::Relaxed);
                p.partitions.store(0, Ordering::Relaxed);
                p.largest.store(0, Ordering::Relaxed);
                p.set_oversized(false);
            } else {
                let (lo, hi) = token_key_bounds(p_start.max(start), p_end.min(end));
                match clear_range(&self.inner.db, &p.keyspace, &lo, hi.as_deref()) {
                    Ok((bytes, partitions)) => {
                        p.account(-(bytes as i64), -(partitions as i64));
                        removed += bytes;
                    }
                    Err(e) => {
                        cleared = Err(e);
                        break;
                    }
                }
            }
        }
        if cleared.is_ok() && fence_writes && start == MIN_TOKEN && end == MAX_TOKEN {
            // Every stripe is held over an empty table: an interrupted filter build is moot.
            table.ring.filter.mark_complete();
            // No row is left for an entry to name.
            if let Err(e) = self.inner.indexes.clear(id) {
                cleared = Err(e);
            }
        }
        drop(all);
        // No lookup reaches the retired ids' entries any more; the scan runs without stripes.
        self.inner.item_cache.forget_partitions(&retired);
        // The graphs still hold the cleared rows' vectors: built again on the next query.
        self.inner.ann.forget_table(id);
        cleared?;
        self.after_write()?;
        Ok(removed)
    }

    /// Size statistics of a table (summed over its physical partitions).
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`].
    pub fn table_stats(&self, id: TableId) -> Result<TableStats, StorageError> {
        let view = self.table(id)?.ring.current();
        let mut stats = TableStats {
            physical_partitions: view.parts.len() as u64,
            ..TableStats::default()
        };
        for p in &view.parts {
            stats.approximate_items += p.keyspace.approximate_len() as u64;
            stats.disk_bytes += p.keyspace.disk_space();
            stats.bytes += p.bytes();
            stats.partitions += p.partitions();
        }
        Ok(stats)
    }

    /// True while a write to `table` would stall inside fjall: a physical partition has a
    /// backlog of sealed memtables waiting for flush, or of L0 tables waiting for compaction
    /// (fjall then sleeps in the writer). Callers use it to keep such writes off threads that
    /// must not sleep.
    ///
    /// The answer is kept for the coarse clock's current millisecond: asking fjall's trees
    /// took 6% of a write's server CPU when every write asked.
    pub fn write_stalled(&self, table: TableId) -> bool {
        let Ok(t) = self.table(table) else {
            return false;
        };
        let now = crate::disk::coarse_ms();
        let kept = t.ring.stall_seen.load(Ordering::Relaxed);
        if kept >> 1 == now {
            return kept & 1 == 1;
        }
        let stalled = t.ring.current().parts.iter().any(|p| {
            p.keyspace.sealed_memtable_count() >= STALL_SEALED_MEMTABLES
                || p.keyspace.l0_table_count() >= STALL_L0_TABLES
        });
        t.ring
            .stall_seen
            .store(now << 1 | u64::from(stalled), Ordering::Relaxed);
        stalled
    }

    /// The physical partitions of a table in token order, with sizes and states.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`].
    pub fn physical_partitions(
        &self,
        table: TableId,
    ) -> Result<Vec<PhysicalPartitionInfo>, StorageError> {
        let ring = &self.table(table)?.ring;
        let view = ring.current();
        let max = self.inner.limits.physical_partition_max_bytes;
        Ok(PhysicalPartitionInfo::of_view(
            &view,
            max,
            ring.split_progress(),
        ))
    }

    /// The physical partition of `table` that holds `token`: its id, its token range
    /// `(start, end]`, and how many partitions the table has. Cheap (no copy of the ring).
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`].
    pub fn partition_of(&self, table: TableId, token: i64) -> Result<PartitionOf, StorageError> {
        let view = self.table(table)?.ring.current();
        let i = view.map.index(token);
        Ok(PartitionOf {
            id: view.parts[i].id,
            start: view.map.start(i),
            end: view.map.ranges[i].end,
            count: view.parts.len(),
        })
    }

    /// Size estimates per token range (one per physical partition), from the live counters.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`].
    pub fn size_estimates(&self, table: TableId) -> Result<Vec<SizeEstimate>, StorageError> {
        Ok(self
            .physical_partitions(table)?
            .into_iter()
            .map(SizeEstimate::from)
            .collect())
    }

    /// Every table created (or reopened) through [`Storage::create_table`], by id.
    pub fn list_tables(&self) -> Vec<TableId> {
        let mut ids: Vec<TableId> = self.inner.tables.all().iter().map(|t| t.id).collect();
        ids.sort();
        ids
    }

    /// Blocks until no split is queued or running (splits started by the splits it waited
    /// for included).
    pub fn wait_for_splits(&self) {
        self.inner.splitter.queue.wait_idle();
    }

    /// Splits the table's largest physical partition now, in the calling thread, whatever its
    /// size. Returns `false` when it holds fewer than two distinct tokens (nothing to split).
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`]; [`StorageError::Fjall`] on I/O failure (the split is
    /// rolled back).
    pub fn split_now(&self, table: TableId) -> Result<bool, StorageError> {
        self.inner.splitter.split_now(table)
    }

    /// Splits the physical partition holding token `at` so that one of them ends at `at`, in
    /// the calling thread (a cluster keeps its physical partitions where its groups end).
    /// Returns `false` when a partition already ends there.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`]; [`StorageError::Fjall`] on I/O failure (the split is
    /// rolled back).
    pub fn split_at(&self, table: TableId, at: i64) -> Result<bool, StorageError> {
        self.inner.splitter.split_at(table, at)
    }

    /// Flushes and compacts every physical partition of `table` into one sorted run now,
    /// whatever its size (what the idle thread does to small idle trees). Returns the runs
    /// left per physical partition (1 for a non-empty tree).
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], or [`StorageError::Fjall`] on I/O failure.
    pub fn compact_table(&self, table: TableId) -> Result<Vec<usize>, StorageError> {
        self.compact_table_each(table, &mut |_| {})
    }

    /// As [`Storage::compact_table`], calling `done` with each physical partition's index
    /// once it is compacted.
    ///
    /// # Errors
    /// As [`Storage::compact_table`].
    pub fn compact_table_each(
        &self,
        table: TableId,
        done: &mut dyn FnMut(usize),
    ) -> Result<Vec<usize>, StorageError> {
        let table = self.table(table)?;
        let _split = table
            .ring
            .split_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let view = table.ring.current();
        let mut left = Vec::with_capacity(view.parts.len());
        for (i, part) in view.parts.iter().enumerate() {
            compact(&part.keyspace)?;
            left.push(runs(&part.keyspace));
            done(i);
        }
        Ok(left)
    }

    /// Writes the memtables of `table`'s physical partitions to tables now (Cassandra's
    /// `nodetool flush`); returns when they are on disk.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], or [`StorageError::Fjall`] on I/O failure.
    pub fn flush_table(&self, table: TableId) -> Result<(), StorageError> {
        self.flush_table_each(table, &mut |_| {})
    }

    /// As [`Storage::flush_table`], calling `done` with each physical partition's index once
    /// it is flushed.
    ///
    /// # Errors
    /// As [`Storage::flush_table`].
    pub fn flush_table_each(
        &self,
        table: TableId,
        done: &mut dyn FnMut(usize),
    ) -> Result<(), StorageError> {
        for (i, part) in self.table(table)?.ring.current().parts.iter().enumerate() {
            part.keyspace.rotate_memtable_and_wait()?;
            done(i);
        }
        Ok(())
    }

    /// Sorted runs a range read of each of `table`'s physical partitions merges.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`].
    pub fn sorted_runs(&self, table: TableId) -> Result<Vec<usize>, StorageError> {
        let view = self.table(table)?.ring.current();
        Ok(view.parts.iter().map(|p| runs(&p.keyspace)).collect())
    }
}
