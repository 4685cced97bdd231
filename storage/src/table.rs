//! Table identity and layout: what the server tells storage about a table's primary key and
//! columns.

use std::collections::BTreeMap;
use std::fmt;

use cql::types::DataType;

use crate::ann::VectorIndexSpec;
use crate::key::Order;
use crate::secondary::spec::IndexSpec;

/// A table's identity (the schema's table uuid as a u128).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct TableId(pub u128);

impl fmt::Display for TableId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// Cassandra's default `gc_grace_seconds` (10 days).
pub const DEFAULT_GC_GRACE_SECONDS: u32 = 864_000;

/// The shape of a table that storage needs: key types and column types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableLayout {
    /// Partition-key component types, in key order.
    pub partition_key: Vec<DataType>,
    /// Clustering column types and orders, in clustering order.
    pub clustering: Vec<(DataType, Order)>,
    /// Regular and static columns by column id. Needed for collection columns (their element
    /// keys are ordered by the element type); simple columns may be omitted.
    pub columns: BTreeMap<u32, DataType>,
    /// Every regular (non-static) column id, given only when all of them are single cells
    /// (no non-frozen collection or UDT). A read of one whole row then fetches the row's items
    /// with bloom-filtered point lookups instead of a range read, whose cost grows with the
    /// number of LSM levels. `None`: rows are always read as ranges.
    pub point_row_columns: Option<Vec<u32>>,
    /// Tombstones and expired cells older than this are purged at compaction (see
    /// `compaction`). Default [`DEFAULT_GC_GRACE_SECONDS`].
    pub gc_grace_seconds: u32,
    /// The table's vector indexes: each keeps an HNSW graph per physical partition
    /// ([`crate::Storage::nearest`]).
    pub vector_indexes: Vec<VectorIndexSpec>,
    /// The table's other secondary indexes: entries kept in step with writes
    /// ([`crate::Storage::index_scan`]).
    pub indexes: Vec<IndexSpec>,
}

impl Default for TableLayout {
    fn default() -> Self {
        TableLayout {
            partition_key: Vec::new(),
            clustering: Vec::new(),
            columns: BTreeMap::new(),
            point_row_columns: None,
            gc_grace_seconds: DEFAULT_GC_GRACE_SECONDS,
            vector_indexes: Vec::new(),
            indexes: Vec::new(),
        }
    }
}
