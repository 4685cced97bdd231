//! System tables about the token ring and its physical partitions, from storage statistics:
//! `system.size_estimates`, `system.table_estimates` and `system_views.physical_partitions`.

use crate::cluster_hooks::Placement;
use crate::schema::table_id;
use crate::schema::Catalog;
use crate::throughput::Budgets;
use cql::types::Value;
use storage::{Storage, TableId};

/// A generated row: (column name, value) pairs.
pub(super) type NamedRow = Vec<(&'static str, Value)>;

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

/// `system_views.moves`: one row per replica move in flight.
pub(super) fn moves(
    catalog: &Catalog,
    moves: &[crate::cluster_hooks::MoveStatus],
) -> Vec<NamedRow> {
    moves
        .iter()
        .map(|m| {
            let table = catalog.user_tables().find(|t| table_id(t) == m.table);
            let big = |v: u64| Value::Bigint(i64::try_from(v).unwrap_or(i64::MAX));
            let mut row = vec![
                ("group_id", big(m.group)),
                ("bytes_received", big(m.bytes_received)),
                ("bytes_total", big(m.bytes_total)),
                ("elapsed_ms", big(m.elapsed_ms)),
            ];
            if let Some(t) = table {
                row.push(("keyspace_name", text(t.keyspace.clone())));
                row.push(("table_name", text(t.name.clone())));
            }
            if let Some(from) = m.from {
                row.push(("from_node", Value::Uuid(from)));
            }
            if let Some(to) = m.to {
                row.push(("to_node", Value::Uuid(to)));
            }
            row
        })
        .collect()
}

/// `system_views.physical_partitions`: one row per physical partition of every user table,
/// with the replicas and leader of its group in a cluster (this node's store is cut where
/// the groups end, so each partition lies in one group; null on a single node), and its
/// throughput budget and the request units it used (null without provisioned throughput):
/// with `peers`, a group's (kept by its leader: this node's figures of use are its own), else
/// the store's partition's.
pub(super) fn physical_partitions(
    catalog: &Catalog,
    storage: &Storage,
    budgets: &Budgets,
    placements: &[Placement],
    peers: bool,
) -> Vec<NamedRow> {
    let mut out = Vec::new();
    for t in catalog.user_tables() {
        let id = table_id(t);
        let Ok(parts) = storage.physical_partitions(id) else {
            continue;
        };
        for p in parts {
            let placed = placements
                .iter()
                .find(|g| g.table == id && g.end >= p.end_token);
            let used = match placed.filter(|_| peers) {
                Some(g) => {
                    let groups = |t: TableId| {
                        Some(placements.iter().filter(|g| g.table == t).count()).filter(|n| *n > 0)
                    };
                    budgets.partition_use(&groups, id, g.end)
                }
                None => budgets.partition_use(storage, id, p.end_token),
            };
            let mut row = vec![
                ("keyspace_name", text(t.keyspace.clone())),
                ("table_name", text(t.name.clone())),
                ("id", Value::Bigint(i64::try_from(p.id).unwrap_or(i64::MAX))),
                ("start_token", Value::Bigint(p.start_token)),
                ("end_token", Value::Bigint(p.end_token)),
                (
                    "bytes",
                    Value::Bigint(i64::try_from(p.bytes).unwrap_or(i64::MAX)),
                ),
                (
                    "partitions_estimate",
                    Value::Bigint(i64::try_from(p.partitions_estimate).unwrap_or(i64::MAX)),
                ),
                ("state", text(p.state.as_str())),
            ];
            // Columns left out read as null.
            if let Some(g) = placed {
                let replicas = g.replicas.iter().map(|ip| Value::Inet(*ip)).collect();
                row.push(("replicas", Value::List(replicas)));
            }
            if let Some(leader) = placed.and_then(|g| g.leader) {
                row.push(("leader", Value::Inet(leader)));
            }
            if let Some(u) = used {
                row.push(("ru_budget", Value::Double(u.budget)));
                row.push(("ru_last_second", Value::Double(u.last_second)));
                row.push(("ru_last_minute", Value::Double(u.last_minute)));
            }
            out.push(row);
        }
    }
    out
}

/// `system.size_estimates` (and, with `range_type`, `system.table_estimates`): per table and
/// physical-partition token range, partition count and mean partition size.
pub(super) fn size_estimates(
    catalog: &Catalog,
    storage: &Storage,
    with_range_type: bool,
) -> Vec<NamedRow> {
    let mut out = Vec::new();
    for t in catalog.user_tables() {
        let Ok(estimates) = storage.size_estimates(table_id(t)) else {
            continue;
        };
        for e in estimates {
            let mut row = vec![
                ("keyspace_name", text(t.keyspace.clone())),
                ("table_name", text(t.name.clone())),
                ("range_start", text(e.range_start.to_string())),
                ("range_end", text(e.range_end.to_string())),
                (
                    "mean_partition_size",
                    Value::Bigint(i64::try_from(e.mean_partition_size).unwrap_or(i64::MAX)),
                ),
                (
                    "partitions_count",
                    Value::Bigint(i64::try_from(e.partitions_count).unwrap_or(i64::MAX)),
                ),
            ];
            if with_range_type {
                row.push(("range_type", text("primary")));
            }
            out.push(row);
        }
    }
    out
}
