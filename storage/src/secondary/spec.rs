//! What storage knows of a secondary index (a table's [`IndexSpec`]s come with its layout) and
//! what a query asks of one ([`IndexLookup`]).

/// What part of a column an index covers (Cassandra's `IndexTarget.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum IndexTarget {
    /// The column's value (of a regular, static or key column).
    Simple,
    /// A map's keys.
    Keys,
    /// A collection's values (a set's elements).
    Values,
    /// A map's entries (key and value).
    Entries,
    /// A whole frozen collection.
    Full,
}

/// Where the indexed column lives, which says whether an entry names a row or a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum IndexPlace {
    /// A regular column: an entry per row.
    Regular,
    /// A static column: an entry per partition.
    Static,
    /// The clustering column at this position: an entry per row.
    Clustering(u16),
    /// The partition-key component at this position: an entry per partition.
    PartitionKey(u16),
}

impl IndexPlace {
    /// True when an entry names a whole partition rather than one row.
    pub(crate) fn per_partition(self) -> bool {
        matches!(self, IndexPlace::Static | IndexPlace::PartitionKey(_))
    }
}

/// One secondary index of a table, as storage keeps it: entries `value → row` in the store's
/// index keyspace, written in the same batch as the rows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct IndexSpec {
    /// The indexed column's id.
    pub column: u32,
    /// What of it is indexed.
    pub target: IndexTarget,
    /// Where the column lives (its type comes from the table's layout).
    pub place: IndexPlace,
}

impl IndexSpec {
    /// The index's tag in entry keys: column id and target.
    pub(crate) fn tag(&self) -> [u8; 5] {
        let c = self.column.to_be_bytes();
        let t = match self.target {
            IndexTarget::Simple => 0,
            IndexTarget::Keys => 1,
            IndexTarget::Values => 2,
            IndexTarget::Entries => 3,
            IndexTarget::Full => 4,
        };
        [c[0], c[1], c[2], c[3], t]
    }
}

/// The values an index query wants, protocol-serialized.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum IndexValues {
    /// Entries equal to this value (a collection element for Keys and Values).
    Eq(Vec<u8>),
    /// Map entries with this key and value.
    Entry(Vec<u8>, Vec<u8>),
    /// Values between two bounds (each given with whether it is inclusive).
    Range {
        /// The lower bound.
        lower: Option<(Vec<u8>, bool)>,
        /// The upper bound.
        upper: Option<(Vec<u8>, bool)>,
    },
}

/// An index query: the rows whose indexed column holds the values (a superset may come back:
/// callers check every row against their restrictions).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexLookup {
    /// The index, as in the table's layout.
    pub index: IndexSpec,
    /// The values wanted.
    pub values: IndexValues,
}
