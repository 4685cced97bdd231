//! Cassandra's data model (token-ordered partitions, clustered rows, cells, tombstones, TTL)
//! on fjall. Knows nothing of frames or CQL text; from `cql` it uses only `cql::types`.
//!
//! Module map:
//! - [`token`]: the Murmur3 partitioner and partition-key serialization.
//! - [`key`]: the order-preserving (memcomparable) key layout and clustering encodings
//!   (its module docs hold the key-layout design note).
//! - [`table`]: table ids and layouts.
//! - `cell`: stored cells, TTL and Cassandra's reconciliation.
//! - `write`: [`Mutation`] and [`Storage::apply`] (one atomic fjall batch per partition,
//!   the partition's size cell, the logical partition cap, dual writes during a split).
//! - `read`: [`Storage::read_partition`] (slices, reverse, paging) and [`Storage::scan`]
//!   (walks the physical partitions in token order).
//! - `engine`: [`Storage`], [`StorageOptions`], tables, the meta store, lock stripes and the
//!   sync policy.
//! - `ring`: physical partitions: the persisted, versioned routing map from token ranges to
//!   fjall keyspaces `t{table}_p{id}`, size accounting, crash recovery on open, and
//!   [`Storage::physical_partitions`] / [`Storage::size_estimates`].
//! - `split`: the online split (choose, prepare, copy with dual writes, switch, drop),
//!   its worker threads, [`Storage::split_now`] and [`Storage::wait_for_splits`].
//! - `partition_filter`: the in-memory bloom filter of a table's stored partitions that lets
//!   writes to new partitions skip the size-cell lookup; `blocked_bloom`: its stages, a
//!   concurrent bloom filter with each key's bits in one cache line.
//! - `item_cache`: single items by key, so point reads and writes' lookups skip fjall's
//!   memtables and tables.
//! - `disk`: the free-space guard refusing writes before the disk fills.
//! - `priority`: background threads (flushes, compactions, splits) at a lower CPU priority.
//! - `compaction`: the fjall compaction filter purging expired cells and tombstones past
//!   [`TableLayout::gc_grace_seconds`].
//! - [`error`]: the crate's error type, [`StorageError`].
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
mod partition_filter;
mod partition_head;
mod physical;
mod priority;
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
mod partition_filter_tests;
#[cfg(test)]
mod point_read_tests;
#[cfg(test)]
mod size_cell_tests;
#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod tests;

pub use cell::CellValue;
pub use clock::Clock;
pub use cursor::Cursor;
pub use durability::SyncPolicy;
pub use engine::{MetaEntry, Storage};
pub use error::StorageError;
pub use idle_compaction::IdleCompaction;
pub use key::{ClusteringBound, Order};
pub use mutation::{ColumnOp, ColumnWrite, Deletion, Liveness, Mutation, RangeDeletion, RowWrite};
pub use options::{
    StorageOptions, DEFAULT_ITEM_CACHE_BYTES, DEFAULT_LOGICAL_PARTITION_MAX_BYTES,
    DEFAULT_PHYSICAL_PARTITION_MAX_BYTES,
};
pub use row::{ColumnValue, Row};
pub use scan_page::{ScanPage, ScannedPartition, TokenRange};
pub use slice::{PartitionSlice, Slice};
pub use table::{TableId, TableLayout, DEFAULT_GC_GRACE_SECONDS};
pub use table_info::{PartitionState, PhysicalPartitionInfo, SizeEstimate, TableStats};
