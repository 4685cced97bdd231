//! The request-unit model: what one operation costs, deterministic for the same operation on
//! the same data (the README documents it).
//!
//! - A read of one logical partition (a point read or a slice) costs 1 RU per started KB of
//!   the rows it examined (at least 1), plus 0.1 RU for each row after the first.
//! - A scan page costs the same, on the rows it examined.
//! - A write costs 5 RU per started KB of mutation data (at least 5).
//! - A lightweight transaction's write costs twice that, on top of the reads its conditions
//!   made.
//! - Reads at SERIAL or LOCAL_SERIAL cost twice as much, and so do linearizable reads in a
//!   cluster (QUORUM and above).

use storage::{ColumnValue, NearestRow, PartitionSlice, Row, ScanPage};

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

/// Bytes of a column value as read.
fn value_bytes(v: &ColumnValue) -> u64 {
    match v {
        ColumnValue::Simple(c) => c.value.len() as u64,
        ColumnValue::Collection(items) => items
            .iter()
            .map(|(k, c)| (k.len() + c.value.len()) as u64)
            .sum(),
    }
}

/// Bytes of a row as read: its clustering values and its cells.
fn row_bytes(r: &Row) -> u64 {
    r.clustering.iter().map(|c| c.len() as u64).sum::<u64>()
        + r.cells.values().map(value_bytes).sum::<u64>()
}

/// What a read returned, priced by the model.
pub trait ReadCost {
    /// Its cost at the model's price (before a linearizable read's factor).
    fn read_cost(&self) -> f64;
}

impl ReadCost for PartitionSlice {
    fn read_cost(&self) -> f64 {
        let bytes = self.static_cells.values().map(value_bytes).sum::<u64>()
            + self.rows.iter().map(row_bytes).sum::<u64>();
        read(bytes, self.rows.len() as u64)
    }
}

impl ReadCost for &[NearestRow] {
    fn read_cost(&self) -> f64 {
        let bytes = self
            .iter()
            .map(|n| {
                n.partition_key.iter().map(|k| k.len() as u64).sum::<u64>()
                    + n.static_cells.values().map(value_bytes).sum::<u64>()
                    + row_bytes(&n.row)
            })
            .sum();
        read(bytes, self.len() as u64)
    }
}

impl ReadCost for Vec<NearestRow> {
    fn read_cost(&self) -> f64 {
        self.as_slice().read_cost()
    }
}

impl ReadCost for ScanPage {
    fn read_cost(&self) -> f64 {
        let (mut bytes, mut rows) = (0u64, 0u64);
        for p in &self.partitions {
            bytes += p.partition_key.iter().map(|k| k.len() as u64).sum::<u64>()
                + p.static_cells.values().map(value_bytes).sum::<u64>()
                + p.rows.iter().map(row_bytes).sum::<u64>();
            rows += (p.rows.len() as u64).max(1);
        }
        read(bytes, rows)
    }
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
