//! `MeteredShards`: the [`Shards`] a request uses, with request units counted on the way
//! ([`super::request_units`]): each read, scan page and write adds its charge to the request's
//! tally. On a single node, a table with provisioned throughput has each operation first
//! admitted by its physical partition's budget ([`super::Budgets`]) and then paid from it; in
//! a cluster the group's leader does that (`crate::cluster::leader_budgets`), and only the
//! tally is kept here. A request over budget is run again when the wait fits in the
//! server-side retry (`throttle_retry_max_ms`).

use super::budgets::Budgets;
use super::request_charge;
use super::request_units::{self as ru, ReadCost};
use crate::metrics::clock::{self, Stamp};
use crate::metrics::Operation;
use crate::shard::{CasDecision, CasError, ShardError, Shards, ShardsAt};
use std::cell::Cell;
use std::time::{Duration, Instant};
use storage::{
    Cursor, IndexLookup, Mutation, NearestRow, PartitionSlice, ScanPage, Slice, Storage, TableId,
    TableLayout, TokenRange, VectorIndexSpec,
};

/// A request's shards, metered.
pub struct MeteredShards<'a> {
    inner: ShardsAt<'a>,
    storage: &'a Storage,
    budgets: &'a Budgets,
    metrics: &'a crate::metrics::Metrics,
    /// 2 for reads at SERIAL / LOCAL_SERIAL (and linearizable reads in a cluster), else 1.
    read_factor: f64,
    /// Whether budgets are kept here (a single node) rather than by groups' leaders.
    enforce: bool,
}

impl<'a> MeteredShards<'a> {
    /// Meters `inner`; reads cost `read_factor` times the model's price. With `enforce`, the
    /// budgets are kept here (this node's store is the table's only copy). What is charged
    /// and refused is counted in `metrics`.
    pub fn new(
        inner: ShardsAt<'a>,
        storage: &'a Storage,
        budgets: &'a Budgets,
        metrics: &'a crate::metrics::Metrics,
        read_factor: f64,
        enforce: bool,
    ) -> MeteredShards<'a> {
        MeteredShards {
            inner,
            storage,
            budgets,
            metrics,
            read_factor,
            enforce,
        }
    }

    /// The shards, as the executor calls them.
    pub fn get(&self) -> &dyn Shards {
        self
    }

    /// The end token of the partition of `token` in `table` when its budget is kept here
    /// and admits the request (`None`: nothing to admit or pay). The token is only computed
    /// for a table with a throughput: the unlimited tables' path stays as it was.
    fn admit(
        &self,
        table: TableId,
        token: impl FnOnce() -> i64,
    ) -> Result<Option<i64>, ShardError> {
        if !self.enforce || !self.budgets.limits(table) {
            return Ok(None);
        }
        let Ok(at) = self.storage.partition_of(table, token()) else {
            return Ok(None);
        };
        self.budgets
            .admit(self.storage, table, at.end)
            .map_err(|retry_after_ms| ShardError::Throttled { retry_after_ms })?;
        Ok(Some(at.end))
    }

    /// Adds `cost` to the request's charge, and pays it from the budget of the partition
    /// ending at `end`; `op` started at `started` (the table's local latency).
    fn pay(&self, table: TableId, end: Option<i64>, cost: f64, op: Operation, started: Stamp) {
        request_charge::add(cost);
        self.metrics.local(table, op, started, cost);
        if let Some(end) = end {
            self.budgets.charge(self.storage, table, end, cost);
        }
    }

    /// A traced request's event: which physical partition of `table` holds `token`.
    fn trace_partition(&self, what: &str, table: TableId, token: i64) {
        crate::query_trace::event(|| {
            let part = self
                .storage
                .partition_of(table, token)
                .map_or_else(|_| "?".to_string(), |p| p.id.to_string());
            format!(
                "{what} {} at token {token}, physical partition {part}",
                self.metrics.table_name(table)
            )
        });
    }

    /// A scan or an index scan (`run`), admitted and charged as a scan.
    fn metered_scan(
        &self,
        table: TableId,
        range: TokenRange,
        cursor: Option<&Cursor>,
        what: &str,
        run: &dyn Fn(&dyn Shards) -> Result<ScanPage, ShardError>,
    ) -> Result<ScanPage, ShardError> {
        let from = cursor
            .and_then(Cursor::scan_token)
            .unwrap_or(range.start.saturating_add(1));
        self.retrying(table, || {
            let end = self.admit(table, || from)?;
            if crate::query_trace::active() {
                self.trace_partition(what, table, from);
            }
            let started = clock::now();
            let page = run(self.inner.get())?;
            let cost = self.read_factor * page.read_cost();
            crate::query_trace::event(|| {
                let rows: usize = page.partitions.iter().map(|p| p.rows.len()).sum();
                format!(
                    "Scanned {} partitions and {rows} live rows ({cost} request units)",
                    page.partitions.len()
                )
            });
            self.pay(table, end, cost, Operation::Scan, started);
            Ok(page)
        })
    }

    /// Runs `op` on `table` again while it is refused for throughput and the wait still fits
    /// in the server-side retry; a refusal that stands is counted.
    fn retrying<T>(
        &self,
        table: TableId,
        mut op: impl FnMut() -> Result<T, ShardError>,
    ) -> Result<T, ShardError> {
        // The clock is read only once a refusal makes the retry's deadline matter.
        let mut started = None;
        loop {
            match op() {
                Err(ShardError::Throttled { retry_after_ms })
                    if started.get_or_insert_with(Instant::now).elapsed()
                        + Duration::from_millis(retry_after_ms)
                        <= self.budgets.retry_max() =>
                {
                    std::thread::sleep(Duration::from_millis(retry_after_ms));
                }
                Err(e @ ShardError::Throttled { .. }) => {
                    self.metrics.throttled(table);
                    return Err(e);
                }
                other => return other,
            }
        }
    }
}

