//! Online splits of physical partitions.
//!
//! A physical partition whose bytes pass `physical_partition_max_bytes` is queued
//! ([`crate::split_queue`]) to a background worker ([`crate::split_worker`]), which splits it
//! with a [`Splitter`] while reads and writes go on. The source keeps the
//! lower half of its range; the upper half moves to one new keyspace:
//!
//! 1. **Choose** the token `at` that best halves its bytes, walking the logical partitions'
//!    size cells on a snapshot (two seeks per logical partition; a partition without a cell
//!    is summed by a scan of its items). Cuts fall between tokens
//!    only, so a logical partition is never cut; a partition holding a single token is flagged
//!    oversized instead.
//! 2. **Prepare**: save a map version recording the pending split (source, new id, `at`),
//!    create the new keyspace, and install a routing view in which every write to a token
//!    above `at` is also written, in the same atomic batch, to the new keyspace. The view is
//!    installed and the copy's snapshot taken while holding every write-lock stripe, so each
//!    write is either in the snapshot or dual-written, never both or neither.
//! 3. **Copy** the upper half from that snapshot, in chunks of about
//!    256 KiB: for each chunk, lock the stripes of the partitions it holds, re-read the chunk
//!    fresh from the source and write it to the new keyspace. A key is therefore copied
//!    either before a later write (which is dual-written) or after it (and the copy reads the
//!    newer value); keys created after the snapshot were dual-written from the start. The new
//!    partition's byte count is the snapshot's bytes plus every dual write's delta.
//! 4. **Switch**: save, fsynced (which also makes every copied batch durable: fjall has one
//!    sequential journal), the map version in which the source owns `(start, at]`, the new
//!    partition `(at, end]`, and the source is listed as garbage; then, holding every stripe,
//!    install the matching view and move the upper half's counts off the source's.
//! 5. **Trim** the moved keys from the source once no reader or writer still holds a view
//!    from before the switch, then save the map without the garbage entry.
//!
//! Until step 4 the source holds every acknowledged write, so a crash before the switch rolls
//! the split back on open (the new keyspace is deleted); a crash after it redoes the trim (see
//! [`crate::ring_recovery::open_ring`]). Reads never see untrimmed keys: they are routed, and
//! scans bounded, by token range. Errors roll back the same way; drop and truncate cancel a
//! running split, and so does closing the store. Only the switch is fsynced: a lost prepare
//! record leaves a stray keyspace, deleted on open.

use std::sync::atomic::Ordering;
use std::sync::Arc;
#[cfg(test)]
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fjall::{Database, Keyspace, Readable, Snapshot};

use crate::counting::{item_bytes, PartitionCounter};
use crate::key::{self, decode_size, size_cell_key, split_partition_prefix};
use crate::open_tables::{OpenTables, Table};
use crate::physical::{open_keyspace, trim, Physical};
use crate::ring::{ActiveSplit, RingView, TableRing};
use crate::ring_store::RingStore;
use crate::routing_map::{token_key_bounds, PendingSplit, RangeEntry, RoutingMap};
use crate::split_queue::SplitQueue;
use crate::stripes::Stripes;
use crate::{StorageError, TableId};

/// Bytes copied per locked chunk.
const CHUNK_BYTES: usize = 256 << 10;

/// Steps at which tests can simulate a crash (the split stops, leaving its state as is).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SplitStep {
    Prepared,
    Copying,
    Copied,
    Switched,
}

/// What a split needs of the store: the database, the open tables, the write-lock stripes,
/// the ring store and the split queue; cheap to clone (each split worker holds one).
#[derive(Clone)]
pub(crate) struct Splitter {
    db: Database,
    rings: RingStore,
    tables: Arc<OpenTables>,
    stripes: Arc<Stripes>,
    /// A physical partition storing more than this is split.
    max_bytes: u64,
    /// Partitions waiting for a split worker (see `crate::split_worker`).
    pub(crate) queue: Arc<SplitQueue>,
    /// The step at which tests make the next split stop as if the process crashed.
    #[cfg(test)]
    pub(crate) crash_at: Arc<Mutex<Option<SplitStep>>>,
}

