//! Mutations: everything one statement (or batch) changes in one partition, applied as one
//! atomic fjall write batch.
//!
//! Each physical key holds exactly one [`StoredCell`]: the winner of Cassandra's reconciliation
//! (a row's liveness item may carry the row's INSERTed cells as a bundle, see
//! [`crate::bundle`]). So a write reads the keys it touches (under the partition's lock stripe)
//! and writes only where the new cell wins; deletions are their own keys and shadow older
//! cells at read time. The same lock makes counter read-modify-write safe under concurrent
//! increments.
//!
//! A batch that changes a partition's size also rewrites the partition's size cell (see
//! [`crate::key`]), which is how the logical partition cap is enforced; a new partition without
//! head items gets none until a later write changes its size (the size is then summed from
//! its items). The physical partition's byte count is kept exact from the items' lengths.
//! During a split, each write to the splitting partition is also written, in the same batch,
//! to the new partition that will own its token.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use cql::types::{DataType, NativeType};
use smallvec::SmallVec;

use crate::cell::StoredCell;
use crate::engine::Storage;
use crate::open_tables::Table;
use crate::stripes::Stripes;
use crate::counting::item_bytes;
use crate::item_cache::ItemCache;
use crate::key::{self, ItemPath};
use crate::mutation::{ColumnOp, ColumnWrite, Deletion, Mutation};
use crate::ring::Route;
use crate::partition_address::{address, PartitionAddress};
use crate::{bundle, content, StorageError, TableId};

/// A mutation turned into keyed items, ready to be reconciled and written.
struct Staged<'m> {
    table_id: TableId,
    table: Arc<Table>,
    addr: PartitionAddress,
    items: Vec<Item<'m>>,
    mutation: &'m Mutation,
    /// The time (seconds) the mutation's TTLs and tombstones were stamped with.
    now: i64,
}

/// One keyed change of a staged mutation (its values borrowed from the mutation).
struct Item<'m> {
    key: Vec<u8>,
    pending: Pending<'m>,
    /// For a regular row's liveness item or simple cell: the length of the row's key prefix
    /// (everything before the item path), to find the row's other items.
    row: Option<usize>,
}

/// The element-key type of a collection column.
fn element_key_type(table: &Table, column: u32) -> Result<DataType, StorageError> {
    match table.layout.columns.get(&column).map(DataType::unfrozen) {
        Some(DataType::List(_)) => Ok(NativeType::Timeuuid.into()),
        Some(DataType::Set(t)) | Some(DataType::Map(t, _)) => Ok((**t).clone()),
        Some(DataType::Udt(_)) => Ok(NativeType::Smallint.into()),
        _ => Err(StorageError::InvalidRequest(format!(
            "column {column} is not a collection column of table {}",
            table.id
        ))),
    }
}

enum Pending<'m> {
    Cell(StoredCell),
    Counter {
        delta: i64,
        timestamp: i64,
    },
    /// An INSERT's liveness marker (a plain marker, empty value) and the simple cells it
    /// sets with the marker's timestamp and TTL, in column order: stored as one bundle when
    /// the row allows it (see [`crate::bundle`]).
    Row {
        marker: StoredCell,
        cells: Vec<(u32, &'m [u8])>,
    },
}

