//! The item cache: single items by key, as a lookup in one physical partition returns them.
//!
//! A point read of a one-item row and a write's lookup of the keys it reconciles each cost a
//! search of fjall's memtable skiplists and tables (several microseconds in a large
//! memtable). This cache answers them from a hash table instead, like Cassandra's row cache.
//!
//! It never answers with a value older than the newest committed one, because every change
//! to it happens under the write-lock stripe of the item's partition (see
//! [`crate::stripes::Stripes::lock`]):
//! - a writer, holding the stripe, replaces the entry of every key it commits before it
//!   releases the stripe (and so before the write is acknowledged);
//! - a reader that misses takes the stripe, reads the item at the newest published sequence
//!   number and only then stores it, so no commit can fall between its read and its store;
//! - a reader's hit counts only if no writer of its stripe was between its commit and the
//!   refresh of its entries meanwhile (a per-stripe count, odd during that window, read
//!   before and after the lookup): otherwise a reader could see a committed write through a
//!   snapshot and then the item it replaced from the cache. Such a reader takes the miss path.
//!
//! Entries are keyed by a physical partition's cache id ([`fresh_id`]), not its keyspace: a
//! truncate gives each partition a new id, which retires every entry it had. Only present
//! items are kept (an absent key is always looked up). A write to a partition the table's
//! partition filter surely lacks has no entry to replace: the cache holds only items of
//! partitions that are stored (in the filter once it is complete) or were written since
//! (their writes added them to it). A compaction that purges an expired
//! cell or a tombstone leaves its entry: both read as dead, so a read answers the same.
//! Values are copied out of fjall's blocks, so an entry never holds a whole block alive.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use quick_cache::sync::Cache;
use quick_cache::{Equivalent, Weighter};

/// Bytes of bookkeeping counted for each entry besides its key and value.
const ENTRY_OVERHEAD: u64 = 64;

/// Ids of physical partitions' cache entries; never reused while the process runs.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A new cache id for a physical partition (at open, creation or truncate).
pub(crate) fn fresh_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Key bytes an entry holds in place, within the cache's own slot (the enum is then 48
/// bytes): a point key of a table with a few fixed-size key columns fits (a row of the
/// bench's `(pk bigint, c int)` table is ~35 bytes: the token, the escaped key bytes, the
/// escaped clustering and the item path), so comparing an entry's key reads no other cache
/// line.
const INLINE_KEY: usize = 46;

/// The owned key of an entry.
#[derive(Clone, PartialEq, Eq)]
struct ItemKey {
    part: u64,
    key: KeyBytes,
}

/// An entry's key bytes: in place when short, else a shared slice.
#[derive(Clone)]
enum KeyBytes {
    /// The first `len` bytes of `bytes`.
    Inline { len: u8, bytes: [u8; INLINE_KEY] },
    /// Longer keys, as the writer or reader had them.
    Shared(fjall::Slice),
}

impl KeyBytes {
    /// `key` kept in place, when it fits.
    fn inline(key: &[u8]) -> Option<KeyBytes> {
        let len = u8::try_from(key.len())
            .ok()
            .filter(|_| key.len() <= INLINE_KEY)?;
        let mut bytes = [0; INLINE_KEY];
        bytes[..key.len()].copy_from_slice(key);
        Some(KeyBytes::Inline { len, bytes })
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            KeyBytes::Inline { len, bytes } => &bytes[..usize::from(*len)],
            KeyBytes::Shared(s) => s,
        }
    }
}

impl PartialEq for KeyBytes {
    fn eq(&self, other: &KeyBytes) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for KeyBytes {}

/// A borrowed key, to look an entry up without allocating.
struct ItemRef<'a> {
    part: u64,
    key: &'a [u8],
}

impl Hash for ItemKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        ItemRef {
            part: self.part,
            key: self.key.as_slice(),
        }
        .hash(state);
    }
}

impl Hash for ItemRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.part);
        state.write(self.key);
    }
}

impl Equivalent<ItemKey> for ItemRef<'_> {
    fn equivalent(&self, other: &ItemKey) -> bool {
        self.part == other.part && self.key == other.key.as_slice()
    }
}

/// Weighs an entry by its bytes.
#[derive(Clone)]
struct ByBytes;

impl Weighter<ItemKey, fjall::Slice> for ByBytes {
    fn weight(&self, key: &ItemKey, value: &fjall::Slice) -> u64 {
        (key.key.as_slice().len() + value.len()) as u64 + ENTRY_OVERHEAD
    }
}