/// How a copy ended.
enum Copy {
    Done,
    Cancelled,
    #[cfg(test)]
    Crashed,
}

impl Splitter {
    /// Splits the physical partitions of `tables` (stored in `db`, their maps in `rings`)
    /// that store more than `max_bytes`, fencing writes with `stripes`.
    pub(crate) fn new(
        db: Database,
        rings: RingStore,
        tables: Arc<OpenTables>,
        stripes: Arc<Stripes>,
        max_bytes: u64,
    ) -> Splitter {
        Splitter {
            db,
            rings,
            tables,
            stripes,
            max_bytes,
            queue: Arc::default(),
            #[cfg(test)]
            crash_at: Arc::default(),
        }
    }

    /// Queues a split of `part` when it is over the threshold (once).
    pub(crate) fn maybe_queue(&self, table: TableId, part: &Physical) {
        if part.bytes() > self.max_bytes
            && !part.is_oversized()
            && !part.split_queued.swap(true, Ordering::AcqRel)
        {
            self.queue.push(table, part.id);
        }
    }

    /// Saves the size statistics of every physical partition.
    pub(crate) fn save_stats(&self) -> Result<(), StorageError> {
        self.rings.save_stats(&self.tables.all())
    }

    /// Splits the table's largest physical partition now, whatever its size (see
    /// [`crate::Storage::split_now`]).
    pub(crate) fn split_now(&self, table: TableId) -> Result<bool, StorageError> {
        let view = self.tables.get(table)?.ring.current();
        let Some(largest) = view.parts.iter().max_by_key(|p| p.bytes()) else {
            return Ok(false);
        };
        let id = largest.id;
        drop(view);
        self.run_split(table, id, true)
    }

    /// Splits physical partition `id` of `table` if it is (still) over the threshold, or
    /// always when `force`. Returns whether it split.
    pub(crate) fn run_split(
        &self,
        table_id: TableId,
        id: u64,
        force: bool,
    ) -> Result<bool, StorageError> {
        let table = self.tables.get(table_id)?;
        let ring = table.ring.clone();
        let _split = ring.split_lock.lock().unwrap_or_else(|p| p.into_inner());
        if ring.cancel.load(Ordering::SeqCst) {
            return Ok(false);
        }
        let view = ring.current();
        let Some(i) = view.position(id) else {
            return Ok(false);
        };
        let src = &view.parts[i];
        // Cleared first: writes during this split may queue the (smaller) source again.
        src.split_queued.store(false, Ordering::Release);
        if !force && src.bytes() <= self.max_bytes {
            return Ok(false);
        }
        self.split(&table, &ring, view, i, None)
    }

    /// Splits the physical partition of `table` holding token `at` so that one ends at `at`
    /// (see [`crate::Storage::split_at`]). Returns whether it split.
    pub(crate) fn split_at(&self, table_id: TableId, at: i64) -> Result<bool, StorageError> {
        let table = self.tables.get(table_id)?;
        let ring = table.ring.clone();
        let _split = ring.split_lock.lock().unwrap_or_else(|p| p.into_inner());
        if ring.cancel.load(Ordering::SeqCst) {
            return Ok(false);
        }
        let view = ring.current();
        let i = view.map.index(at);
        if view.map.ranges[i].end == at {
            return Ok(false);
        }
        self.split(&table, &ring, view, i, Some(at))
    }

    #[cfg(test)]
    fn crash_at(&self, step: SplitStep) -> bool {
        let crash = *self.crash_at.lock().unwrap_or_else(|p| p.into_inner());
        crash == Some(step)
    }

