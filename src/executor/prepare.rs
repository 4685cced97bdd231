//! PREPARE: a statement is parsed and planned once, stored in the prepared cache under
//! Cassandra's id, and described to the client (bind markers, result columns, key indexes).

use crate::context::SessionContext;
use crate::error::QueryError;
use crate::node::Node;
use crate::planner::terms::Markers;
use crate::planner::{self, Plan};
use crate::prepared::{statement_id, PreparedStatement};
use bytes::Bytes;
use cql::ast::Statement;
use cql::response::{ColumnSpec, Prepared, PreparedMetadata, ResultBody, ResultMetadata};
use std::sync::Arc;

/// Bind-marker specs, result columns and partition-key marker indexes.
type MarkerInfo = (Vec<ColumnSpec>, Vec<ColumnSpec>, Vec<u16>);

/// Prepares `text` in the session's keyspace.
pub(super) fn prepare(
    node: &Node,
    ctx: &SessionContext,
    text: &str,
) -> Result<ResultBody, QueryError> {
    let statement = cql::parse_statement(text)?;
    let (markers, result_columns, pk_indexes) = describe_markers(node, ctx, &statement)?;
    let id = statement_id(ctx.keyspace.as_deref(), text);
    let prepared = Arc::new(PreparedStatement {
        id,
        query: text.to_string(),
        keyspace: ctx.keyspace.clone(),
        statement,
        markers: markers.clone(),
        result_columns: result_columns.clone(),
        pk_indexes: pk_indexes.clone(),
        plan: Default::default(),
    });
    node.prepared().insert(prepared);
    Ok(ResultBody::Prepared(Prepared {
        id: Bytes::copy_from_slice(&id),
        metadata: PreparedMetadata {
            columns: markers,
            pk_indexes,
        },
        result_metadata: ResultMetadata {
            no_metadata: result_columns.is_empty(),
            columns: result_columns.into(),
            paging_state: None,
        },
    }))
}

/// Bind-marker specs, result columns and partition-key marker indexes of a statement.
fn describe_markers(
    node: &Node,
    ctx: &SessionContext,
    stmt: &Statement,
) -> Result<MarkerInfo, QueryError> {
    let catalog = node.catalog();
    let mut markers = Markers::default();
    let Some(plan) = planner::plan(&catalog, ctx, stmt, &mut markers)? else {
        return Ok((Vec::new(), Vec::new(), Vec::new()));
    };
    Ok(match plan {
        Plan::Virtual(v) => (markers.specs, v.columns(), Vec::new()),
        Plan::NodeState(_) => (markers.specs, Vec::new(), Vec::new()),
        Plan::Select(s) => {
            let pk = s.pk_indexes();
            (markers.specs, s.columns().to_vec(), pk)
        }
        Plan::Modify(m) => {
            let pk = m.pk_indexes();
            (markers.specs, Vec::new(), pk)
        }
        Plan::Batch(..) => (markers.specs, Vec::new(), Vec::new()),
    })
}
