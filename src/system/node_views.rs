//! The node's own `system_views` tables, with Cassandra 4.1's names and columns: `settings`,
//! `clients`, `caches`, `thread_pools`, `sstable_tasks` (splits and replica moves in flight),
//! the `local_*_latency` and `coordinator_*_latency` tables, `disk_usage` and
//! `max_partition_size`.

use super::ring_tables::NamedRow;
use crate::client_registry::ClientInfo;
use crate::cluster_hooks::MoveStatus;
use crate::metrics::{LatencySummary, Operation, TableLatencies};
use crate::schema::{table_id, Catalog};
use cql::types::Value;
use std::sync::Arc;
use storage::{EngineStats, Storage};
use uuid::Uuid;

/// One of the node's worker pools, as `system_views.thread_pools` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadPool {
    /// Its name (Cassandra's where one matches).
    pub name: &'static str,
    /// Tasks running.
    pub active: i64,
    /// Tasks that may run at once.
    pub limit: i64,
    /// Tasks queued.
    pub pending: i64,
    /// Tasks finished since the node started.
    pub completed: i64,
    /// Tasks refused since the node started (the pool was full).
    pub blocked_all_time: i64,
}

/// What the node's own views show, gathered for one read of one of them.
#[derive(Default)]
pub struct NodeView {
    /// The settings, by name.
    pub settings: Vec<(String, String)>,
    /// The open client connections.
    pub clients: Vec<ClientInfo>,
    /// The storage engine's counters.
    pub engine: EngineStats,
    /// The worker pools.
    pub pools: Vec<ThreadPool>,
    /// Every user table's latency histograms: (keyspace, table, histograms).
    pub latencies: Vec<(String, String, Arc<TableLatencies>)>,
}

