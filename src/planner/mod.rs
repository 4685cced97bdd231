//! Planning: a parsed statement and the catalog give a `Plan` (tables resolved, restrictions
//! and conditions checked, bind markers typed), which the executor runs with bound values.
//!
//! The plan types live here with their planning, one statement family a file:
//! - [`select`]: [`SelectPlan`], SELECT on a user table; its selectors and GROUP BY in
//!   [`selection`];
//! - [`virtual_select`]: SELECT on a system table;
//! - [`modify`]: [`ModifyPlan`], INSERT, UPDATE and DELETE; their IF clauses in [`conditions`];
//! - [`restrictions`]: WHERE clauses (partition keys, token range, clustering prefix and slice,
//!   row filters);
//! - [`terms`]: the operands every plan holds, constants folded and bind markers numbered.
//!
//! Nothing here reads table data or request values: binding a plan to a request's values and
//! running it is the executor's (`executor::values`, `executor::keys`, `executor::select`,
//! `executor::modify`, `executor::lwt`). Planning borrows only the executor's value helpers
//! (`literal`, `json`, `functions` and the few they use), which import nothing else of either
//! side.

pub mod ann;
pub mod conditions;
pub mod index_choice;
pub mod modify;
pub mod node_state;
pub mod restrictions;
pub mod select;
pub mod selection;
pub mod terms;
mod user_calls;
pub mod virtual_select;

use crate::context::SessionContext;
use crate::error::QueryError;
use crate::schema::{self, Catalog, Table};
use cql::ast::{BatchType, QualifiedName, Statement};
use cql::response::ColumnSpec;
use modify::ModifyPlan;
use select::SelectPlan;
use std::sync::Arc;
use terms::{Markers, Term};
use virtual_select::VirtualSelect;

/// A statement planned against the catalog.
pub(crate) enum Plan {
    /// SELECT on a system table.
    Virtual(VirtualSelect),
    /// SELECT on a user table.
    Select(SelectPlan),
    /// INSERT, UPDATE or DELETE.
    Modify(ModifyPlan),
    /// BEGIN BATCH ... APPLY BATCH, with the batch's own `USING TIMESTAMP`.
    Batch(Vec<ModifyPlan>, Option<Term>),
    /// UPDATE of a member's state in `system_views.cluster_nodes` (decommission,
    /// removenode).
    NodeState(node_state::NodeStatePlan),
}

impl Plan {
    /// The tables the plan reads or writes, in statement order (a system table too).
    pub(crate) fn tables(&self) -> impl Iterator<Item = &Arc<Table>> {
        let (read, written): (Option<&Arc<Table>>, &[ModifyPlan]) = match self {
            Plan::Virtual(v) => (Some(v.table()), &[]),
            Plan::NodeState(_) => (None, &[]),
            Plan::Select(s) => (Some(&s.table), &[]),
            Plan::Modify(m) => (None, std::slice::from_ref(m)),
            Plan::Batch(plans, _) => (None, plans),
        };
        read.into_iter()
            .chain(written.iter().map(ModifyPlan::table))
    }

    /// The user functions and aggregates the plan calls (an aggregate with its state and
    /// final functions, as Cassandra's `UDAggregate.addFunctionsTo`): what EXECUTE is
    /// checked on.
    pub(crate) fn user_functions(&self) -> Vec<crate::auth::AuthResource> {
        let mut out = Vec::new();
        if let Plan::Select(s) = self {
            for (sel, _) in &s.outputs {
                sel.user_functions(&mut out);
            }
        }
        out
    }
}

/// A prepared statement's plan, kept with the statement so EXECUTE binds values without
/// re-planning; valid while the catalog version and the keyspace it was planned in hold.
pub(crate) struct CachedPlan {
    /// Catalog version the plan was made against.
    pub(crate) catalog_version: uuid::Uuid,
    /// Keyspace unqualified names resolved in.
    pub(crate) keyspace: Option<Arc<str>>,
    /// The plan.
    pub(crate) plan: Plan,
    /// The statement's bind markers, in order.
    pub(crate) markers: Vec<ColumnSpec>,
    /// The user functions its terms call (EXECUTE is checked on them and the plan's).
    pub(crate) functions: Vec<crate::auth::AuthResource>,
}

