//! Entry keys of secondary indexes, in the store's index keyspace:
//!
//! ```text
//! table (u128 BE) ‖ tag (column u32 BE, target u8) ‖ value ‖ row
//! ```
//! `value` is the indexed value's memcomparable encoding ([`crate::key::encode_value`]; a map
//! entry is its key's then its value's), so entries of one value are contiguous and values
//! sort as Cassandra compares them. `row` is the row's key: its partition prefix (token, key)
//! then, for an index of a regular or clustering column, its encoded clustering. Entries of
//! one value therefore sort in token order, the order of a scan. An entry's value is empty.

use cql::types::DataType;

use super::spec::{IndexPlace, IndexSpec, IndexTarget};
use crate::key::{self, encode_value};
use crate::mutation::{ColumnOp, ColumnWrite, Mutation};
use crate::row::{ColumnValue, Row};
use crate::scan_page::ScannedPartition;
use crate::table::{TableId, TableLayout};
use crate::StorageError;

/// The key prefix of every entry of one index: table ‖ tag.
pub(crate) fn index_base(table: TableId, spec: &IndexSpec) -> Vec<u8> {
    let mut k = Vec::with_capacity(16 + 5 + 32);
    k.extend_from_slice(&table.0.to_be_bytes());
    k.extend_from_slice(&spec.tag());
    k
}

/// The key prefix of every entry of one table.
pub(crate) fn table_base(table: TableId) -> [u8; 16] {
    table.0.to_be_bytes()
}

/// Appends the encoding of `value` of type `ty`; a value storage cannot order (never for a
/// validated one) is kept as escaped bytes, consistently at writes and lookups.
pub(crate) fn encode_indexed(ty: &DataType, value: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    if encode_value(ty, value, out).is_err() {
        out.truncate(start);
        out.push(0x03);
        key::escape_bytes(value, out);
    }
}

/// The element types of a collection type: (key or element, value).
fn element_types(ty: &DataType) -> Option<(&DataType, Option<&DataType>)> {
    match ty.unfrozen() {
        DataType::List(e) | DataType::Set(e) => Some((e, None)),
        DataType::Map(k, v) => Some((k, Some(v))),
        _ => None,
    }
}

/// Splits a protocol-serialized collection into its elements (a map's as key, value pairs).
fn collection_elements(ty: &DataType, value: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    fn take<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
        let (len, tail) = rest.split_first_chunk::<4>()?;
        let len = i32::from_be_bytes(*len);
        let len = usize::try_from(len).unwrap_or(0);
        let (v, tail) = (tail.get(..len)?, tail.get(len..)?);
        *rest = tail;
        Some(v)
    }
    let mut out = Vec::new();
    let Some((n, mut rest)) = value.split_first_chunk::<4>() else {
        return out;
    };
    let map = matches!(ty.unfrozen(), DataType::Map(..));
    for _ in 0..i32::from_be_bytes(*n).max(0) {
        let Some(first) = take(&mut rest) else { break };
        let second = if map {
            match take(&mut rest) {
                Some(v) => v,
                None => break,
            }
        } else {
            &[]
        };
        out.push((first.to_vec(), second.to_vec()));
    }
    out
}

/// What one index makes of values: encodes them as its entries' value parts.
pub(crate) struct Indexer<'a> {
    spec: &'a IndexSpec,
    ty: &'a DataType,
}

