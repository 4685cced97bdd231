//! A partition read: which rows of one partition [`crate::Storage::read_partition`] reads
//! (bounds, direction, limit, cursor) and what it returns.

use std::collections::BTreeMap;

use crate::cursor::Cursor;
use crate::key::ClusteringBound;
use crate::row::{ColumnValue, Row};

/// Which rows of a partition to read.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Slice {
    /// Start bound (in clustering order, whatever the direction).
    pub start: ClusteringBound,
    /// End bound.
    pub end: ClusteringBound,
    /// Return rows in reverse clustering order.
    pub reversed: bool,
    /// At most this many rows (`None`: all).
    pub limit: Option<usize>,
    /// Continue after the row a previous page ended on.
    pub cursor: Option<Cursor>,
}

/// The result of [`crate::Storage::read_partition`].
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct PartitionSlice {
    /// Live static columns.
    pub static_cells: BTreeMap<u32, ColumnValue>,
    /// Live rows in the slice, in the requested order.
    pub rows: Vec<Row>,
    /// Set when the limit stopped the read and more rows may follow.
    pub cursor: Option<Cursor>,
    /// Stored items this read pulled from fjall.
    pub items_read: u64,
}
