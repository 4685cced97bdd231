//! Operations an administrator asks of a node at its metrics address, as ScyllaDB's REST API
//! takes nodetool's: `POST /admin/flush` and `POST /admin/compact` (every user table, or
//! `?table=KS` / `?table=KS.TABLE`), `POST /admin/snapshot?name=NAME` and `POST /admin/cleanup`.
//! Each runs on a blocking thread and tells its progress as it goes ([`Told`]); the endpoint
//! streams that to the caller, whose `ringdb` command draws a progress bar from it.

use crate::node::Node;
use storage::TableId;

/// An administrator's operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Operation {
    /// Writes the selected tables' memtables to disk.
    Flush(Option<String>),
    /// Compacts each physical partition of the selected tables to one sorted run.
    Compact(Option<String>),
    /// Takes the snapshot of the data directory with this name.
    Snapshot(String),
    /// Removes the rows of ranges this node holds no replica of.
    Cleanup,
}

/// What an operation tells its caller while it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Told {
    /// `done` of `total` steps, counted in `unit`.
    Progress {
        done: u64,
        total: u64,
        unit: &'static str,
    },
    /// A line of its report.
    Line(String),
}

impl Told {
    /// The line that carries it to the caller (`crate::admin_operations` reads it).
    pub(super) fn wire(&self) -> String {
        match self {
            Told::Progress { done, total, unit } => format!("progress {done} {total} {unit}\n"),
            Told::Line(text) => format!("report {text}\n"),
        }
    }
}

/// The user tables `filter` selects (`KS`, `KS.TABLE`, or every table).
fn selected(node: &Node, filter: Option<&str>) -> Vec<(String, TableId)> {
    let catalog = node.catalog();
    let wanted = filter.map(|f| f.split_once('.').unwrap_or((f, "")));
    let mut out = Vec::new();
    for t in catalog.user_tables() {
        let keep = match wanted {
            None => true,
            Some((k, "")) => k == t.keyspace,
            Some((k, table)) => k == t.keyspace && table == t.name,
        };
        if keep {
            out.push((
                format!("{}.{}", t.keyspace, t.name),
                crate::schema::table_id(t),
            ));
        }
    }
    out
}

/// Why `op` cannot start (no table matches its filter), checked before it runs.
pub(super) fn refusal(node: &Node, op: &Operation) -> Option<String> {
    let filter = match op {
        Operation::Flush(f) | Operation::Compact(f) => f.as_deref(),
        Operation::Snapshot(_) | Operation::Cleanup => return None,
    };
    selected(node, filter)
        .is_empty()
        .then(|| format!("no table matches {}", filter.unwrap_or("(every table)")))
}

/// Runs `op`, telling `tell` its progress and its report's lines.
///
/// # Errors
/// Why it failed part-way (a store failure, a taken snapshot name).
pub(super) fn run(node: &Node, op: &Operation, tell: &mut dyn FnMut(Told)) -> Result<(), String> {
    match op {
        Operation::Flush(filter) | Operation::Compact(filter) => {
            let compact = matches!(op, Operation::Compact(_));
            on_tables(node, compact, filter.as_deref(), tell)
        }
        Operation::Snapshot(name) => {
            let taken = crate::snapshots::take(node, name, &mut |done, total, unit| {
                tell(Told::Progress { done, total, unit })
            })
            .map_err(|e| e.to_string())?;
            tell(Told::Line(format!(
                "snapshot taken: {} files, {} bytes",
                taken.files, taken.bytes
            )));
            Ok(())
        }
        Operation::Cleanup => {
            let cleaned = match node.cluster() {
                Some(cluster) => cluster.cleanup(&mut |done, total| {
                    tell(Told::Progress {
                        done,
                        total,
                        unit: "ranges",
                    })
                })?,
                None => crate::cluster_hooks::Cleaned::default(),
            };
            tell(Told::Line(format!(
                "cleanup done: {} ranges checked, {} held by other nodes removed ({} bytes)",
                cleaned.ranges, cleaned.foreign, cleaned.bytes
            )));
            Ok(())
        }
    }
}

/// Flushes or compacts the tables `filter` selects, a physical partition at a time.
fn on_tables(
    node: &Node,
    compact: bool,
    filter: Option<&str>,
    tell: &mut dyn FnMut(Told),
) -> Result<(), String> {
    let tables = selected(node, filter);
    let storage = node.storage();
    let counts: Vec<u64> = tables
        .iter()
        .map(|(_, id)| {
            storage
                .physical_partitions(*id)
                .map_or(1, |p| p.len() as u64)
        })
        .collect();
    let total: u64 = counts.iter().sum();
    let mut done = 0u64;
    let unit = "physical partitions";
    tell(Told::Progress { done, total, unit });
    for (name, id) in &tables {
        let started = std::time::Instant::now();
        let mut on_partition = |_: usize| {
            done += 1;
            tell(Told::Progress {
                done: done.min(total),
                total,
                unit,
            });
        };
        let finished = if compact {
            storage
                .compact_table_each(*id, &mut on_partition)
                .map(|runs| format!("compacted ({} physical partitions)", runs.len()))
        } else {
            storage
                .flush_table_each(*id, &mut on_partition)
                .map(|()| "flushed".to_string())
        };
        let line = finished.map_err(|e| format!("{name}: {e}"))?;
        let ms = started.elapsed().as_millis();
        tracing::info!(table = %name, compact, ms = ms as u64, "admin operation done");
        tell(Told::Line(format!("{name}: {line} in {ms} ms")));
    }
    Ok(())
}
