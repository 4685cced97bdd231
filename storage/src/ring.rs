//! Physical partitions: each table's token ring cut into contiguous ranges, each its own fjall
//! keyspace `t{table:032x}_p{id}`, behind a persisted, versioned routing map.
//!
//! # The routing map
//! A [`RoutingMap`] lists ranges `(start, end]` sorted by `end`; the first starts at
//! [`MIN_TOKEN`] and the last ends at [`MAX_TOKEN`], so they tile the ring (tokens are never
//! MIN). It also records a split in progress (`split`) and the partitions that still hold
//! keys outside their range (`garbage`: the moved half of a finished split, to be trimmed).
//! It lives in the meta keyspace under `\0storage\0ring\0{table}\0v{version}`, with
//! `…\0current` naming the live version. Every change writes the new version, switches
//! `current` and removes the old version in one atomic fjall batch (fsynced when it matters:
//! see [`crate::split`]). On open, [`Storage::load_ring`] rolls back an unfinished split,
//! trims garbage and deletes stray keyspaces, so the map and the keyspaces agree again.
//!
//! # Size accounting
//! Each [`Physical`] partition keeps `bytes` = Σ (key + value length) of everything stored in
//! it, maintained *exactly* by the write path: a write already reads every key it touches,
//! so it adds `new − old` for each key it writes (plus the partition's size cell when it
//! stores a first one). Unflushed memtable writes count at once. `partitions` counts logical
//! partitions (a write that creates a partition adds one; scans count distinct prefixes).
//! Both are persisted in the meta keyspace every few seconds by the maintenance thread, after
//! every split and on close; after a crash they can lag by the writes of the last few seconds
//! (a recovered split recounts exactly).
//! These are logical bytes, not compressed bytes on disk, which keeps the split threshold
//! independent of compression and compaction timing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::content::ContentFlags;
use crate::engine::{Inner, Storage};
use crate::open_tables::Table;
use crate::names::{keyspace_name, parse_keyspace_name, table_meta_prefix};
use crate::token::{MAX_TOKEN, MIN_TOKEN};
use crate::{StorageError, TableId};

const MAP_FORMAT: u8 = 1;
/// `oversized_at` value meaning "not flagged".
const NOT_OVERSIZED: u64 = u64::MAX;

/// The state of a physical partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionState {
    /// Serving reads and writes.
    Active,
    /// Being split (still serving reads and writes).
    Splitting,
    /// Over the split threshold but holding a single logical partition (or a single token),
    /// so it cannot be split without cutting a logical partition.
    Oversized,
}

impl PartitionState {
    /// `active`, `splitting` or `oversized`.
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionState::Active => "active",
            PartitionState::Splitting => "splitting",
            PartitionState::Oversized => "oversized",
        }
    }
}

/// One physical partition of a table, as [`Storage::physical_partitions`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysicalPartitionInfo {
    /// Its id (its keyspace is `t{table:032x}_p{id}`).
    pub id: u64,
    /// Exclusive start token (`i64::MIN` for the first range).
    pub start_token: i64,
    /// Inclusive end token (`i64::MAX` for the last range).
    pub end_token: i64,
    /// Stored bytes (keys + values, unflushed writes included).
    pub bytes: u64,
    /// Number of logical partitions stored.
    pub partitions_estimate: u64,
    /// Active, splitting or oversized.
    pub state: PartitionState,
}

/// A `system.size_estimates` row: one token range of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeEstimate {
    /// Exclusive start token.
    pub range_start: i64,
    /// Inclusive end token.
    pub range_end: i64,
    /// Logical partitions in the range.
    pub partitions_count: u64,
    /// Mean bytes per logical partition.
    pub mean_partition_size: u64,
}

/// One range of the routing map; it starts where the previous one ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RangeEntry {
    pub(crate) end: i64,
    pub(crate) id: u64,
    pub(crate) oversized: bool,
}

/// A split in progress: the tokens of `source` above `at` are being copied into `upper`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PendingSplit {
    pub(crate) source: u64,
    pub(crate) upper: u64,
    pub(crate) at: i64,
}

