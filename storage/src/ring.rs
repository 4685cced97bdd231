//! A table's ring at run time: the current [`RingView`] (its routing map, its open physical
//! partitions and the split in progress), swapped whole when a split changes it, plus what
//! every write and split of the table coordinates on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use crate::content::ContentFlags;
use crate::partition_filter::PartitionFilter;
use crate::physical::Physical;
use crate::routing_map::RoutingMap;

/// A split being executed: writes to the source's tokens above `at` also go to `upper`.
pub(crate) struct ActiveSplit {
    pub(crate) source: u64,
    pub(crate) at: i64,
    pub(crate) upper: Arc<Physical>,
}

/// An immutable snapshot of a table's routing: the map and its open partitions.
pub(crate) struct RingView {
    pub(crate) map: RoutingMap,
    /// Parallel to `map.ranges`.
    pub(crate) parts: Vec<Arc<Physical>>,
    pub(crate) split: Option<ActiveSplit>,
}

/// Where a write goes: the owning partition, plus the split half it is dual-written to.
pub(crate) struct Route<'a> {
    pub(crate) primary: &'a Arc<Physical>,
    pub(crate) dual: Option<&'a Arc<Physical>>,
}

impl RingView {
    /// The partition owning `token`.
    pub(crate) fn part(&self, token: i64) -> &Arc<Physical> {
        &self.parts[self.map.index(token)]
    }

    /// Where a write to `token` goes.
    pub(crate) fn route(&self, token: i64) -> Route<'_> {
        let primary = self.part(token);
        let dual = self
            .split
            .as_ref()
            .filter(|s| s.source == primary.id && token > s.at)
            .map(|s| &s.upper);
        Route { primary, dual }
    }

    /// The index of partition `id` in `parts`.
    pub(crate) fn position(&self, id: u64) -> Option<usize> {
        self.parts.iter().position(|p| p.id == id)
    }
}

/// A table's routing state, shared by every [`crate::open_tables::Table`] generation of the
/// table.
pub(crate) struct TableRing {
    view: RwLock<Arc<RingView>>,
    /// Held for a whole split (and by truncate/drop), so one split per table at a time.
    pub(crate) split_lock: Mutex<()>,
    /// Asks a running split to roll back (drop/truncate).
    pub(crate) cancel: AtomicBool,
    /// Which kinds of shadowing items the table has ever stored.
    pub(crate) content: ContentFlags,
    /// The size-cell keys of the stored partitions (see `crate::partition_filter`).
    pub(crate) filter: PartitionFilter,
    /// The running split's copy: bytes copied so far and bytes it expects to copy.
    split_progress: (AtomicU64, AtomicU64),
    /// Whether a read ever cached one of the table's partitions whole
    /// (`crate::partition_cache`); set and read under a partition's stripe, so writes to a
    /// table whose partitions are never read that way forget no entries.
    pub(crate) partitions_cached: AtomicBool,
    /// The last answer of `Storage::write_stalled`: the coarse clock's millisecond it was
    /// taken at, shifted left by one, with the answer in the low bit.
    pub(crate) stall_seen: AtomicU64,
}

impl TableRing {
    /// A ring serving `view`, with the table's content flags and partition filter.
    pub(crate) fn new(view: RingView, content: ContentFlags, filter: PartitionFilter) -> TableRing {
        TableRing {
            view: RwLock::new(Arc::new(view)),
            split_lock: Mutex::new(()),
            cancel: AtomicBool::new(false),
            content,
            filter,
            split_progress: (AtomicU64::new(0), AtomicU64::new(0)),
            partitions_cached: AtomicBool::new(false),
            stall_seen: AtomicU64::new(0),
        }
    }

    /// Notes how far the running split's copy is: `copied` of `expected` bytes.
    pub(crate) fn set_split_progress(&self, copied: u64, expected: u64) {
        self.split_progress.0.store(copied, Ordering::Relaxed);
        self.split_progress.1.store(expected, Ordering::Relaxed);
    }

    /// The running split's (bytes copied, bytes to copy); the copied bytes can pass the
    /// expected ones, an estimate, and both mean nothing while no split runs.
    pub(crate) fn split_progress(&self) -> (u64, u64) {
        (
            self.split_progress.0.load(Ordering::Relaxed),
            self.split_progress.1.load(Ordering::Relaxed),
        )
    }

    /// The view in force.
    pub(crate) fn current(&self) -> Arc<RingView> {
        self.view.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Makes `view` current; returns a handle telling when nobody uses it any more.
    pub(crate) fn install(&self, view: RingView) -> Weak<RingView> {
        let view = Arc::new(view);
        let weak = Arc::downgrade(&view);
        *self.view.write().unwrap_or_else(|p| p.into_inner()) = view;
        weak
    }
}