impl std::fmt::Debug for CachedPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CachedPlan")
    }
}

/// What a request that runs on the connection's own task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inline {
    /// Reads only: owes no journal flush, so it may also run on a read thread.
    Read,
    /// Writes: its journal flush is shared with the requests answered beside it.
    Write,
}

impl CachedPlan {
    /// True when the plan is still valid for the catalog version and keyspace given.
    pub(crate) fn is_current(&self, version: uuid::Uuid, keyspace: Option<&Arc<str>>) -> bool {
        self.catalog_version == version && self.keyspace.as_ref() == keyspace
    }

    /// The tables the statement writes (none for a SELECT).
    pub(crate) fn written_tables(&self) -> impl Iterator<Item = &Arc<Table>> {
        let plans: &[ModifyPlan] = match &self.plan {
            Plan::Modify(m) => std::slice::from_ref(m),
            Plan::Batch(plans, _) => plans,
            Plan::Select(_) | Plan::Virtual(_) | Plan::NodeState(_) => &[],
        };
        plans.iter().map(ModifyPlan::table)
    }

    /// True for statements cheap and bounded enough to run on the connection's own task
    /// instead of hopping to the blocking pool: unconditional writes (unless every write
    /// waits for an fsync) and reads of named partitions without filtering or aggregation.
    pub(crate) fn runs_inline(&self, fsync_per_write: bool) -> Option<Inline> {
        let inline = match &self.plan {
            Plan::Select(s) => return s.is_partition_read().then_some(Inline::Read),
            Plan::Modify(m) => m.conditions().is_none() && !fsync_per_write,
            Plan::Batch(plans, _) => {
                !fsync_per_write
                    && plans.len() <= 16
                    && plans.iter().all(|p| p.conditions().is_none())
            }
            Plan::Virtual(_) | Plan::NodeState(_) => false,
        };
        inline.then_some(Inline::Write)
    }
}

/// Plans SELECT, INSERT, UPDATE, DELETE and BATCH statements; `None` for the others.
///
/// # Errors
/// Invalid requests with Cassandra's messages (unknown tables, bad restrictions, ...).
pub(crate) fn plan<'c>(
    catalog: &'c Catalog,
    ctx: &SessionContext,
    stmt: &Statement,
    markers: &mut Markers<'c>,
) -> Result<Option<Plan>, QueryError> {
    markers.catalog = Some(catalog);
    Ok(Some(match stmt {
        Statement::Select(select) => {
            let table = resolve_table(catalog, ctx, &select.table)?;
            if schema::is_system_keyspace(&table.keyspace) {
                Plan::Virtual(VirtualSelect::plan(select, table, catalog, markers)?)
            } else {
                Plan::Select(SelectPlan::plan(select, table, catalog, markers)?)
            }
        }
        Statement::Insert(s) => Plan::Modify(ModifyPlan::insert(
            s,
            writable_table(catalog, ctx, &s.table)?,
            markers,
        )?),
        Statement::Update(s) if is_cluster_nodes(catalog, ctx, &s.table) => {
            Plan::NodeState(node_state::NodeStatePlan::plan(s)?)
        }
        Statement::Update(s) => Plan::Modify(ModifyPlan::update(
            s,
            writable_table(catalog, ctx, &s.table)?,
            markers,
        )?),
        Statement::Delete(s) => Plan::Modify(ModifyPlan::delete(
            s,
            writable_table(catalog, ctx, &s.table)?,
            markers,
        )?),
        Statement::Batch(b) => {
            let timestamp = match &b.using.timestamp {
                Some(e) => Some(markers.term_named(
                    e,
                    &cql::types::DataType::Native(cql::types::NativeType::Bigint),
                    "",
                    "",
                    "[timestamp]",
                    "[timestamp]",
                )?),
                None => None,
            };
            let mut plans = Vec::new();
            for inner in &b.statements {
                match plan(catalog, ctx, inner, markers)? {
                    Some(Plan::Modify(m)) => plans.push(m),
                    _ => {
                        return Err(QueryError::invalid(
                            "Only INSERT, UPDATE and DELETE statements are allowed in a BATCH",
                        ))
                    }
                }
            }
            if b.using.ttl.is_some() {
                return Err(QueryError::invalid(
                    "Global TTL on the BATCH statement is not supported.",
                ));
            }
            if b.using.timestamp.is_some() {
                // Cassandra's BatchStatement.validate, in its order.
                if plans.iter().any(|p| p.conditions.is_some()) {
                    return Err(QueryError::invalid(
                        "Cannot provide custom timestamp for conditional BATCH",
                    ));
                }
                if b.batch_type == BatchType::Counter {
                    return Err(QueryError::invalid(
                        "Cannot provide custom timestamp for counter BATCH",
                    ));
                }
            }
            check_batch_kind(b.batch_type, plans.iter().map(|p| p.table().is_counter()))?;
            if timestamp.is_some() && plans.iter().any(ModifyPlan::has_timestamp) {
                return Err(QueryError::invalid(
                    "Timestamp must be set either on BATCH or individual statements",
                ));
            }
            Plan::Batch(plans, timestamp)
        }
        _ => return Ok(None),
    }))
}