    fn split(
        &self,
        table: &Table,
        ring: &TableRing,
        view: Arc<RingView>,
        i: usize,
        forced: Option<i64>,
    ) -> Result<bool, StorageError> {
        let started = Instant::now();
        let src = &view.parts[i];
        let (start, end) = (view.map.start(i), view.map.ranges[i].end);
        let source_bytes = src.bytes();
        let db = &self.db;

        // 1. Choose the split token (unless the caller chose it).
        let sizes = match forced {
            Some(_) => None,
            None => Some(partition_sizes(&db.snapshot(), &src.keyspace, start, end)?),
        };
        let chosen = match (forced, &sizes) {
            (Some(at), _) => Some(at).filter(|at| start < *at && *at < end),
            (None, Some(sizes)) => best_split(sizes),
            (None, None) => None,
        };
        let Some(at) = chosen else {
            if forced.is_some() {
                return Ok(false);
            }
            if !src.is_oversized() {
                src.set_oversized(true);
                let mut map = view.map.clone();
                map.version += 1;
                map.ranges[i].oversized = true;
                self.rings.save_map(table.id, &map, &[], &[], false)?;
                ring.install(RingView {
                    map,
                    parts: view.parts.clone(),
                    split: None,
                });
                tracing::info!(
                    table = %table.id, id = src.id, bytes = source_bytes,
                    "physical partition holds a single logical partition: flagged oversized"
                );
            }
            return Ok(false);
        };

        // 2. Prepare: record the pending split, create the new keyspace, start dual writes.
        let mut map = view.map.clone();
        map.version += 1;
        let upper_id = map.next_id;
        map.next_id += 1;
        map.split = Some(PendingSplit {
            source: src.id,
            upper: upper_id,
            at,
        });
        self.rings.save_map(table.id, &map, &[], &[], false)?;
        let upper = Arc::new(Physical::new(
            upper_id,
            open_keyspace(db, table.id, upper_id)?,
            0,
            0,
        ));
        // The bytes above `at` and each half's largest logical partition: from the sizes when
        // they were read; else half the bytes, and the source's largest for both halves.
        let (expected, lower_largest) = match &sizes {
            Some(sizes) => {
                let largest = |upper: bool| {
                    let half = sizes.iter().filter(|(t, _)| (*t > at) == upper);
                    half.map(|(_, b)| *b).max().unwrap_or(0)
                };
                upper.saw_partition_size(largest(true));
                let above = sizes.iter().filter(|(t, _)| *t > at).map(|(_, b)| *b).sum();
                (above, Some(largest(false)))
            }
            None => {
                upper.saw_partition_size(src.largest_partition());
                (source_bytes / 2, None)
            }
        };
        ring.set_split_progress(0, expected);
        let (split_view, snap) = {
            // Holding every stripe: each write commits either before the snapshot (and is
            // copied from it) or after it, dual-written (and counted by its delta).
            let _all = self.stripes.lock(u64::MAX);
            let split_view = ring.install(RingView {
                map: map.clone(),
                parts: view.parts.clone(),
                split: Some(ActiveSplit {
                    source: src.id,
                    at,
                    upper: upper.clone(),
                }),
            });
            // From here writes above `at` raise the new half's mark, not the source's.
            if let Some(lower) = lower_largest {
                src.largest.store(lower, Ordering::Relaxed);
            }
            (split_view, db.snapshot())
        };
        tracing::info!(
            table = %table.id, id = src.id, bytes = source_bytes, start, end, at,
            new_id = upper_id, "split started"
        );
        #[cfg(test)]
        if self.crash_at(SplitStep::Prepared) {
            return Ok(false);
        }

        // 3. Copy.
        match self.copy_upper(&snap, table.id, ring, src, (at, end), &upper) {
            Ok(Copy::Done) => {}
            #[cfg(test)]
            Ok(Copy::Crashed) => return Ok(false),
            Ok(Copy::Cancelled) => {
                self.roll_back(table.id, ring, &view, map, upper)?;
                return Ok(false);
            }
            Err(e) => {
                if let Err(e2) = self.roll_back(table.id, ring, &view, map, upper) {
                    tracing::error!(table = %table.id, "rolling back a failed split: {e2}");
                }
                return Err(e);
            }
        }
        #[cfg(test)]
        if self.crash_at(SplitStep::Copied) {
            return Ok(false);
        }

        // 4. Switch.
        map.version += 1;
        map.split = None;
        map.ranges[i].end = at;
        map.ranges[i].oversized = false;
        map.ranges.insert(
            i + 1,
            RangeEntry {
                end,
                id: upper_id,
                oversized: false,
            },
        );
        map.garbage.push(src.id);
        self.rings.save_map(table.id, &map, &[], &[], true)?;
        let mut parts = view.parts.clone();
        parts.insert(i + 1, upper.clone());
        {
            // No write is in flight: every dual write is counted in both partitions.
            let _all = self.stripes.lock(u64::MAX);
            ring.install(RingView {
                map: map.clone(),
                parts,
                split: None,
            });
            src.account(-(upper.bytes() as i64), -(upper.partitions() as i64));
        }
        self.save_stats()?;
        let switched = started.elapsed();
        #[cfg(test)]
        if self.crash_at(SplitStep::Switched) {
            return Ok(false);
        }

        // 5. Trim the source once no view from before the switch is in use.
        let source = src.clone();
        drop(view);
        while Arc::strong_count(&source) > 2 || split_view.strong_count() > 0 {
            // `source` is also held by the current view: two references remain.
            std::thread::sleep(Duration::from_millis(1));
        }
        let (lo, hi) = token_key_bounds(start, at);
        trim(db, &source.keyspace, &lo, hi.as_deref())?;
        map.version += 1;
        map.garbage.retain(|g| *g != source.id);
        self.rings.save_map(table.id, &map, &[], &[], false)?;
        let current = ring.current();
        ring.install(RingView {
            map,
            parts: current.parts.clone(),
            split: None,
        });
        tracing::info!(
            table = %table.id, id = source.id, bytes = source_bytes, at,
            lower_bytes = source.bytes(), upper_bytes = upper.bytes(), new_id = upper_id,
            switch_ms = switched.as_millis() as u64,
            total_ms = started.elapsed().as_millis() as u64,
            "split finished"
        );
        self.maybe_queue(table.id, &source);
        self.maybe_queue(table.id, &upper);
        Ok(true)
    }

