//! Row bundles: an INSERT's simple cells stored inside the row's liveness item.
//!
//! An INSERT writes the row's liveness marker and its simple cells with one timestamp and one
//! TTL. Stored as one item per cell, a row cost a point read two lookups and a write three
//! memtable inserts; stored as one item (the liveness key, whose value is the marker with the
//! cells appended), it costs one of each. The marker's value bytes (empty for a plain marker)
//! hold the cells as `column u32 BE ‖ length u32 BE ‖ value`, in column order; each cell has the
//! marker's timestamp, TTL and expiry.
//!
//! Invariant kept by the write path (`crate::write`): a row never holds a bundled cell and a
//! separate cell item for the same column. A write that cannot keep a row as one bundle
//! (an UPDATE, a null, an older timestamp, a different column set) first *explodes* the row's
//! bundle into a plain marker and separate cell items, then reconciles as before. So a
//! bundle that expires shadows nothing but its own cells, and the compaction filter may purge
//! it like any liveness marker. Tables that never stored a separate row cell (the content flag
//! [`crate::content::SEPARATE_CELLS`] is clear) are read with the liveness lookup alone.

use crate::cell::StoredCell;
use crate::StorageError;

/// Appends one cell to a bundle's bytes. Cells must be appended in column order.
pub(crate) fn push(bundle: &mut Vec<u8>, column: u32, value: &[u8]) -> Result<(), StorageError> {
    let len = u32::try_from(value.len())
        .map_err(|_| StorageError::InvalidRequest("value longer than 4 GiB".into()))?;
    bundle.extend_from_slice(&column.to_be_bytes());
    bundle.extend_from_slice(&len.to_be_bytes());
    bundle.extend_from_slice(value);
    Ok(())
}

/// The (column, value) pairs of a bundle's bytes.
pub(crate) fn cells(bytes: &[u8]) -> Cells<'_> {
    Cells { rest: bytes }
}

/// Iterator over a bundle's cells; yields an error once on truncated bytes.
pub(crate) struct Cells<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Cells<'a> {
    type Item = Result<(u32, &'a [u8]), StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let parsed = (|| {
            let (col, rest) = self.rest.split_first_chunk::<4>()?;
            let (len, rest) = rest.split_first_chunk::<4>()?;
            let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
            (rest.len() >= len).then(|| (u32::from_be_bytes(*col), &rest[..len], &rest[len..]))
        })();
        match parsed {
            Some((col, value, rest)) => {
                self.rest = rest;
                Some(Ok((col, value)))
            }
            None => {
                self.rest = &[];
                Some(Err(StorageError::corrupt("truncated row bundle")))
            }
        }
    }
}

/// The marker's bundle bytes (empty for tombstones, which never carry a bundle).
pub(crate) fn bytes_of(marker: &StoredCell) -> &[u8] {
    match marker {
        StoredCell::Live { value, .. } | StoredCell::Expiring { value, .. } => value,
        StoredCell::Tombstone { .. } => &[],
    }
}

/// True when the liveness item carries cells.
pub(crate) fn has_cells(marker: &StoredCell) -> bool {
    !bytes_of(marker).is_empty()
}

/// The marker with `value` as its bytes, keeping its timestamp, TTL and expiry.
pub(crate) fn with_value(marker: &StoredCell, value: Vec<u8>) -> StoredCell {
    match marker {
        StoredCell::Live { timestamp, .. } => StoredCell::Live {
            timestamp: *timestamp,
            value,
        },
        StoredCell::Expiring {
            timestamp,
            ttl,
            expires_at,
            ..
        } => StoredCell::Expiring {
            timestamp: *timestamp,
            ttl: *ttl,
            expires_at: *expires_at,
            value,
        },
        StoredCell::Tombstone { .. } => marker.clone(),
    }
}

/// Splits a liveness item into its plain marker and its cells, each a stored cell with the
/// marker's timestamp, TTL and expiry.
pub(crate) fn explode(
    marker: &StoredCell,
) -> Result<(StoredCell, Vec<(u32, StoredCell)>), StorageError> {
    let cells = cells(bytes_of(marker))
        .map(|c| c.map(|(col, v)| (col, with_value(marker, v.to_vec()))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((with_value(marker, Vec::new()), cells))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_round_trip_and_truncation_is_an_error() {
        let mut b = Vec::new();
        push(&mut b, 2, b"abc").unwrap();
        push(&mut b, 7, b"").unwrap();
        let got: Vec<_> = cells(&b).collect::<Result<_, _>>().unwrap();
        assert_eq!(got, vec![(2, &b"abc"[..]), (7, &b""[..])]);
        let errors: Vec<_> = cells(&b[..b.len() - 1]).filter(Result::is_err).collect();
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn explode_gives_cells_the_markers_time_and_ttl() {
        let mut b = Vec::new();
        push(&mut b, 1, b"x").unwrap();
        let marker = StoredCell::Expiring {
            timestamp: 5,
            ttl: 10,
            expires_at: 99,
            value: b,
        };
        let (plain, cells) = explode(&marker).unwrap();
        assert!(!has_cells(&plain));
        assert_eq!(plain.timestamp(), 5);
        assert_eq!(
            cells,
            vec![(
                1,
                StoredCell::Expiring {
                    timestamp: 5,
                    ttl: 10,
                    expires_at: 99,
                    value: b"x".to_vec()
                }
            )]
        );
    }
}
