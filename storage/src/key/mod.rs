//! The order-preserving key layout: byte order of keys is Cassandra's order of data.
//!
//! # Design note: the key layout
//! Every item of a table is one fjall key in the table's keyspace:
//!
//! ```text
//! token      8 bytes, i64 with the sign bit flipped, big-endian (byte order = token order)
//! pk         the serialized partition key, escaped (00 -> 00 FF) and terminated by 00 01, so
//!            partitions with equal tokens sort by raw key bytes and no key is a prefix of another
//! section    00 partition deletion | 01 static row | 02 range tombstone | 03 clustered row
//!            | FE the partition's size cell (u64 BE: key + value bytes of its other items, then
//!              flags); a partition without head items has none until a write changes the
//!              size its first write gave it, so a missing cell does not mean a missing partition
//! then, for a row (section 03): the clustering components, each a memcomparable value
//!            (see [`encode_value`]; header 01 empty / 02 value), every byte inverted for DESC;
//!            then 00 ending the clustering (below every component header 01/02/FD/FE)
//! item       00 liveness marker | 01 row deletion | 02 col(u32 BE) simple cell
//!            | 03 col(u32 BE) [element] collection: no element = whole-collection deletion,
//!              else the element key (list: timeuuid, set: element, map: key) as a value
//! ```
//! The static row (section 01) is followed directly by an item. A range tombstone (section 02)
//! is `u16 len ‖ start ‖ end`, both bounds in the byte form of [`ClusteringBound`]s below.
//!
//! A clustering *prefix* `P` bounds rows as byte ranges: every row extending `P` lies in
//! `[enc(P), enc(P) ‖ FF)`, because no component header and no terminator is `FF`. So slices,
//! reverse slices and paging are plain fjall range scans.
//!
//! Physical partitions ([`crate::ring`]) cut this key space at token boundaries only, so a
//! logical partition's keys always stay together in one fjall keyspace.

mod number;
mod value;

#[cfg(test)]
mod tests;

use cql::types::DataType;
use smallvec::SmallVec;

pub use value::encode_value;
pub(crate) use value::{decode_value, escape_bytes, unescape_bytes, KeyReader};

use crate::StorageError;

/// Section byte: the partition deletion (one key per partition).
pub(crate) const SECTION_PARTITION_DELETION: u8 = 0x00;
/// Section byte: the static row.
pub(crate) const SECTION_STATIC: u8 = 0x01;
/// Section byte: range tombstones.
pub(crate) const SECTION_RANGE_TOMBSTONE: u8 = 0x02;
/// Section byte: clustered rows.
pub(crate) const SECTION_ROWS: u8 = 0x03;
/// Section byte: the partition's size cell (not a stored cell; skipped by reads).
pub(crate) const SECTION_SIZE: u8 = 0xfe;
/// Section byte of no stored item: the item cache's key of a partition's cached rows
/// (`crate::partition_cache`).
pub(crate) const SECTION_CACHED_ROWS: u8 = 0xfd;
/// Ends the clustering of a row key.
pub(crate) const CLUSTERING_END: u8 = 0x00;
/// Greater than any byte that can follow a clustering prefix.
pub(crate) const AFTER_PREFIX: u8 = 0xff;

/// A clustering column's order (`WITH CLUSTERING ORDER BY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Order {
    /// Ascending (the default).
    #[default]
    Asc,
    /// Descending: the comparator is inverted (Cassandra's `ReversedType`).
    Desc,
}

/// The token as 8 key bytes: sign bit flipped, big-endian.
pub fn encode_token(token: i64) -> [u8; 8] {
    ((token as u64) ^ (1 << 63)).to_be_bytes()
}

/// Inverse of [`encode_token`].
pub fn decode_token(bytes: [u8; 8]) -> i64 {
    (u64::from_be_bytes(bytes) ^ (1 << 63)) as i64
}

/// The key prefix shared by every item of one partition: token ‖ escaped serialized key.
pub fn partition_prefix(token: i64, serialized_key: &[u8]) -> Vec<u8> {
    // The token, the key with every byte escaped at worst, the terminator: one allocation
    // (a bigint key of a small number is mostly zeros; growing the buffer for their escapes
    // was 1.9% of a point read's connection-thread time).
    let mut out = Vec::with_capacity(8 + 2 * serialized_key.len() + 2);
    out.extend_from_slice(&encode_token(token));
    escape_bytes(serialized_key, &mut out);
    out
}

/// The key of a partition's size cell: in place for prefixes of a few fixed-size columns
/// (every write looks it up or adds it to the partition filter).
pub(crate) fn size_cell_key(prefix: &[u8]) -> SmallVec<[u8; 64]> {
    let mut key = SmallVec::with_capacity(prefix.len() + 1);
    key.extend_from_slice(prefix);
    key.push(SECTION_SIZE);
    key
}

