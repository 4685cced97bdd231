//! Reconciling a staged mutation with what its partition stores: each key it touches is
//! loaded once (from the item cache or fjall, under the partition's stripe), and a new cell
//! is kept only where it wins; a row's simple cells merge into its one item (see
//! [`crate::bundle`]).

use std::collections::HashMap;

use crate::cell::StoredCell;
use crate::item_cache::ItemCache;
use crate::key::{path_key, ItemPath};
use crate::{bundle, content, StorageError};

/// One key's state while a mutation is reconciled.
pub(crate) struct Slot {
    /// The current winner (stored or written by this mutation).
    pub(crate) cell: Option<StoredCell>,
    /// Length of the value stored before this mutation (None: the key was absent).
    pub(crate) stored_len: Option<usize>,
    /// Changed by this mutation: to be written.
    pub(crate) dirty: bool,
}

/// The keys one mutation touches in one partition, loaded on first use.
pub(crate) struct Reconciler<'a> {
    pub(crate) ks: &'a fjall::Keyspace,
    /// The item cache and the partition's id in it: consulted before `ks`, filled from it.
    pub(crate) cache: &'a ItemCache,
    pub(crate) part: u64,
    /// The write's time and the table's gc-grace, in seconds (see `Reconciler::maybe_purged`).
    pub(crate) now: i64,
    pub(crate) gc_grace: i64,
    pub(crate) exists: bool,
    /// The table may hold bundles: a separate write must check the row's liveness item.
    pub(crate) may_bundle: bool,
    pub(crate) slots: HashMap<Vec<u8>, Slot, foldhash::fast::RandomState>,
    /// Content flags of what this mutation stores.
    pub(crate) flags: u8,
}

impl Reconciler<'_> {
    /// The current cell at `key`: written earlier in this mutation, else stored.
    pub(crate) fn load(&mut self, key: &[u8]) -> Result<Option<&StoredCell>, StorageError> {
        self.load_as(key, false)
    }

    /// [`Self::load`] of a liveness item (a row item when `liveness`).
    fn load_as(&mut self, key: &[u8], liveness: bool) -> Result<Option<&StoredCell>, StorageError> {
        if !self.slots.contains_key(key) {
            let stored = if self.exists {
                // Under the stripe: what the cache or fjall holds is the newest item, except
                // that compaction may have purged a cached dead cell past gc-grace (a write
                // older than it is then accepted, as without the cache): fjall decides.
                let cached = self.cache.get(self.part, key);
                match cached.filter(|v| !self.maybe_purged(v, liveness)) {
                    Some(v) => Some(v),
                    None => {
                        let v = self.ks.get(key)?;
                        if let Some(v) = &v {
                            self.cache.put(self.part, key, v);
                        }
                        v
                    }
                }
            } else {
                None
            };
            let (cell, stored_len) = match stored {
                Some(v) => (Some(StoredCell::decode(&v)?), Some(v.len())),
                None => (None, None),
            };
            let slot = Slot {
                cell,
                stored_len,
                dirty: false,
            };
            self.slots.insert(key.to_vec(), slot);
        }
        Ok(self.slots.get(key).and_then(|s| s.cell.as_ref()))
    }

    /// Whether compaction may have purged or pruned the stored item `value` (a liveness item
    /// when `liveness`) past gc-grace (see `crate::compaction`).
    fn maybe_purged(&self, value: &[u8], liveness: bool) -> bool {
        if StoredCell::is_live_encoding(value) {
            return false;
        }
        let Ok(cell) = StoredCell::decode(value) else {
            return true;
        };
        let horizon = self.now.saturating_sub(self.gc_grace);
        !matches!(
            bundle::purge(&cell, liveness, horizon),
            Ok(bundle::Purge::Keep)
        )
    }

    /// Makes `cell` the winner at `key` (loaded before), to be written.
    pub(crate) fn set(&mut self, key: &[u8], cell: StoredCell) {
        if let Some(slot) = self.slots.get_mut(key) {
            slot.cell = Some(cell);
            slot.dirty = true;
        }
    }

    /// Stores `new` at `key` when it wins over the current cell; returns whether it did.
    pub(crate) fn reconcile(&mut self, key: &[u8], new: StoredCell) -> Result<bool, StorageError> {
        let wins = self.load(key)?.is_none_or(|old| new.wins_over(old));
        if wins {
            self.set(key, new);
        }
        Ok(wins)
    }

    /// Merges an INSERT's marker and its cells (sharing the marker's timestamp and TTL) into
    /// the row item at the liveness key `key`, cell by cell (see [`bundle::RowItem`]).
    /// Returns false, changing nothing, when the stored item is too large to rewrite for it
    /// ([`bundle::MERGE_MAX`]) and the INSERT does not replace it whole.
    pub(crate) fn merge_insert(
        &mut self,
        key: &[u8],
        marker: &StoredCell,
        cells: &[(u32, &[u8])],
    ) -> Result<bool, StorageError> {
        // The stored row to merge into, decoded once; None for a new row or one this INSERT
        // replaces whole, whose cells are then the marker's plain entries.
        let stored = match self.load_as(key, true)? {
            None => None,
            Some(stored) if replaces_whole(stored, marker, cells)? => None,
            Some(stored) if !fits(stored) => return Ok(false),
            Some(stored) => Some(bundle::RowItem::decode(stored)?),
        };
        let Some(mut row) = stored else {
            let mut bytes =
                Vec::with_capacity(cells.iter().map(|(_, v)| v.len() + 8).sum::<usize>());
            for (col, value) in cells {
                bundle::push(&mut bytes, *col, value)?;
            }
            if !bytes.is_empty() {
                self.flags |= content::BUNDLES;
            }
            self.set(key, bundle::with_value(marker, bytes));
            return Ok(true);
        };
        let mut changed = row.merge_marker(marker.clone());
        for (col, value) in cells {
            changed |= row.merge_cell(*col, bundle::with_value(marker, value.to_vec()));
        }
        self.store_row(key, &mut row, changed)?;
        Ok(true)
    }

    /// Merges one simple cell of column `col` into the row item at the liveness key `key`.
    /// Returns false, changing nothing, when the stored item is too large to rewrite for it
    /// ([`bundle::MERGE_MAX`]).
    pub(crate) fn merge_cell(
        &mut self,
        key: &[u8],
        col: u32,
        cell: StoredCell,
    ) -> Result<bool, StorageError> {
        let mut row = match self.load_as(key, true)? {
            Some(stored) if !fits(stored) => return Ok(false),
            Some(stored) => bundle::RowItem::decode(stored)?,
            None => bundle::RowItem::default(),
        };
        let changed = row.merge_cell(col, cell);
        self.store_row(key, &mut row, changed)?;
        Ok(true)
    }

    /// Writes a changed row item, without what of it is past gc-grace (as compaction would
    /// drop it, see [`bundle::purge`]).
    fn store_row(
        &mut self,
        key: &[u8],
        row: &mut bundle::RowItem,
        changed: bool,
    ) -> Result<(), StorageError> {
        if changed {
            row.shed(self.now.saturating_sub(self.gc_grace));
            if !row.cells.is_empty() {
                self.flags |= content::BUNDLES;
            }
            self.set(key, row.encode()?);
        }
        Ok(())
    }

    /// Turns the bundle at the liveness key `key` (if any) into a plain marker and separate
    /// cell items, reconciled with whatever separate items the row has.
    pub(crate) fn explode(&mut self, key: &[u8]) -> Result<(), StorageError> {
        if !self.may_bundle && !self.slots.contains_key(key) {
            return Ok(());
        }
        let Some(current) = self.load_as(key, true)? else {
            return Ok(());
        };
        if !bundle::has_cells(current) {
            return Ok(());
        }
        let (plain, cells) = bundle::explode(current)?;
        self.set(key, plain);
        let row = &key[..key.len() - 1];
        for (col, cell) in cells {
            let k = path_key(row, &ItemPath::Cell(col));
            self.reconcile(&k, cell)?;
        }
        self.flags |= content::SEPARATE_CELLS;
        Ok(())
    }
}

