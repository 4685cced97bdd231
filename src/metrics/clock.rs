//! The clock requests are timed with: the CPU's time-stamp counter read through `quanta`,
//! monotonic like `std::time::Instant` and less than half its cost (9 ns a read against 23 ns
//! on the benchmark machine). A write reads it four times.

/// A point in time on the metrics' clock.
pub type Stamp = quanta::Instant;

/// Now, on the metrics' clock.
pub fn now() -> Stamp {
    quanta::Instant::now()
}
