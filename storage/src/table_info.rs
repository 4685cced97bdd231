//! What storage reports about a table: its size statistics ([`crate::Storage::table_stats`]),
//! each physical partition's range, size and state ([`crate::Storage::physical_partitions`])
//! and `system.size_estimates` rows ([`crate::Storage::size_estimates`]).

use crate::ring::RingView;

/// Size statistics a planner can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableStats {
    /// Approximate number of stored items (cells, markers, tombstones).
    pub approximate_items: u64,
    /// Bytes on disk (SSTables and blobs, journal excluded).
    pub disk_bytes: u64,
    /// Stored key + value bytes, unflushed writes included (the split accounting).
    pub bytes: u64,
    /// Logical partitions stored.
    pub partitions: u64,
    /// Physical partitions.
    pub physical_partitions: u64,
}

/// The state of a physical partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionState {
    /// Serving reads and writes.
    Active,
    /// Being split (still serving reads and writes).
    Splitting,
    /// Over the split threshold but holding a single logical partition (or a single token),
    /// so it cannot be split without cutting a logical partition.
    Oversized,
}

impl PartitionState {
    /// `active`, `splitting` or `oversized`.
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionState::Active => "active",
            PartitionState::Splitting => "splitting",
            PartitionState::Oversized => "oversized",
        }
    }
}

/// One physical partition of a table, as [`crate::Storage::physical_partitions`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysicalPartitionInfo {
    /// Its id (its keyspace is `t{table:032x}_p{id}`).
    pub id: u64,
    /// Exclusive start token (`i64::MIN` for the first range).
    pub start_token: i64,
    /// Inclusive end token (`i64::MAX` for the last range).
    pub end_token: i64,
    /// Stored bytes (keys + values, unflushed writes included).
    pub bytes: u64,
    /// Number of logical partitions stored.
    pub partitions_estimate: u64,
    /// Active, splitting or oversized.
    pub state: PartitionState,
    /// The largest size one of its logical partitions has reached (bytes, a high-water mark).
    pub largest_partition_bytes: u64,
    /// While it splits: (bytes copied to the new half, bytes expected), else `None`.
    pub split_progress: Option<(u64, u64)>,
}

/// Where one token lies among a table's physical partitions ([`crate::Storage::partition_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionOf {
    /// The partition's id.
    pub id: u64,
    /// Its exclusive start token.
    pub start: i64,
    /// Its inclusive end token.
    pub end: i64,
    /// How many physical partitions the table has.
    pub count: usize,
}

/// A `system.size_estimates` row: one token range of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeEstimate {
    /// Exclusive start token.
    pub range_start: i64,
    /// Inclusive end token.
    pub range_end: i64,
    /// Logical partitions in the range.
    pub partitions_count: u64,
    /// Mean bytes per logical partition.
    pub mean_partition_size: u64,
}

impl PhysicalPartitionInfo {
    /// Every physical partition of `view`, in token order; one holding more than `max_bytes`
    /// that cannot be split is oversized.
    pub(crate) fn of_view(
        view: &RingView,
        max_bytes: u64,
        split_progress: (u64, u64),
    ) -> Vec<PhysicalPartitionInfo> {
        view.parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let bytes = p.bytes();
                let state = if view.split.as_ref().is_some_and(|s| s.source == p.id) {
                    PartitionState::Splitting
                } else if p.is_oversized() && bytes > max_bytes {
                    PartitionState::Oversized
                } else {
                    PartitionState::Active
                };
                PhysicalPartitionInfo {
                    id: p.id,
                    start_token: view.map.start(i),
                    end_token: view.map.ranges[i].end,
                    bytes,
                    partitions_estimate: p.partitions(),
                    state,
                    largest_partition_bytes: p.largest_partition(),
                    split_progress: (state == PartitionState::Splitting).then_some(split_progress),
                }
            })
            .collect()
    }
}

impl From<PhysicalPartitionInfo> for SizeEstimate {
    fn from(p: PhysicalPartitionInfo) -> SizeEstimate {
        SizeEstimate {
            range_start: p.start_token,
            range_end: p.end_token,
            partitions_count: p.partitions_estimate,
            mean_partition_size: p.bytes / p.partitions_estimate.max(1),
        }
    }
}