    /// Step 3: copies the source's tokens in `(at, end]` into `upper` (see the module docs).
    fn copy_upper(
        &self,
        snap: &Snapshot,
        table: TableId,
        ring: &TableRing,
        src: &Physical,
        (at, end): (i64, i64),
        upper: &Physical,
    ) -> Result<Copy, StorageError> {
        let (lo, hi) = token_key_bounds(at, end);
        // (bytes, logical partitions) of the snapshot.
        let mut base = 0u64;
        let mut partitions = PartitionCounter::default();
        let mut chunk: Option<(Vec<u8>, Vec<u8>)> = None;
        let mut mask = 0u64;
        let mut chunk_bytes = 0usize;
        let iter = match hi {
            Some(hi) => snap.range(&src.keyspace, lo..hi),
            None => snap.range(&src.keyspace, lo..),
        };
        let mut iter = iter.peekable();
        while let Some(g) = iter.next() {
            let (k, v) = g.into_inner()?;
            base += (k.len() + v.len()) as u64;
            partitions.see(&k)?;
            mask |= 1 << Stripes::of(table, key::token_of(&k));
            chunk_bytes += k.len() + v.len();
            match &mut chunk {
                Some((_, last)) => *last = k.to_vec(),
                None => chunk = Some((k.to_vec(), k.to_vec())),
            }
            if chunk_bytes >= CHUNK_BYTES || iter.peek().is_none() {
                if ring.cancel.load(Ordering::SeqCst) || self.queue.signal().stopped() {
                    return Ok(Copy::Cancelled);
                }
                if let Some((first, last)) = chunk.take() {
                    self.copy_chunk(table, src, upper, &first, &last, mask)?;
                }
                let (_, expected) = ring.split_progress();
                ring.set_split_progress(base, expected);
                (mask, chunk_bytes) = (0, 0);
                #[cfg(test)]
                if self.crash_at(SplitStep::Copying) {
                    return Ok(Copy::Crashed);
                }
            }
        }
        upper.account(base as i64, partitions.count as i64);
        Ok(Copy::Done)
    }

