//! The clock storage reads for TTL expiry and deletion times: the system clock, or one a test
//! sets through [`crate::StorageOptions::clock`].

use std::sync::Arc;

/// The clock storage uses for TTL expiry and deletion times: seconds since the Unix epoch.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Seconds since the Unix epoch from `clock`, or from the system clock without one (its
/// coarse reading: a value the kernel keeps, precise to a few milliseconds, which is cheaper
/// to read and enough for whole seconds; every write asks it).
pub(crate) fn now(clock: Option<&Clock>) -> i64 {
    match clock {
        Some(clock) => clock(),
        None => rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse).tv_sec,
    }
}