/// `prefix` followed by `tail`, with room for `reserve` more bytes (keys are built by
/// appending; sizing them once spares a reallocation per appended part).
pub(crate) fn extended(prefix: &[u8], tail: &[u8], reserve: usize) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + tail.len() + reserve);
    k.extend_from_slice(prefix);
    k.extend_from_slice(tail);
    k
}

/// The key of the item at `path` under a row or static-row key prefix.
pub(crate) fn path_key(prefix: &[u8], path: &ItemPath) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + path.encoded_len());
    k.extend_from_slice(prefix);
    path.encode(&mut k);
    k
}

/// The token of a key (or key position); positions shorter than a token count as MIN.
pub(crate) fn token_of(key: &[u8]) -> i64 {
    match key.first_chunk::<8>() {
        Some(t) => decode_token(*t),
        None => i64::MIN,
    }
}

/// Decodes a size cell's value.
pub(crate) fn decode_size(v: &[u8]) -> Result<u64, StorageError> {
    decode_size_cell(v).map(|(size, _)| size)
}

/// Size-cell flag: the partition has, or once had, items before its rows (a partition
/// deletion, static cells or range tombstones), so reads must look at its head.
pub(crate) const SIZE_FLAG_HEAD: u8 = 1;

/// A size cell's (size, flags). Cells written before flags existed are 8 bytes and get
/// every flag (nothing is known, so nothing may be skipped).
pub(crate) fn decode_size_cell(v: &[u8]) -> Result<(u64, u8), StorageError> {
    let (size, flags) = match v.len() {
        8 => (v, SIZE_FLAG_HEAD),
        9 => (&v[..8], v[8]),
        _ => {
            return Err(StorageError::corrupt(
                "partition size cell is not 8 or 9 bytes",
            ))
        }
    };
    let b: [u8; 8] = size
        .try_into()
        .map_err(|_| StorageError::corrupt("partition size cell"))?;
    Ok((u64::from_be_bytes(b), flags))
}

/// Encodes a size cell: big-endian size, then the flags byte.
pub(crate) fn encode_size_cell(size: u64, flags: u8) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[..8].copy_from_slice(&size.to_be_bytes());
    out[8] = flags;
    out
}

/// Splits a key into (token, serialized partition key, rest after the partition prefix).
///
/// # Errors
/// [`StorageError::Corrupt`] when the key does not start with a valid partition prefix.
pub fn split_partition_prefix(key: &[u8]) -> Result<(i64, Vec<u8>, &[u8]), StorageError> {
    let (token, rest) = key
        .split_first_chunk::<8>()
        .ok_or_else(|| StorageError::corrupt("key shorter than a token"))?;
    let mut reader = KeyReader::new(rest, false);
    let pk = unescape_bytes(&mut reader)?;
    Ok((decode_token(*token), pk, reader.remaining()))
}

/// Appends the memcomparable encoding of a clustering prefix (`values.len()` ≤ columns).
///
/// # Errors
/// [`StorageError::InvalidRequest`] for too many values, [`StorageError::InvalidValue`] for a
/// value that is not a valid serialization of its column's type.
pub fn encode_clustering(
    columns: &[(DataType, Order)],
    values: &[impl AsRef<[u8]>],
    out: &mut Vec<u8>,
) -> Result<(), StorageError> {
    if values.len() > columns.len() {
        return Err(StorageError::InvalidRequest(format!(
            "{} clustering values for {} clustering columns",
            values.len(),
            columns.len()
        )));
    }
    for ((ty, order), v) in columns.iter().zip(values) {
        let start = out.len();
        encode_value(ty, v.as_ref(), out)?;
        if *order == Order::Desc {
            out[start..].iter_mut().for_each(|b| *b = !*b);
        }
    }
    Ok(())
}

/// Decodes `columns.len()` clustering components from the front of `reader` back to their
/// protocol serializations.
pub(crate) fn decode_clustering_from(
    columns: &[(DataType, Order)],
    reader: &mut KeyReader<'_>,
) -> Result<Vec<Vec<u8>>, StorageError> {
    let mut out = Vec::with_capacity(columns.len());
    for (ty, order) in columns {
        reader.set_inverted(*order == Order::Desc);
        out.push(decode_value(ty, reader)?);
    }
    reader.set_inverted(false);
    Ok(out)
}

/// Decodes a full clustering encoded by [`encode_clustering`].
///
/// # Errors
/// [`StorageError::Corrupt`] when the bytes are not such an encoding (or have trailing bytes).
pub fn decode_clustering(
    columns: &[(DataType, Order)],
    bytes: &[u8],
) -> Result<Vec<Vec<u8>>, StorageError> {
    let mut reader = KeyReader::new(bytes, false);
    let out = decode_clustering_from(columns, &mut reader)?;
    if !reader.remaining().is_empty() {
        return Err(StorageError::corrupt("trailing bytes after clustering"));
    }
    Ok(out)
}

