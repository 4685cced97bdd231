//! An in-memory filter of a table's stored partitions: a write to a partition it surely lacks
//! skips every lookup (its items and its size cell: cold memtable searches and a bloom probe
//! per table).
//!
//! A filter only ever gains keys (a partition that compaction purged stays in it, which is
//! harmless), so it holds the size-cell key (the partition's name, whether or not the cell is
//! stored) of every partition the table stores once it is *complete*:
//! - a new table's filter is complete from the start (it holds nothing, nor does the table);
//! - a table opened from disk starts incomplete and a builder thread adds every stored
//!   partition from one snapshot ([`crate::filter_builder`]) while holding the table's
//!   `split_lock` (no split moves keys between keyspaces meanwhile);
//! - every write adds the key of a partition it creates, under the partition's stripe lock and
//!   before its batch commits (a failed commit leaves a harmless extra key). Filters exist
//!   before the table takes writes, so a partition committed after the builder's snapshot was
//!   added by its writer and one committed before it is in the snapshot;
//! - truncate, holding every stripe lock over an empty table, marks the filter complete (an
//!   interrupted build leaves it incomplete until then).
//!
//! A bloom filter only errs towards "may be stored", which costs the lookup it would have
//! saved. Capacity grows in stages of four times the previous one; a lookup probes one cache
//! line per stage ([`crate::blocked_bloom`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::RwLock;

use crate::blocked_bloom::{BlockedBloom, KeyBits};

// False positives of each stage: ~0.0002% at capacity (32 bits a key, see
// `crate::blocked_bloom`). A false positive costs a sum of the partition's items, a range read
// that loads a block of every table into the block cache: at 1% (~4% over the five full
// stages of a 10 M-partition table) a bulk load of 3 M rows grew the server's peak RSS from
// 239 to 782 MB; at 0.01%, 236 MB. With 16 KiB data blocks (`crate::ring`) the 0.01% left of
// a 10 M-row load still filled ~250 MB of cache (peak RSS 898 MB); at 0.001%, 648 MB.
/// Keys the first stage of a table holds (64 KiB).
const MIN_CAPACITY: usize = 16 * 1024;

/// One fixed-size bloom filter and how many keys were added to it.
struct Stage {
    bloom: BlockedBloom,
    capacity: usize,
    added: AtomicUsize,
}

impl Stage {
    fn new(capacity: usize) -> Stage {
        Stage {
            bloom: BlockedBloom::with_capacity(capacity),
            capacity,
            added: AtomicUsize::new(0),
        }
    }
}

/// The size-cell keys of a table's stored partitions (see the module docs).
pub(crate) struct PartitionFilter {
    stages: RwLock<Vec<Stage>>,
    complete: AtomicBool,
}

impl PartitionFilter {
    /// A filter sized for `expected` partitions; `complete` for a table known to be empty.
    pub(crate) fn new(expected: u64, complete: bool) -> PartitionFilter {
        let capacity = usize::try_from(expected.saturating_add(expected / 4))
            .unwrap_or(usize::MAX)
            .max(MIN_CAPACITY);
        PartitionFilter {
            stages: RwLock::new(vec![Stage::new(capacity)]),
            complete: AtomicBool::new(complete),
        }
    }

    /// The bits of `size_key` (for [`PartitionFilter::add`]) and whether no stored partition
    /// has that size-cell key for sure: the filter is complete and the key was never added.
    pub(crate) fn probe(&self, size_key: &[u8]) -> (KeyBits, bool) {
        let complete = self.complete.load(Ordering::Acquire);
        let bits = KeyBits::of(size_key);
        let stages = self.stages.read().unwrap_or_else(|p| p.into_inner());
        // Every stage is read (no early exit), so their cache misses overlap.
        let absent = complete
            && !stages
                .iter()
                .fold(false, |any, s| any | s.bloom.contains(&bits));
        (bits, absent)
    }

    /// Adds the size-cell key (by its [`KeyBits`]) of a partition being created.
    pub(crate) fn add(&self, bits: KeyBits) {
        let full = {
            let stages = self.stages.read().unwrap_or_else(|p| p.into_inner());
            let Some(last) = stages.last() else { return };
            last.bloom.insert(&bits);
            let added = last.added.fetch_add(1, Ordering::Relaxed) + 1;
            (added == last.capacity).then_some(stages.len())
        };
        if let Some(len) = full {
            let mut stages = self.stages.write().unwrap_or_else(|p| p.into_inner());
            if stages.len() == len {
                let capacity = stages.last().map_or(MIN_CAPACITY, |s| s.capacity);
                stages.push(Stage::new(capacity.saturating_mul(4)));
            }
        }
    }

    /// Marks the filter as holding every stored partition.
    pub(crate) fn mark_complete(&self) {
        self.complete.store(true, Ordering::Release);
    }

    /// Marks the filter complete or not (tests use it to force the lookup path).
    #[cfg(test)]
    pub(crate) fn set_complete(&self, complete: bool) {
        self.complete.store(complete, Ordering::Release);
    }

    /// Whether the filter holds every stored partition.
    pub(crate) fn is_complete(&self) -> bool {
        self.complete.load(Ordering::Acquire)
    }

    /// Bytes of bloom bits held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.stages
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|s| s.bloom.memory_bytes())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incomplete_filter_is_never_sure() {
        let f = PartitionFilter::new(0, false);
        let k = KeyBits::of(b"k");
        assert_eq!(f.probe(b"k"), (k, false));
        f.mark_complete();
        assert_eq!(f.probe(b"k"), (k, true));
        f.add(k);
        assert_eq!(f.probe(b"k"), (k, false));
    }

    #[test]
    fn grows_past_its_capacity_without_forgetting() {
        let f = PartitionFilter::new(0, true);
        let before = f.memory_bytes();
        let n = MIN_CAPACITY * 6;
        let key = |i: usize| (i as u64).to_be_bytes();
        for i in 0..n {
            f.add(KeyBits::of(&key(i)));
        }
        assert_eq!(f.stages.read().unwrap().len(), 3);
        assert!(f.memory_bytes() > before * 15);
        assert!((0..n).all(|i| !f.probe(&key(i)).1));
        // Keys never added are reported absent but for a few (each stage errs ~0.0002% of the
        // time).
        let absent = (n..n + 10_000).filter(|i| f.probe(&key(*i)).1).count();
        assert!(absent >= 9_980, "{absent}");
    }
}