impl Storage {
    /// Applies a mutation to one partition as one atomic fjall batch. When it returns, the
    /// write is in fjall's journal in the OS (periodic sync) or fsynced (batch sync).
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`]; [`StorageError::InvalidRequest`] or
    /// [`StorageError::InvalidValue`] for malformed keys and values;
    /// [`StorageError::PartitionTooLarge`] when the write would take the partition past
    /// `logical_partition_max_bytes`; [`StorageError::Fjall`] on I/O failure;
    /// [`StorageError::Corrupt`] for unreadable existing data.
    pub fn apply(&self, table_id: TableId, mutation: &Mutation) -> Result<(), StorageError> {
        self.apply_all(&[(table_id, mutation)])
    }

    /// Applies mutations of several partitions (of one or more tables) as one atomic fjall
    /// batch: after a crash either all of them are there or none (a logged batch spanning
    /// partitions). Each partition must appear at most once.
    ///
    /// # Errors
    /// As [`Storage::apply`]; when any mutation fails nothing is written.
    pub fn apply_all(&self, writes: &[(TableId, &Mutation)]) -> Result<(), StorageError> {
        // Per-write lists hold one entry in place: a single write allocates none of them.
        let staged = writes
            .iter()
            .map(|(table_id, m)| self.stage(*table_id, m))
            .collect::<Result<SmallVec<[_; 1]>, _>>()?;
        self.inner.disk.check()?;
        let mask = staged
            .iter()
            .fold(0u64, |m, s| m | 1 << Stripes::of(s.table_id, s.addr.token));
        let guards = self.inner.stripes.lock(mask);
        // Routing is read under the stripe locks: a split switches routing and then waits for
        // every stripe, so a write never lands in a partition that has stopped owning it.
        let views: SmallVec<[_; 1]> = staged.iter().map(|s| s.table.ring.current()).collect();
        let mut batch = self.inner.durability.batch();
        let mut accounted: SmallVec<[_; 1]> = SmallVec::new();
        let mut written_flags: SmallVec<[u8; 4]> = SmallVec::new();
        let mut cached = CacheUpdates::new();
        for (s, view) in staged.iter().zip(&views) {
            let route = view.route(s.addr.token);
            if let Some((delta, new_partition, flags)) =
                self.write_staged(s, &route, &mut batch, &mut cached)?
            {
                accounted.push((s.table_id, route, delta, new_partition));
                written_flags.push(flags);
            } else {
                written_flags.push(0);
            }
        }
        if accounted.is_empty() {
            return self.after_write();
        }
        // Set before the commit, so a reader whose snapshot holds these items sees the flags.
        let marked: SmallVec<[u8; 4]> = staged
            .iter()
            .zip(&written_flags)
            .map(|(s, written)| {
                let flags = content::flags_of(s.mutation) | written;
                s.table
                    .ring
                    .content
                    .mark(flags, &self.inner.meta, &mut batch)
            })
            .collect();
        // Readers without the stripes take no cached item from here until the refresh. A
        // write caching nothing replaces no entry (its partitions are new), so opens none.
        let window = (!cached.is_empty()).then(|| self.inner.item_cache.begin_commit(mask));
        let committed = batch.commit();
        // Still under the stripes: the item cache holds the newest committed items (see
        // `crate::item_cache`); after a failed commit it forgets them rather than guess.
        let cache = &self.inner.item_cache;
        for (part, key, value) in cached {
            if committed.is_ok() {
                cache.put_shared(part, key, value);
            } else {
                cache.forget(part, &key);
            }
        }
        drop(window);
        committed?;
        for (s, flags) in staged.iter().zip(marked) {
            s.table.ring.content.committed(flags);
        }
        for (_, route, delta, new_partition) in &accounted {
            route.primary.account(*delta, *new_partition);
            if let Some(dual) = route.dual {
                dual.account(*delta, *new_partition);
            }
        }
        drop(guards);
        for (table_id, route, ..) in &accounted {
            self.inner.splitter.maybe_queue(*table_id, route.primary);
        }
        self.after_write()
    }

    /// Turns a mutation into keyed items (no storage access yet).
    fn stage<'m>(
        &self,
        table_id: TableId,
        mutation: &'m Mutation,
    ) -> Result<Staged<'m>, StorageError> {
        let table = self.table(table_id)?;
        let addr = address(&table.layout, &mutation.partition_key)?;
        let now = self.now();
        let mut items: Vec<Item<'m>> = Vec::new();
        let item = |key, pending| Item {
            key,
            pending,
            row: None,
        };
        let tomb = |d: &Deletion| {
            Pending::Cell(StoredCell::Tombstone {
                timestamp: d.timestamp,
                deleted_at: now,
            })
        };

        if let Some(d) = &mutation.partition_deletion {
            let mut k = addr.prefix.clone();
            k.push(key::SECTION_PARTITION_DELETION);
            items.push(item(k, tomb(d)));
        }
        let clustering = &table.layout.clustering;
        for rd in &mutation.range_deletions {
            let lo = key::start_bytes(clustering, &rd.start)?;
            let hi = key::end_bytes(clustering, &rd.end)?;
            let len = u16::try_from(lo.len())
                .map_err(|_| StorageError::InvalidRequest("range bound too long".into()))?;
            let mut k = addr.prefix.clone();
            k.push(key::SECTION_RANGE_TOMBSTONE);
            k.extend_from_slice(&len.to_be_bytes());
            k.extend_from_slice(&lo);
            k.extend_from_slice(&hi);
            items.push(item(k, tomb(&rd.deletion)));
        }
        if !mutation.static_columns.is_empty() {
            let static_prefix = key::extended(&addr.prefix, &[key::SECTION_STATIC], 0);
            for cw in &mutation.static_columns {
                items.push(item_of(&table, &static_prefix, cw, now)?);
            }
        }
        for row in &mutation.rows {
            if row.clustering.len() != clustering.len() {
                return Err(StorageError::InvalidRequest(format!(
                    "{} clustering values for {} clustering columns",
                    row.clustering.len(),
                    clustering.len()
                )));
            }
            // Room for the encoded clustering (each value and its terminator) and its end.
            let reserve = row.clustering.iter().map(|v| v.len() + 2).sum::<usize>() + 1;
            let mut row_prefix = key::extended(&addr.prefix, &[key::SECTION_ROWS], reserve);
            key::encode_clustering(clustering, &row.clustering, &mut row_prefix)?;
            row_prefix.push(key::CLUSTERING_END);
            if let Some(d) = &row.deletion {
                items.push(item(path_key(&row_prefix, &ItemPath::RowDeletion), tomb(d)));
            }
            let row_len = Some(row_prefix.len());
            // An INSERT's simple cells written with its timestamp and TTL go with its marker.
            let mut bundled: Vec<(u32, &'m [u8])> = Vec::new();
            if let Some(l) = &row.liveness {
                let ttl = l.ttl.filter(|t| *t > 0);
                for cw in &row.columns {
                    if let ColumnOp::Set {
                        value,
                        timestamp,
                        ttl: cell_ttl,
                    } = &cw.op
                    {
                        if *timestamp == l.timestamp && cell_ttl.filter(|t| *t > 0) == ttl {
                            bundled.push((cw.column, value.as_slice()));
                        }
                    }
                }
                bundled.sort_by_key(|(c, _)| *c);
                if bundled.windows(2).any(|w| w[0].0 == w[1].0) {
                    bundled.clear();
                }
            }
            // The row's bundle (with a liveness) is the item at this index, columns sorted.
            let bundle_at = row.liveness.as_ref().map(|_| items.len());
            if let Some(l) = &row.liveness {
                items.push(Item {
                    key: path_key(&row_prefix, &ItemPath::Liveness),
                    pending: Pending::Row {
                        marker: StoredCell::live(l.timestamp, l.ttl, now, Vec::new()),
                        cells: bundled,
                    },
                    row: row_len,
                });
            }
            for cw in &row.columns {
                let in_bundle = match bundle_at.and_then(|at| items.get(at)).map(|i| &i.pending) {
                    Some(Pending::Row { cells, .. }) => {
                        cells.binary_search_by_key(&cw.column, |(c, _)| *c).is_ok()
                    }
                    _ => false,
                };
                if in_bundle {
                    continue;
                }
                let mut it = item_of(&table, &row_prefix, cw, now)?;
                if matches!(
                    cw.op,
                    ColumnOp::Set { .. } | ColumnOp::Delete { .. } | ColumnOp::AddCounter { .. }
                ) {
                    it.row = row_len;
                }
                items.push(it);
            }
        }
        if items.iter().any(|i| i.key.len() > 0xffff) {
            return Err(StorageError::InvalidRequest(
                "key longer than 64 KiB".into(),
            ));
        }
        Ok(Staged {
            table_id,
            table,
            addr,
            items,
            mutation,
            now,
        })
    }

    /// Reconciles a staged mutation with what is stored and adds the winning items and, where
    /// the partition keeps one, its new size cell to `batch`. Returns (byte delta, whether the
    /// partition is new, content flags of what was written), or None when nothing wins; adds
    /// to `cached` the items the item cache is to hold once the batch commits.
    /// Called with the partition's stripe locked.
    fn write_staged(
        &self,
        staged: &Staged<'_>,
        route: &Route<'_>,
        batch: &mut fjall::OwnedWriteBatch,
        cached: &mut CacheUpdates,
    ) -> Result<Option<(i64, i64, u8)>, StorageError> {
        let Staged {
            table_id,
            table,
            addr,
            items,
            mutation,
            now,
        } = staged;
        let now = *now;
        let ks = &route.primary.keyspace;
        let size_key = key::size_cell_key(&addr.prefix);
        // A partition the table's filter surely lacks is new: nothing of it to look up.
        let (filter_bits, new_for_sure) = table.ring.filter.probe(&size_key);
        // Read under the stripe lock: a concurrent writer of this partition that stored a
        // separate cell or a bundle set its flag before committing.
        let content = &table.ring.content;
        let cache = &self.inner.item_cache;
        let part = route.primary.cache_id.load(Ordering::Relaxed);
        let mut state = State {
            ks,
            cache,
            part,
            now,
            gc_grace: i64::from(table.layout.gc_grace_seconds),
            exists: !new_for_sure,
            may_bundle: content.may_have(content::BUNDLES),
            slots: HashMap::default(),
            flags: 0,
        };
        // Rows stay bundles only in tables without separate row cells (see `crate::bundle`).
        let mut separate = content.may_have(content::SEPARATE_CELLS)
            || items
                .iter()
                .any(|i| i.row.is_some() && !matches!(i.pending, Pending::Row { .. }));
        for item in items {
            match &item.pending {
                Pending::Row { marker, cells } => {
                    if !separate && state.merge_bundle(&item.key, marker, cells)? {
                        continue;
                    }
                    separate = true;
                    state.explode(&item.key)?;
                    state.reconcile(&item.key, marker.clone())?;
                    let row_len = item.row.unwrap_or(item.key.len());
                    for (col, value) in cells {
                        let k = path_key(&item.key[..row_len], &ItemPath::Cell(*col));
                        if state.reconcile(&k, bundle::with_value(marker, value.to_vec()))? {
                            state.flags |= content::SEPARATE_CELLS;
                        }
                    }
                }
                Pending::Cell(cell) => {
                    if let Some(row_len) = item.row {
                        let liveness = path_key(&item.key[..row_len], &ItemPath::Liveness);
                        state.explode(&liveness)?;
                    }
                    if state.reconcile(&item.key, cell.clone())? && item.row.is_some() {
                        state.flags |= content::SEPARATE_CELLS;
                    }
                }
                Pending::Counter { delta, timestamp } => {
                    if let Some(row_len) = item.row {
                        let liveness = path_key(&item.key[..row_len], &ItemPath::Liveness);
                        state.explode(&liveness)?;
                        state.flags |= content::SEPARATE_CELLS;
                    }
                    let new = counter_sum(state.load(&item.key)?, *delta, *timestamp, now)?;
                    state.set(&item.key, new);
                }
            }
        }
        // A partition the filter surely lacks has no entry to replace (the cache holds items
        // of stored partitions, all in the filter once it is complete, or of partitions
        // written since, which their writes added): its items are cached only while the
        // cache admits new partitions' items (`ItemCache::admits_new`).
        let cache_items = cache.enabled() && (state.exists || cache.admits_new());
        let mut delta: i64 = 0;
        let mut wrote = false;
        for (k, slot) in &state.slots {
            let Some(cell) = slot.cell.as_ref().filter(|_| slot.dirty) else {
                continue;
            };
            // As fjall's own slices: the batch, a dual write and the item cache share them.
            let encoded = cell.encode_slice();
            let key = fjall::Slice::from(k.as_slice());
            let old_total = slot.stored_len.map_or(0, |len| k.len() + len);
            delta += (k.len() + encoded.len()) as i64 - old_total as i64;
            if let Some(dual) = route.dual {
                batch.insert(&dual.keyspace, key.clone(), encoded.clone());
            }
            if cache_items {
                cached.push((part, key.clone(), encoded.clone()));
            }
            batch.insert(ks, key, encoded);
            wrote = true;
        }
        if !wrote {
            return Ok(None);
        }
        let head_items = content::flags_of(mutation) & content::HEAD != 0;
        // An overwrite of the same size leaves the partition's size, and so its size cell (if
        // it has one), as they are: no lookup and no insert.
        let found = state.slots.values().any(|s| s.stored_len.is_some());
        if found && delta == 0 && !head_items {
            return Ok(Some((0, 0, state.flags)));
        }
        // The partition's size and flags before this write: from its size cell, else by
        // summing its stored items (a partition has no size cell only while it holds what
        // the write that created it stored, see `crate::key`, so the sum is small).
        let old_cell = if new_for_sure {
            None
        } else {
            match ks.get(&size_key)? {
                Some(v) => Some(key::decode_size_cell(&v)?),
                None => None,
            }
        };
        let (old_size, old_flags) = match old_cell {
            Some(cell) => cell,
            None if new_for_sure => (0, 0),
            None => (item_bytes(ks.prefix(&addr.prefix))?, 0),
        };
        let new_partition = old_cell.is_none() && old_size == 0;
        let flags = old_flags | if head_items { key::SIZE_FLAG_HEAD } else { 0 };
        let new_size = old_size.saturating_add_signed(delta);
        let max = self.inner.limits.logical_partition_max_bytes;
        if delta > 0 && new_size > max {
            return Err(StorageError::PartitionTooLarge {
                table: *table_id,
                token: addr.token,
                bytes: new_size,
                max,
            });
        }
        if new_partition {
            // Before the commit, under the stripe lock (see `crate::partition_filter`).
            table.ring.filter.add(filter_bits);
            // A new partition without head items gets no size cell: half the items a
            // one-row partition would otherwise cost.
            if !head_items {
                return Ok(Some((delta, 1, state.flags)));
            }
        }
        if old_cell.is_some_and(|(size, f)| size == new_size && f == flags) {
            return Ok(Some((delta, 0, state.flags)));
        }
        let size_value = key::encode_size_cell(new_size, flags);
        if let Some(dual) = route.dual {
            batch.insert(&dual.keyspace, size_key.as_slice(), size_value);
        }
        batch.insert(ks, size_key.as_slice(), size_value);
        if old_cell.is_none() {
            delta += (size_key.len() + size_value.len()) as i64;
        }
        Ok(Some((delta, i64::from(new_partition), state.flags)))
    }
}

/// An item for the item cache once its batch commits: (partition cache id, key, item).
type CacheUpdate = (u64, fjall::Slice, fjall::Slice);

/// The items a write's batch gives the item cache (a one-row write's in place).
type CacheUpdates = SmallVec<[CacheUpdate; 1]>;

/// One key's state while a mutation is reconciled.
struct Slot {
    /// The current winner (stored or written by this mutation).
    cell: Option<StoredCell>,
    /// Length of the value stored before this mutation (None: the key was absent).
    stored_len: Option<usize>,
    /// Changed by this mutation: to be written.
    dirty: bool,
}

/// The keys one mutation touches in one partition, loaded on first use.
struct State<'a> {
    ks: &'a fjall::Keyspace,
    /// The item cache and the partition's id in it: consulted before `ks`, filled from it.
    cache: &'a ItemCache,
    part: u64,
    /// The write's time and the table's gc-grace, in seconds (see `State::maybe_purged`).
    now: i64,
    gc_grace: i64,
    exists: bool,
    /// The table may hold bundles: a separate write must check the row's liveness item.
    may_bundle: bool,
    slots: HashMap<Vec<u8>, Slot, foldhash::fast::RandomState>,
    /// Content flags of what this mutation stores.
    flags: u8,
}

impl State<'_> {
    /// The current cell at `key`: written earlier in this mutation, else stored.
    fn load(&mut self, key: &[u8]) -> Result<Option<&StoredCell>, StorageError> {
        if !self.slots.contains_key(key) {
            let stored = if self.exists {
                // Under the stripe: what the cache or fjall holds is the newest item, except
                // that compaction may have purged a cached dead cell past gc-grace (a write
                // older than it is then accepted, as without the cache): fjall decides.
                let cached = self.cache.get(self.part, key);
                match cached.filter(|v| !self.maybe_purged(v)) {
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

    /// Whether compaction may have purged the stored item `value` (a tombstone or an expired
    /// cell past gc-grace, see `crate::compaction`).
    fn maybe_purged(&self, value: &[u8]) -> bool {
        if StoredCell::is_live_encoding(value) {
            return false;
        }
        let gone_since = match StoredCell::decode(value) {
            Ok(StoredCell::Live { .. }) => return false,
            Ok(StoredCell::Expiring { expires_at, .. }) => expires_at,
            Ok(StoredCell::Tombstone { deleted_at, .. }) => deleted_at,
            Err(_) => return true,
        };
        gone_since.saturating_add(self.gc_grace) < self.now
    }

    fn set(&mut self, key: &[u8], cell: StoredCell) {
        if let Some(slot) = self.slots.get_mut(key) {
            slot.cell = Some(cell);
            slot.dirty = true;
        }
    }

    /// Stores `new` at `key` when it wins over the current cell; returns whether it did.
    fn reconcile(&mut self, key: &[u8], new: StoredCell) -> Result<bool, StorageError> {
        let wins = self.load(key)?.is_none_or(|old| new.wins_over(old));
        if wins {
            self.set(key, new);
        }
        Ok(wins)
    }

    /// Keeps the row one bundle when the new INSERT replaces the stored one whole (or loses
    /// whole); returns false when the row must be exploded instead.
    fn merge_bundle(
        &mut self,
        key: &[u8],
        marker: &StoredCell,
        cells: &[(u32, &[u8])],
    ) -> Result<bool, StorageError> {
        if let Some(old) = self.load(key)? {
            let (old_marker, old_cells) = bundle::explode(old)?;
            let new_cells: Vec<_> = cells
                .iter()
                .map(|(c, v)| (*c, bundle::with_value(marker, v.to_vec())))
                .collect();
            let find = |col: u32, list: &'_ [(u32, StoredCell)]| {
                list.iter().find(|(c, _)| *c == col).map(|(_, x)| x.clone())
            };
            if marker.wins_over(&old_marker) {
                // Replaces the stored bundle only if it overwrites every one of its cells.
                let covers = old_cells
                    .iter()
                    .all(|(c, old)| find(*c, &new_cells).is_some_and(|new| new.wins_over(old)));
                if !covers {
                    return Ok(false);
                }
            } else {
                // Every part of the INSERT loses: nothing to write; otherwise explode.
                let loses = new_cells
                    .iter()
                    .all(|(c, new)| find(*c, &old_cells).is_some_and(|old| !new.wins_over(&old)));
                return Ok(loses);
            }
        }
        let mut bytes = Vec::with_capacity(cells.iter().map(|(_, v)| v.len() + 8).sum::<usize>());
        for (col, value) in cells {
            bundle::push(&mut bytes, *col, value)?;
        }
        if !bytes.is_empty() {
            self.flags |= content::BUNDLES;
        }
        self.set(key, bundle::with_value(marker, bytes));
        Ok(true)
    }

    /// Turns the bundle at the liveness key `key` (if any) into a plain marker and separate
    /// cell items, reconciled with whatever separate items the row has.
    fn explode(&mut self, key: &[u8]) -> Result<(), StorageError> {
        if !self.may_bundle && !self.slots.contains_key(key) {
            return Ok(());
        }
        let Some(current) = self.load(key)? else {
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

fn path_key(prefix: &[u8], path: &ItemPath) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + path.encoded_len());
    k.extend_from_slice(prefix);
    path.encode(&mut k);
    k
}

/// The new counter cell: the current (live) total plus `delta`. A counter deleted at or after
/// this increment stays deleted (Cassandra's counter deletions are final for older updates).
fn counter_sum(
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

/// The item of one column change (`row` unset: the caller marks regular row cells).
fn item_of(
    table: &Table,
    row_prefix: &[u8],
    cw: &ColumnWrite,
    now: i64,
) -> Result<Item<'static>, StorageError> {
    let col = cw.column;
    let element = |k: &[u8]| -> Result<Vec<u8>, StorageError> {
        let ty = element_key_type(table, col)?;
        let mut e = Vec::new();
        key::encode_value(&ty, k, &mut e)?;
        Ok(path_key(row_prefix, &ItemPath::Complex(col, Some(e))))
    };
    let tomb = |timestamp| {
        Pending::Cell(StoredCell::Tombstone {
            timestamp,
            deleted_at: now,
        })
    };
    let item = match &cw.op {
        ColumnOp::Set {
            value,
            timestamp,
            ttl,
        } => (
            path_key(row_prefix, &ItemPath::Cell(col)),
            Pending::Cell(StoredCell::live(*timestamp, *ttl, now, value.clone())),
        ),
        ColumnOp::Delete { timestamp } => {
            (path_key(row_prefix, &ItemPath::Cell(col)), tomb(*timestamp))
        }
        ColumnOp::DeleteCollection { timestamp } => (
            path_key(row_prefix, &ItemPath::Complex(col, None)),
            tomb(*timestamp),
        ),
        ColumnOp::SetElement {
            key,
            value,
            timestamp,
            ttl,
        } => (
            element(key)?,
            Pending::Cell(StoredCell::live(*timestamp, *ttl, now, value.clone())),
        ),
        ColumnOp::DeleteElement { key, timestamp } => (element(key)?, tomb(*timestamp)),
        ColumnOp::AddCounter { delta, timestamp } => (
            path_key(row_prefix, &ItemPath::Cell(col)),
            Pending::Counter {
                delta: *delta,
                timestamp: *timestamp,
            },
        ),
    };
    Ok(Item {
        key: item.0,
        pending: item.1,
        row: None,
    })
}
