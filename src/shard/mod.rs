//! The one seam between the executor and the data: every read and write for a token reaches
//! the physical partitions through [`Shards`].
//!
//! Today [`LocalShards`] implements it over this node's fjall store, which routes each token
//! to the physical partition that owns it. A cluster implements it as handles to replicated
//! groups (local when this node leads one, an RPC otherwise); the executor does not change.
//!
//! # Contract
//! - **Decided values.** A [`Mutation`] arrives with every value fixed: write timestamps,
//!   TTL expiry times (`local_deletion_time`), `now()` results and counter deltas are decided
//!   by the coordinator before the call. Applying it is deterministic, so replicas that apply
//!   the same mutations hold the same cells.
//! - **Atomicity.** [`Shards::apply`] applies every mutation it is given or none of them
//!   (a logged batch spanning partitions is all there or not at all after a crash). Each
//!   partition of a table appears at most once in one call.
//! - **Durability.** A write is durable once `apply` returns, unless it ran inside
//!   [`Shards::deferring_sync`]: then it may be acknowledged only after [`Shards::sync`].
//! - **Compare-and-set.** [`Shards::compare_and_set`] runs its decision and the write it
//!   returns with no other compare-and-set on the same partition in between, so conditional
//!   writes on one partition are linearizable.
//! - **Reads** see every write acknowledged before they started, and a write batch whole or
//!   not at all.

mod exact_nearest;
mod local;
mod partition_locks;
mod shard_error;

pub use local::LocalShards;
pub use partition_locks::PartitionLocks;
pub use shard_error::{Rejected, ShardError};

use crate::error::QueryError;
use storage::{
    Cursor, IndexLookup, Mutation, NearestRow, PartitionSlice, ScanPage, Slice, TableId,
    TableLayout, TokenRange, VectorIndexSpec,
};

/// Why a compare-and-set did not complete.
#[derive(Debug)]
pub enum CasError {
    /// The decision failed (a bad value, an invalid request).
    Decide(QueryError),
    /// The write the decision returned failed.
    Apply(ShardError),
}

/// The decision of a compare-and-set: reads the partition's current state through the shards
/// it is given, and returns the write to make, or `None` when a condition does not hold.
pub type CasDecision<'a> = dyn FnMut(&dyn Shards) -> Result<Option<Mutation>, QueryError> + 'a;

/// The shards one request uses ([`crate::node::Node::shards_at`]).
pub enum ShardsAt<'a> {
    /// This node's own.
    Borrowed(&'a dyn Shards),
    /// Made for the request (the cluster's, at its consistency level).
    Owned(Box<dyn Shards>),
}

impl ShardsAt<'_> {
    /// The shards.
    pub fn get(&self) -> &dyn Shards {
        match self {
            ShardsAt::Borrowed(s) => *s,
            ShardsAt::Owned(s) => s.as_ref(),
        }
    }
}

/// The physical partitions of every table, as the executor sees them.
pub trait Shards: Send + Sync {
    /// Applies mutations of one or more partitions, of one or more tables, atomically.
    ///
    /// # Errors
    /// As [`storage::Storage::apply_all`]; when one fails nothing is written.
    fn apply(&self, writes: &[(TableId, &Mutation)]) -> Result<(), ShardError>;

    /// Reads a slice of one logical partition (`partition_key`: its serialized components).
    ///
    /// # Errors
    /// As [`storage::Storage::read_partition`].
    fn read(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        slice: &Slice,
    ) -> Result<PartitionSlice, ShardError>;

    /// Scans live partitions in token order over `range`: at most `limit` rows, continuing
    /// after `cursor`.
    ///
    /// # Errors
    /// As [`storage::Storage::scan`].
    fn scan(
        &self,
        table: TableId,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, ShardError>;

    /// Runs `decide` on one partition with every other compare-and-set on it held off, and
    /// applies the mutation it returns (which must be of that partition). Returns whether a
    /// write was made.
    ///
    /// # Errors
    /// [`CasError::Decide`] when `decide` fails, [`CasError::Apply`] when the write does.
    fn compare_and_set(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        decide: &mut CasDecision<'_>,
    ) -> Result<bool, CasError>;

    /// True when writes to `table` would wait for the store to catch up (a request that
    /// must not block its thread goes elsewhere).
    fn write_stalled(&self, table: TableId) -> bool;

    /// Runs `work` with the durability of the writes it makes deferred (group commit).
    /// Returns true when [`Shards::sync`] is owed before any of them may be acknowledged.
    fn deferring_sync(&self, work: &mut dyn FnMut()) -> bool;

    /// Makes every write deferred by [`Shards::deferring_sync`] durable.
    ///
    /// # Errors
    /// On I/O failure; the deferred writes must then not be acknowledged.
    fn sync(&self) -> Result<(), ShardError>;

    /// Creates a table's partitions, or updates the layout of an existing one.
    ///
    /// # Errors
    /// As [`storage::Storage::create_table`].
    fn create_table(&self, table: TableId, layout: TableLayout) -> Result<(), ShardError>;

    /// Drops a table and its data.
    ///
    /// # Errors
    /// As [`storage::Storage::drop_table`].
    fn drop_table(&self, table: TableId) -> Result<(), ShardError>;

    /// Removes every row of a table.
    ///
    /// # Errors
    /// As [`storage::Storage::truncate`].
    fn truncate(&self, table: TableId) -> Result<(), ShardError>;

    /// The at most `k` live rows of `range` whose vectors in `column` (indexed with `index`)
    /// score highest against `query`, best first. The default reads the range exactly
    /// through [`Shards::scan`]; shards over this node's store answer from its graphs.
    ///
    /// # Errors
    /// As [`Shards::scan`].
    fn nearest(
        &self,
        table: TableId,
        range: TokenRange,
        index: &VectorIndexSpec,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<NearestRow>, ShardError> {
        exact_nearest::exact_nearest(self, table, range, index, query, k)
    }

    /// The rows of `range` a secondary index names for `lookup`'s values, paged as
    /// [`Shards::scan`] pages (a superset: callers check every row). Without index entries
    /// to read, the scan itself.
    ///
    /// # Errors
    /// As [`Shards::scan`].
    fn index_scan(
        &self,
        table: TableId,
        lookup: &IndexLookup,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, ShardError> {
        let _ = lookup;
        self.scan(table, range, limit, cursor)
    }
}
