//! `Latency`: a lock-free latency histogram of one table's operations of one kind, as
//! Cassandra's `local_*_latency` and `coordinator_*_latency` tables show them: count, median,
//! 99th percentile, maximum, and the rate over the last minute. Buckets are quarter octaves
//! of nanoseconds (a percentile is within 19% of the true value).

use super::clock::{self, Stamp};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Sub-buckets per octave (a power of two).
const SUB: u64 = 4;
/// Octaves of nanoseconds kept (up to about 18 minutes); longer times count in the last one.
const OCTAVES: u64 = 40;
const BUCKETS: usize = (OCTAVES * SUB) as usize;
/// Seconds of the per-second ring (the rate's window).
const WINDOW: usize = 60;

/// The bucket of `ns` nanoseconds.
fn bucket_of(ns: u64) -> usize {
    if ns < SUB {
        return ns as usize;
    }
    let octave = 63 - u64::from(ns.leading_zeros());
    let sub = (ns >> (octave - 2)) & (SUB - 1);
    ((octave - 1) * SUB + sub).min(BUCKETS as u64 - 1) as usize
}

/// The largest nanoseconds bucket `i` holds.
fn bucket_top(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let octave = i / SUB + 1;
    let sub = i % SUB;
    ((SUB + sub + 1) << (octave - 2)).saturating_sub(1)
}

/// What an operation on a table did, as the latency tables split them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A read of one partition.
    Read,
    /// A write (each of a batch's partitions).
    Write,
    /// A page of a scan across partitions.
    Scan,
}

/// A sum kept in stripes (each thread adds to its own): request units, in thousandths.
#[derive(Default)]
pub struct StripedSum {
    stripes: [PaddedCount; STRIPES],
}

#[derive(Default)]
#[repr(align(64))]
struct PaddedCount(AtomicU64);

impl StripedSum {
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        if let Some(s) = self.stripes.get(stripe_index()) {
            s.0.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The sum so far.
    pub fn total(&self) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .sum()
    }
}

/// One table's histograms: local (the operation on the shards) and coordinator (the whole
/// request), each by operation; and its request units (thousandths).
#[derive(Default)]
pub struct TableLatencies {
    local: [Latency; 3],
    coordinator: [Latency; 3],
    /// Request units charged, in thousandths.
    pub request_units_milli: StripedSum,
}

impl TableLatencies {
    fn index(op: Operation) -> usize {
        match op {
            Operation::Read => 0,
            Operation::Write => 1,
            Operation::Scan => 2,
        }
    }

    /// The local histogram of `op`.
    pub fn local(&self, op: Operation) -> &Latency {
        &self.local[TableLatencies::index(op)]
    }

    /// The coordinator histogram of `op`.
    pub fn coordinator(&self, op: Operation) -> &Latency {
        &self.coordinator[TableLatencies::index(op)]
    }
}

/// What a latency table shows of one histogram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencySummary {
    /// Operations recorded.
    pub count: u64,
    /// Median, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile, in milliseconds.
    pub p99_ms: f64,
    /// Maximum, in milliseconds.
    pub max_ms: f64,
    /// Operations per second over the last minute.
    pub per_second: f64,
}

/// Stripes a histogram is cut into: each thread records into one, so that threads on other
/// cores do not fight over the same cache lines.
const STRIPES: usize = 4;

/// The stripe of the calling thread.
pub(super) fn stripe_index() -> usize {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        static STRIPE: usize = (NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES as u64) as usize;
    }
    STRIPE.with(|s| *s)
}

/// One stripe's counts.
#[repr(align(64))]
struct Stripe {
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    max_ns: AtomicU64,
    /// Per second of the last minute: (second since the histogram started, operations).
    seconds: Vec<(AtomicU64, AtomicU64)>,
}

impl Default for Stripe {
    fn default() -> Stripe {
        Stripe {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
            seconds: (0..WINDOW)
                .map(|_| (AtomicU64::new(u64::MAX), AtomicU64::new(0)))
                .collect(),
        }
    }
}

/// One latency histogram.
pub struct Latency {
    started: Stamp,
    stripes: Vec<Stripe>,
}

