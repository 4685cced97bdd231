//! The request-unit model: what one operation costs, deterministic for the same operation on
//! the same data (the README documents it).
//!
//! - A read of one logical partition (a point read or a slice) costs 1 RU per started KB of
//!   the rows it examined (at least 1), plus 0.1 RU for each row after the first.
//! - A scan page costs the same, on the rows it examined.
//! - A write costs 5 RU per started KB of mutation data (at least 5).
//! - A lightweight transaction's write costs twice that, on top of the reads its conditions
//!   made.
//! - Reads at SERIAL or LOCAL_SERIAL cost twice as much.

/// Bytes in the model's kilobyte.
const KB: u64 = 1024;
/// RU per started KB written.
const WRITE_PER_KB: f64 = 5.0;
/// RU per row examined after the first.
const PER_EXTRA_ROW: f64 = 0.1;

/// Started kilobytes in `bytes`, at least one.
fn started_kb(bytes: u64) -> u64 {
    bytes.div_ceil(KB).max(1)
}

/// The cost of reading `rows` rows holding `bytes` bytes.
pub fn read(bytes: u64, rows: u64) -> f64 {
    started_kb(bytes) as f64 + PER_EXTRA_ROW * rows.saturating_sub(1) as f64
}

/// The cost of writing `bytes` bytes of mutation data.
pub fn write(bytes: u64) -> f64 {
    WRITE_PER_KB * started_kb(bytes) as f64
}

/// The cost of a lightweight transaction's write of `bytes` bytes.
pub fn conditional_write(bytes: u64) -> f64 {
    2.0 * write(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_model() {
        assert_eq!(read(0, 0), 1.0);
        assert_eq!(read(1024, 1), 1.0);
        assert_eq!(read(1025, 1), 2.0);
        assert_eq!(read(3000, 11), 4.0);
        assert_eq!(write(10), 5.0);
        assert_eq!(write(2048), 10.0);
        assert_eq!(write(2049), 15.0);
        assert_eq!(conditional_write(100), 10.0);
    }
}
