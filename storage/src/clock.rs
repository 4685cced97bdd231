//! The clock storage reads for TTL expiry and deletion times: the system clock, or one a test
//! sets through [`crate::StorageOptions::clock`].

use std::sync::Arc;

/// The clock storage uses for TTL expiry and deletion times: seconds since the Unix epoch.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Seconds since the Unix epoch from `clock`, or from the system clock without one.
pub(crate) fn now(clock: Option<&Clock>) -> i64 {
    match clock {
        Some(clock) => clock(),
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    }
}
