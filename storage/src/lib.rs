//! Cassandra's data model (token-ordered partitions, clustered rows, cells, tombstones, TTL)
//! on fjall. Knows nothing of frames or CQL text; from `cql` it uses only `cql::types`.
//!
//! Module map, from the API down (a module imports only modules below it or beside it):
//! - The API, each an `impl` block of [`Storage`]:
//!   - `engine`: [`Storage`] itself: [`Storage::open`], the handles every operation shares
//!     (`Inner`), the background workers' start and stop, the meta store, journal flushes.
//!   - `write`: [`Storage::apply`] / [`Storage::apply_all`]: one atomic fjall batch per call,
//!     the partition's size cell, the logical partition cap, dual writes during a split.
//!   - `read`: [`Storage::read_partition`] (slices, reverse, paging, one-row point reads).
//!   - `scan`: [`Storage::scan`] (walks the physical partitions in token order).
//!   - `table_admin`: create, drop and truncate tables; split, flush and compact them on
//!     demand; their statistics, physical partitions and size estimates.
//! - What the API takes and returns: `options` ([`StorageOptions`]), `mutation`
//!   ([`Mutation`] and its parts), `slice` ([`Slice`], [`PartitionSlice`]), `scan_page`
//!   ([`TokenRange`], [`ScanPage`]), `row` ([`Row`], [`ColumnValue`]), `cursor` ([`Cursor`]),
//!   `table_info` ([`TableStats`], [`PhysicalPartitionInfo`], [`SizeEstimate`]), [`table`]
//!   (table ids and layouts), `clock` ([`Clock`]), `durability` ([`SyncPolicy`]) and
//!   [`error`] ([`StorageError`]).
//! - The write path: `stage` (a mutation as keyed items), `reconcile` (against what is
//!   stored), `partition_address` (token and key prefix), `content` (the sticky flags of what a
//!   table ever stored), `bundle` (a row's cells in its liveness item), `stripes`
//!   (write-lock stripes), `durability` (sync policy, group commit, deferred journal flushes),
//!   `disk` (the free-space guard).
//! - The read path: `read_ctx` (assembles live rows), `lookup` (snapshot, published or cached
//!   single-item lookups), `partition_head` (partition deletion, statics, range tombstones),
//!   `one_table` (forward ranges straight from a one-table tree).
//! - Both: `item_cache` (single items by key, so point reads and writes' lookups skip fjall's
//!   memtables and tables), `partition_filter` (the bloom filter of a table's stored
//!   partitions that lets writes to new partitions skip their lookups; `blocked_bloom`: its
//!   stages).
//! - Physical partitions: `open_tables` (each open table's layout and ring), `ring` (a table's
//!   current routing view), `routing_map` (the persisted map from token ranges to physical
//!   partitions), `physical` (a partition's fjall keyspace `t{table}_p{id}` and size
//!   counters), `ring_store` (maps and statistics in the meta keyspace), `ring_recovery`
//!   (crash recovery on open), `counting` (sizes by scanning), `names` (keyspace names and
//!   meta-key prefixes).
//! - Moving a replica: `range_transfer` (a token range's items exported and imported).
//! - Splits: `split` (choose, prepare, copy with dual writes, switch, trim), `split_queue`.
//! - Background work: `worker` (one abstraction for every background thread: an `Activity`
//!   stepped by `Workers`), its activities `split_worker`, `journal_sync` (the periodic
//!   fsync), `file_reaper` (deleted files closed off fjall's locks, with `memtable_keeper`),
//!   `idle_compaction` and `filter_builder`; `priority` (their lower CPU priority).
//! - The data model underneath: [`key`] (the order-preserving key layout; its module docs hold
//!   the design note), [`token`] (the Murmur3 partitioner), `cell` (stored cells, TTL and
//!   Cassandra's reconciliation), `compaction` (the fjall compaction filter purging expired
//!   cells and tombstones past [`TableLayout::gc_grace_seconds`]).
//!
//! ```
//! use storage::{Storage, StorageOptions, TableId, TableLayout, Mutation, RowWrite, Liveness, Slice};
//! use cql::types::NativeType;
//!
//! let dir = tempfile::tempdir()?;
//! let db = Storage::open(dir.path(), StorageOptions::default())?;
//! let table = TableId(1);
//! db.create_table(table, TableLayout {
//!     partition_key: vec![NativeType::Int.into()],
//!     ..Default::default()
//! })?;
//! let pk = vec![7i32.to_be_bytes().to_vec()];
//! db.apply(table, &Mutation {
//!     partition_key: pk.clone(),
//!     rows: vec![RowWrite {
//!         liveness: Some(Liveness { timestamp: 1, ttl: None }),
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! })?;
//! assert_eq!(db.read_partition(table, &pk, &Slice::default())?.rows.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod ann;
mod blocked_bloom;
mod bundle;
mod cell;
mod clock;
mod compaction;
mod content;
mod counting;
mod cursor;
mod disk;
mod durability;
mod engine;
mod engine_stats;
pub mod error;
mod file_reaper;
mod filter_builder;
mod idle_compaction;
mod item_cache;
mod journal_sync;
pub mod key;
mod lookup;
mod memtable_keeper;
mod mutation;
mod names;
mod one_table;
mod open_tables;
mod options;
mod partition_address;
mod partition_cache;
mod partition_filter;
mod partition_head;
mod physical;
mod priority;
mod range_transfer;
mod read;
mod read_ctx;
mod reconcile;
mod ring;
mod ring_recovery;
mod ring_store;
mod routing_map;
mod row;
mod scan;
mod scan_page;
mod secondary;
mod slice;
mod split;
mod split_queue;
mod split_worker;
mod stage;
mod stripes;
pub mod table;
mod table_admin;
mod table_info;
pub mod token;
mod worker;
mod write;

#[cfg(test)]
mod bundle_tests;
#[cfg(test)]
mod content_tests;
#[cfg(test)]
mod item_cache_tests;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod partition_cache_tests;
#[cfg(test)]
mod partition_filter_tests;
#[cfg(test)]
mod point_read_tests;
#[cfg(test)]
mod size_cell_tests;
#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod tests;

pub use ann::{decode_vector, NearestRow, Similarity, VectorIndexSpec};
pub use cell::CellValue;
pub use clock::Clock;
pub use cursor::Cursor;
pub use durability::SyncPolicy;
pub use engine::{MetaEntry, Storage};
pub use engine_stats::EngineStats;
pub use error::StorageError;
pub use idle_compaction::IdleCompaction;
pub use key::{ClusteringBound, Order};
pub use mutation::{ColumnOp, ColumnWrite, Deletion, Liveness, Mutation, RangeDeletion, RowWrite};
pub use options::{
    StorageOptions, DEFAULT_ITEM_CACHE_BYTES, DEFAULT_LOGICAL_PARTITION_MAX_BYTES,
    DEFAULT_PARTITION_CACHE_MAX_BYTES, DEFAULT_PHYSICAL_PARTITION_MAX_BYTES,
};
pub use range_transfer::RangeSink;
pub use row::{ColumnValue, Row};
pub use scan_page::{ScanPage, ScannedPartition, TokenRange};
pub use secondary::{IndexLookup, IndexPlace, IndexSpec, IndexTarget, IndexValues};
pub use slice::{PartitionSlice, Slice};
pub use table::{TableId, TableLayout, DEFAULT_GC_GRACE_SECONDS};
pub use table_info::{
    PartitionOf, PartitionState, PhysicalPartitionInfo, SizeEstimate, TableStats,
};
