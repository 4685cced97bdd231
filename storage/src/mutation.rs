//! Mutations: what one statement (or batch) changes in one partition, as the server hands it
//! to [`crate::Storage::apply`]: a partition deletion, clustering range deletions, static
//! column changes and row changes (liveness marker, row deletion, column changes).

use crate::key::ClusteringBound;

/// A deletion at a write timestamp (microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Deletion {
    /// Data written at or before this timestamp is shadowed.
    pub timestamp: i64,
}

/// The primary-key liveness marker that INSERT writes (UPDATE does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Liveness {
    /// Write timestamp (microseconds).
    pub timestamp: i64,
    /// TTL in seconds (`None` or 0: no expiry).
    pub ttl: Option<u32>,
}

/// A clustering range deletion (`DELETE ... WHERE ck > x AND ck <= y`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RangeDeletion {
    /// Start bound (a clustering prefix, inclusive or exclusive).
    pub start: ClusteringBound,
    /// End bound.
    pub end: ClusteringBound,
    /// The deletion.
    pub deletion: Deletion,
}

/// One change to one column.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ColumnOp {
    /// Sets a simple (or frozen) cell.
    Set {
        /// Protocol-serialized value.
        value: Vec<u8>,
        /// Write timestamp (microseconds).
        timestamp: i64,
        /// TTL in seconds.
        ttl: Option<u32>,
    },
    /// Deletes a simple cell (a cell tombstone).
    Delete {
        /// Write timestamp (microseconds).
        timestamp: i64,
    },
    /// Deletes a whole collection (before an overwrite `SET c = {...}`, or `DELETE c`).
    DeleteCollection {
        /// Write timestamp; use `timestamp - 1` for the overwrite case, as Cassandra does.
        timestamp: i64,
    },
    /// Sets one collection element: list (key = a timeuuid), set (key = element, value
    /// empty), map (key = map key), non-frozen UDT (key = field index as a smallint).
    SetElement {
        /// Element key, protocol-serialized.
        key: Vec<u8>,
        /// Element value, protocol-serialized.
        value: Vec<u8>,
        /// Write timestamp (microseconds).
        timestamp: i64,
        /// TTL in seconds.
        ttl: Option<u32>,
    },
    /// Deletes one collection element.
    DeleteElement {
        /// Element key, protocol-serialized.
        key: Vec<u8>,
        /// Write timestamp (microseconds).
        timestamp: i64,
    },
    /// Adds `delta` to a counter.
    AddCounter {
        /// Increment (negative to decrement).
        delta: i64,
        /// Write timestamp (microseconds).
        timestamp: i64,
    },
}

/// A change to one column of a row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ColumnWrite {
    /// Column id (from the server's schema).
    pub column: u32,
    /// What happens to it.
    pub op: ColumnOp,
}

/// Changes to one row.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct RowWrite {
    /// Full clustering, protocol-serialized, one value per clustering column.
    pub clustering: Vec<Vec<u8>>,
    /// The liveness marker (INSERT).
    pub liveness: Option<Liveness>,
    /// A row deletion (`DELETE FROM t WHERE pk = .. AND ck = ..`).
    pub deletion: Option<Deletion>,
    /// Column changes.
    pub columns: Vec<ColumnWrite>,
}

/// Everything that changes in one partition, applied atomically.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Mutation {
    /// Partition-key components, protocol-serialized, in key order.
    pub partition_key: Vec<Vec<u8>>,
    /// A partition deletion.
    pub partition_deletion: Option<Deletion>,
    /// Clustering range deletions.
    pub range_deletions: Vec<RangeDeletion>,
    /// Static column changes.
    pub static_columns: Vec<ColumnWrite>,
    /// Row changes.
    pub rows: Vec<RowWrite>,
}

impl ColumnOp {
    /// The bytes Cassandra counts for this change (`Cell.dataSize`): the value, the element
    /// key, the timestamp and, for an expiring cell, its TTL and expiry.
    fn data_size(&self) -> usize {
        let expiring = |ttl: &Option<u32>| if ttl.is_some_and(|t| t > 0) { 8 } else { 0 };
        match self {
            ColumnOp::Set { value, ttl, .. } => value.len() + 8 + expiring(ttl),
            ColumnOp::SetElement {
                key, value, ttl, ..
            } => key.len() + value.len() + 8 + expiring(ttl),
            ColumnOp::DeleteElement { key, .. } => key.len() + 12,
            ColumnOp::Delete { .. } | ColumnOp::DeleteCollection { .. } => 12,
            ColumnOp::AddCounter { .. } => 16,
        }
    }
}

impl Mutation {
    /// About the bytes Cassandra counts for this partition's update (`PartitionUpdate.dataSize`):
    /// what batch size limits compare with.
    pub fn data_size(&self) -> usize {
        let columns = |cols: &[ColumnWrite]| cols.iter().map(|c| c.op.data_size()).sum::<usize>();
        let deletions = self.partition_deletion.map_or(0, |_| 12) + self.range_deletions.len() * 24;
        let rows: usize = self
            .rows
            .iter()
            .map(|r| {
                r.clustering.iter().map(Vec::len).sum::<usize>()
                    + r.liveness.map_or(0, |_| 8)
                    + r.deletion.map_or(0, |_| 12)
                    + columns(&r.columns)
            })
            .sum();
        deletions + columns(&self.static_columns) + rows
    }
}
