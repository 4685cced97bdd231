//! Live rows as reads return them: clustering values and live columns, each a simple cell or
//! a collection's live elements.

use std::collections::BTreeMap;

use crate::cell::CellValue;

/// A live column value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ColumnValue {
    /// A simple, frozen or counter cell.
    Simple(CellValue),
    /// The live elements of a non-frozen collection, in element-key order: (element key,
    /// protocol-serialized, then the cell; a set element's value is empty).
    Collection(Vec<(Vec<u8>, CellValue)>),
}

/// A live row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    /// Clustering values, protocol-serialized (decimals come back canonical).
    pub clustering: Vec<Vec<u8>>,
    /// Live columns by column id (absent = null).
    pub cells: BTreeMap<u32, ColumnValue>,
}