/// How many [`ItemCache::admits_new`] calls reuse one reading of the cache's weight.
const ADMISSION_RECHECK: u64 = 4096;

/// A writer's stripes between its commit and the refresh of its entries; dropped after the
/// refresh (and on every error path).
pub(crate) struct CommitWindow<'a> {
    cache: &'a ItemCache,
    stripes: u64,
}

impl Drop for CommitWindow<'_> {
    fn drop(&mut self) {
        self.cache.bump(self.stripes);
    }
}

/// Items of physical partitions, by partition cache id and key, up to a byte budget.
pub(crate) struct ItemCache {
    /// `None` when the budget is 0: every call is then a no-op or a miss.
    cache: Option<Cache<ItemKey, fjall::Slice, ByBytes, foldhash::fast::RandomState>>,
    /// The weight below which items of new partitions are admitted (an eighth of the budget).
    new_items_below: u64,
    /// Whether items of new partitions are admitted, as of the last recheck.
    admit_new: AtomicBool,
    /// Calls of [`ItemCache::admits_new`], to recheck every [`ADMISSION_RECHECK`].
    admissions: AtomicU64,
    /// Per write-lock stripe: odd while one of its writers is between its commit and the
    /// refresh of its entries (see [`ItemCache::begin_commit`]).
    commits: Box<[AtomicU64]>,
    /// Tests widen the window between a reader's miss and its fill by this many microseconds.
    #[cfg(test)]
    pub(crate) fill_delay_us: AtomicU64,
}

impl ItemCache {
    /// A cache holding up to `capacity_bytes` of keys, values and bookkeeping (0: off), for
    /// a store with `stripes` write-lock stripes.
    pub(crate) fn new(capacity_bytes: u64, stripes: usize) -> ItemCache {
        let cache = (capacity_bytes > 0).then(|| {
            // A guess at the entry count. The shards' tables are reserved for it up front:
            // grown while writes fill them, each doubling copied a shard's table under its
            // lock (p99.9 of writes 2.3-3.1 -> 5.7-6.2 ms at 60 k/s). Untouched, the
            // reservation is address space, not memory.
            let items = usize::try_from(capacity_bytes / 256)
                .unwrap_or(usize::MAX)
                .max(16);
            let cache = Cache::with(
                items,
                capacity_bytes,
                ByBytes,
                foldhash::fast::RandomState::default(),
                Default::default(),
            );
            cache.reserve(items);
            cache
        });
        ItemCache {
            cache,
            new_items_below: capacity_bytes / 8,
            admit_new: AtomicBool::new(capacity_bytes > 0),
            admissions: AtomicU64::new(0),
            commits: (0..stripes).map(|_| AtomicU64::new(0)).collect(),
            #[cfg(test)]
            fill_delay_us: AtomicU64::new(0),
        }
    }

    /// Called by a reader between its lookup in fjall and its fill: a test seam.
    pub(crate) fn before_fill(&self) {
        #[cfg(test)]
        match self.fill_delay_us.load(Ordering::Relaxed) {
            0 => {}
            us => std::thread::sleep(std::time::Duration::from_micros(us)),
        }
    }

    /// Whether a write creating a partition should cache its items: while the cache is less
    /// than an eighth full. A bulk load then takes at most that eighth (bounding the server's
    /// memory while it loads, and what caching costs each write) and a freshly loaded table
    /// starts with its first rows cached; reads and overwrites fill the rest.
    pub(crate) fn admits_new(&self) -> bool {
        let Some(cache) = &self.cache else {
            return false;
        };
        if self.admissions.fetch_add(1, Ordering::Relaxed) % ADMISSION_RECHECK == 0 {
            // Sums the shards' weights under their locks: too slow for every write.
            let admit = cache.weight() < self.new_items_below;
            self.admit_new.store(admit, Ordering::Relaxed);
        }
        self.admit_new.load(Ordering::Relaxed)
    }

    /// The bytes the cache holds, and its capacity.
    pub(crate) fn bytes_and_capacity(&self) -> (u64, u64) {
        self.cache
            .as_ref()
            .map_or((0, 0), |c| (c.weight(), c.capacity()))
    }

    /// How many lookups found an item, and how many did not, since the cache was made.
    pub(crate) fn hits_and_misses(&self) -> (u64, u64) {
        self.cache
            .as_ref()
            .map_or((0, 0), |c| (c.hits(), c.misses()))
    }

