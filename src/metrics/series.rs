//! `Metrics`: the node's Prometheus series, named as ScyllaDB names its own (with the
//! `ringdb_` prefix). What requests do is counted as they run; what the store and the cluster
//! hold is read when the endpoint is scraped (`super::scrape`).

use super::clock::{self, Stamp};
use super::latency::{Operation, TableLatencies};
use super::request_class::RequestClass;
use cql::response::codes;
use prometheus::{
    Counter, CounterVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use storage::TableId;

/// A thread's cached histograms of one table (`Metrics::with_table`).
type CachedTable = (TableId, Arc<TableLatencies>);

/// One table's series, resolved once per schema change (a request never looks up labels).
#[derive(Clone)]
struct TableSeries {
    labels: [String; 2],
    request_units: Counter,
    throttled: IntCounter,
    latencies: Arc<TableLatencies>,
}

/// Gauges and counters set at each scrape from what the store and the cluster report
/// (`crate::metrics_http`); each field is the series of its name.
pub struct ScrapedSeries {
    /// `ringdb_cql_connections`: open client connections.
    pub connections: IntGauge,
    /// `ringdb_cql_requests_in_flight`: requests running now.
    pub in_flight: IntGauge,
    /// `ringdb_memtable_bytes`: bytes written and not yet flushed.
    pub memtable_bytes: IntGauge,
    /// `ringdb_flushes_pending`: memtable flushes queued.
    pub pending_flushes: IntGauge,
    /// `ringdb_compactions_running`.
    pub running_compactions: IntGauge,
    /// `ringdb_compactions_total`: compactions finished.
    pub compactions: IntCounter,
    /// `ringdb_compaction_seconds_total`: time spent compacting.
    pub compaction_seconds: Counter,
    /// `ringdb_compaction_bytes_total`: key and value bytes compactions have read.
    pub compaction_bytes: IntCounter,
    /// `ringdb_disk_used_bytes`: bytes the store holds on disk.
    pub disk_used: IntGauge,
    /// `ringdb_journal_bytes`: bytes of the write-ahead journals.
    pub journal_bytes: IntGauge,
    /// `ringdb_disk_free_bytes`: free bytes on the data directory's file system.
    pub disk_free: IntGauge,
    /// `ringdb_table_bytes{keyspace,table}`.
    pub table_bytes: IntGaugeVec,
    /// `ringdb_physical_partition_bytes{keyspace,table,partition}`.
    pub partition_bytes: IntGaugeVec,
    /// `ringdb_physical_partitions{keyspace,table}`.
    pub physical_partitions: IntGaugeVec,
    /// `ringdb_splits_running`: physical partitions being split.
    pub splits_running: IntGauge,
    /// `ringdb_split_bytes_copied`: bytes the running splits have copied to their new halves.
    pub split_bytes_copied: IntGauge,
    /// `ringdb_split_bytes_expected`: bytes the running splits expect to copy.
    pub split_bytes_expected: IntGauge,
    /// `ringdb_largest_partition_bytes{keyspace,table}`: the largest size a logical
    /// partition has reached.
    pub largest_partition: IntGaugeVec,
    /// `ringdb_block_cache_bytes`.
    pub block_cache_bytes: IntGauge,
    /// `ringdb_item_cache_hits_total`.
    pub item_cache_hits: IntCounter,
    /// `ringdb_item_cache_misses_total`.
    pub item_cache_misses: IntCounter,
    /// `ringdb_storage_items_read_total`.
    pub items_read: IntCounter,
    /// `ringdb_vector_index_backlog`: vectors not yet in their graphs, plus graphs not built.
    pub vector_index_backlog: IntGauge,
    /// `ringdb_index_builds_pending`: secondary indexes whose build is not done.
    pub index_builds_pending: IntGauge,
    /// `ringdb_raft_groups_led`.
    pub groups_led: IntGauge,
    /// `ringdb_raft_groups_held`.
    pub groups_held: IntGauge,
    /// `ringdb_raft_term{group}`.
    pub raft_term: IntGaugeVec,
    /// `ringdb_raft_leader_changes_total{group}`: counted as they happen (each new leader a
    /// local replica learns of, its first included).
    pub raft_leader_changes: IntCounterVec,
    /// `ringdb_raft_log_lag{group}`.
    pub raft_log_lag: IntGaugeVec,
    /// `ringdb_moves_running`.
    pub moves_running: IntGauge,
    /// `ringdb_move_bytes_received{group}`.
    pub move_bytes: IntGaugeVec,
}

/// The node's series and their registry.
pub struct Metrics {
    registry: Registry,
    requests: std::sync::Arc<super::request_latency::RequestLatency>,
    errors: IntCounterVec,
    unprepared: IntCounter,
    unpaged: IntCounter,
    filtered: IntCounter,
    non_replica: IntCounter,
    request_units: CounterVec,
    throttled: IntCounterVec,
    tables: RwLock<HashMap<TableId, TableSeries>>,
    /// Changes whenever `tables` does (unique across nodes in one process), so that each
    /// thread's cache of them is rebuilt.
    generation: std::sync::atomic::AtomicU64,
    scraped: ScrapedSeries,
}

/// Why a series could not be made (a bug: names and labels are fixed).
pub type MetricsError = prometheus::Error;

/// A generation number no other `Metrics` of this process has had.
fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The request counts and histograms, shared with the registry that collects them.
struct RegisteredRequests(std::sync::Arc<super::request_latency::RequestLatency>);

impl prometheus::core::Collector for RegisteredRequests {
    fn desc(&self) -> Vec<&prometheus::core::Desc> {
        self.0.desc()
    }

    fn collect(&self) -> Vec<prometheus::proto::MetricFamily> {
        self.0.collect()
    }
}

/// The name of a CQL error code, as the `error` label shows it.
fn error_name(code: i32) -> &'static str {
    match code {
        codes::SERVER_ERROR => "server_error",
        codes::PROTOCOL_ERROR => "protocol_error",
        codes::BAD_CREDENTIALS => "bad_credentials",
        codes::UNAVAILABLE => "unavailable",
        codes::OVERLOADED => "overloaded",
        codes::IS_BOOTSTRAPPING => "is_bootstrapping",
        codes::TRUNCATE_ERROR => "truncate_error",
        codes::WRITE_TIMEOUT => "write_timeout",
        codes::READ_TIMEOUT => "read_timeout",
        codes::READ_FAILURE => "read_failure",
        codes::FUNCTION_FAILURE => "function_failure",
        codes::WRITE_FAILURE => "write_failure",
        codes::SYNTAX_ERROR => "syntax_error",
        codes::UNAUTHORIZED => "unauthorized",
        codes::INVALID => "invalid",
        codes::CONFIG_ERROR => "config_error",
        codes::ALREADY_EXISTS => "already_exists",
        codes::UNPREPARED => "unprepared",
        _ => "other",
    }
}

