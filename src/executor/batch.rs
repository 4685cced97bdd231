//! The BATCH message: each statement (text or prepared id) is planned and bound with its own
//! values; conditional batches run as one compare-and-set, the others as one atomic write.

use super::values::Values;
use super::{clock, lwt};
use crate::context::SessionContext;
use crate::error::QueryError;
use crate::node::Node;
use crate::planner::modify::ModifyPlan;
use crate::planner::terms::Markers;
use crate::planner::{self, Plan};
use cql::response::{ColumnSpec, ResultBody};
use std::sync::Arc;

/// Runs a BATCH message.
pub(super) fn batch(
    node: &Node,
    ctx: &SessionContext,
    batch: &cql::request::Batch,
) -> Result<ResultBody, QueryError> {
    if batch.statements.len() > u16::MAX as usize {
        return Err(QueryError::invalid("Too many statements in BATCH"));
    }
    let ts = batch.timestamp.unwrap_or_else(clock::next_timestamp);
    let catalog = node.catalog();
    let shards_at = node.shards_at(batch.consistency);
    let shards = shards_at.get();
    let mut writes = Vec::new();
    let mut counters = Vec::new();
    let mut planned: Vec<(ModifyPlan, Vec<ColumnSpec>, usize)> = Vec::new();
    for entry in &batch.statements {
        let (stmt, ctx_ks) = match &entry.kind {
            cql::request::BatchStatementKind::Query(text) => {
                (Arc::new(cql::parse_statement(text)?), ctx.keyspace.clone())
            }
            cql::request::BatchStatementKind::Prepared(id) => {
                let p = node
                    .prepared()
                    .get(id)
                    .ok_or_else(|| QueryError::Unprepared(id.clone()))?;
                (
                    Arc::new(p.statement.clone()),
                    p.keyspace.clone().or_else(|| ctx.keyspace.clone()),
                )
            }
        };
        let inner_ctx = SessionContext {
            keyspace: ctx_ks,
            peer: ctx.peer,
            user: ctx.user.clone(),
            traced: ctx.traced,
        };
        crate::auth::authorize(node.auth(), &catalog, &inner_ctx, &stmt)?;
        let mut markers = Markers::default();
        let plan = match planner::plan(&catalog, &inner_ctx, &stmt, &mut markers)? {
            Some(Plan::Modify(m)) => m,
            _ => {
                return Err(QueryError::invalid(
                    "Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.",
                ))
            }
        };
        crate::auth::authorize_calls(node.auth(), &inner_ctx, &markers.functions)?;
        counters.push(plan.table().is_counter());
        planned.push((plan, markers.specs, planned.len()));
    }
    // Every statement planned, the batch's level must hold for each table it writes (in a
    // cluster, the groups count their replicas as they write).
    let clustered = node.has_peers();
    for (plan, _, _) in planned.iter().filter(|_| !clustered) {
        if let Some(ks) = catalog.keyspaces.get(&plan.table().keyspace) {
            super::check_replicas(batch.consistency, &ks.params)?;
        }
    }
    let bound: Vec<Values<'_>> = planned
        .iter()
        .zip(&batch.statements)
        .map(|((_, specs, _), entry)| Values::new(&entry.values, None, specs))
        .collect::<Result<_, _>>()?;
    if planned.iter().any(|(p, _, _)| p.conditions().is_some()) {
        let refs: Vec<&ModifyPlan> = planned.iter().map(|(p, _, _)| p).collect();
        let vals: Vec<&Values<'_>> = bound.iter().collect();
        let rows = super::views::around_conditional(shards, &catalog, &refs, &vals, ts, || {
            lwt::execute(shards, &refs, &vals, ts, true)
        })?;
        return Ok(ResultBody::Rows(rows));
    }
    for ((plan, _, _), values) in planned.iter().zip(&bound) {
        for m in plan.mutations(values, Some(ts), shards)? {
            writes.push((plan.table().clone(), m));
        }
    }
    let kind = match batch.batch_type {
        cql::request::BatchType::Logged => cql::ast::BatchType::Logged,
        cql::request::BatchType::Unlogged => cql::ast::BatchType::Unlogged,
        cql::request::BatchType::Counter => cql::ast::BatchType::Counter,
    };
    planner::check_batch_kind(kind, counters.into_iter())?;
    check_batch_size(node, &writes)?;
    if kind != cql::ast::BatchType::Logged {
        warn_unlogged(node, &writes);
    }
    for (table, _) in &writes {
        super::views::check_writable(table)?;
    }
    super::views::apply(shards, &node.catalog(), writes)?;
    Ok(ResultBody::Void)
}