/// The persisted routing map of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RoutingMap {
    pub(crate) version: u64,
    pub(crate) next_id: u64,
    pub(crate) ranges: Vec<RangeEntry>,
    pub(crate) split: Option<PendingSplit>,
    /// Partitions holding keys outside their range (to be trimmed).
    pub(crate) garbage: Vec<u64>,
}

impl RoutingMap {
    /// A fresh table: one partition (id 0) owning the whole ring.
    pub(crate) fn initial() -> RoutingMap {
        RoutingMap {
            version: 0,
            next_id: 1,
            ranges: vec![RangeEntry {
                end: MAX_TOKEN,
                id: 0,
                oversized: false,
            }],
            split: None,
            garbage: Vec::new(),
        }
    }

    /// The index of the range owning `token`.
    pub(crate) fn index(&self, token: i64) -> usize {
        self.ranges
            .partition_point(|r| r.end < token)
            .min(self.ranges.len() - 1)
    }

    /// The key range `[lo, hi)` holding the tokens of range `i` (`None`: unbounded).
    pub(crate) fn key_bounds(&self, i: usize) -> (Vec<u8>, Option<Vec<u8>>) {
        token_key_bounds(self.start(i), self.ranges[i].end)
    }

    /// Exclusive start of range `i`.
    pub(crate) fn start(&self, i: usize) -> i64 {
        if i == 0 {
            MIN_TOKEN
        } else {
            self.ranges[i - 1].end
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = vec![MAP_FORMAT];
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.next_id.to_be_bytes());
        out.extend_from_slice(&(self.ranges.len() as u32).to_be_bytes());
        for r in &self.ranges {
            out.extend_from_slice(&r.end.to_be_bytes());
            out.extend_from_slice(&r.id.to_be_bytes());
            out.push(u8::from(r.oversized));
        }
        match &self.split {
            None => out.push(0),
            Some(s) => {
                out.push(1);
                for v in [s.source, s.upper, s.at as u64] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
        }
        out.extend_from_slice(&(self.garbage.len() as u32).to_be_bytes());
        for g in &self.garbage {
            out.extend_from_slice(&g.to_be_bytes());
        }
        out
    }

    fn decode(bytes: &[u8]) -> Result<RoutingMap, StorageError> {
        let mut r = Reader(bytes);
        if r.take::<1>()?[0] != MAP_FORMAT {
            return Err(StorageError::corrupt("routing map format"));
        }
        let version = r.u64()?;
        let next_id = r.u64()?;
        let n = r.u32()?;
        let mut ranges = Vec::new();
        for _ in 0..n {
            let end = r.u64()? as i64;
            let id = r.u64()?;
            let oversized = r.take::<1>()?[0] != 0;
            ranges.push(RangeEntry { end, id, oversized });
        }
        let split = match r.take::<1>()?[0] {
            0 => None,
            _ => Some(PendingSplit {
                source: r.u64()?,
                upper: r.u64()?,
                at: r.u64()? as i64,
            }),
        };
        let n = r.u32()?;
        let garbage = (0..n).map(|_| r.u64()).collect::<Result<_, _>>()?;
        let map = RoutingMap {
            version,
            next_id,
            ranges,
            split,
            garbage,
        };
        map.validate()?;
        Ok(map)
    }

    /// The ranges tile the ring: non-empty, strictly increasing ends, the last at MAX.
    pub(crate) fn validate(&self) -> Result<(), StorageError> {
        let tiles = self.ranges.last().is_some_and(|r| r.end == MAX_TOKEN)
            && self.ranges.windows(2).all(|w| w[0].end < w[1].end)
            && self.ranges.first().is_some_and(|r| r.end > MIN_TOKEN);
        if tiles {
            Ok(())
        } else {
            Err(StorageError::corrupt("routing map does not tile the ring"))
        }
    }
}

/// The key range `[lo, hi)` holding the tokens `(start, end]` (`None`: unbounded).
pub(crate) fn token_key_bounds(start: i64, end: i64) -> (Vec<u8>, Option<Vec<u8>>) {
    let lo = if start == MIN_TOKEN {
        Vec::new()
    } else {
        crate::key::encode_token(start + 1).to_vec()
    };
    let hi = (end != MAX_TOKEN).then(|| crate::key::encode_token(end + 1).to_vec());
    (lo, hi)
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], StorageError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or_else(|| StorageError::corrupt("truncated routing map"))?;
        self.0 = rest;
        Ok(*head)
    }
    fn u64(&mut self) -> Result<u64, StorageError> {
        Ok(u64::from_be_bytes(self.take()?))
    }
    fn u32(&mut self) -> Result<u32, StorageError> {
        Ok(u32::from_be_bytes(self.take()?))
    }
}