    /// Whether the cache keeps anything.
    pub(crate) fn enabled(&self) -> bool {
        self.cache.is_some()
    }

    /// The cached item at `key` of partition `part`, for a caller holding the key's stripe.
    pub(crate) fn get(&self, part: u64, key: &[u8]) -> Option<fjall::Slice> {
        self.cache.as_ref()?.get(&ItemRef { part, key })
    }

    /// The cached item at `key` of partition `part`, for a reader without the key's stripe
    /// (`stripe`): `None` also when a writer of the stripe committed meanwhile and may not
    /// have refreshed its entries yet.
    pub(crate) fn get_unlocked(
        &self,
        part: u64,
        key: &[u8],
        stripe: usize,
    ) -> Option<fjall::Slice> {
        let count = self.commits.get(stripe)?;
        let before = count.load(Ordering::SeqCst);
        if before % 2 == 1 {
            return None;
        }
        let v = self.get(part, key)?;
        (count.load(Ordering::SeqCst) == before).then_some(v)
    }

    /// Marks the stripes in `mask` as committing: called by a writer holding them, before its
    /// batch commits; [`CommitWindow`]'s drop ends it once the entries are refreshed.
    pub(crate) fn begin_commit(&self, mask: u64) -> CommitWindow<'_> {
        let stripes = if self.enabled() { mask } else { 0 };
        self.bump(stripes);
        CommitWindow {
            cache: self,
            stripes,
        }
    }

    fn bump(&self, mask: u64) {
        for (i, count) in self.commits.iter().enumerate().take(64) {
            if mask & (1 << i) != 0 {
                count.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    /// Stores a copy of `value` as the item at `key`. The caller holds the key's stripe and
    /// `value` is the newest committed item there.
    pub(crate) fn put(&self, part: u64, key: &[u8], value: &[u8]) {
        if let Some(cache) = &self.cache {
            let key = ItemKey {
                part,
                key: KeyBytes::inline(key)
                    .unwrap_or_else(|| KeyBytes::Shared(fjall::Slice::from(key))),
            };
            cache.insert(key, fjall::Slice::from(value));
        }
    }

    /// Stores `value` as the item at `key`, on the same terms as [`ItemCache::put`]; the value,
    /// and a key too long to keep in place, are kept as they are (shared with the write batch
    /// that stored them, never slices of a block).
    pub(crate) fn put_shared(&self, part: u64, key: fjall::Slice, value: fjall::Slice) {
        if let Some(cache) = &self.cache {
            let key = KeyBytes::inline(&key).unwrap_or(KeyBytes::Shared(key));
            cache.insert(ItemKey { part, key }, value);
        }
    }

    /// Drops every entry of the partitions with the given cache ids (after a drop or a
    /// truncate, whose entries no lookup reaches any more): their memory returns, and their
    /// weight no longer holds back the admission of new partitions' items. Scans the whole
    /// cache, a shard at a time.
    pub(crate) fn forget_partitions(&self, parts: &[u64]) {
        if let Some(cache) = &self.cache {
            if !parts.is_empty() {
                cache.retain(|key, _| !parts.contains(&key.part));
            }
        }
    }

    /// Drops the entry of `key` unless `keep` says otherwise of its value. The caller holds
    /// the key's stripe.
    pub(crate) fn forget_unless(
        &self,
        part: u64,
        key: &[u8],
        keep: impl FnOnce(&fjall::Slice) -> bool,
    ) {
        if let Some(cache) = &self.cache {
            cache.remove_if(&ItemRef { part, key }, |v| !keep(v));
        }
    }

    /// Drops the entry of `key`, if any. The caller holds the key's stripe.
    pub(crate) fn forget(&self, part: u64, key: &[u8]) {
        if let Some(cache) = &self.cache {
            cache.remove(&ItemRef { part, key });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_items_by_partition_and_key_and_forgets_them() {
        let cache = ItemCache::new(1 << 20, 4);
        let (a, b) = (fresh_id(), fresh_id());
        assert_ne!(a, b);
        cache.put(a, b"k", b"v1");
        assert_eq!(cache.get(a, b"k").as_deref(), Some(&b"v1"[..]));
        assert_eq!(cache.get(b, b"k"), None, "another partition's key");
        assert_eq!(cache.get(a, b"k2"), None);
        cache.put(a, b"k", b"v2");
        assert_eq!(cache.get(a, b"k").as_deref(), Some(&b"v2"[..]));
        cache.forget(a, b"k");
        assert_eq!(cache.get(a, b"k"), None);
    }

    #[test]
    fn a_read_without_the_stripe_misses_while_a_writer_commits() {
        let cache = ItemCache::new(1 << 20, 4);
        let part = fresh_id();
        cache.put(part, b"k", b"old");
        assert!(cache.get_unlocked(part, b"k", 2).is_some());
        let window = cache.begin_commit(1 << 2);
        assert!(
            cache.get_unlocked(part, b"k", 2).is_none(),
            "stripe 2 is committing"
        );
        assert!(
            cache.get_unlocked(part, b"k", 1).is_some(),
            "stripe 1 is not"
        );
        cache.put(part, b"k", b"new");
        drop(window);
        assert_eq!(
            cache.get_unlocked(part, b"k", 2).as_deref(),
            Some(&b"new"[..])
        );
    }

    #[test]
    fn keys_kept_in_place_and_shared_keys_answer_alike() {
        let cache = ItemCache::new(1 << 20, 4);
        let part = fresh_id();
        // Keys around the in-place limit, each a prefix of the next.
        let long: Vec<u8> = (0..100u8).collect();
        let lens = [0, 1, INLINE_KEY - 1, INLINE_KEY, INLINE_KEY + 1, 100];
        for &n in &lens {
            cache.put(part, &long[..n], &[n as u8]);
        }
        let shared = fjall::Slice::from(&long[..INLINE_KEY + 2]);
        cache.put_shared(part, shared, fjall::Slice::from(&[200u8][..]));
        for &n in &lens {
            assert_eq!(
                cache.get(part, &long[..n]).as_deref(),
                Some(&[n as u8][..]),
                "key of {n} bytes"
            );
        }
        assert_eq!(
            cache.get(part, &long[..INLINE_KEY + 2]).as_deref(),
            Some(&[200u8][..])
        );
        assert_eq!(cache.get(part, &long[..INLINE_KEY + 3]), None);
        let mut other = long[..INLINE_KEY].to_vec();
        other[INLINE_KEY - 1] ^= 1;
        assert_eq!(cache.get(part, &other), None, "differs in its last byte");
        cache.forget(part, &long[..INLINE_KEY]);
        assert_eq!(cache.get(part, &long[..INLINE_KEY]), None);
        assert!(cache.get(part, &long[..INLINE_KEY - 1]).is_some());
    }

    #[test]
    fn forgets_whole_partitions() {
        let cache = ItemCache::new(1 << 20, 4);
        let (a, b) = (fresh_id(), fresh_id());
        for i in 0u32..100 {
            cache.put(a, &i.to_be_bytes(), b"a");
            cache.put(b, &i.to_be_bytes(), b"b");
        }
        cache.forget_partitions(&[a]);
        assert!((0u32..100).all(|i| cache.get(a, &i.to_be_bytes()).is_none()));
        assert!((0u32..100).all(|i| cache.get(b, &i.to_be_bytes()).is_some()));
    }

    #[test]
    fn stays_within_its_byte_budget() {
        let cache = ItemCache::new(64 << 10, 4);
        let part = fresh_id();
        for i in 0u32..10_000 {
            cache.put(part, &i.to_be_bytes(), &[7u8; 100]);
        }
        let kept = (0u32..10_000)
            .filter(|i| cache.get(part, &i.to_be_bytes()).is_some())
            .count();
        // 64 KiB at 168 bytes an entry: at most ~390 of the 10,000 entries.
        assert!(kept > 0 && kept <= 400, "kept {kept}");
    }

    #[test]
    fn admits_items_of_new_partitions_while_under_an_eighth_full() {
        let cache = ItemCache::new(64 << 10, 4);
        let part = fresh_id();
        assert!(cache.admits_new());
        // 8 KiB (an eighth) is ~48 entries of 168 bytes.
        for i in 0u32..200 {
            cache.put(part, &i.to_be_bytes(), &[7u8; 100]);
        }
        // The weight is read again on the next recheck.
        let rechecked = (0..=ADMISSION_RECHECK).map(|_| cache.admits_new()).last();
        assert_eq!(rechecked, Some(false));
        assert!(!ItemCache::new(0, 4).admits_new());
    }

    #[test]
    fn a_zero_budget_keeps_nothing() {
        let cache = ItemCache::new(0, 4);
        assert!(!cache.enabled());
        cache.put(1, b"k", b"v");
        assert_eq!(cache.get(1, b"k"), None);
    }
}
