//! A token-range scan: the range [`crate::Storage::scan`] walks and the page of partitions it
//! returns.

use std::collections::BTreeMap;

use crate::cursor::Cursor;
use crate::row::{ColumnValue, Row};
use crate::token::MIN_TOKEN;

/// A token range `(start, end]`; an `end` of [`MIN_TOKEN`] means the end of the ring.
/// A range with `start >= end` (and `end` not MIN) is empty: callers unwrap ranges first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TokenRange {
    /// Exclusive start ([`MIN_TOKEN`]: the start of the ring).
    pub start: i64,
    /// Inclusive end ([`MIN_TOKEN`]: the end of the ring).
    pub end: i64,
}

impl TokenRange {
    /// The whole ring.
    pub const FULL: TokenRange = TokenRange {
        start: MIN_TOKEN,
        end: MIN_TOKEN,
    };
}

/// One partition in a scan page.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScannedPartition {
    /// Its token.
    pub token: i64,
    /// Partition-key components, protocol-serialized.
    pub partition_key: Vec<Vec<u8>>,
    /// Live static columns.
    pub static_cells: BTreeMap<u32, ColumnValue>,
    /// Live rows (in this page).
    pub rows: Vec<Row>,
}

/// The result of [`crate::Storage::scan`].
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ScanPage {
    /// Partitions in token order (then key bytes).
    pub partitions: Vec<ScannedPartition>,
    /// Set when the limit stopped the scan.
    pub cursor: Option<Cursor>,
    /// Stored items this scan pulled from fjall.
    pub items_read: u64,
}
