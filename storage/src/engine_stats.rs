//! `EngineStats`: what the LSM engine reports of its own work, for the server's metrics:
//! unflushed bytes, flushes and compactions queued or running, disk space, and the item
//! cache's hits and misses.

use crate::engine::Storage;

/// One reading of the engine's counters and gauges.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EngineStats {
    /// Bytes written and not yet flushed (every memtable).
    pub memtable_bytes: u64,
    /// Memtable flushes queued.
    pub pending_flushes: u64,
    /// Compactions running.
    pub running_compactions: u64,
    /// Compactions finished since the store opened.
    pub compactions_completed: u64,
    /// Seconds spent compacting since the store opened.
    pub compaction_seconds: f64,
    /// Key and value bytes compactions have read since the store opened.
    pub bytes_compacted: u64,
    /// Journal files on disk.
    pub journals: u64,
    /// Bytes on disk: tables' files and journals.
    pub disk_bytes: u64,
    /// Bytes of the journals.
    pub journal_bytes: u64,
    /// Bytes held by the block cache.
    pub block_cache_bytes: u64,
    /// The block cache's capacity in bytes.
    pub block_cache_capacity: u64,
    /// Bytes held by the item cache.
    pub item_cache_bytes: u64,
    /// The item cache's capacity in bytes.
    pub item_cache_capacity: u64,
    /// Reads answered from the item cache.
    pub item_cache_hits: u64,
    /// Reads the item cache could not answer.
    pub item_cache_misses: u64,
    /// Stored items all reads pulled from the engine.
    pub items_read: u64,
    /// Vectors waiting to be inserted into their graphs, plus one per graph whose build's
    /// scan is not done: zero once vector search runs on built graphs only.
    pub vector_index_backlog: u64,
    /// Secondary indexes whose build is not done (their lookups scan meanwhile).
    pub index_builds_pending: u64,
}

impl Storage {
    /// The engine's counters and gauges now.
    pub fn engine_stats(&self) -> EngineStats {
        let db = &self.inner.db;
        let (hits, misses) = self.inner.item_cache.hits_and_misses();
        let (item_bytes, item_capacity) = self.inner.item_cache.bytes_and_capacity();
        EngineStats {
            memtable_bytes: db.write_buffer_size(),
            pending_flushes: db.outstanding_flushes() as u64,
            running_compactions: db.active_compactions() as u64,
            compactions_completed: db.compactions_completed() as u64,
            compaction_seconds: db.time_compacting().as_secs_f64(),
            bytes_compacted: self.inner.gc.bytes_compacted(),
            journals: db.journal_count() as u64,
            disk_bytes: db.disk_space().unwrap_or(0),
            journal_bytes: db.journal_disk_space().unwrap_or(0),
            block_cache_bytes: db.cache_size(),
            block_cache_capacity: db.cache_capacity(),
            item_cache_bytes: item_bytes,
            item_cache_capacity: item_capacity,
            item_cache_hits: hits,
            item_cache_misses: misses,
            items_read: self.items_read(),
            vector_index_backlog: self.inner.ann.backlog(),
            index_builds_pending: self.inner.indexes.backlog(),
        }
    }
}
