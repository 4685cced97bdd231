//! The write-lock stripes: every write to a partition holds its partition's stripe, chosen by
//! table and token, so writes to one partition (and a counter's read-modify-write) run one at
//! a time; splits and truncate hold every stripe to fence all writes of a moment.

use std::sync::{Mutex, MutexGuard};

use smallvec::SmallVec;

use crate::TableId;

/// Number of write-lock stripes (writes to one partition always take the same stripe). A set
/// of stripes is a `u64` mask.
pub(crate) const COUNT: usize = 64;

/// The lock stripes of one store.
pub(crate) struct Stripes {
    locks: Vec<Mutex<()>>,
}

impl Default for Stripes {
    fn default() -> Self {
        Stripes {
            locks: (0..COUNT).map(|_| Mutex::new(())).collect(),
        }
    }
}

impl Stripes {
    /// The stripe (0..64) owning `(table, token)`.
    pub(crate) fn of(table: TableId, token: i64) -> usize {
        let h = (table.0 as u64) ^ ((table.0 >> 64) as u64) ^ (token as u64);
        (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % COUNT
    }

    /// Locks every stripe whose bit is set in `mask`, in stripe order (every locker takes
    /// its stripes in that order, so this cannot deadlock).
    pub(crate) fn lock(&self, mask: u64) -> SmallVec<[MutexGuard<'_, ()>; 2]> {
        (0..COUNT)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| self.locks[i].lock().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }
}
