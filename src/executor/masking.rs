//! Dynamic data masking at execution (Cassandra 5.0): the `dynamic_data_masking_enabled` gate
//! in front of DDL that attaches masks, and which SELECTs read masked columns masked.
//!
//! As Cassandra's `SelectStatement`: a user reads a masked column through its mask unless
//! permissions are not enforced (`AllowAllAuthorizer`) or the user holds UNMASK on the table
//! (superusers, and a table's creator, hold it). A WHERE clause may restrict a masked column
//! only with UNMASK or SELECT_MASKED. The choice holds for one execution, on its thread
//! ([`scope_for`]); `SelectPlan` masks the values it returns while it is set (filters, sorting
//! and grouping see the clear values).

use std::cell::Cell;

use cql::ast::{AlterTableOp, Permission, Statement};

use crate::auth::AuthResource;
use crate::config::Config;
use crate::error::QueryError;
use crate::node::Node;
use crate::planner::Plan;
use crate::schema::{ColumnKind, Table};
use crate::session::SessionContext;

/// Cassandra's refusal while masking is off (`ColumnMask.DISABLED_ERROR_MESSAGE`).
pub(crate) const DISABLED: &str = "Cannot mask columns because dynamic data masking is not \
     enabled. You can enable it with the dynamic_data_masking_enabled property on cassandra.yaml";

thread_local! {
    /// Whether the execution running on this thread reads masked columns masked.
    static MASKED: Cell<bool> = const { Cell::new(false) };
}

/// Masking for one execution; the previous state returns when it is dropped.
pub(crate) struct MaskScope {
    previous: bool,
}

impl Drop for MaskScope {
    fn drop(&mut self) {
        MASKED.with(|m| m.set(self.previous));
    }
}

/// Whether the execution on this thread reads masked columns masked.
pub(crate) fn active() -> bool {
    MASKED.with(Cell::get)
}

/// Checks that `stmt` may attach masks on this node: a mask in CREATE TABLE, ALTER TABLE ADD
/// or ALTER ... MASKED WITH needs `dynamic_data_masking_enabled`; dropping one always passes.
///
/// # Errors
/// Invalid with Cassandra's message.
pub(crate) fn check_enabled(config: &Config, stmt: &Statement) -> Result<(), QueryError> {
    let masks = match stmt {
        Statement::CreateTable(t) => t.columns.iter().any(|c| c.mask.is_some()),
        Statement::AlterTable(a) => match &a.op {
            AlterTableOp::Add { columns, .. } => columns.iter().any(|c| c.mask.is_some()),
            AlterTableOp::MaskColumn(_, mask) => mask.is_some(),
            _ => false,
        },
        _ => false,
    };
    if masks && !config.dynamic_data_masking_enabled {
        return Err(QueryError::invalid(DISABLED));
    }
    Ok(())
}

/// The masking of one execution of `plan` by the session's user, after checking that its
/// WHERE clause restricts masked columns only with UNMASK or SELECT_MASKED.
///
/// # Errors
/// Unauthorized with `SelectStatement.authorize`'s message.
pub(crate) fn scope_for(
    node: &Node,
    ctx: &SessionContext,
    plan: &Plan,
) -> Result<MaskScope, QueryError> {
    let masked = match plan {
        Plan::Select(s) if node.auth().enforces_permissions() && has_masks(&s.table) => {
            let user = ctx.user.as_deref().unwrap_or_default();
            let state = node.auth().state();
            let resource = AuthResource::Table(s.table.keyspace.clone(), s.table.name.clone());
            let unmask = state.has_permission(user, Permission::Unmask, &resource);
            if !unmask && !state.has_permission(user, Permission::SelectMasked, &resource) {
                let restricted: Vec<&str> = restricted_columns(s)
                    .filter(|&i| s.table.columns[i].mask.is_some())
                    .map(|i| s.table.columns[i].name.as_str())
                    .collect();
                if !restricted.is_empty() {
                    return Err(QueryError::Unauthorized(format!(
                        "User {user} has no UNMASK nor SELECT_MASKED permission on table {}.{}, \
                         cannot query masked columns [{}]",
                        s.table.keyspace,
                        s.table.name,
                        restricted.join(", ")
                    )));
                }
            }
            !unmask
        }
        _ => false,
    };
    let previous = MASKED.with(|m| m.replace(masked));
    Ok(MaskScope { previous })
}

fn has_masks(table: &Table) -> bool {
    table.columns.iter().any(|c| c.mask.is_some())
}

/// The indexes (in `table.columns`) of the columns the plan's WHERE clause restricts.
fn restricted_columns(s: &crate::planner::select::SelectPlan) -> impl Iterator<Item = usize> + '_ {
    let r = &s.restrictions;
    let columns = &s.table.columns;
    let position = |kind: ColumnKind, n: usize| {
        columns
            .iter()
            .position(|c| c.kind == kind && c.position == n as i32)
    };
    let partition = (r.partition.is_some() || r.token_start.is_some() || r.token_end.is_some())
        .then(|| (0..columns.len()).filter(|&i| columns[i].kind == ColumnKind::PartitionKey))
        .into_iter()
        .flatten();
    let prefix = r.clustering_eq.len();
    let slice = usize::from(r.clustering_slice.is_some());
    let clustering = (0..prefix + slice).filter_map(move |n| position(ColumnKind::Clustering, n));
    partition
        .chain(clustering)
        .chain(r.filters.iter().map(|f| f.column))
}