fn map_version_key(table: TableId, version: u64) -> Vec<u8> {
    let mut k = table_meta_prefix("ring", table);
    k.push(b'v');
    k.extend_from_slice(&version.to_be_bytes());
    k
}

fn map_current_key(table: TableId) -> Vec<u8> {
    let mut k = table_meta_prefix("ring", table);
    k.extend_from_slice(b"current");
    k
}

fn stats_key(table: TableId, id: u64) -> Vec<u8> {
    let mut k = table_meta_prefix("stats", table);
    k.extend_from_slice(&id.to_be_bytes());
    k
}

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
}

impl Physical {
    pub(crate) fn new(id: u64, keyspace: Keyspace, bytes: u64, partitions: u64) -> Physical {
        Physical {
            id,
            keyspace,
            cache_id: AtomicU64::new(crate::item_cache::fresh_id()),
            bytes: AtomicU64::new(bytes),
            partitions: AtomicU64::new(partitions),
            split_queued: AtomicBool::new(false),
            oversized_at: AtomicU64::new(NOT_OVERSIZED),
        }
    }

    pub(crate) fn bytes(&self) -> u64 {
        let b = self.bytes.load(Ordering::Relaxed);
        if (b as i64) < 0 {
            0
        } else {
            b
        }
    }

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

    pub(crate) fn set_oversized(&self, on: bool) {
        let v = if on { self.partitions() } else { NOT_OVERSIZED };
        self.oversized_at.store(v, Ordering::Relaxed);
    }
}

/// A split being executed: writes to the source's tokens above `at` also go to `upper`.
pub(crate) struct ActiveSplit {
    pub(crate) source: u64,
    pub(crate) at: i64,
    pub(crate) upper: Arc<Physical>,
}

/// An immutable snapshot of a table's routing: the map and its open partitions.
pub(crate) struct RingView {
    pub(crate) map: RoutingMap,
    /// Parallel to `map.ranges`.
    pub(crate) parts: Vec<Arc<Physical>>,
    pub(crate) split: Option<ActiveSplit>,
}

/// Where a write goes: the owning partition, plus the split half it is dual-written to.
pub(crate) struct Route<'a> {
    pub(crate) primary: &'a Arc<Physical>,
    pub(crate) dual: Option<&'a Arc<Physical>>,
}

impl RingView {
    /// The partition owning `token`.
    pub(crate) fn part(&self, token: i64) -> &Arc<Physical> {
        &self.parts[self.map.index(token)]
    }

    pub(crate) fn route(&self, token: i64) -> Route<'_> {
        let primary = self.part(token);
        let dual = self
            .split
            .as_ref()
            .filter(|s| s.source == primary.id && token > s.at)
            .map(|s| &s.upper);
        Route { primary, dual }
    }

    pub(crate) fn position(&self, id: u64) -> Option<usize> {
        self.parts.iter().position(|p| p.id == id)
    }
}