/// The tables a batch writes, as Cassandra lists them in its messages (`[ks.t1, ks.t2]`),
/// and how many there are.
fn table_names(writes: &[(Arc<crate::schema::Table>, storage::Mutation)]) -> (String, usize) {
    let mut names: Vec<String> = writes
        .iter()
        .map(|(t, _)| format!("{}.{}", t.keyspace, t.name))
        .collect();
    names.sort();
    names.dedup();
    (format!("[{}]", names.join(", ")), names.len())
}

/// Cassandra's `FBUtilities.prettyPrintMemory`: `6.740KiB`, `1.500MiB`, `2.000GiB`.
fn pretty_memory(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes >= 1 << 30 {
        format!("{:.3}GiB", b / f64::from(1u32 << 30))
    } else if bytes >= 1 << 20 {
        format!("{:.3}MiB", b / f64::from(1u32 << 20))
    } else {
        format!("{:.3}KiB", b / 1024.0)
    }
}

/// Cassandra's `BatchStatement.verifyBatchSize`: a batch over more than one partition (a
/// keyspace's partition key) whose data passes `batch_size_fail_threshold_kb` is refused,
/// and one past `batch_size_warn_threshold_kb` is warned about.
fn check_batch_size(
    node: &Node,
    writes: &[(Arc<crate::schema::Table>, storage::Mutation)],
) -> Result<(), QueryError> {
    let mut partitions: Vec<(&str, &[Vec<u8>])> = writes
        .iter()
        .map(|(t, m)| (t.keyspace.as_str(), m.partition_key.as_slice()))
        .collect();
    partitions.sort();
    partitions.dedup();
    if partitions.len() <= 1 {
        return Ok(());
    }
    let size = writes
        .iter()
        .map(|(_, m)| m.data_size() as u64)
        .sum::<u64>();
    let config = node.config();
    let limit = config.batch_size_fail_threshold_kb.saturating_mul(1024);
    if size > limit {
        tracing::warn!(
            partitions = partitions.len(),
            size,
            limit,
            "batch refused: over batch_size_fail_threshold_kb"
        );
        return Err(QueryError::invalid("Batch too large"));
    }
    let warn_at = config.batch_size_warn_threshold_kb.saturating_mul(1024);
    if size > warn_at {
        crate::client_warnings::warn(format!(
            "Batch for {} is of size {}, exceeding specified threshold of {} by {}.",
            table_names(writes).0,
            pretty_memory(size),
            pretty_memory(warn_at),
            pretty_memory(size - warn_at)
        ));
    }
    Ok(())
}

/// Cassandra's `BatchStatement.verifyBatchType`: an unlogged (or counter) batch over more
/// partition keys than `unlogged_batch_across_partitions_warn_threshold` is warned about.
fn warn_unlogged(node: &Node, writes: &[(Arc<crate::schema::Table>, storage::Mutation)]) {
    let mut keys: Vec<&[Vec<u8>]> = writes
        .iter()
        .map(|(_, m)| m.partition_key.as_slice())
        .collect();
    keys.sort();
    keys.dedup();
    let threshold = node
        .config()
        .unlogged_batch_across_partitions_warn_threshold;
    if keys.len() as u64 > threshold {
        let (tables, count) = table_names(writes);
        let plural = if count == 1 { "" } else { "s" };
        crate::client_warnings::warn(format!(
            "Unlogged batch covering {} partitions detected against table{plural} {tables}. \
             You should use a logged batch for atomicity, or asynchronous writes for performance.",
            keys.len()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::pretty_memory;

    #[test]
    fn sizes_print_as_cassandras_pretty_print_memory() {
        assert_eq!(pretty_memory(6902), "6.740KiB");
        assert_eq!(pretty_memory(5 * 1024), "5.000KiB");
        assert_eq!(pretty_memory(300), "0.293KiB");
        assert_eq!(pretty_memory(3 << 19), "1.500MiB");
        assert_eq!(pretty_memory(2 << 30), "2.000GiB");
    }
}
