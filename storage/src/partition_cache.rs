//! The partition cache: a small partition kept whole, as one entry of the item cache.
//!
//! A slice of a partition is a range read merging every memtable and table that may hold
//! it. After a write burst (several memtables, a compaction backlog) a 10-row read spends
//! most of its time positioning the memtables' skiplists and copying items out of them
//! (docs/performance.md, session 44). Cassandra's row cache answers such reads from memory,
//! and so does this: the first read of a small partition stores its items, as the newest
//! versions a range read sees them, in the item cache under
//! a key no stored item has ([`entry_key`]); later reads of any slice of it (bounded,
//! reversed, paged) iterate that entry instead of the tree.
//!
//! Entries obey the item cache's rules (see `crate::item_cache`), which keep every answer
//! as new as the newest committed write:
//! - a writer of a partition that may be stored forgets its entry under the partition's
//!   stripe, inside its commit window (`crate::write`); a partition the table's filter
//!   surely lacks has none, since empty partitions are never cached;
//! - a reader that misses takes the stripe and reads the partition at the newest published
//!   sequence number before it stores the entry;
//! - a hit without the stripe counts only if no writer of the stripe was in its commit
//!   window meanwhile.
//!
//! A truncate, a drop or an import gives the physical partition a new cache id, which retires
//! its entries. An entry holds the whole partition but its size cell: the partition deletion,
//! the static row and the range tombstones before the rows. A partition larger than the limit
//! is remembered as such (and stays so across writes, see [`forget`]), so it is not measured
//! again by every read.

use std::sync::atomic::Ordering;

use smallvec::SmallVec;

use crate::cell::StoredCell;
use crate::engine::Storage;
use crate::item_cache::ItemCache;
use crate::key;
use crate::open_tables::Table;
use crate::partition_head::PartitionHead;
use crate::physical::Physical;
use crate::read_ctx::into_inner;
use crate::stripes::Stripes;
use crate::{StorageError, TableId};

/// First byte of an entry holding rows.
const KIND_ROWS: u8 = 0;
/// First byte of an entry for a partition too large to cache.
const KIND_TOO_LARGE: u8 = 1;

/// Forgets the cached rows of a partition being written (`key`, its [`entry_key`]) under its
/// stripe. A too-large mark stays: a write seldom makes a large partition small, and reads of
/// it go to the tree either way, so appends to a wide partition do not make the next read
/// measure it again.
pub(crate) fn forget(cache: &ItemCache, part: u64, key: &[u8]) {
    cache.forget_unless(part, key, |entry| entry.first() == Some(&KIND_TOO_LARGE));
}

/// The item-cache key of a partition's entry: the partition's key prefix and a section byte
/// that no stored item has.
pub(crate) fn entry_key(prefix: &[u8]) -> SmallVec<[u8; 64]> {
    let mut k = SmallVec::with_capacity(prefix.len() + 1);
    k.extend_from_slice(prefix);
    k.push(key::SECTION_CACHED_ROWS);
    k
}

/// A partition as cached: each item's key after the partition's prefix (from its section
/// byte on) and its stored value, in key order.
pub(crate) struct CachedRows {
    /// The entry without its kind byte.
    bytes: fjall::Slice,
}

/// An item of an entry: its key (after the partition's prefix, or the rows section byte) and
/// its stored value.
type Item<'a> = Result<(&'a [u8], &'a [u8]), StorageError>;

/// An item of an entry as split off its bytes, with the bytes that follow it.
type Split<'a> = Result<(&'a [u8], &'a [u8], &'a [u8]), StorageError>;