/// A table's routing state, shared by every [`crate::engine::Table`] generation of the table.
pub(crate) struct TableRing {
    view: RwLock<Arc<RingView>>,
    /// Held for a whole split (and by truncate/drop), so one split per table at a time.
    pub(crate) split_lock: Mutex<()>,
    /// Asks a running split to roll back (drop/truncate).
    pub(crate) cancel: AtomicBool,
    /// Which kinds of shadowing items the table has ever stored.
    pub(crate) content: ContentFlags,
    /// The size-cell keys of the stored partitions (see `crate::partition_filter`).
    pub(crate) filter: crate::partition_filter::PartitionFilter,
}

impl TableRing {
    pub(crate) fn current(&self) -> Arc<RingView> {
        self.view.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Makes `view` current; returns a handle telling when nobody uses it any more.
    pub(crate) fn install(&self, view: RingView) -> Weak<RingView> {
        let view = Arc::new(view);
        let weak = Arc::downgrade(&view);
        *self.view.write().unwrap_or_else(|p| p.into_inner()) = view;
        weak
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

impl Storage {
    /// Persists `map` (already carrying its new version) and switches to it atomically;
    /// `stats` are written in the same batch, `drop_stats` removed. `durable` fsyncs the
    /// journal (which also makes every earlier write durable).
    pub(crate) fn save_map(
        &self,
        table: TableId,
        map: &RoutingMap,
        stats: &[&Physical],
        drop_stats: &[u64],
        durable: bool,
    ) -> Result<(), StorageError> {
        let meta = &self.inner.meta;
        let mut batch = self.inner.db.batch();
        batch.insert(meta, map_version_key(table, map.version), map.encode());
        batch.insert(
            meta,
            map_current_key(table),
            map.version.to_be_bytes().to_vec(),
        );
        if map.version > 0 {
            batch.remove(meta, map_version_key(table, map.version - 1));
        }
        for p in stats {
            batch.insert(meta, stats_key(table, p.id), encode_stats(p));
        }
        for id in drop_stats {
            batch.remove(meta, stats_key(table, *id));
        }
        batch.commit()?;
        if durable {
            self.inner.db.persist(PersistMode::SyncAll)?;
        }
        Ok(())
    }

    fn load_map(&self, table: TableId) -> Result<Option<RoutingMap>, StorageError> {
        let Some(v) = self.inner.meta.get(map_current_key(table))? else {
            return Ok(None);
        };
        let v: [u8; 8] = v
            .as_ref()
            .try_into()
            .map_err(|_| StorageError::corrupt("routing map version"))?;
        let version = u64::from_be_bytes(v);
        let bytes = self
            .inner
            .meta
            .get(map_version_key(table, version))?
            .ok_or_else(|| StorageError::corrupt("current routing map version missing"))?;
        RoutingMap::decode(&bytes).map(Some)
    }

    /// Loads a table's routing map, recovering from an interrupted split: a split that had
    /// not switched is rolled back (its half-copied keyspaces deleted; the source still holds
    /// everything), a switched split's old keyspace is deleted, stray keyspaces are removed.
    pub(crate) fn load_ring(&self, table: TableId) -> Result<TableRing, StorageError> {
        let db = &self.inner.db;
        let (mut map, new_table) = match self.load_map(table)? {
            Some(map) => (map, false),
            None => {
                let map = RoutingMap::initial();
                self.save_map(table, &map, &[], &[], true)?;
                (map, true)
            }
        };
        let content = ContentFlags::load(&self.inner.meta, table, new_table)?;
        if let Some(split) = map.split.take() {
            tracing::warn!(%table, source = split.source, "rolling back an interrupted split");
            delete_keyspace(db, table, split.upper)?;
            map.version += 1;
            self.save_map(table, &map, &[], &[split.upper], true)?;
        }
        for name in db.list_keyspace_names() {
            if let Some((t, id)) = parse_keyspace_name(&name) {
                if t == table && !map.ranges.iter().any(|r| r.id == id) {
                    tracing::warn!(%table, id, "deleting a stray physical partition");
                    delete_keyspace(db, table, id)?;
                }
            }
        }
        let mut parts = Vec::with_capacity(map.ranges.len());
        for (i, r) in map.ranges.iter().enumerate() {
            let keyspace = open_keyspace(db, table, r.id)?;
            let (bytes, partitions) = if map.garbage.contains(&r.id) {
                tracing::info!(%table, id = r.id, "trimming the moved half of a finished split");
                let (lo, hi) = map.key_bounds(i);
                trim(db, &keyspace, &lo, hi.as_deref())?;
                recount(&keyspace)?
            } else {
                match self.inner.meta.get(stats_key(table, r.id))? {
                    Some(v) => decode_stats(&v)?,
                    None => recount(&keyspace)?,
                }
            };
            let p = Physical::new(r.id, keyspace, bytes, partitions);
            p.set_oversized(r.oversized);
            parts.push(Arc::new(p));
        }
        if !map.garbage.is_empty() {
            map.garbage.clear();
            map.version += 1;
            let stats: Vec<&Physical> = parts.iter().map(|p| &**p).collect();
            self.save_map(table, &map, &stats, &[], true)?;
        }
        let stored: u64 = parts.iter().map(|p| p.partitions()).sum();
        let view = RingView {
            map,
            parts,
            split: None,
        };
        Ok(TableRing {
            view: RwLock::new(Arc::new(view)),
            split_lock: Mutex::new(()),
            cancel: AtomicBool::new(false),
            content,
            // A new table stores nothing, so its empty filter is complete; an existing one's
            // is filled by `partition_filter::spawn` (see `Storage::create_table`).
            filter: crate::partition_filter::PartitionFilter::new(stored, new_table),
        })
    }

    /// Removes a dropped table's routing map and statistics from the meta keyspace.
    pub(crate) fn forget_ring(&self, table: TableId) -> Result<(), StorageError> {
        let meta = &self.inner.meta;
        let mut batch = self.inner.db.batch();
        for prefix in [
            table_meta_prefix("ring", table),
            table_meta_prefix("stats", table),
            ContentFlags::meta_prefix(table),
        ] {
            for g in meta.prefix(&prefix) {
                batch.remove(meta, g.key()?);
            }
        }
        batch.commit()?;
        Ok(())
    }

    /// Writes every physical partition's size statistics to the meta keyspace.
    pub(crate) fn persist_stats(&self) -> Result<(), StorageError> {
        Storage::persist_stats_of(&self.inner)
    }

    /// The physical partitions of a table in token order, with sizes and states.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`].
    pub fn physical_partitions(
        &self,
        table: TableId,
    ) -> Result<Vec<PhysicalPartitionInfo>, StorageError> {
        let view = self.table(table)?.ring.current();
        let max = self.inner.limits.physical_partition_max_bytes;
        Ok(view
            .parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let bytes = p.bytes();
                let state = if view.split.as_ref().is_some_and(|s| s.source == p.id) {
                    PartitionState::Splitting
                } else if p.is_oversized() && bytes > max {
                    PartitionState::Oversized
                } else {
                    PartitionState::Active
                };
                PhysicalPartitionInfo {
                    id: p.id,
                    start_token: view.map.start(i),
                    end_token: view.map.ranges[i].end,
                    bytes,
                    partitions_estimate: p.partitions(),
                    state,
                }
            })
            .collect())
    }

    /// Size estimates per token range (one per physical partition), from the live counters.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`].
    pub fn size_estimates(&self, table: TableId) -> Result<Vec<SizeEstimate>, StorageError> {
        Ok(self
            .physical_partitions(table)?
            .into_iter()
            .map(|p| SizeEstimate {
                range_start: p.start_token,
                range_end: p.end_token,
                partitions_count: p.partitions_estimate,
                mean_partition_size: p.bytes / p.partitions_estimate.max(1),
            })
            .collect())
    }

    /// Every table created (or reopened) through [`Storage::create_table`], by id.
    pub fn list_tables(&self) -> Vec<TableId> {
        let mut ids: Vec<TableId> = self.inner.tables.all().iter().map(|t| t.id).collect();
        ids.sort();
        ids
    }
}

fn encode_stats(p: &Physical) -> Vec<u8> {
    let mut v = p.bytes().to_be_bytes().to_vec();
    v.extend_from_slice(&p.partitions().to_be_bytes());
    v
}

fn decode_stats(v: &[u8]) -> Result<(u64, u64), StorageError> {
    let (b, rest) = v
        .split_first_chunk::<8>()
        .ok_or_else(|| StorageError::corrupt("partition stats"))?;
    let p: [u8; 8] = rest
        .try_into()
        .map_err(|_| StorageError::corrupt("partition stats"))?;
    Ok((u64::from_be_bytes(*b), u64::from_be_bytes(p)))
}

/// Removes every key of `ks` outside `[lo, hi)` (`hi` `None`: unbounded), in batches.
pub(crate) fn trim(
    db: &Database,
    ks: &Keyspace,
    lo: &[u8],
    hi: Option<&[u8]>,
) -> Result<(), StorageError> {
    let mut batch = db.batch();
    let below = ks.range(..lo.to_vec());
    let above = hi.map(|hi| ks.range(hi.to_vec()..));
    for g in below.chain(above.into_iter().flatten()) {
        batch.remove(ks, g.key()?);
        if batch.len() >= 4096 {
            std::mem::replace(&mut batch, db.batch()).commit()?;
        }
    }
    batch.commit()?;
    Ok(())
}

/// Exact statistics by a full scan (a partition written before statistics existed).
fn recount(ks: &Keyspace) -> Result<(u64, u64), StorageError> {
    let (mut bytes, mut partitions) = (0u64, PartitionCounter::default());
    for g in ks.iter() {
        let (k, v) = g.into_inner()?;
        bytes += (k.len() + v.len()) as u64;
        partitions.see(&k)?;
    }
    Ok((bytes, partitions.count))
}

/// Counts the logical partitions of keys seen in key order (not every partition has a size
/// cell, see `crate::key`).
#[derive(Default)]
pub(crate) struct PartitionCounter {
    /// Partitions seen.
    pub(crate) count: u64,
    last: Vec<u8>,
}

impl PartitionCounter {
    /// Counts `key`'s partition if it differs from the previous key's; returns whether it did.
    pub(crate) fn see(&mut self, key: &[u8]) -> Result<bool, StorageError> {
        let (_, _, rest) = crate::key::split_partition_prefix(key)?;
        let prefix = &key[..key.len() - rest.len()];
        if prefix == self.last.as_slice() {
            return Ok(false);
        }
        self.last.clear();
        self.last.extend_from_slice(prefix);
        self.count += 1;
        Ok(true)
    }

