//! The pace of replica moves' data: a node sends range snapshots, and imports the ones it
//! receives, at most `stream_throughput_mib_per_s` each way (as Cassandra's
//! `stream_throughput_outbound`), shared by all its transfers, so moves leave the clients'
//! requests room on the node's cores and disk.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A rate of bytes per second, shared by whoever reserves from it.
pub struct Pace {
    bytes_per_s: f64,
    /// When the bytes reserved so far will have gone at the rate.
    next: Mutex<Instant>,
}

impl Pace {
    /// A pace of `mib_per_s` MiB a second; 0 is unlimited.
    pub fn new(mib_per_s: u64) -> Self {
        Pace {
            bytes_per_s: mib_per_s as f64 * 1024.0 * 1024.0,
            next: Mutex::new(Instant::now()),
        }
    }

    /// Reserves `bytes` (just sent or imported); returns how long to wait before the next.
    pub fn reserve(&self, bytes: u64) -> Duration {
        if self.bytes_per_s <= 0.0 || bytes == 0 {
            return Duration::ZERO;
        }
        let now = Instant::now();
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        // Time unused earlier is not saved up: no burst after a pause.
        let start = (*next).max(now);
        *next = start + Duration::from_secs_f64(bytes as f64 / self.bytes_per_s);
        next.saturating_duration_since(now)
    }
}

/// A node's two paces: snapshots it sends, snapshots it imports.
pub struct StreamPace {
    /// Bytes of range snapshots read to be sent.
    pub send: Pace,
    /// Bytes of received range snapshots imported into the store.
    pub import: Pace,
}

impl StreamPace {
    /// Both ways at `mib_per_s` MiB a second (0: unlimited).
    pub fn new(mib_per_s: u64) -> Self {
        StreamPace {
            send: Pace::new(mib_per_s),
            import: Pace::new(mib_per_s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_add_up_at_the_rate() {
        let pace = Pace::new(1);
        let first = pace.reserve(512 * 1024);
        assert!(first > Duration::from_millis(450) && first <= Duration::from_millis(500));
        // A second reservation queues behind the first.
        let second = pace.reserve(512 * 1024);
        assert!(second > Duration::from_millis(950) && second <= Duration::from_millis(1000));
    }

    #[test]
    fn zero_is_unlimited() {
        let pace = Pace::new(0);
        assert_eq!(pace.reserve(u64::MAX), Duration::ZERO);
    }
}
