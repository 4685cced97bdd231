//! `MeteredShards`: the [`Shards`] a request uses, with request units counted on the way
//! ([`super::request_units`]): each read, scan page and write adds its charge to the request's
//! tally, and on a table with provisioned throughput each is first admitted by its physical
//! partition's budget ([`super::Budgets`]) and then paid from it.

use super::budgets::Budgets;
use super::request_charge;
use super::request_units as ru;
use crate::shard::{CasDecision, CasError, ShardError, Shards, ShardsAt};
use std::cell::Cell;
use storage::{
    ColumnValue, Cursor, Mutation, PartitionOf, PartitionSlice, Row, ScanPage, Slice, Storage,
    TableId, TableLayout, TokenRange,
};

/// A request's shards, metered.
pub struct MeteredShards<'a> {
    inner: ShardsAt<'a>,
    storage: &'a Storage,
    budgets: &'a Budgets,
    /// 2 for reads at SERIAL / LOCAL_SERIAL, else 1.
    read_factor: f64,
}

impl<'a> MeteredShards<'a> {
    /// Meters `inner`; reads cost `read_factor` times the model's price.
    pub fn new(
        inner: ShardsAt<'a>,
        storage: &'a Storage,
        budgets: &'a Budgets,
        read_factor: f64,
    ) -> MeteredShards<'a> {
        MeteredShards {
            inner,
            storage,
            budgets,
            read_factor,
        }
    }

    /// The shards, as the executor calls them.
    pub fn get(&self) -> &dyn Shards {
        self
    }

    /// The partition of `token` in `table` when the table has a throughput and its budget
    /// admits the request (`None`: nothing to admit or pay). The token is only computed for
    /// a table with a throughput: the unlimited tables' path stays as it was.
    fn admit(
        &self,
        table: TableId,
        token: impl FnOnce() -> i64,
    ) -> Result<Option<PartitionOf>, ShardError> {
        if !self.budgets.limits(table) {
            return Ok(None);
        }
        let Ok(at) = self.storage.partition_of(table, token()) else {
            return Ok(None);
        };
        self.budgets
            .admit(self.storage, table, at)
            .map_err(|retry_after_ms| ShardError::Throttled { retry_after_ms })?;
        Ok(Some(at))
    }

    /// Adds `cost` to the request's charge, and pays it from `at`'s budget.
    fn pay(&self, table: TableId, at: Option<PartitionOf>, cost: f64) {
        request_charge::add(cost);
        if let Some(at) = at {
            self.budgets.charge(self.storage, table, at, cost);
        }
    }
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

fn statics_bytes<'s>(cells: impl Iterator<Item = &'s ColumnValue>) -> u64 {
    cells.map(value_bytes).sum()
}

impl Shards for MeteredShards<'_> {
    fn apply(&self, writes: &[(TableId, &Mutation)]) -> Result<(), ShardError> {
        let mut admitted = Vec::with_capacity(writes.len());
        for (table, m) in writes {
            admitted
                .push(self.admit(*table, || storage::token::partition_token(&m.partition_key))?);
        }
        self.inner.get().apply(writes)?;
        for ((table, m), at) in writes.iter().zip(admitted) {
            self.pay(*table, at, ru::write(m.data_size() as u64));
        }
        Ok(())
    }

    fn read(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        slice: &Slice,
    ) -> Result<PartitionSlice, ShardError> {
        let at = self.admit(table, || storage::token::partition_token(partition_key))?;
        let read = self.inner.get().read(table, partition_key, slice)?;
        let bytes = statics_bytes(read.static_cells.values())
            + read.rows.iter().map(row_bytes).sum::<u64>();
        let cost = self.read_factor * ru::read(bytes, read.rows.len() as u64);
        self.pay(table, at, cost);
        Ok(read)
    }

    fn scan(
        &self,
        table: TableId,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, ShardError> {
        let from = cursor
            .and_then(Cursor::scan_token)
            .unwrap_or(range.start.saturating_add(1));
        let at = self.admit(table, || from)?;
        let page = self.inner.get().scan(table, range, limit, cursor)?;
        let (mut bytes, mut rows) = (0u64, 0u64);
        for p in &page.partitions {
            bytes += p.partition_key.iter().map(|k| k.len() as u64).sum::<u64>()
                + statics_bytes(p.static_cells.values())
                + p.rows.iter().map(row_bytes).sum::<u64>();
            rows += (p.rows.len() as u64).max(1);
        }
        self.pay(table, at, self.read_factor * ru::read(bytes, rows));
        Ok(page)
    }

    fn compare_and_set(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        decide: &mut CasDecision<'_>,
    ) -> Result<bool, CasError> {
        let at = self
            .admit(table, || storage::token::partition_token(partition_key))
            .map_err(CasError::Apply)?;
        let written = Cell::new(None::<u64>);
        let mut metered = |shards: &dyn Shards| {
            let m = decide(shards)?;
            written.set(m.as_ref().map(|m| m.data_size() as u64));
            Ok(m)
        };
        let applied = self
            .inner
            .get()
            .compare_and_set(table, partition_key, &mut metered)?;
        // The conditions' read, then the write when one was made.
        let write = written.get().map_or(0.0, ru::conditional_write);
        self.pay(table, at, self.read_factor * ru::read(0, 1) + write);
        Ok(applied)
    }

    fn write_stalled(&self, table: TableId) -> bool {
        self.inner.get().write_stalled(table)
    }

    fn deferring_sync(&self, work: &mut dyn FnMut()) -> bool {
        self.inner.get().deferring_sync(work)
    }

    fn sync(&self) -> Result<(), ShardError> {
        self.inner.get().sync()
    }

    fn create_table(&self, table: TableId, layout: TableLayout) -> Result<(), ShardError> {
        self.inner.get().create_table(table, layout)
    }

    fn drop_table(&self, table: TableId) -> Result<(), ShardError> {
        self.inner.get().drop_table(table)
    }

    fn truncate(&self, table: TableId) -> Result<(), ShardError> {
        self.inner.get().truncate(table)
    }
}