    /// The partition prefix of the last key seen.
    pub(crate) fn prefix(&self) -> &[u8] {
        &self.last
    }
}

/// Writes the size statistics of every physical partition of `tables` in one batch.
pub(crate) fn persist_stats(inner: &Inner, tables: &[Arc<Table>]) -> Result<(), StorageError> {
    let meta = &inner.meta;
    let mut batch = inner.db.batch();
    for t in tables {
        for p in &t.ring.current().parts {
            batch.insert(meta, stats_key(t.id, p.id), encode_stats(p));
        }
    }
    batch.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_round_trips_and_validates() {
        let mut map = RoutingMap::initial();
        map.ranges.insert(
            0,
            RangeEntry {
                end: -5,
                id: 3,
                oversized: true,
            },
        );
        map.split = Some(PendingSplit {
            source: 3,
            upper: 5,
            at: -100,
        });
        map.garbage = vec![9];
        assert_eq!(RoutingMap::decode(&map.encode()).unwrap(), map);
        assert_eq!(map.index(i64::MIN + 1), 0);
        assert_eq!(map.index(-5), 0);
        assert_eq!(map.index(-4), 1);
        assert_eq!(map.index(i64::MAX), 1);
        assert_eq!(map.start(1), -5);
        let mut bad = map.clone();
        bad.ranges[1].end = 7;
        assert!(RoutingMap::decode(&bad.encode()).is_err());
        assert!(RoutingMap::decode(&map.encode()[..10]).is_err());
    }
}
