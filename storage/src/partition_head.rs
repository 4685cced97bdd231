//! What a partition holds before its rows, as a read gathers it: the partition deletion, the
//! static row's items and the range tombstones (see [`crate::key`] for their key sections).

use crate::cell::StoredCell;
use crate::key::{self, ItemPath};
use crate::StorageError;

/// Deletions that apply to a whole partition read.
#[derive(Default)]
pub(crate) struct PartitionDeletions {
    /// The partition deletion's timestamp.
    pub(crate) partition: Option<i64>,
    /// (start, end exclusive, timestamp) in encoded clustering bytes.
    pub(crate) ranges: Vec<(Vec<u8>, Vec<u8>, i64)>,
}

/// The items of a partition before its rows, gathered in key order.
#[derive(Default)]
pub(crate) struct PartitionHead {
    pub(crate) dels: PartitionDeletions,
    /// The static row's items.
    pub(crate) statics: Vec<(ItemPath, StoredCell)>,
}

impl PartitionHead {
    /// Takes one item; `rest` is its key after the partition prefix. Rows and the size cell
    /// are not head items and are ignored.
    pub(crate) fn add(&mut self, rest: &[u8], cell: StoredCell) -> Result<(), StorageError> {
        match rest.split_first() {
            Some((&key::SECTION_PARTITION_DELETION, [])) => {
                self.dels.partition = Some(cell.timestamp());
            }
            Some((&key::SECTION_STATIC, path)) => {
                self.statics.push((ItemPath::decode(path)?, cell));
            }
            Some((&key::SECTION_RANGE_TOMBSTONE, body)) => {
                let (len, rest) = body
                    .split_first_chunk::<2>()
                    .ok_or_else(|| StorageError::corrupt("range tombstone key"))?;
                let len = usize::from(u16::from_be_bytes(*len));
                if rest.len() < len {
                    return Err(StorageError::corrupt("range tombstone key"));
                }
                let (lo, hi) = rest.split_at(len);
                self.dels
                    .ranges
                    .push((lo.to_vec(), hi.to_vec(), cell.timestamp()));
            }
            _ => {}
        }
        Ok(())
    }
}

impl PartitionDeletions {
    /// The newest deletion covering the row with encoded clustering `clustering`.
    pub(crate) fn covering(&self, clustering: &[u8]) -> Option<i64> {
        self.ranges
            .iter()
            .filter(|(lo, hi, _)| lo.as_slice() <= clustering && clustering < hi.as_slice())
            .map(|r| r.2)
            .chain(self.partition)
            .max()
    }
}
