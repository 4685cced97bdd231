//! Write timestamps (microseconds, strictly increasing per node as Cassandra's client-state
//! generator) and time-ordered list element keys for appends and prepends.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static LAST_MICROS: AtomicI64 = AtomicI64::new(0);
static LAST_LIST_TICK: AtomicI64 = AtomicI64::new(0);

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// A write timestamp: the current time in µs, or one more than the last one handed out.
pub fn next_timestamp() -> i64 {
    let now = now_micros();
    let mut last = LAST_MICROS.load(Ordering::Relaxed);
    loop {
        let next = if now > last { now } else { last + 1 };
        match LAST_MICROS.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// Seconds since the epoch.
pub fn now_seconds() -> i64 {
    now_micros() / 1_000_000
}

fn next_tick() -> i64 {
    // 100 ns ticks since the Unix epoch, strictly increasing.
    let now = now_micros() * 10;
    let mut last = LAST_LIST_TICK.load(Ordering::Relaxed);
    loop {
        let next = if now > last { now } else { last + 1 };
        match LAST_LIST_TICK.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// Offset between the UUID epoch (1582-10-15) and the Unix epoch, in 100 ns ticks.
const UUID_EPOCH_OFFSET: i64 = 0x01B2_1DD2_1381_4000;
/// Prepended elements count down from 2010-01-01 so they sort before every append.
const PREPEND_REFERENCE: i64 = 12_623_040_000_000_000;

fn timeuuid_bytes(ticks_since_uuid_epoch: i64, seq: u16) -> Vec<u8> {
    let t = ticks_since_uuid_epoch.max(0) as u64 & 0x0FFF_FFFF_FFFF_FFFF;
    let time_low = (t & 0xFFFF_FFFF) as u32;
    let time_mid = ((t >> 32) & 0xFFFF) as u16;
    let time_hi = (((t >> 48) & 0x0FFF) as u16) | 0x1000;
    let mut b = Vec::with_capacity(16);
    b.extend_from_slice(&time_low.to_be_bytes());
    b.extend_from_slice(&time_mid.to_be_bytes());
    b.extend_from_slice(&time_hi.to_be_bytes());
    b.extend_from_slice(&((seq & 0x3FFF) | 0x8000).to_be_bytes());
    b.extend_from_slice(&[0x01, 0x23, 0x45, 0x67, 0x89, 0xAB]);
    b
}

/// A list element key for an append: later appends sort after earlier ones.
pub fn append_key() -> Vec<u8> {
    timeuuid_bytes(next_tick() + UUID_EPOCH_OFFSET, 0)
}

/// A list element key for a prepend: later prepends sort before earlier ones, and before appends.
pub fn prepend_key() -> Vec<u8> {
    // 2020-01-01 in 100 ns ticks since the Unix epoch.
    const ORIGIN: i64 = 15_778_368_000_000_000;
    let elapsed = (next_tick() - ORIGIN).max(0);
    timeuuid_bytes(UUID_EPOCH_OFFSET + PREPEND_REFERENCE - elapsed, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_strictly_increase() {
        let a = next_timestamp();
        let b = next_timestamp();
        assert!(b > a);
    }

    #[test]
    fn list_keys_order_appends_after_prepends() {
        let cmp = |a: &[u8], b: &[u8]| {
            let t = |x: &[u8]| {
                let hi = u64::from(u16::from_be_bytes([x[6], x[7]]) & 0x0FFF);
                let mid = u64::from(u16::from_be_bytes([x[4], x[5]]));
                let low = u64::from(u32::from_be_bytes([x[0], x[1], x[2], x[3]]));
                (hi << 48) | (mid << 32) | low
            };
            t(a).cmp(&t(b))
        };
        let a1 = append_key();
        let a2 = append_key();
        let p1 = prepend_key();
        let p2 = prepend_key();
        assert!(cmp(&a1, &a2).is_lt());
        assert!(cmp(&p2, &p1).is_lt(), "a later prepend sorts first");
        assert!(cmp(&p1, &a1).is_lt(), "prepends sort before appends");
    }
}
