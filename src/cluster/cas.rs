//! Lightweight transactions in a group: the coordinator reads what the statement's conditions
//! need (linearizably, at the leader), decides, and proposes the write together with a digest
//! of each read. Every replica re-reads the same slices at the entry's time when it applies the
//! entry and writes only if every digest still matches; otherwise nothing is written and the
//! coordinator decides again. The check runs at apply, in log order, so the outcome is the same
//! on every replica and compare-and-sets on a partition are linearizable.

use super::codec::encode;
use crate::shard::{CasDecision, CasError, ShardError, Shards};
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use storage::{
    ColumnValue, Cursor, Mutation, PartitionSlice, ScanPage, Slice, StorageError, TableId,
    TableLayout, TokenRange,
};

/// One read a decision made, with the digest of what it returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CasRead {
    /// What was read.
    pub slice: Slice,
    /// [`digest`] of the result.
    pub digest: u64,
}

/// A row's cells as the digest sees them.
type Cells = Vec<(u32, ColumnValue)>;

/// A digest of a read's live content: values and write times; remaining TTLs (which change
/// by the second) and read statistics are left out.
pub fn digest(read: &PartitionSlice) -> u64 {
    let strip = |v: &ColumnValue| -> ColumnValue {
        match v {
            ColumnValue::Simple(c) => {
                let mut c = c.clone();
                c.ttl = c.ttl.map(|_| 0);
                ColumnValue::Simple(c)
            }
            ColumnValue::Collection(items) => ColumnValue::Collection(
                items
                    .iter()
                    .map(|(k, c)| {
                        let mut c = c.clone();
                        c.ttl = c.ttl.map(|_| 0);
                        (k.clone(), c)
                    })
                    .collect(),
            ),
        }
    };
    let statics: Cells = read
        .static_cells
        .iter()
        .map(|(k, v)| (*k, strip(v)))
        .collect();
    let rows: Vec<(&Vec<Vec<u8>>, Cells)> = read
        .rows
        .iter()
        .map(|r| {
            (
                &r.clustering,
                r.cells.iter().map(|(k, v)| (*k, strip(v))).collect(),
            )
        })
        .collect();
    let bytes = encode(&(statics, rows, &read.cursor)).unwrap_or_default();
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// Whether every read still returns what it returned to the coordinator, read by `read`.
///
/// # Errors
/// When a read fails.
pub fn still_holds(
    reads: &[CasRead],
    mut read: impl FnMut(&Slice) -> Result<PartitionSlice, StorageError>,
) -> Result<bool, StorageError> {
    for r in reads {
        if digest(&read(&r.slice)?) != r.digest {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Shards that record the partition reads of one decision.
pub struct Recording<'a> {
    inner: &'a dyn Shards,
    table: TableId,
    partition_key: &'a [Vec<u8>],
    reads: Mutex<Vec<CasRead>>,
}

impl<'a> Recording<'a> {
    /// Records the reads of `table`'s partition `partition_key` made through `inner`.
    pub fn new(inner: &'a dyn Shards, table: TableId, partition_key: &'a [Vec<u8>]) -> Self {
        Recording {
            inner,
            table,
            partition_key,
            reads: Mutex::new(Vec::new()),
        }
    }

    /// The reads recorded.
    pub fn into_reads(self) -> Vec<CasRead> {
        self.reads.into_inner().unwrap_or_else(|p| p.into_inner())
    }
}

impl Shards for Recording<'_> {
    fn apply(&self, writes: &[(TableId, &Mutation)]) -> Result<(), ShardError> {
        self.inner.apply(writes)
    }

    fn read(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        slice: &Slice,
    ) -> Result<PartitionSlice, ShardError> {
        let result = self.inner.read(table, partition_key, slice)?;
        if table == self.table && partition_key == self.partition_key {
            self.reads
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(CasRead {
                    slice: slice.clone(),
                    digest: digest(&result),
                });
        }
        Ok(result)
    }

    fn scan(
        &self,
        table: TableId,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, ShardError> {
        self.inner.scan(table, range, limit, cursor)
    }

    fn compare_and_set(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        decide: &mut CasDecision<'_>,
    ) -> Result<bool, CasError> {
        self.inner.compare_and_set(table, partition_key, decide)
    }

    fn write_stalled(&self, table: TableId) -> bool {
        self.inner.write_stalled(table)
    }

    fn deferring_sync(&self, work: &mut dyn FnMut()) -> bool {
        self.inner.deferring_sync(work)
    }

    fn sync(&self) -> Result<(), ShardError> {
        self.inner.sync()
    }

    fn create_table(&self, table: TableId, layout: TableLayout) -> Result<(), ShardError> {
        self.inner.create_table(table, layout)
    }

    fn drop_table(&self, table: TableId) -> Result<(), ShardError> {
        self.inner.drop_table(table)
    }

    fn truncate(&self, table: TableId) -> Result<(), ShardError> {
        self.inner.truncate(table)
    }
}
