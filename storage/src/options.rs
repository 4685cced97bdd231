//! The options [`crate::Storage::open`] takes: durability, caches, size limits, background
//! work and its priority.

use std::fmt;

use crate::clock::Clock;
use crate::durability::SyncPolicy;
use crate::idle_compaction::IdleCompaction;

/// Default [`StorageOptions::physical_partition_max_bytes`]: 30 GiB.
pub const DEFAULT_PHYSICAL_PARTITION_MAX_BYTES: u64 = 30 << 30;
/// Default [`StorageOptions::logical_partition_max_bytes`]: 20 GiB.
pub const DEFAULT_LOGICAL_PARTITION_MAX_BYTES: u64 = 20 << 30;
/// Default [`StorageOptions::item_cache_bytes`]: 64 MiB.
pub const DEFAULT_ITEM_CACHE_BYTES: u64 = 64 << 20;
/// Default [`StorageOptions::partition_cache_max_bytes`]: 16 KiB.
pub const DEFAULT_PARTITION_CACHE_MAX_BYTES: u64 = 16 << 10;

/// Options for [`crate::Storage::open`].
#[derive(Clone)]
pub struct StorageOptions {
    /// Commit-log sync policy.
    pub sync: SyncPolicy,
    /// Block cache size in bytes (`None`: fjall's default).
    pub cache_bytes: Option<u64>,
    /// Most bytes fjall's journals may take before the oldest memtables are flushed so their
    /// journal can be deleted (`None`: fjall's default, 512 MiB; at least 64 MiB).
    pub max_journal_bytes: Option<u64>,
    /// fjall's flush and compaction threads (`None`: fjall's default, one per core up to 4).
    pub worker_threads: Option<usize>,
    /// Clock override for tests (`None`: the system clock).
    pub clock: Option<Clock>,
    /// A physical partition storing more than this many bytes (keys + values) is split in
    /// two in the background. Default 30 GiB.
    pub physical_partition_max_bytes: u64,
    /// A write that would take one logical partition (one partition key) past this many bytes
    /// fails with [`crate::StorageError::PartitionTooLarge`]. Default 20 GiB.
    pub logical_partition_max_bytes: u64,
    /// Splits running at the same time, one background thread each (at least 1; one split
    /// per table at a time). Default 1.
    pub max_concurrent_splits: usize,
    /// Writes fail with [`crate::StorageError::DiskFull`] while the data directory's file system has
    /// less free space than this (0: never). Default 0.
    pub min_free_disk_bytes: u64,
    /// Compact physical partitions that stopped taking writes (see [`IdleCompaction`];
    /// `None`: never). Default `None`.
    pub idle_compaction: Option<IdleCompaction>,
    /// Nice value of the background threads (fjall's flush and compaction workers, idle
    /// compaction, splits), so they yield the cores to the threads answering requests;
    /// 0..=19, 0 (the default) leaves them at the caller's priority.
    pub background_nice: i32,
    /// Whether the background threads also run under Linux's `SCHED_IDLE` scheduling policy
    /// (see `crate::priority`). Default `false`.
    pub background_idle_policy: bool,
    /// Bytes of the item cache (`crate::item_cache`: single items by key, for point reads and
    /// writes' lookups; 0: off). Default 64 MiB.
    pub item_cache_bytes: u64,
    /// Partitions whose rows take at most this many bytes (keys and values) are cached whole
    /// in the item cache when read (`crate::partition_cache`; 0: never). Default 16 KiB.
    pub partition_cache_max_bytes: u64,
}

impl Default for StorageOptions {
    fn default() -> Self {
        StorageOptions {
            sync: SyncPolicy::default(),
            cache_bytes: None,
            max_journal_bytes: None,
            worker_threads: None,
            clock: None,
            physical_partition_max_bytes: DEFAULT_PHYSICAL_PARTITION_MAX_BYTES,
            logical_partition_max_bytes: DEFAULT_LOGICAL_PARTITION_MAX_BYTES,
            max_concurrent_splits: 1,
            min_free_disk_bytes: 0,
            idle_compaction: None,
            background_nice: 0,
            background_idle_policy: false,
            item_cache_bytes: DEFAULT_ITEM_CACHE_BYTES,
            partition_cache_max_bytes: DEFAULT_PARTITION_CACHE_MAX_BYTES,
        }
    }
}

/// The size limits in force.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) physical_partition_max_bytes: u64,
    pub(crate) logical_partition_max_bytes: u64,
    pub(crate) partition_cache_max_bytes: u64,
}

impl fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StorageOptions")
            .field("sync", &self.sync)
            .field("cache_bytes", &self.cache_bytes)
            .field("item_cache_bytes", &self.item_cache_bytes)
            .field("partition_cache_max_bytes", &self.partition_cache_max_bytes)
            .field("clock", &self.clock.as_ref().map(|_| "custom"))
            .field(
                "physical_partition_max_bytes",
                &self.physical_partition_max_bytes,
            )
            .field(
                "logical_partition_max_bytes",
                &self.logical_partition_max_bytes,
            )
            .field("max_concurrent_splits", &self.max_concurrent_splits)
            .field("min_free_disk_bytes", &self.min_free_disk_bytes)
            .field("worker_threads", &self.worker_threads)
            .field("idle_compaction", &self.idle_compaction)
            .field("background_nice", &self.background_nice)
            .field("background_idle_policy", &self.background_idle_policy)
            .finish()
    }
}