/// The new counter cell: the current (live) total plus `delta`. A counter deleted at or after
/// this increment stays deleted (Cassandra's counter deletions are final for older updates).
pub(crate) fn counter_sum(
    existing: Option<&StoredCell>,
    delta: i64,
    timestamp: i64,
    now: i64,
) -> Result<StoredCell, StorageError> {
    let (base, base_ts) = match existing {
        Some(c) => match c.live_value(now) {
            Some(v) => {
                let v: [u8; 8] = v
                    .try_into()
                    .map_err(|_| StorageError::corrupt("counter cell is not 8 bytes"))?;
                (i64::from_be_bytes(v), c.timestamp())
            }
            None if c.timestamp() >= timestamp => return Ok(c.clone()),
            None => (0, i64::MIN),
        },
        None => (0, i64::MIN),
    };
    Ok(StoredCell::Live {
        timestamp: timestamp.max(base_ts),
        value: base.wrapping_add(delta).to_be_bytes().to_vec(),
    })
}

/// True when the stored row item is small enough to rewrite for a write
/// ([`bundle::MERGE_MAX`]).
fn fits(stored: &StoredCell) -> bool {
    bundle::bytes_of(stored).len() <= bundle::MERGE_MAX
}

/// True when an INSERT (`marker` and its `cells`, in column order) replaces the stored row
/// item whole: the item holds plain entries only, of columns the INSERT sets, and the new
/// marker wins over its marker, so every new cell wins over the old one of its column (a
/// plain entry shares its marker's timestamp, TTL and expiry).
fn replaces_whole(
    stored: &StoredCell,
    marker: &StoredCell,
    cells: &[(u32, &[u8])],
) -> Result<bool, StorageError> {
    if bundle::is_unmarked(stored) || !marker.wins_over(&bundle::with_value(stored, Vec::new())) {
        return Ok(false);
    }
    for entry in bundle::cells(bundle::bytes_of(stored)) {
        match entry? {
            (col, bundle::Entry::Plain(_))
                if cells.binary_search_by_key(&col, |(c, _)| *c).is_ok() => {}
            _ => return Ok(false),
        }
    }
    Ok(true)
}
