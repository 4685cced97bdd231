//! Counting what stored items add up to by walking them: their bytes and the logical
//! partitions they belong to (the size accounting's answer when no statistics or size cell
//! hold it).

use fjall::Keyspace;

use crate::StorageError;

/// Counts the logical partitions of keys seen in key order (not every partition has a size
/// cell, see `crate::key`).
#[derive(Default)]
pub(crate) struct PartitionCounter {
    /// Partitions seen.
    pub(crate) count: u64,
    last: Vec<u8>,
}

impl PartitionCounter {
    /// Counts `key`'s partition if it differs from the previous key's; returns whether it did.
    pub(crate) fn see(&mut self, key: &[u8]) -> Result<bool, StorageError> {
        let (_, _, rest) = crate::key::split_partition_prefix(key)?;
        let prefix = &key[..key.len() - rest.len()];
        if prefix == self.last.as_slice() {
            return Ok(false);
        }
        self.last.clear();
        self.last.extend_from_slice(prefix);
        self.count += 1;
        Ok(true)
    }

    /// The partition prefix of the last key seen.
    pub(crate) fn prefix(&self) -> &[u8] {
        &self.last
    }
}

/// The bytes (keys and values) of `items`, e.g. those stored under a partition prefix.
pub(crate) fn item_bytes(
    items: impl IntoIterator<Item = fjall::Guard>,
) -> Result<u64, StorageError> {
    let mut sum = 0u64;
    for guard in items {
        let (k, v) = guard.into_inner()?;
        sum += (k.len() + v.len()) as u64;
    }
    Ok(sum)
}

/// Exact statistics by a full scan (a partition written before statistics existed, or whose
/// statistics a crash lost): (bytes, logical partitions, the largest one's bytes).
pub(crate) fn recount(ks: &Keyspace) -> Result<(u64, u64, u64), StorageError> {
    let (mut bytes, mut partitions) = (0u64, PartitionCounter::default());
    let (mut current, mut largest) = (0u64, 0u64);
    for g in ks.iter() {
        let (k, v) = g.into_inner()?;
        let size = (k.len() + v.len()) as u64;
        bytes += size;
        if partitions.see(&k)? {
            current = 0;
        }
        current += size;
        largest = largest.max(current);
    }
    Ok((bytes, partitions.count, largest))
}