impl Shards for MeteredShards<'_> {
    fn apply(&self, writes: &[(TableId, &Mutation)]) -> Result<(), ShardError> {
        let Some((first, _)) = writes.first() else {
            return Ok(());
        };
        self.retrying(*first, || {
            let mut admitted = Vec::with_capacity(writes.len());
            for (table, m) in writes {
                admitted.push(
                    self.admit(*table, || storage::token::partition_token(&m.partition_key))?,
                );
            }
            if crate::query_trace::active() {
                for (table, m) in writes {
                    let token = storage::token::partition_token(&m.partition_key);
                    self.trace_partition("Writing to", *table, token);
                }
            }
            let started = clock::now();
            self.inner.get().apply(writes)?;
            crate::query_trace::event(|| format!("Wrote {} mutations", writes.len()));
            for ((table, m), end) in writes.iter().zip(admitted) {
                let cost = ru::write(m.data_size() as u64);
                self.pay(*table, end, cost, Operation::Write, started);
            }
            Ok(())
        })
    }

    fn read(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        slice: &Slice,
    ) -> Result<PartitionSlice, ShardError> {
        self.retrying(table, || {
            let end = self.admit(table, || storage::token::partition_token(partition_key))?;
            if crate::query_trace::active() {
                let token = storage::token::partition_token(partition_key);
                self.trace_partition("Reading", table, token);
            }
            let started = clock::now();
            let read = self.inner.get().read(table, partition_key, slice)?;
            let cost = self.read_factor * read.read_cost();
            crate::query_trace::event(|| {
                format!("Read {} live rows ({cost} request units)", read.rows.len())
            });
            self.pay(table, end, cost, Operation::Read, started);
            Ok(read)
        })
    }

    fn scan(
        &self,
        table: TableId,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, ShardError> {
        self.metered_scan(table, range, cursor, "Scanning", &|s| {
            s.scan(table, range, limit, cursor)
        })
    }

    fn index_scan(
        &self,
        table: TableId,
        lookup: &IndexLookup,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, ShardError> {
        self.metered_scan(table, range, cursor, "Scanning an index from", &|s| {
            s.index_scan(table, lookup, range, limit, cursor)
        })
    }

    fn nearest(
        &self,
        table: TableId,
        range: TokenRange,
        index: &VectorIndexSpec,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<NearestRow>, ShardError> {
        self.retrying(table, || {
            let from = range.start.saturating_add(1);
            let end = self.admit(table, || from)?;
            if crate::query_trace::active() {
                self.trace_partition("Searching vectors from", table, from);
            }
            let started = clock::now();
            let rows = self.inner.get().nearest(table, range, index, query, k)?;
            let cost = self.read_factor * rows.as_slice().read_cost();
            crate::query_trace::event(|| {
                format!("Found {} nearest rows ({cost} request units)", rows.len())
            });
            self.pay(table, end, cost, Operation::Scan, started);
            Ok(rows)
        })
    }

    fn compare_and_set(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        decide: &mut CasDecision<'_>,
    ) -> Result<bool, CasError> {
        let started = Instant::now();
        loop {
            let attempt_started = clock::now();
            let written = Cell::new(None::<u64>);
            let attempt = self
                .admit(table, || storage::token::partition_token(partition_key))
                .map_err(CasError::Apply)
                .and_then(|end| {
                    let mut metered = |shards: &dyn Shards| {
                        let m = decide(shards)?;
                        written.set(m.as_ref().map(|m| m.data_size() as u64));
                        Ok(m)
                    };
                    let applied =
                        self.inner
                            .get()
                            .compare_and_set(table, partition_key, &mut metered)?;
                    Ok((end, applied))
                });
            match attempt {
                Ok((end, applied)) => {
                    // The conditions' read, then the write when one was made.
                    let write = written.get().map_or(0.0, ru::conditional_write);
                    let cost = self.read_factor * ru::read(0, 1) + write;
                    self.pay(table, end, cost, Operation::Write, attempt_started);
                    return Ok(applied);
                }
                Err(CasError::Apply(ShardError::Throttled { retry_after_ms }))
                    if started.elapsed() + Duration::from_millis(retry_after_ms)
                        <= self.budgets.retry_max() =>
                {
                    std::thread::sleep(Duration::from_millis(retry_after_ms));
                }
                Err(e) => {
                    if matches!(e, CasError::Apply(ShardError::Throttled { .. })) {
                        self.metrics.throttled(table);
                    }
                    return Err(e);
                }
            }
        }
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
