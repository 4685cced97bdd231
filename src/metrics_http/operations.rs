//! Operations an administrator asks of a node at its metrics address, as ScyllaDB's REST API
//! takes nodetool's: `POST /admin/flush` and `POST /admin/compact`, each for every user table
//! or for `?table=KS` / `?table=KS.TABLE` (`ringdb flush`, `ringdb compact`).

use crate::node::Node;
use storage::TableId;

/// What an operation does to one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operation {
    /// Writes its memtables to disk.
    Flush,
    /// Compacts each physical partition to one sorted run.
    Compact,
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

/// Runs `op` on the tables `filter` selects; a line per table, or why it failed.
///
/// # Errors
/// A message when no table matches or the store fails.
pub(super) fn run(node: &Node, op: Operation, filter: Option<&str>) -> Result<String, String> {
    let tables = selected(node, filter);
    if tables.is_empty() {
        return Err(format!(
            "no table matches {}",
            filter.unwrap_or("(every table)")
        ));
    }
    let mut report = String::new();
    for (name, id) in tables {
        let started = std::time::Instant::now();
        let done = match op {
            Operation::Flush => node
                .storage()
                .flush_table(id)
                .map(|()| "flushed".to_string()),
            Operation::Compact => node
                .storage()
                .compact_table(id)
                .map(|runs| format!("compacted ({} physical partitions)", runs.len())),
        };
        let line = done.map_err(|e| format!("{name}: {e}"))?;
        tracing::info!(table = %name, ?op, ms = started.elapsed().as_millis() as u64, "admin operation done");
        report.push_str(&format!(
            "{name}: {line} in {} ms\n",
            started.elapsed().as_millis()
        ));
    }
    Ok(report)
}