/// True for the tables [`NodeView`] feeds.
pub fn describes_node(keyspace: &str, table: &str) -> bool {
    keyspace == "system_views"
        && matches!(
            table,
            "settings"
                | "clients"
                | "caches"
                | "thread_pools"
                | "local_read_latency"
                | "local_write_latency"
                | "local_scan_latency"
                | "coordinator_read_latency"
                | "coordinator_write_latency"
                | "coordinator_scan_latency"
        )
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn big(n: u64) -> Value {
    Value::Bigint(i64::try_from(n).unwrap_or(i64::MAX))
}

fn int(n: i64) -> Value {
    Value::Int(i32::try_from(n).unwrap_or(i32::MAX))
}

/// `system_views.settings`.
pub(super) fn settings(view: &NodeView) -> Vec<NamedRow> {
    view.settings
        .iter()
        .map(|(name, value)| vec![("name", text(name.clone())), ("value", text(value.clone()))])
        .collect()
}

/// `system_views.clients`.
pub(super) fn clients(view: &NodeView) -> Vec<NamedRow> {
    view.clients
        .iter()
        .map(|c| {
            let mut row = vec![
                ("address", Value::Inet(c.peer.ip())),
                ("port", Value::Int(i32::from(c.peer.port()))),
                ("hostname", text(c.peer.ip().to_string())),
                ("connection_stage", text(c.stage)),
                (
                    "protocol_version",
                    Value::Int(i32::from(c.protocol_version)),
                ),
                ("request_count", big(c.requests)),
                ("ssl_enabled", Value::Boolean(c.tls)),
            ];
            if let Some(user) = &c.username {
                row.push(("username", text(user.clone())));
            }
            if !c.options.is_empty() {
                let options = c
                    .options
                    .iter()
                    .map(|(k, v)| (text(k.clone()), text(v.clone())))
                    .collect();
                row.push(("client_options", Value::Map(options)));
            }
            if let Some(name) = c.option("DRIVER_NAME") {
                row.push(("driver_name", text(name)));
            }
            if let Some(version) = c.option("DRIVER_VERSION") {
                row.push(("driver_version", text(version)));
            }
            row
        })
        .collect()
}

fn cache_row(name: &str, capacity: u64, size: u64, hits: Option<(u64, u64)>) -> NamedRow {
    let mut row = vec![
        ("name", text(name)),
        ("capacity_bytes", big(capacity)),
        ("size_bytes", big(size)),
    ];
    if let Some((hits, misses)) = hits {
        let requests = hits + misses;
        row.push(("hit_count", big(hits)));
        row.push(("request_count", big(requests)));
        let ratio = if requests == 0 {
            f64::NAN
        } else {
            hits as f64 / requests as f64
        };
        row.push(("hit_ratio", Value::Double(ratio)));
    }
    row
}

/// `system_views.caches`: the block cache (fjall's) and the item cache (single stored
/// items, ringdb's row cache).
pub(super) fn caches(view: &NodeView) -> Vec<NamedRow> {
    let e = &view.engine;
    vec![
        cache_row("blocks", e.block_cache_capacity, e.block_cache_bytes, None),
        cache_row(
            "items",
            e.item_cache_capacity,
            e.item_cache_bytes,
            Some((e.item_cache_hits, e.item_cache_misses)),
        ),
    ]
}

/// `system_views.thread_pools`.
pub(super) fn thread_pools(view: &NodeView) -> Vec<NamedRow> {
    view.pools
        .iter()
        .map(|p| {
            vec![
                ("name", text(p.name)),
                ("active_tasks", int(p.active)),
                ("active_tasks_limit", int(p.limit)),
                ("pending_tasks", int(p.pending)),
                ("completed_tasks", Value::Bigint(p.completed)),
                ("blocked_tasks", Value::Bigint(0)),
                ("blocked_tasks_all_time", Value::Bigint(p.blocked_all_time)),
            ]
        })
        .collect()
}

/// A latency table (`local_read_latency` ...): one row per user table.
pub(super) fn latency(view: &NodeView, local: bool, op: Operation) -> Vec<NamedRow> {
    view.latencies
        .iter()
        .map(|(ks, table, l)| {
            let h = if local {
                l.local(op)
            } else {
                l.coordinator(op)
            };
            let LatencySummary {
                count,
                p50_ms,
                p99_ms,
                max_ms,
                per_second,
            } = h.summary();
            vec![
                ("keyspace_name", text(ks.clone())),
                ("table_name", text(table.clone())),
                ("count", big(count)),
                ("p50th_ms", Value::Double(p50_ms)),
                ("p99th_ms", Value::Double(p99_ms)),
                ("max_ms", Value::Double(max_ms)),
                ("per_second", Value::Double(per_second)),
            ]
        })
        .collect()
}

/// `system_views.disk_usage`: each user table's bytes on disk (its LSM trees' files; what is
/// not flushed yet counts once flushed), in MiB rounded up (as Cassandra).
pub(super) fn disk_usage(catalog: &Catalog, storage: &Storage) -> Vec<NamedRow> {
    let mut out = Vec::new();
    for t in catalog.user_tables() {
        let Ok(stats) = storage.table_stats(table_id(t)) else {
            continue;
        };
        out.push(vec![
            ("keyspace_name", text(t.keyspace.clone())),
            ("table_name", text(t.name.clone())),
            ("mebibytes", big(stats.disk_bytes.div_ceil(1 << 20))),
        ]);
    }
    out
}

/// `system_views.max_partition_size`: the largest size a logical partition of each user table
/// has reached on this node, in MiB rounded up (as Cassandra; a high-water mark kept by each
/// physical partition, as Cassandra's comes from its SSTables' statistics).
pub(super) fn max_partition_size(catalog: &Catalog, storage: &Storage) -> Vec<NamedRow> {
    let mut out = Vec::new();
    for t in catalog.user_tables() {
        let Ok(parts) = storage.physical_partitions(table_id(t)) else {
            continue;
        };
        let largest = parts
            .iter()
            .map(|p| p.largest_partition_bytes)
            .max()
            .unwrap_or(0);
        out.push(vec![
            ("keyspace_name", text(t.keyspace.clone())),
            ("table_name", text(t.name.clone())),
            ("mebibytes", big(largest.div_ceil(1 << 20))),
        ]);
    }
    out
}

/// `system_views.sstable_tasks`: the splits of physical partitions running on this node, and
/// the replica moves in flight (bytes of the range received).
pub(super) fn sstable_tasks(
    catalog: &Catalog,
    storage: &Storage,
    moves: &[MoveStatus],
) -> Vec<NamedRow> {
    let mut out = Vec::new();
    let task = |ks: &str, table: &str, id: Uuid, kind: &str, progress: u64, total: u64| {
        let ratio = if total == 0 {
            1.0
        } else {
            progress as f64 / total as f64
        };
        vec![
            ("keyspace_name", text(ks)),
            ("table_name", text(table)),
            ("task_id", Value::Uuid(id)),
            ("completion_ratio", Value::Double(ratio)),
            ("kind", text(kind)),
            ("progress", big(progress)),
            ("total", big(total)),
            ("unit", text("bytes")),
        ]
    };
    for t in catalog.user_tables() {
        let id = table_id(t);
        for p in storage.physical_partitions(id).unwrap_or_default() {
            if let Some((copied, expected)) = p.split_progress {
                // A stable id per partition: the table's id with the partition's.
                let task_id = Uuid::from_u64_pair(id.0 as u64, p.id);
                // The expected bytes are an estimate: the copy may pass them.
                let total = expected.max(copied);
                out.push(task(&t.keyspace, &t.name, task_id, "split", copied, total));
            }
        }
        for m in moves.iter().filter(|m| m.table == id) {
            let task_id = Uuid::from_u64_pair(id.0 as u64, m.group);
            let (done, total) = (m.bytes_received, m.bytes_total);
            out.push(task(&t.keyspace, &t.name, task_id, "move", done, total));
        }
    }
    out
}