    /// Copies the source's current keys in `first..=last` whose stripe is in `mask`, holding
    /// those stripes.
    fn copy_chunk(
        &self,
        table: TableId,
        src: &Physical,
        upper: &Physical,
        first: &[u8],
        last: &[u8],
        mask: u64,
    ) -> Result<(), StorageError> {
        let _locks = self.stripes.lock(mask);
        let mut batch = self.db.batch();
        for g in src.keyspace.range(first..=last) {
            let (k, v) = g.into_inner()?;
            if mask & (1 << Stripes::of(table, key::token_of(&k))) == 0 {
                continue; // created after the snapshot: dual-written from the start
            }
            batch.insert(&upper.keyspace, k, v);
        }
        batch.commit()?;
        Ok(())
    }

    /// Undoes steps 2–3: routing back to the source alone, the new keyspace deleted.
    fn roll_back(
        &self,
        table: TableId,
        ring: &TableRing,
        view: &RingView,
        mut map: RoutingMap,
        upper: Arc<Physical>,
    ) -> Result<(), StorageError> {
        map.version += 1;
        map.split = None;
        ring.install(RingView {
            map: map.clone(),
            parts: view.parts.clone(),
            split: None,
        });
        self.rings.save_map(table, &map, &[], &[], false)?;
        wait_unused(&upper);
        self.db.delete_keyspace(upper.keyspace.clone())?;
        tracing::warn!(%table, "split rolled back");
        Ok(())
    }
}

/// Waits until `part` is referenced only by the caller (no view routes to it any more).
fn wait_unused(part: &Arc<Physical>) {
    while Arc::strong_count(part) > 1 {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Bytes per distinct token in `(start, end]`, in token order, from the partitions' size
/// cells (a partition without one is summed by a scan).
fn partition_sizes(
    snap: &Snapshot,
    ks: &Keyspace,
    start: i64,
    end: i64,
) -> Result<Vec<(i64, u64)>, StorageError> {
    let mut out: Vec<(i64, u64)> = Vec::new();
    let (mut position, hi) = token_key_bounds(start, end);
    loop {
        let next = match &hi {
            Some(hi) => snap.range(ks, position.clone()..hi.clone()).next(),
            None => snap.range(ks, position.clone()..).next(),
        };
        let Some(g) = next else { break };
        let k = g.key()?;
        let (token, _, rest) = split_partition_prefix(&k)?;
        let prefix = k[..k.len() - rest.len()].to_vec();
        let size_key = size_cell_key(&prefix);
        let size = match snap.get(ks, &size_key)? {
            Some(v) => decode_size(&v)? + (size_key.len() + v.len()) as u64,
            None => item_bytes(snap.prefix(ks, &prefix))?,
        };
        match out.last_mut() {
            Some((t, s)) if *t == token => *s += size,
            _ => out.push((token, size)),
        }
        position = prefix;
        position.push(key::AFTER_PREFIX);
    }
    Ok(out)
}

/// The token that best halves the bytes: everything at or below it goes to the lower half.
/// `None` with fewer than two distinct tokens.
fn best_split(sizes: &[(i64, u64)]) -> Option<i64> {
    let total: u64 = sizes.iter().map(|s| s.1).sum();
    let mut cumulative = 0u64;
    let mut best: Option<(u64, i64)> = None;
    for (token, size) in &sizes[..sizes.len().saturating_sub(1)] {
        cumulative += size;
        let imbalance = (2 * cumulative).abs_diff(total);
        if best.is_none_or(|(b, _)| imbalance < b) {
            best = Some((imbalance, *token));
        }
    }
    best.map(|b| b.1)
}

#[cfg(test)]
mod tests {
    use super::best_split;

    #[test]
    fn best_split_halves_bytes_between_tokens() {
        assert_eq!(best_split(&[]), None);
        assert_eq!(best_split(&[(5, 100)]), None);
        assert_eq!(best_split(&[(1, 10), (2, 10), (3, 10), (4, 10)]), Some(2));
        assert_eq!(best_split(&[(1, 1), (2, 100), (3, 1)]), Some(1));
        assert_eq!(best_split(&[(1, 1), (2, 100), (3, 5)]), Some(2));
        assert_eq!(best_split(&[(1, 100), (2, 1), (3, 1)]), Some(1));
    }
}