/// One end of a clustering slice: a clustering prefix, inclusive or exclusive, or none.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum ClusteringBound {
    /// No bound on this side.
    #[default]
    Unbounded,
    /// Rows whose clustering starts with this prefix are included.
    Inclusive(Vec<Vec<u8>>),
    /// Rows whose clustering starts with this prefix are excluded.
    Exclusive(Vec<Vec<u8>>),
}

/// The lowest encoded clustering (inclusive) a start bound admits; empty when unbounded.
///
/// # Errors
/// As [`encode_clustering`].
pub fn start_bytes(
    columns: &[(DataType, Order)],
    bound: &ClusteringBound,
) -> Result<Vec<u8>, StorageError> {
    let mut out = Vec::new();
    match bound {
        ClusteringBound::Unbounded => {}
        ClusteringBound::Inclusive(p) => encode_clustering(columns, p, &mut out)?,
        ClusteringBound::Exclusive(p) => {
            encode_clustering(columns, p, &mut out)?;
            out.push(AFTER_PREFIX);
        }
    }
    Ok(out)
}

/// The encoded clustering an end bound stops before (exclusive); `[FF]` when unbounded.
///
/// # Errors
/// As [`encode_clustering`].
pub fn end_bytes(
    columns: &[(DataType, Order)],
    bound: &ClusteringBound,
) -> Result<Vec<u8>, StorageError> {
    let mut out = Vec::new();
    match bound {
        ClusteringBound::Unbounded => out.push(AFTER_PREFIX),
        ClusteringBound::Inclusive(p) => {
            encode_clustering(columns, p, &mut out)?;
            out.push(AFTER_PREFIX);
        }
        ClusteringBound::Exclusive(p) => encode_clustering(columns, p, &mut out)?,
    }
    Ok(out)
}

/// What a row-level (or static-row) key addresses, after the clustering.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ItemPath {
    /// The primary-key liveness marker written by INSERT.
    Liveness,
    /// The row deletion.
    RowDeletion,
    /// A simple (or counter, or frozen) cell.
    Cell(u32),
    /// A collection column: `None` is the whole-collection deletion, `Some` an element key
    /// already encoded as a memcomparable value.
    Complex(u32, Option<Vec<u8>>),
}

const ITEM_LIVENESS: u8 = 0x00;
const ITEM_ROW_DELETION: u8 = 0x01;
const ITEM_CELL: u8 = 0x02;
const ITEM_COMPLEX: u8 = 0x03;

impl ItemPath {
    /// Bytes [`ItemPath::encode`] appends.
    pub(crate) fn encoded_len(&self) -> usize {
        match self {
            ItemPath::Liveness | ItemPath::RowDeletion => 1,
            ItemPath::Cell(_) => 5,
            ItemPath::Complex(_, elem) => 5 + elem.as_ref().map_or(0, Vec::len),
        }
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            ItemPath::Liveness => out.push(ITEM_LIVENESS),
            ItemPath::RowDeletion => out.push(ITEM_ROW_DELETION),
            ItemPath::Cell(c) => {
                out.push(ITEM_CELL);
                out.extend_from_slice(&c.to_be_bytes());
            }
            ItemPath::Complex(c, elem) => {
                out.push(ITEM_COMPLEX);
                out.extend_from_slice(&c.to_be_bytes());
                if let Some(e) = elem {
                    out.extend_from_slice(e);
                }
            }
        }
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<ItemPath, StorageError> {
        let column = |rest: &[u8]| -> Result<(u32, Vec<u8>), StorageError> {
            let (c, elem) = rest
                .split_first_chunk::<4>()
                .ok_or_else(|| StorageError::corrupt("truncated column id"))?;
            Ok((u32::from_be_bytes(*c), elem.to_vec()))
        };
        match bytes.split_first() {
            Some((&ITEM_LIVENESS, [])) => Ok(ItemPath::Liveness),
            Some((&ITEM_ROW_DELETION, [])) => Ok(ItemPath::RowDeletion),
            Some((&ITEM_CELL, rest)) => match column(rest)? {
                (c, e) if e.is_empty() => Ok(ItemPath::Cell(c)),
                _ => Err(StorageError::corrupt("trailing bytes after cell")),
            },
            Some((&ITEM_COMPLEX, rest)) => {
                let (c, e) = column(rest)?;
                Ok(ItemPath::Complex(c, (!e.is_empty()).then_some(e)))
            }
            _ => Err(StorageError::corrupt("bad item path")),
        }
    }
}