/// Looks a table up, from the session keyspace when unqualified.
///
/// # Errors
/// Invalid when no keyspace is given or the keyspace or table does not exist.
pub(crate) fn resolve_table(
    catalog: &Catalog,
    ctx: &SessionContext,
    name: &QualifiedName,
) -> Result<Arc<Table>, QueryError> {
    let ks = name
        .keyspace
        .as_deref()
        .or(ctx.keyspace.as_deref())
        .ok_or_else(|| {
            QueryError::invalid(
                "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename",
            )
        })?;
    if !catalog.keyspaces.contains_key(ks) {
        return Err(QueryError::invalid(format!("Keyspace {ks} does not exist")));
    }
    catalog
        .table(ks, &name.name)
        .cloned()
        .ok_or_else(|| QueryError::invalid(format!("unconfigured table {}", name.name)))
}

/// True when `name` is `system_views.cluster_nodes`, whose members' state an UPDATE sets.
fn is_cluster_nodes(catalog: &Catalog, ctx: &SessionContext, name: &QualifiedName) -> bool {
    resolve_table(catalog, ctx, name)
        .is_ok_and(|t| t.keyspace == "system_views" && t.name == "cluster_nodes")
}

/// A table that statements may write: not one of the system keyspaces'.
fn writable_table(
    catalog: &Catalog,
    ctx: &SessionContext,
    name: &QualifiedName,
) -> Result<Arc<Table>, QueryError> {
    let table = resolve_table(catalog, ctx, name)?;
    if schema::is_system_keyspace(&table.keyspace) {
        return Err(QueryError::Unauthorized(format!(
            "{} keyspace is not user-modifiable.",
            table.keyspace
        )));
    }
    Ok(table)
}

/// Counter batches hold only counter updates; other batches none.
///
/// # Errors
/// Invalid with Cassandra's message when a statement does not fit the batch's kind.
pub(crate) fn check_batch_kind(
    kind: BatchType,
    counters: impl Iterator<Item = bool>,
) -> Result<(), QueryError> {
    for is_counter in counters {
        match (kind, is_counter) {
            (BatchType::Counter, false) => {
                return Err(QueryError::invalid(
                    "Cannot include non-counter statement in a counter batch",
                ))
            }
            (BatchType::Logged, true) => {
                return Err(QueryError::invalid(
                    "Cannot include a counter statement in a logged batch",
                ))
            }
            (BatchType::Unlogged, true) => {
                return Err(QueryError::invalid(
                    "Counter and non-counter mutations cannot exist in the same batch",
                ))
            }
            _ => {}
        }
    }
    Ok(())
}