impl Default for Latency {
    fn default() -> Latency {
        Latency {
            started: clock::now(),
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
        }
    }
}

impl Latency {
    /// Records one operation that took `took`, ending at `now`.
    pub fn record(&self, took: Duration, now: Stamp) {
        let Some(stripe) = self.stripes.get(stripe_index()) else {
            return;
        };
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        if let Some(b) = stripe.buckets.get(bucket_of(ns)) {
            b.fetch_add(1, Ordering::Relaxed);
        }
        stripe.count.fetch_add(1, Ordering::Relaxed);
        if ns > stripe.max_ns.load(Ordering::Relaxed) {
            stripe.max_ns.fetch_max(ns, Ordering::Relaxed);
        }
        let second = now.saturating_duration_since(self.started).as_secs();
        if let Some((stamp, n)) = stripe.seconds.get((second % WINDOW as u64) as usize) {
            // A slot from an older minute restarts (a count racing the restart may be lost:
            // the rate is an estimate).
            if stamp.load(Ordering::Relaxed) != second
                && stamp.swap(second, Ordering::Relaxed) != second
            {
                n.store(0, Ordering::Relaxed);
            }
            n.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The histogram now.
    pub fn summary(&self) -> LatencySummary {
        let mut counts = vec![0u64; BUCKETS];
        for stripe in &self.stripes {
            for (c, b) in counts.iter_mut().zip(&stripe.buckets) {
                *c += b.load(Ordering::Relaxed);
            }
        }
        let total: u64 = counts.iter().sum();
        let quantile = |q: f64| -> f64 {
            if total == 0 {
                return 0.0;
            }
            let rank = ((total as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return bucket_top(i) as f64 / 1e6;
                }
            }
            0.0
        };
        let now = self.started.elapsed().as_secs();
        let window = now.min(WINDOW as u64 - 1).max(1);
        let recent: u64 = self
            .stripes
            .iter()
            .flat_map(|stripe| stripe.seconds.iter())
            .filter(|(s, _)| {
                let s = s.load(Ordering::Relaxed);
                s != u64::MAX && s < now && now - s <= window
            })
            .map(|(_, n)| n.load(Ordering::Relaxed))
            .sum();
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        // A bucket's top may pass the largest time recorded in it.
        let max_ns = self
            .stripes
            .iter()
            .map(|s| s.max_ns.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0);
        let max_ms = max_ns as f64 / 1e6;
        LatencySummary {
            count: self
                .stripes
                .iter()
                .map(|s| s.count.load(Ordering::Relaxed))
                .sum(),
            p50_ms: round(quantile(0.5).min(max_ms)),
            p99_ms: round(quantile(0.99).min(max_ms)),
            max_ms: round(max_ms),
            per_second: round(recent as f64 / window as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_each_time_within_a_quarter_octave() {
        for ns in [
            0u64,
            1,
            3,
            4,
            5,
            7,
            8,
            100,
            1_000,
            123_456,
            10_000_000,
            1 << 39,
        ] {
            let b = bucket_of(ns);
            assert!(
                bucket_top(b) >= ns,
                "{ns} above its bucket's top {}",
                bucket_top(b)
            );
            assert!(
                bucket_top(b) as f64 <= ns as f64 * 1.25 + 1.0,
                "{ns}: bucket top {}",
                bucket_top(b)
            );
            if b > 0 {
                assert!(bucket_top(b - 1) < ns, "{ns} belongs to a lower bucket");
            }
        }
    }

    #[test]
    fn a_summary_gives_percentiles_and_the_maximum() {
        let l = Latency::default();
        let now = clock::now();
        for _ in 0..98 {
            l.record(Duration::from_micros(100), now);
        }
        l.record(Duration::from_millis(10), now);
        std::thread::scope(|s| {
            s.spawn(|| l.record(Duration::from_millis(50), now));
        });
        let s = l.summary();
        assert_eq!(s.count, 100);
        assert!((0.1..=0.125).contains(&s.p50_ms), "{s:?}");
        assert!((10.0..=12.5).contains(&s.p99_ms), "{s:?}");
        assert_eq!(s.max_ms, 50.0);
    }
}
