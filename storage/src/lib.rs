//! Cassandra's data model (token-ordered partitions, clustered rows, cells, tombstones, TTL)
//! on fjall. Knows nothing of frames or CQL text; from `cql` it uses only `cql::types`.
//!
//! Module map:
//! - [`token`]: the Murmur3 partitioner and partition-key serialization.
//! - [`key`]: the order-preserving (memcomparable) key layout and clustering encodings
//!   (its module docs hold the key-layout design note).
//! - [`table`]: table ids and layouts.
//! - `cell`: stored cells, TTL and Cassandra's reconciliation.
//! - `write`: [`Mutation`] and [`Storage::apply`] (one atomic fjall batch per partition).
//! - `read`: [`Storage::read_partition`] (slices, reverse, paging) and [`Storage::scan`].
//! - `engine`: [`Storage`], tables as fjall keyspaces, the meta store and the sync policy.
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

mod cell;
mod engine;
pub mod error;
pub mod key;
mod read;
pub mod table;
pub mod token;
mod write;

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;

pub use cell::CellValue;
pub use engine::{Clock, MetaEntry, Storage, StorageOptions, SyncPolicy, TableStats};
pub use error::StorageError;
pub use key::{ClusteringBound, Order};
pub use read::{
    ColumnValue, Cursor, PartitionSlice, Row, ScanPage, ScannedPartition, Slice, TokenRange,
};
pub use table::{TableId, TableLayout};
pub use write::{ColumnOp, ColumnWrite, Deletion, Liveness, Mutation, RangeDeletion, RowWrite};
