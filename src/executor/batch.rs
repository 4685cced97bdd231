//! The BATCH message: each statement (text or prepared id) is planned and bound with its own
//! values; conditional batches run as one compare-and-set, the others as one atomic write.

use super::values::Values;
use super::{apply, clock, lwt};
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
        return Ok(ResultBody::Rows(lwt::execute(
            shards, &refs, &vals, ts, true,
        )?));
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
    apply(shards, writes)?;
    Ok(ResultBody::Void)
}

/// Cassandra's `BatchStatement.verifyBatchSize`: a batch over more than one partition whose
/// data passes `batch_size_fail_threshold_kb` is refused.
fn check_batch_size(
    node: &Node,
    writes: &[(Arc<crate::schema::Table>, storage::Mutation)],
) -> Result<(), QueryError> {
    let mut partitions: Vec<(&str, &str, &[Vec<u8>])> = writes
        .iter()
        .map(|(t, m)| {
            (
                t.keyspace.as_str(),
                t.name.as_str(),
                m.partition_key.as_slice(),
            )
        })
        .collect();
    partitions.sort();
    partitions.dedup();
    if partitions.len() <= 1 {
        return Ok(());
    }
    let size: usize = writes.iter().map(|(_, m)| m.data_size()).sum();
    let limit = node
        .config()
        .batch_size_fail_threshold_kb
        .saturating_mul(1024);
    if size as u64 > limit {
        tracing::warn!(
            partitions = partitions.len(),
            size,
            limit,
            "batch refused: over batch_size_fail_threshold_kb"
        );
        return Err(QueryError::invalid("Batch too large"));
    }
    Ok(())
}