impl<'a> Indexer<'a> {
    /// The indexer of `spec` in `layout`, or None when the layout lacks its column.
    pub(crate) fn new(spec: &'a IndexSpec, layout: &'a TableLayout) -> Option<Indexer<'a>> {
        let ty = match spec.place {
            IndexPlace::Regular | IndexPlace::Static => layout.columns.get(&spec.column),
            IndexPlace::Clustering(i) => layout.clustering.get(usize::from(i)).map(|c| &c.0),
            IndexPlace::PartitionKey(i) => layout.partition_key.get(usize::from(i)),
        }?;
        Some(Indexer { spec, ty })
    }

    /// The encoded value of one collection element (`key`, `value` as a row or a mutation
    /// holds them: a set's element is its key, a list's its value).
    fn element(&self, key: &[u8], value: &[u8], out: &mut Vec<Vec<u8>>) {
        let Some((kt, vt)) = element_types(self.ty) else {
            return;
        };
        let set = matches!(self.ty.unfrozen(), DataType::Set(_));
        let mut enc = Vec::new();
        match self.spec.target {
            IndexTarget::Keys => encode_indexed(kt, key, &mut enc),
            IndexTarget::Values if set => encode_indexed(kt, key, &mut enc),
            IndexTarget::Values => encode_indexed(vt.unwrap_or(kt), value, &mut enc),
            IndexTarget::Entries => {
                let Some(vt) = vt else { return };
                encode_indexed(kt, key, &mut enc);
                encode_indexed(vt, value, &mut enc);
            }
            IndexTarget::Simple | IndexTarget::Full => return,
        }
        out.push(enc);
    }

    /// The encoded values a whole cell value holds (a collection's elements for element
    /// targets).
    fn whole(&self, value: &[u8], out: &mut Vec<Vec<u8>>) {
        match self.spec.target {
            IndexTarget::Simple | IndexTarget::Full => {
                let mut enc = Vec::new();
                encode_indexed(self.ty, value, &mut enc);
                out.push(enc);
            }
            _ => {
                let list = matches!(self.ty.unfrozen(), DataType::List(_));
                for (k, v) in collection_elements(self.ty, value) {
                    // A serialized list holds values only.
                    if list {
                        self.element(&[], &k, out);
                    } else {
                        self.element(&k, &v, out);
                    }
                }
            }
        }
    }

    /// The encoded values a change to the indexed column writes.
    fn op(&self, op: &ColumnOp, out: &mut Vec<Vec<u8>>) {
        match op {
            ColumnOp::Set { value, .. } => self.whole(value, out),
            ColumnOp::SetElement { key, value, .. } => self.element(key, value, out),
            _ => {}
        }
    }

    /// The encoded values of the indexed column in a live column value.
    fn stored(&self, value: &ColumnValue, out: &mut Vec<Vec<u8>>) {
        match value {
            ColumnValue::Simple(cell) => self.whole(&cell.value, out),
            ColumnValue::Collection(elements) => {
                for (k, cell) in elements {
                    self.element(k, &cell.value, out);
                }
            }
        }
    }

    /// The encoded value a lookup asks for (`values` of [`super::IndexValues::Eq`] or
    /// an entry's key and value).
    pub(crate) fn lookup_value(&self, first: &[u8], second: Option<&[u8]>) -> Vec<u8> {
        let mut enc = Vec::new();
        match (self.spec.target, element_types(self.ty)) {
            (IndexTarget::Simple | IndexTarget::Full, _) | (_, None) => {
                encode_indexed(self.ty, first, &mut enc)
            }
            (IndexTarget::Keys, Some((kt, _))) => encode_indexed(kt, first, &mut enc),
            (IndexTarget::Values, Some((kt, vt))) => {
                encode_indexed(vt.unwrap_or(kt), first, &mut enc)
            }
            (IndexTarget::Entries, Some((kt, vt))) => {
                encode_indexed(kt, first, &mut enc);
                if let (Some(vt), Some(v)) = (vt, second) {
                    encode_indexed(vt, v, &mut enc);
                }
            }
        }
        enc
    }

    /// The type whose encoding a lookup's value part holds (to skip it in an entry key).
    pub(crate) fn value_types(&self) -> Vec<&DataType> {
        match (self.spec.target, element_types(self.ty)) {
            (IndexTarget::Simple | IndexTarget::Full, _) | (_, None) => vec![self.ty],
            (IndexTarget::Keys, Some((kt, _))) => vec![kt],
            (IndexTarget::Values, Some((kt, vt))) => vec![vt.unwrap_or(kt)],
            (IndexTarget::Entries, Some((kt, vt))) => vec![kt, vt.unwrap_or(kt)],
        }
    }

    /// True when a row (or, for an index of a static or key column, its partition) still
    /// holds the encoded value `value`.
    pub(crate) fn holds(
        &self,
        partition_key: &[Vec<u8>],
        statics: &std::collections::BTreeMap<u32, ColumnValue>,
        row: Option<&Row>,
        value: &[u8],
    ) -> bool {
        let mut values = Vec::new();
        self.live_row_values(partition_key, statics, row, &mut values);
        values.iter().any(|v| v == value)
    }

    /// The encoded values the indexed column holds in a row (`Some`), or in a partition's
    /// statics and key.
    fn live_row_values(
        &self,
        partition_key: &[Vec<u8>],
        statics: &std::collections::BTreeMap<u32, ColumnValue>,
        row: Option<&Row>,
        out: &mut Vec<Vec<u8>>,
    ) {
        match self.spec.place {
            IndexPlace::Regular => {
                if let Some(v) = row.and_then(|r| r.cells.get(&self.spec.column)) {
                    self.stored(v, out);
                }
            }
            IndexPlace::Static => {
                if let Some(v) = statics.get(&self.spec.column) {
                    self.stored(v, out);
                }
            }
            IndexPlace::Clustering(i) => {
                if let Some(v) = row.and_then(|r| r.clustering.get(usize::from(i))) {
                    self.whole(v, out);
                }
            }
            IndexPlace::PartitionKey(i) => {
                if let Some(v) = partition_key.get(usize::from(i)) {
                    self.whole(v, out);
                }
            }
        }
    }
}