/// The key (after the partition's prefix) and the value of each item in `bytes`, in order.
struct Items<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Items<'a> {
    type Item = Item<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let item = split_item(self.rest);
        match item {
            Ok((k, v, rest)) => {
                self.rest = rest;
                Some(Ok((k, v)))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// The first item of `bytes` (`key len u32 BE ‖ value len u32 BE ‖ key ‖ value`) and what
/// follows it.
fn split_item(bytes: &[u8]) -> Split<'_> {
    let truncated = || StorageError::corrupt("truncated partition cache entry");
    let (lens, rest) = bytes.split_first_chunk::<8>().ok_or_else(truncated)?;
    let (k_len, v_len) = lens.split_at(4);
    let k_len = u32::from_be_bytes(k_len.try_into().map_err(|_| truncated())?) as usize;
    let v_len = u32::from_be_bytes(v_len.try_into().map_err(|_| truncated())?) as usize;
    let (key, rest) = rest.split_at_checked(k_len).ok_or_else(truncated)?;
    let (value, rest) = rest.split_at_checked(v_len).ok_or_else(truncated)?;
    Ok((key, value, rest))
}

impl CachedRows {
    /// An entry's rows; `None` for a partition too large to cache.
    fn parse(entry: fjall::Slice) -> Result<Option<CachedRows>, StorageError> {
        match entry.first() {
            Some(&KIND_ROWS) => Ok(Some(CachedRows { bytes: entry })),
            Some(&KIND_TOO_LARGE) => Ok(None),
            _ => Err(StorageError::corrupt("bad partition cache entry")),
        }
    }

    /// The partition's deletions and static row's items (see [`PartitionHead`]).
    pub(crate) fn head(&self) -> Result<PartitionHead, StorageError> {
        let mut head = PartitionHead::default();
        for item in self.items() {
            let (k, v) = item?;
            if k.first().is_some_and(|&s| s >= key::SECTION_ROWS) {
                break;
            }
            head.add(k, StoredCell::decode(v)?)?;
        }
        Ok(head)
    }

    /// The row items whose keys (after the rows section byte) lie in `[lo, hi)`, in key order
    /// or reversed; keys and values borrow the entry.
    pub(crate) fn range<'s>(
        &'s self,
        lo: &'s [u8],
        hi: &'s [u8],
        reversed: bool,
    ) -> Box<dyn Iterator<Item = Item<'s>> + 's> {
        // Row items only, keyed from after their section byte.
        let rows = self.items().filter_map(|item| match item {
            Ok((k, v)) => match k.split_first() {
                Some((&key::SECTION_ROWS, rest)) => Some(Ok((rest, v))),
                _ => None,
            },
            Err(e) => Some(Err(e)),
        });
        if reversed {
            let inside = move |item: &Item<'_>| match item {
                Ok((k, _)) => *k >= lo && *k < hi,
                Err(_) => true,
            };
            let all: Vec<_> = rows.collect();
            Box::new(all.into_iter().rev().filter(inside))
        } else {
            Box::new(
                rows.skip_while(move |item| matches!(item, Ok((k, _)) if *k < lo))
                    .take_while(move |item| !matches!(item, Ok((k, _)) if *k >= hi)),
            )
        }
    }

    fn items(&self) -> Items<'_> {
        Items {
            rest: &self.bytes[1..],
        }
    }
}

impl Storage {
    /// The cached partition at `prefix` (token `token`) in `part`, read and stored on a miss;
    /// `None` when the partition cache is off or the partition is empty or too large, so the
    /// caller reads the tree instead.
    pub(crate) fn cached_rows(
        &self,
        table_id: TableId,
        table: &Table,
        part: &Physical,
        prefix: &[u8],
        token: i64,
    ) -> Result<Option<CachedRows>, StorageError> {
        let max = self.inner.limits.partition_cache_max_bytes;
        let cache = &self.inner.item_cache;
        if max == 0 || !cache.enabled() {
            return Ok(None);
        }
        let id = part.cache_id.load(Ordering::Relaxed);
        let stripe = Stripes::of(table_id, token);
        let ekey = entry_key(prefix);
        let entry = match cache.get_unlocked(id, &ekey, stripe) {
            Some(entry) => entry,
            None => {
                let _stripe = self.inner.stripes.lock(1 << stripe);
                let seqno = self.inner.db.visible_seqno();
                let Some(entry) = read_section(part, prefix, max, seqno)? else {
                    return Ok(None);
                };
                table.ring.partitions_cached.store(true, Ordering::Relaxed);
                cache.before_fill();
                cache.put_shared(id, fjall::Slice::from(&ekey[..]), entry.clone());
                entry
            }
        };
        CachedRows::parse(entry)
    }
}

/// The entry for the partition at `prefix` in `part` as published at `seqno`: its items
/// but the size cell, or the too-large mark past `max` bytes; `None` for an empty partition.
/// The caller holds the partition's stripe, so no newer version of its items can appear (see
/// `crate::lookup::Published`).
fn read_section(
    part: &Physical,
    prefix: &[u8],
    max: u64,
    seqno: fjall::SeqNo,
) -> Result<Option<fjall::Slice>, StorageError> {
    let mut start = prefix.to_vec();
    start.push(key::SECTION_PARTITION_DELETION);
    let mut end = prefix.to_vec();
    end.push(key::SECTION_ROWS + 1);
    let skip = prefix.len();
    let mut bytes = vec![KIND_ROWS];
    for guard in fjall::AbstractTree::range(&part.keyspace.tree, start..end, seqno, None) {
        let (k, v) = into_inner(guard)?;
        let rest = &k[skip..];
        if (bytes.len() + 8 + rest.len() + v.len()) as u64 > max {
            return Ok(Some(fjall::Slice::from(&[KIND_TOO_LARGE][..])));
        }
        for len in [rest.len(), v.len()] {
            let len = u32::try_from(len).map_err(|_| StorageError::corrupt("item over 4 GiB"))?;
            bytes.extend_from_slice(&len.to_be_bytes());
        }
        bytes.extend_from_slice(rest);
        bytes.extend_from_slice(&v);
    }
    Ok((bytes.len() > 1).then(|| fjall::Slice::from(bytes)))
}
