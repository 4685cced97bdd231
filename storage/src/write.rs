//! Writes: a mutation (everything one statement or batch changes in one partition) applied
//! as one atomic fjall write batch.
//!
//! Each physical key holds exactly one [`crate::cell::StoredCell`]: the winner of Cassandra's
//! reconciliation (a row's liveness item may carry the row's INSERTed cells as a bundle, see
//! [`crate::bundle`]). So a write reads the keys it touches (under the partition's lock
//! stripe, see [`crate::reconcile`]) and writes only where the new cell wins; deletions are
//! their own keys and shadow older cells at read time. The same lock makes counter
//! read-modify-write safe under concurrent increments.
//!
//! A batch that changes a partition's size also rewrites the partition's size cell (see
//! [`crate::key`]), which is how the logical partition cap is enforced; a new partition without
//! head items gets none until a later write changes its size (the size is then summed from
//! its items). The physical partition's byte count is kept exact from the items' lengths.
//! During a split, each write to the splitting partition is also written, in the same batch,
//! to the new partition that will own its token.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use smallvec::SmallVec;

use crate::counting::item_bytes;
use crate::engine::Storage;
use crate::key::{self, path_key, ItemPath};
use crate::mutation::Mutation;
use crate::reconcile::{counter_sum, Reconciler};
use crate::ring::Route;
use crate::stage::{stage, Pending, Staged};
use crate::stripes::Stripes;
use crate::{bundle, content, partition_cache, StorageError, TableId};

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
        self.apply_replicated(writes, self.now(), None)
    }

    /// As [`Storage::apply_all`], for a replica applying a replicated log entry: `now` (seconds
    /// since the epoch, the expiry base of TTLs and tombstones) comes from the entry, so every
    /// replica stores the same cells, and `marker` (a server meta key and value, e.g. the
    /// entry's log position) is written in the same atomic batch, so after a crash the data
    /// and the marker agree.
    ///
    /// # Errors
    /// As [`Storage::apply_all`].
    pub fn apply_replicated(
        &self,
        writes: &[(TableId, &Mutation)],
        now: i64,
        marker: Option<(&[u8], &[u8])>,
    ) -> Result<(), StorageError> {
        if let Some((key, _)) = marker {
            if key.starts_with(crate::names::STORAGE_META_PREFIX) {
                return Err(StorageError::InvalidRequest(
                    "meta keys starting with \\0storage\\0 belong to storage".into(),
                ));
            }
        }
        // Per-write lists hold one entry in place: a single write allocates none of them.
        let staged = writes
            .iter()
            .map(|(table_id, m)| stage(self.table(*table_id)?, m, now))
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
            if let Some((key, value)) = marker {
                batch.insert(&self.inner.meta, key, value);
                batch.commit()?;
            }
            return self.after_write();
        }
        if let Some((key, value)) = marker {
            batch.insert(&self.inner.meta, key, value);
        }
        // Index entries go in the same batch, from the index list read under the stripes
        // (see `crate::secondary`), with the newest layout.
        for s in &staged {
            if let Some(states) = self.inner.indexes.of(s.table_id) {
                let table = self.table(s.table_id)?;
                self.inner.indexes.add_entries(
                    &states,
                    s.table_id,
                    &table.layout,
                    &s.addr.prefix,
                    s.mutation,
                    &mut batch,
                )?;
            }
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
        for update in cached {
            match update {
                CacheUpdate::Put(part, key, value) if committed.is_ok() => {
                    cache.put_shared(part, key, value)
                }
                CacheUpdate::Put(part, key, _) => cache.forget(part, &key),
                CacheUpdate::ForgetRows(part, key) => partition_cache::forget(cache, part, &key),
            }
        }
        drop(window);
        committed?;
        // Written vectors wait for their graphs' worker (see `crate::ann`).
        for (s, view) in staged.iter().zip(&views) {
            if !s.table.layout.vector_indexes.is_empty() {
                let route = view.route(s.addr.token);
                let mut parts: SmallVec<[u64; 2]> = SmallVec::new();
                parts.push(route.primary.id);
                parts.extend(route.dual.map(|d| d.id));
                self.inner
                    .ann
                    .written(s.table_id, &s.table.layout, &parts, s.mutation);
            }
        }
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
        let mut state = Reconciler {
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
        // Tables that never stored a separate row cell keep each row's simple cells in its
        // liveness item, merged cell by cell; the others keep one item per cell (see
        // `crate::bundle`).
        let mut row_items = !content.may_have(content::SEPARATE_CELLS);
        for item in items {
            if row_items {
                let merged = match (&item.pending, item.row) {
                    (Pending::Row { marker, cells }, _) => {
                        Some(state.merge_insert(&item.key, marker, cells)?)
                    }
                    (Pending::Cell(cell), Some(row_len)) => {
                        let ItemPath::Cell(col) = ItemPath::decode(&item.key[row_len..])? else {
                            return Err(StorageError::corrupt("row cell without a column path"));
                        };
                        let liveness = path_key(&item.key[..row_len], &ItemPath::Liveness);
                        Some(state.merge_cell(&liveness, col, cell.clone())?)
                    }
                    _ => None,
                };
                match merged {
                    Some(true) => continue,
                    // A row whose item is too large to rewrite for this write: the table
                    // turns to one item per cell (see `bundle::MERGE_MAX`).
                    Some(false) => row_items = false,
                    None => {}
                }
            }
            match &item.pending {
                Pending::Row { marker, cells } => {
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
                cached.push(CacheUpdate::Put(part, key.clone(), encoded.clone()));
            }
            batch.insert(ks, key, encoded);
            wrote = true;
        }
        if !wrote {
            return Ok(None);
        }
        // The partition's cached rows, if it may have any, are stale once this commits (see
        // `crate::partition_cache`); a split's new half holds its own.
        if state.exists && table.ring.partitions_cached.load(Ordering::Relaxed) {
            let entry = fjall::Slice::from(&partition_cache::entry_key(&addr.prefix)[..]);
            if let Some(dual) = route.dual {
                let dual_part = dual.cache_id.load(Ordering::Relaxed);
                cached.push(CacheUpdate::ForgetRows(dual_part, entry.clone()));
            }
            cached.push(CacheUpdate::ForgetRows(part, entry));
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
        // A partition dual-written by a split belongs to the split's new half.
        route
            .dual
            .unwrap_or(route.primary)
            .saw_partition_size(new_size);
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

/// What a write's batch does to the item cache once it commits (or fails to).
enum CacheUpdate {
    /// (partition cache id, key, item): the item is stored after a commit, forgotten after a
    /// failed one.
    Put(u64, fjall::Slice, fjall::Slice),
    /// (partition cache id, entry key): a partition's cached rows, forgotten either way (see
    /// `crate::partition_cache::forget`).
    ForgetRows(u64, fjall::Slice),
}

/// The items a write's batch gives the item cache (a one-row write's in place).
type CacheUpdates = SmallVec<[CacheUpdate; 1]>;