struct Maker<'a>(&'a Registry);

impl Maker<'_> {
    fn counter(&self, name: &str, help: &str) -> Result<IntCounter, MetricsError> {
        let c = IntCounter::new(name, help)?;
        self.0.register(Box::new(c.clone()))?;
        Ok(c)
    }

    fn float_counter(&self, name: &str, help: &str) -> Result<Counter, MetricsError> {
        let c = Counter::new(name, help)?;
        self.0.register(Box::new(c.clone()))?;
        Ok(c)
    }

    fn gauge(&self, name: &str, help: &str) -> Result<IntGauge, MetricsError> {
        let g = IntGauge::new(name, help)?;
        self.0.register(Box::new(g.clone()))?;
        Ok(g)
    }

    fn counter_vec(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<IntCounterVec, MetricsError> {
        let c = IntCounterVec::new(Opts::new(name, help), labels)?;
        self.0.register(Box::new(c.clone()))?;
        Ok(c)
    }

    fn gauge_vec(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<IntGaugeVec, MetricsError> {
        let g = IntGaugeVec::new(Opts::new(name, help), labels)?;
        self.0.register(Box::new(g.clone()))?;
        Ok(g)
    }
}

impl Metrics {
    /// Every series, registered and at zero.
    ///
    /// # Errors
    /// Only on a bug (a name or label the registry refuses).
    pub fn new() -> Result<Metrics, MetricsError> {
        let registry = Registry::new();
        let m = Maker(&registry);
        let requests = std::sync::Arc::new(super::request_latency::RequestLatency::new()?);
        registry.register(Box::new(RegisteredRequests(requests.clone())))?;
        let request_units = CounterVec::new(
            Opts::new(
                "ringdb_request_units_total",
                "Request units charged (the provisioned-throughput model), by table",
            ),
            &["keyspace", "table"],
        )?;
        registry.register(Box::new(request_units.clone()))?;
        let scraped = ScrapedSeries {
            connections: m.gauge("ringdb_cql_connections", "Open client connections")?,
            in_flight: m.gauge("ringdb_cql_requests_in_flight", "Requests being run now")?,
            memtable_bytes: m
                .gauge("ringdb_memtable_bytes", "Bytes written and not yet flushed")?,
            pending_flushes: m.gauge("ringdb_flushes_pending", "Memtable flushes queued")?,
            running_compactions: m.gauge("ringdb_compactions_running", "Compactions running")?,
            compactions: m.counter("ringdb_compactions_total", "Compactions finished")?,
            compaction_seconds: m
                .float_counter("ringdb_compaction_seconds_total", "Time spent compacting")?,
            compaction_bytes: m.counter(
                "ringdb_compaction_bytes_total",
                "Key and value bytes compactions have read",
            )?,
            disk_used: m.gauge("ringdb_disk_used_bytes", "Bytes the store holds on disk")?,
            journal_bytes: m.gauge("ringdb_journal_bytes", "Bytes of the write-ahead journals")?,
            disk_free: m.gauge(
                "ringdb_disk_free_bytes",
                "Bytes free on the data directory's file system",
            )?,
            table_bytes: m.gauge_vec(
                "ringdb_table_bytes",
                "Bytes stored per table (keys and values, unflushed writes included)",
                &["keyspace", "table"],
            )?,
            partition_bytes: m.gauge_vec(
                "ringdb_physical_partition_bytes",
                "Bytes stored per physical partition",
                &["keyspace", "table", "partition"],
            )?,
            physical_partitions: m.gauge_vec(
                "ringdb_physical_partitions",
                "Physical partitions per table",
                &["keyspace", "table"],
            )?,
            splits_running: m.gauge(
                "ringdb_splits_running",
                "Physical partitions being split now",
            )?,
            split_bytes_copied: m.gauge(
                "ringdb_split_bytes_copied",
                "Bytes the running splits have copied to their new halves",
            )?,
            split_bytes_expected: m.gauge(
                "ringdb_split_bytes_expected",
                "Bytes the running splits expect to copy",
            )?,
            largest_partition: m.gauge_vec(
                "ringdb_largest_partition_bytes",
                "The largest size a logical partition of the table has reached",
                &["keyspace", "table"],
            )?,
            block_cache_bytes: m.gauge("ringdb_block_cache_bytes", "Bytes in the block cache")?,
            item_cache_hits: m.counter(
                "ringdb_item_cache_hits_total",
                "Reads answered from the item cache",
            )?,
            item_cache_misses: m.counter(
                "ringdb_item_cache_misses_total",
                "Item cache lookups that found nothing",
            )?,
            items_read: m.counter(
                "ringdb_storage_items_read_total",
                "Stored items reads pulled from the LSM engine",
            )?,
            vector_index_backlog: m.gauge(
                "ringdb_vector_index_backlog",
                "Vectors waiting to enter their vector index graphs, plus graphs not yet built",
            )?,
            index_builds_pending: m.gauge(
                "ringdb_index_builds_pending",
                "Secondary indexes whose build from stored rows is not done",
            )?,
            groups_led: m.gauge("ringdb_raft_groups_led", "Raft groups this node leads")?,
            groups_held: m.gauge(
                "ringdb_raft_groups_held",
                "Raft groups this node holds a replica of",
            )?,
            raft_term: m.gauge_vec(
                "ringdb_raft_term",
                "Each local group's Raft term",
                &["group"],
            )?,
            raft_leader_changes: m.counter_vec(
                "ringdb_raft_leader_changes_total",
                "Leaders each local group has had, as seen at scrapes",
                &["group"],
            )?,
            raft_log_lag: m.gauge_vec(
                "ringdb_raft_log_lag",
                "Entries each local replica has logged and not yet applied",
                &["group"],
            )?,
            moves_running: m.gauge("ringdb_moves_running", "Replica moves in flight")?,
            move_bytes: m.gauge_vec(
                "ringdb_move_bytes_received",
                "Bytes received so far by each replica move in flight",
                &["group"],
            )?,
        };
        Ok(Metrics {
            requests,
            errors: m.counter_vec(
                "ringdb_cql_errors_total",
                "Error answers, by protocol code (timeouts, unavailable and overloaded among them)",
                &["code", "error"],
            )?,
            unprepared: m.counter(
                "ringdb_cql_unprepared_queries_total",
                "Reads and writes sent as QUERY rather than prepared and executed",
            )?,
            unpaged: m.counter(
                "ringdb_cql_unpaged_select_queries_total",
                "SELECTs run without paging",
            )?,
            filtered: m.counter(
                "ringdb_cql_filtered_read_requests_total",
                "SELECTs with ALLOW FILTERING",
            )?,
            non_replica: m.counter(
                "ringdb_cql_non_replica_requests_total",
                "Reads and writes that reached a node holding no replica of their partition",
            )?,
            throttled: m.counter_vec(
                "ringdb_throttled_requests_total",
                "Requests refused for a table's provisioned throughput, by table",
                &["keyspace", "table"],
            )?,
            request_units,
            tables: RwLock::default(),
            generation: std::sync::atomic::AtomicU64::new(next_generation()),
            scraped,
            registry,
        })
    }

    /// Records one answered request of `class` that took `took`, with its error code if any.
    pub fn request(&self, class: RequestClass, took: Duration, error: Option<i32>) {
        self.requests.record(class, took);
        if let Some(code) = error {
            self.error(code);
        }
    }

    /// Records an error answer of `code` given before a request ran (refused at the door,
    /// timed out).
    pub fn error(&self, code: i32) {
        let code_label = format!("0x{code:04x}");
        self.errors
            .with_label_values(&[code_label.as_str(), error_name(code)])
            .inc();
    }

    /// Requests of `class` answered since the node started.
    pub fn requests_of(&self, class: RequestClass) -> u64 {
        self.requests.count(class)
    }

    /// Requests answered since the node started.
    pub fn requests_answered(&self) -> u64 {
        RequestClass::ALL
            .iter()
            .map(|c| self.requests.count(*c))
            .sum()
    }

    /// Error answers of `code` since the node started.
    pub fn errors_of(&self, code: i32) -> u64 {
        let code_label = format!("0x{code:04x}");
        self.errors
            .get_metric_with_label_values(&[code_label.as_str(), error_name(code)])
            .map_or(0, |c| c.get())
    }

    /// Counts a client connection opened (`1`) or closed (`-1`).
    pub fn connections(&self, delta: i64) {
        self.scraped.connections.add(delta);
    }

    /// Counts a read or write sent as QUERY rather than prepared.
    pub fn unprepared(&self) {
        self.unprepared.inc();
    }

    /// Counts a SELECT without paging.
    pub fn unpaged(&self) {
        self.unpaged.inc();
    }

    /// Counts a SELECT with ALLOW FILTERING.
    pub fn filtered(&self) {
        self.filtered.inc();
    }

    /// Counts a request that reached a node holding no replica of its partition.
    pub fn non_replica(&self) {
        self.non_replica.inc();
    }

    /// Runs `f` on `table`'s histograms, found through this thread's cache of them (a
    /// request takes no lock: the cache is rebuilt when the tables change).
    fn with_table(&self, table: TableId, f: impl FnOnce(&TableLatencies)) {
        // A thread sees few tables: a short list searched in order costs less than hashing.
        thread_local! {
            static CACHE: std::cell::RefCell<(u64, Vec<CachedTable>)> =
                const { std::cell::RefCell::new((0, Vec::new())) };
        }
        let generation = self.generation.load(std::sync::atomic::Ordering::Acquire);
        CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            if cache.0 != generation {
                cache.0 = generation;
                cache.1.clear();
            }
            if let Some((_, found)) = cache.1.iter().find(|(id, _)| *id == table) {
                f(found);
                return;
            }
            let tables = self.tables.read().unwrap_or_else(|p| p.into_inner());
            let Some(t) = tables.get(&table) else {
                return;
            };
            let latencies = t.latencies.clone();
            drop(tables);
            f(&latencies);
            cache.1.push((table, latencies));
        });
    }

    /// Records `op` on `table`'s shards, started at `started` (it ends now), that cost `ru`
    /// request units.
    pub fn local(&self, table: TableId, op: Operation, started: Stamp, ru: f64) {
        let now = clock::now();
        self.with_table(table, |t| {
            t.request_units_milli.add((ru * 1000.0).round() as u64);
            t.local(op).record(now - started, now);
        });
    }

    /// Records a request doing `op` on `table` that took `took` and was answered at `now`.
    pub fn coordinator(&self, table: TableId, op: Operation, took: Duration, now: Stamp) {
        self.with_table(table, |t| t.coordinator(op).record(took, now));
    }

    /// Raises each table's request-unit counter to what its stripes hold (at a scrape).
    pub fn publish_request_units(&self) {
        let tables = self.tables.read().unwrap_or_else(|p| p.into_inner());
        for t in tables.values() {
            let total = t.latencies.request_units_milli.total() as f64 / 1000.0;
            let now = t.request_units.get();
            if total > now {
                t.request_units.inc_by(total - now);
            }
        }
    }

    /// `keyspace.table` of a user table (for traces).
    pub fn table_name(&self, table: TableId) -> String {
        let tables = self.tables.read().unwrap_or_else(|p| p.into_inner());
        tables.get(&table).map_or_else(
            || table.to_string(),
            |t| format!("{}.{}", t.labels[0], t.labels[1]),
        )
    }

    /// Every user table's (keyspace, table) names and latency histograms.
    pub fn table_latencies(&self) -> Vec<(String, String, Arc<TableLatencies>)> {
        let tables = self.tables.read().unwrap_or_else(|p| p.into_inner());
        tables
            .values()
            .map(|t| {
                (
                    t.labels[0].clone(),
                    t.labels[1].clone(),
                    t.latencies.clone(),
                )
            })
            .collect()
    }

    /// Counts a request refused for `table`'s throughput.
    pub fn throttled(&self, table: TableId) {
        let tables = self.tables.read().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = tables.get(&table) {
            t.throttled.inc();
        }
    }

    /// Resolves the per-table series of every user table in `catalog` (called whenever it
    /// changes); a dropped table's series go.
    pub fn refresh(&self, catalog: &crate::schema::Catalog) {
        let live: Vec<(TableId, [String; 2])> = catalog
            .user_tables()
            .map(|t| {
                (
                    crate::schema::table_id(t),
                    [t.keyspace.clone(), t.name.clone()],
                )
            })
            .collect();
        let mut tables = self.tables.write().unwrap_or_else(|p| p.into_inner());
        let gone: Vec<TableId> = tables
            .keys()
            .filter(|id| !live.iter().any(|(l, _)| l == *id))
            .copied()
            .collect();
        for id in gone {
            if let Some(series) = tables.remove(&id) {
                let labels = [series.labels[0].as_str(), series.labels[1].as_str()];
                // Absent already when a table of the same name replaced it: nothing to do.
                let _ = self.request_units.remove_label_values(&labels);
                let _ = self.throttled.remove_label_values(&labels);
            }
        }
        for (id, names) in live {
            tables.entry(id).or_insert_with(|| {
                let labels = [names[0].as_str(), names[1].as_str()];
                TableSeries {
                    request_units: self.request_units.with_label_values(&labels),
                    throttled: self.throttled.with_label_values(&labels),
                    latencies: Arc::default(),
                    labels: names.clone(),
                }
            });
        }
        self.generation
            .store(next_generation(), std::sync::atomic::Ordering::Release);
    }

    /// The series set at each scrape.
    pub fn scraped(&self) -> &ScrapedSeries {
        &self.scraped
    }

    /// The registry's series in Prometheus's text format.
    pub fn text(&self) -> String {
        let families = self.registry.gather();
        prometheus::TextEncoder::new()
            .encode_to_string(&families)
            .unwrap_or_default()
    }
}
