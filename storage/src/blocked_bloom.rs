//! A concurrent blocked bloom filter: all of a key's bits lie in one 64-byte cache line.
//!
//! The partition filter ([`crate::partition_filter`]) is probed by every write and added to
//! by every write that creates a partition. fastbloom's `AtomicBloomFilter` spreads a key's
//! 17 bits (0.001% false positives) over the whole bit array: an add paid 17 cache misses
//! and 17 locked ORs, and a probe of an absent key about two misses per filter stage, ~10% of
//! the connection thread during new-row writes. Here a key picks one 512-bit block and sets
//! [`HASHES`] bits inside it: an add is one miss and at most eight ORs on that line, a probe
//! one miss. Blocking raises the false-positive rate at equal size, so it takes
//! [`BITS_PER_KEY`] = 32 bits a key instead of 24 for about the same rate (the unit test
//! below measures it). No crate in the tree offers a blocked filter with atomic inserts.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits of a block: one cache line.
const BLOCK_BITS: usize = 512;
/// 64-bit words of a block.
const WORDS: usize = BLOCK_BITS / 64;
/// Bits set per key.
const HASHES: usize = 16;
/// Filter bits per key of capacity: ~0.0002% false positives at capacity with 16 hashes
/// (the unit test below measures it; 24 bits gave ~0.007%).
pub(crate) const BITS_PER_KEY: usize = 32;
/// Hash seed: one hash of a key serves every filter that uses this module.
const SEED: u64 = 0x7269_6e67_6462_5f70;

/// One cache line of bits.
#[repr(align(64))]
struct Block([AtomicU64; WORDS]);

/// Where a key's bits lie in any filter: the block picker (the low half of its 128-bit hash)
/// and the word masks of its bits within a block (from the high half). Computed once per key,
/// it serves the probes of several filters and a later insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyBits {
    block: u64,
    words: [u64; WORDS],
}

impl KeyBits {
    /// Hashes `key` (xxh3, 128 bits) and places its bits.
    pub(crate) fn of(key: &[u8]) -> KeyBits {
        let hash = xxhash_rust::xxh3::xxh3_128_with_seed(key, SEED);
        let mut words = [0u64; WORDS];
        let mut bits = (hash >> 64) as u64;
        for i in 0..HASHES {
            // Seven 9-bit positions per 64-bit chunk; the next chunk is a splitmix64 step.
            if i > 0 && i % 7 == 0 {
                bits = splitmix64(bits);
            }
            let pos = (bits >> (9 * (i % 7))) as usize % BLOCK_BITS;
            words[pos / 64] |= 1 << (pos % 64);
        }
        KeyBits {
            block: hash as u64,
            words,
        }
    }
}

/// The finalizer of splitmix64: a full-avalanche mix of 64 bits.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A fixed-size blocked bloom filter; adds and probes may run concurrently.
pub(crate) struct BlockedBloom {
    blocks: Box<[Block]>,
}

impl BlockedBloom {
    /// A filter sized for `capacity` keys (at least one block).
    pub(crate) fn with_capacity(capacity: usize) -> BlockedBloom {
        let n = capacity
            .saturating_mul(BITS_PER_KEY)
            .div_ceil(BLOCK_BITS)
            .max(1);
        let blocks = (0..n)
            .map(|_| Block(std::array::from_fn(|_| AtomicU64::new(0))))
            .collect();
        BlockedBloom { blocks }
    }

    /// The block of `key` (a multiply-shift reduction of its block picker).
    fn block(&self, key: &KeyBits) -> &Block {
        let i = ((u128::from(key.block) * self.blocks.len() as u128) >> 64) as usize;
        &self.blocks[i]
    }

    /// Adds a key.
    pub(crate) fn insert(&self, key: &KeyBits) {
        let block = self.block(key);
        for (word, mask) in block.0.iter().zip(key.words) {
            if mask != 0 && word.load(Ordering::Relaxed) & mask != mask {
                word.fetch_or(mask, Ordering::Relaxed);
            }
        }
    }

    /// Whether the key may have been added (`false`: it surely was not).
    ///
    /// Reads the whole block without branching on any word, so a caller probing several
    /// filters has all their cache misses in flight at once instead of one after another.
    pub(crate) fn contains(&self, key: &KeyBits) -> bool {
        let block = self.block(key);
        block
            .0
            .iter()
            .zip(key.words)
            .fold(true, |all, (word, mask)| {
                all & (word.load(Ordering::Relaxed) & mask == mask)
            })
    }

    /// Bytes of bits held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.blocks.len() * BLOCK_BITS / 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> [u8; 8] {
        i.to_be_bytes()
    }

    #[test]
    fn sets_sixteen_bits_in_one_block() {
        for i in 0..1000 {
            let ones: u32 = KeyBits::of(&key(i))
                .words
                .iter()
                .map(|m| m.count_ones())
                .sum();
            // Positions may collide, rarely more than a couple.
            assert!((12..=HASHES as u32).contains(&ones), "{ones}");
        }
    }

    #[test]
    fn never_forgets_and_rarely_errs_at_capacity() {
        let n = 200_000u64;
        let f = BlockedBloom::with_capacity(n as usize);
        assert_eq!(f.memory_bytes(), n as usize * BITS_PER_KEY / 8);
        for i in 0..n {
            f.insert(&KeyBits::of(&key(i)));
        }
        assert!((0..n).all(|i| f.contains(&KeyBits::of(&key(i)))));
        // 0.001% of 2 M probes is 20; a filter twice as bad fails.
        let probes = 2_000_000u64;
        let wrong = (n..n + probes)
            .filter(|i| f.contains(&KeyBits::of(&key(*i))))
            .count();
        assert!(wrong <= 40, "{wrong} false positives in {probes}");
    }

    #[test]
    fn an_empty_filter_holds_nothing() {
        let f = BlockedBloom::with_capacity(0);
        assert_eq!(f.memory_bytes(), 64);
        assert!(!f.contains(&KeyBits::of(b"k")));
        f.insert(&KeyBits::of(b"k"));
        assert!(f.contains(&KeyBits::of(b"k")));
        assert!(!f.contains(&KeyBits::of(b"other")));
    }
}
