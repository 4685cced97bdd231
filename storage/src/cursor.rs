//! Paging cursors: the opaque position a page of a partition read or a scan ends on, and how
//! it is encoded (a kind byte, then the keys to continue after).

use crate::StorageError;

/// Kind byte: a partition read, after the row whose encoded clustering follows.
const SLICE: u8 = 1;
/// Kind byte: a scan, after the partition whose key prefix follows.
const AFTER_PARTITION: u8 = 2;
/// Kind byte: a scan, inside a partition: its prefix's length (u32), the prefix, then the
/// encoded clustering of the row to continue after.
const IN_PARTITION: u8 = 3;

/// An opaque paging position, to be handed back unchanged to continue a read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cursor(Vec<u8>);

impl Cursor {
    /// The bytes to put into a paging state.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Rebuilds a cursor from paging-state bytes (validated when used).
    pub fn from_bytes(bytes: Vec<u8>) -> Cursor {
        Cursor(bytes)
    }

    /// A partition read's cursor: continue after the row with encoded clustering `after`.
    pub(crate) fn in_slice(after: &[u8]) -> Cursor {
        Cursor([&[SLICE][..], after].concat())
    }

    /// A scan's cursor: continue after the partition with key prefix `prefix`.
    pub(crate) fn after_partition(prefix: &[u8]) -> Cursor {
        Cursor([&[AFTER_PARTITION][..], prefix].concat())
    }

    /// A scan's cursor: continue inside the partition `prefix`, after the row with encoded
    /// clustering `after`.
    pub(crate) fn in_partition(prefix: &[u8], after: &[u8]) -> Cursor {
        let mut bytes = vec![IN_PARTITION];
        bytes.extend_from_slice(&(prefix.len() as u32).to_be_bytes());
        bytes.extend_from_slice(prefix);
        bytes.extend_from_slice(after);
        Cursor(bytes)
    }

    /// The encoded clustering a partition read's cursor continues after.
    ///
    /// # Errors
    /// [`StorageError::InvalidCursor`] for any other cursor.
    pub(crate) fn slice_position(&self) -> Result<&[u8], StorageError> {
        match self.0.split_first() {
            Some((&SLICE, after)) => Ok(after),
            _ => Err(StorageError::InvalidCursor),
        }
    }

    /// The token of the partition a scan's cursor stopped at (a key prefix starts with the
    /// token, sign bit flipped, big-endian); None for a partition read's or a malformed cursor.
    pub fn scan_token(&self) -> Option<i64> {
        let prefix = match self.scan_position().ok()? {
            ScanPosition::AfterPartition(prefix) | ScanPosition::InPartition { prefix, .. } => {
                prefix
            }
        };
        let bytes: [u8; 8] = prefix.get(..8)?.try_into().ok()?;
        Some(crate::key::decode_token(bytes))
    }

    /// Where a scan's cursor continues.
    ///
    /// # Errors
    /// [`StorageError::InvalidCursor`] for a malformed cursor or a partition read's.
    pub(crate) fn scan_position(&self) -> Result<ScanPosition<'_>, StorageError> {
        match self.0.split_first() {
            Some((&AFTER_PARTITION, prefix)) => Ok(ScanPosition::AfterPartition(prefix)),
            Some((&IN_PARTITION, rest)) => {
                let (len, rest) = rest
                    .split_first_chunk::<4>()
                    .ok_or(StorageError::InvalidCursor)?;
                let len = u32::from_be_bytes(*len) as usize;
                if rest.len() < len {
                    return Err(StorageError::InvalidCursor);
                }
                let (prefix, after) = rest.split_at(len);
                Ok(ScanPosition::InPartition { prefix, after })
            }
            _ => Err(StorageError::InvalidCursor),
        }
    }
}

/// Where a scan continues, as its cursor says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanPosition<'a> {
    /// After the partition with this key prefix.
    AfterPartition(&'a [u8]),
    /// Inside the partition `prefix`, after the row with encoded clustering `after`.
    InPartition {
        /// The partition's key prefix.
        prefix: &'a [u8],
        /// The encoded clustering of the last row returned.
        after: &'a [u8],
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_cursors_tell_their_token() {
        for token in [i64::MIN + 1, -5, 0, 7, i64::MAX] {
            let prefix = crate::key::partition_prefix(token, b"key");
            assert_eq!(Cursor::after_partition(&prefix).scan_token(), Some(token));
            assert_eq!(
                Cursor::in_partition(&prefix, b"row").scan_token(),
                Some(token)
            );
        }
        assert_eq!(Cursor::in_slice(b"row").scan_token(), None);
    }

    #[test]
    fn cursors_round_trip_and_are_told_apart() {
        let slice = Cursor::in_slice(b"row");
        assert_eq!(slice.slice_position().unwrap(), b"row");
        assert!(slice.scan_position().is_err());
        let after = Cursor::after_partition(b"pk");
        assert_eq!(
            after.scan_position().unwrap(),
            ScanPosition::AfterPartition(b"pk")
        );
        assert!(after.slice_position().is_err());
        let inside = Cursor::from_bytes(Cursor::in_partition(b"pk", b"row").as_bytes().to_vec());
        assert_eq!(
            inside.scan_position().unwrap(),
            ScanPosition::InPartition {
                prefix: b"pk",
                after: b"row"
            }
        );
        assert!(Cursor::from_bytes(vec![IN_PARTITION, 0, 0, 0, 9])
            .scan_position()
            .is_err());
        assert!(Cursor::from_bytes(Vec::new()).slice_position().is_err());
    }
}
