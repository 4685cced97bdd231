//! Physical partitions: each is one fjall keyspace `t{table:032x}_p{id}` holding one token
//! range of a table (see [`crate::routing_map`]), with its live size counters.
//!
//! # Size accounting
//! Each [`Physical`] partition keeps `bytes` = Σ (key + value length) of everything stored in
//! it, maintained *exactly* by the write path: a write already reads every key it touches,
//! so it adds `new − old` for each key it writes (plus the partition's size cell when it
//! stores a first one). Unflushed memtable writes count at once. `partitions` counts logical
//! partitions (a write that creates a partition adds one; scans count distinct prefixes).
//! Both are persisted in the meta keyspace ([`crate::ring_store`]) every few seconds by the
//! first split worker ([`crate::split_worker`]), after every split and on close; after a
//! crash they can lag by the writes of the last few seconds (a recovered split recounts
//! exactly).
//! These are logical bytes, not compressed bytes on disk, which keeps the split threshold
//! independent of compression and compaction timing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use fjall::{Database, Keyspace, KeyspaceCreateOptions};

use crate::names::keyspace_name;
use crate::{StorageError, TableId};

/// `oversized_at` value meaning "not flagged".
const NOT_OVERSIZED: u64 = u64::MAX;

/// One physical partition at run time.
pub(crate) struct Physical {
    pub(crate) id: u64,
    pub(crate) keyspace: Keyspace,
    /// Its entries' id in the item cache (`crate::item_cache`); a truncate gives it a new one.
    pub(crate) cache_id: AtomicU64,
    /// Stored key + value bytes (wrapping arithmetic: transiently "negative" during a split).
    pub(crate) bytes: AtomicU64,
    /// Logical partitions stored.
    pub(crate) partitions: AtomicU64,
    /// A split of this partition is queued or running.
    pub(crate) split_queued: AtomicBool,
    /// The `partitions` count when it was flagged oversized ([`NOT_OVERSIZED`]: not flagged).
    pub(crate) oversized_at: AtomicU64,
    /// The largest size a logical partition stored here has reached (bytes; see
    /// [`Physical::saw_partition_size`]).
    pub(crate) largest: AtomicU64,
}

impl Physical {
    /// Partition `id` stored in `keyspace`, holding `bytes` and `partitions` logical
    /// partitions.
    pub(crate) fn new(id: u64, keyspace: Keyspace, bytes: u64, partitions: u64) -> Physical {
        Physical {
            id,
            keyspace,
            cache_id: AtomicU64::new(crate::item_cache::fresh_id()),
            bytes: AtomicU64::new(bytes),
            partitions: AtomicU64::new(partitions),
            split_queued: AtomicBool::new(false),
            oversized_at: AtomicU64::new(NOT_OVERSIZED),
            largest: AtomicU64::new(0),
        }
    }

    /// Notes that one of its logical partitions now holds `bytes` (a write sized it).
    pub(crate) fn saw_partition_size(&self, bytes: u64) {
        if bytes > self.largest.load(Ordering::Relaxed) {
            self.largest.fetch_max(bytes, Ordering::Relaxed);
        }
    }

    /// The largest size a logical partition stored here has reached since the physical
    /// partition was made (a high-water mark, as Cassandra's estimate from its SSTables'
    /// statistics: deleting rows does not lower it).
    pub(crate) fn largest_partition(&self) -> u64 {
        self.largest.load(Ordering::Relaxed)
    }

    /// Stored key + value bytes (0 while transiently "negative").
    pub(crate) fn bytes(&self) -> u64 {
        let b = self.bytes.load(Ordering::Relaxed);
        if (b as i64) < 0 {
            0
        } else {
            b
        }
    }

    /// Logical partitions stored (0 while transiently "negative").
    pub(crate) fn partitions(&self) -> u64 {
        let p = self.partitions.load(Ordering::Relaxed);
        if (p as i64) < 0 {
            0
        } else {
            p
        }
    }

    /// Adds a (possibly negative) byte delta and a logical partition count delta.
    pub(crate) fn account(&self, delta: i64, partitions: i64) {
        self.bytes.fetch_add(delta as u64, Ordering::Relaxed);
        if partitions != 0 {
            self.partitions
                .fetch_add(partitions as u64, Ordering::Relaxed);
        }
    }

    /// Flagged oversized and nothing changed since (no new logical partition).
    pub(crate) fn is_oversized(&self) -> bool {
        self.oversized_at.load(Ordering::Relaxed) == self.partitions()
    }

    /// Flags the partition oversized at its current partition count, or clears the flag.
    pub(crate) fn set_oversized(&self, on: bool) {
        let v = if on { self.partitions() } else { NOT_OVERSIZED };
        self.oversized_at.store(v, Ordering::Relaxed);
    }
}