/// True when a row change writes something live (a row an index of a key column names).
fn writes_live(liveness: bool, columns: &[ColumnWrite]) -> bool {
    liveness
        || columns.iter().any(|c| {
            matches!(
                c.op,
                ColumnOp::Set { .. } | ColumnOp::SetElement { .. } | ColumnOp::AddCounter { .. }
            )
        })
}

/// Appends to `out` the entry keys a mutation of the partition at `prefix` writes for one
/// index (`base` from [`index_base`]). Entries are never removed by writes: a row that no
/// longer holds the value is dropped by the lookup, which reads every row it names.
///
/// # Errors
/// [`StorageError::InvalidValue`] for a clustering value its type refuses.
pub(crate) fn mutation_entries(
    indexer: &Indexer<'_>,
    layout: &TableLayout,
    base: &[u8],
    prefix: &[u8],
    mutation: &Mutation,
    out: &mut Vec<Vec<u8>>,
) -> Result<(), StorageError> {
    let mut values = Vec::new();
    let spec = indexer.spec;
    match spec.place {
        IndexPlace::Static => {
            for c in mutation
                .static_columns
                .iter()
                .filter(|c| c.column == spec.column)
            {
                indexer.op(&c.op, &mut values);
            }
            push_entries(base, prefix, &[], &values, out);
        }
        IndexPlace::PartitionKey(i) => {
            let live = writes_live(false, &mutation.static_columns)
                || mutation
                    .rows
                    .iter()
                    .any(|r| writes_live(r.liveness.is_some(), &r.columns));
            if let (true, Some(v)) = (live, mutation.partition_key.get(usize::from(i))) {
                indexer.whole(v, &mut values);
            }
            push_entries(base, prefix, &[], &values, out);
        }
        IndexPlace::Regular | IndexPlace::Clustering(_) => {
            for row in &mutation.rows {
                values.clear();
                match spec.place {
                    IndexPlace::Clustering(i) => {
                        if writes_live(row.liveness.is_some(), &row.columns) {
                            if let Some(v) = row.clustering.get(usize::from(i)) {
                                indexer.whole(v, &mut values);
                            }
                        }
                    }
                    _ => {
                        for c in row.columns.iter().filter(|c| c.column == spec.column) {
                            indexer.op(&c.op, &mut values);
                        }
                    }
                }
                push_row_entries(base, prefix, layout, &row.clustering, &values, out)?;
            }
        }
    }
    Ok(())
}

/// Appends to `out` the entry keys of one stored partition (its live rows, statics and key)
/// for one index: what a build writes.
///
/// # Errors
/// [`StorageError::InvalidValue`] for a clustering value its type refuses.
pub(crate) fn partition_entries(
    indexer: &Indexer<'_>,
    layout: &TableLayout,
    base: &[u8],
    prefix: &[u8],
    partition: &ScannedPartition,
    out: &mut Vec<Vec<u8>>,
) -> Result<(), StorageError> {
    let (partition_key, statics, rows) = (
        &partition.partition_key,
        &partition.static_cells,
        &partition.rows,
    );
    let mut values = Vec::new();
    if indexer.spec.place.per_partition() {
        indexer.live_row_values(partition_key, statics, rows.first(), &mut values);
        push_entries(base, prefix, &[], &values, out);
        return Ok(());
    }
    for row in rows {
        values.clear();
        indexer.live_row_values(partition_key, statics, Some(row), &mut values);
        push_row_entries(base, prefix, layout, &row.clustering, &values, out)?;
    }
    Ok(())
}

/// Appends the entries of one row (clustering `row_clustering`) holding `values`.
fn push_row_entries(
    base: &[u8],
    prefix: &[u8],
    layout: &TableLayout,
    row_clustering: &[Vec<u8>],
    values: &[Vec<u8>],
    out: &mut Vec<Vec<u8>>,
) -> Result<(), StorageError> {
    if values.is_empty() {
        return Ok(());
    }
    let mut clustering = Vec::new();
    key::encode_clustering(&layout.clustering, row_clustering, &mut clustering)?;
    push_entries(base, prefix, &clustering, values, out);
    Ok(())
}

fn push_entries(
    base: &[u8],
    prefix: &[u8],
    clustering: &[u8],
    values: &[Vec<u8>],
    out: &mut Vec<Vec<u8>>,
) {
    for v in values {
        let mut k = Vec::with_capacity(base.len() + v.len() + prefix.len() + clustering.len());
        k.extend_from_slice(base);
        k.extend_from_slice(v);
        k.extend_from_slice(prefix);
        k.extend_from_slice(clustering);
        out.push(k);
    }
}