/// Opens (creating if needed) the keyspace of a physical partition.
pub(crate) fn open_keyspace(
    db: &Database,
    table: TableId,
    id: u64,
) -> Result<Keyspace, StorageError> {
    Ok(db.keyspace(&keyspace_name(table, id), partition_options)?)
}

/// Uncompressed size of a data block (fjall's default is 4 KiB). A range read seeks the
/// pinned index to its first block, fetches that block from the block cache and seeks inside
/// it; with 16 KiB blocks the index has a quarter of the entries (it stays in the CPU caches)
/// and the block cache a quarter of the blocks: a 10-row slice of a compacted 200 k-row table
/// took 5.8 instead of 6.2 us (`cargo bench -p storage`), and slices through the server ran
/// 3% faster at 4% less CPU (three alternating pairs). 32 and 64 KiB were no better.
const DATA_BLOCK_BYTES: u32 = 16 * 1024;

/// Options of a new physical partition's keyspace: every level's data blocks lz4-compressed
/// (fjall's default leaves the first two levels, where fresh data lives, uncompressed), and
/// every level's bloom filters and index blocks pinned in memory, as Cassandra keeps its bloom
/// filters and index summaries in memory: with fjall's default only the first levels' are
/// pinned, and once the data set outgrew the block cache every point lookup re-read whole
/// filter blocks from disk. Both are whole at every level: fjall partitions them from level 3
/// on, and each lookup then fetches a filter partition and an index partition through the
/// block cache (a compacted 10 M-row table: point reads ~7% more CPU with partitioned
/// filters; 10-row slices 3-10% slower with a partitioned index). Resident cost: ~1.25
/// bytes per stored item for the filters and ~0.35 for the index (one entry per 16 KiB data
/// block), ~25 + 4 MB for 10 M rows; Cassandra keeps its bloom filters in memory likewise.
fn partition_options() -> KeyspaceCreateOptions {
    use fjall::config::{BlockSizePolicy, PartitioningPolicy, PinningPolicy};
    KeyspaceCreateOptions::default()
        .data_block_compression_policy(fjall::config::CompressionPolicy::all(
            fjall::CompressionType::Lz4,
        ))
        .filter_block_pinning_policy(PinningPolicy::all(true))
        .index_block_pinning_policy(PinningPolicy::all(true))
        .filter_block_partitioning_policy(PartitioningPolicy::all(false))
        .index_block_partitioning_policy(PartitioningPolicy::all(false))
        .data_block_size_policy(BlockSizePolicy::all(DATA_BLOCK_BYTES))
}

/// Deletes a physical partition's keyspace if it exists.
pub(crate) fn delete_keyspace(db: &Database, table: TableId, id: u64) -> Result<(), StorageError> {
    let name = keyspace_name(table, id);
    if db.keyspace_exists(&name) {
        let ks = db.keyspace(&name, KeyspaceCreateOptions::default)?;
        db.delete_keyspace(ks)?;
    }
    Ok(())
}

/// Removes every key of `ks` outside `[lo, hi)` (`hi` `None`: unbounded), in batches.
pub(crate) fn trim(
    db: &Database,
    ks: &Keyspace,
    lo: &[u8],
    hi: Option<&[u8]>,
) -> Result<(), StorageError> {
    let below = ks.range(..lo.to_vec());
    let above = hi.map(|hi| ks.range(hi.to_vec()..));
    remove_all(db, ks, below.chain(above.into_iter().flatten()), false).map(|_| ())
}

/// Removes every key of `ks` in `lo..hi` (`None`: to the end), in batches; returns the bytes
/// (keys and values) and the logical partitions removed.
pub(crate) fn clear_range(
    db: &Database,
    ks: &Keyspace,
    lo: &[u8],
    hi: Option<&[u8]>,
) -> Result<(u64, u64), StorageError> {
    match hi {
        Some(hi) => remove_all(db, ks, ks.range(lo.to_vec()..hi.to_vec()), true),
        None => remove_all(db, ks, ks.range(lo.to_vec()..), true),
    }
}

/// Removes the keys `items` yields from `ks`, committing every 4,096; with `count`, returns
/// their bytes and logical partitions (else zeros: a trim recounts what stays, and reads no
/// value).
fn remove_all(
    db: &Database,
    ks: &Keyspace,
    items: impl Iterator<Item = fjall::Guard>,
    count: bool,
) -> Result<(u64, u64), StorageError> {
    let mut batch = db.batch();
    let (mut bytes, mut partitions) = (0u64, crate::counting::PartitionCounter::default());
    for g in items {
        let k = if count {
            let (k, v) = g.into_inner()?;
            bytes += (k.len() + v.len()) as u64;
            partitions.see(&k)?;
            k
        } else {
            g.key()?
        };
        batch.remove(ks, k);
        if batch.len() >= 4096 {
            std::mem::replace(&mut batch, db.batch()).commit()?;
        }
    }
    batch.commit()?;
    Ok((bytes, partitions.count))
}
