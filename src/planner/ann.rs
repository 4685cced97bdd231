//! Planning `ORDER BY v ANN OF [...]` (Cassandra 5.0's vector search) with Cassandra's
//! checks and messages (`SelectStatement`, `StatementRestrictions`, the SAI vector tests).

use crate::error::QueryError;
use crate::planner::restrictions::Restrictions;
use crate::planner::terms::{Markers, Term};
use crate::schema::Table;
use cql::ast::{Order, Select};
use cql::types::DataType;

/// Refused without an index on the ordered column.
pub const ANN_REQUIRES_INDEX: &str = "ANN ordering by vector requires the column to be indexed";
/// Refused when a filtered column has no index.
pub const ANN_REQUIRES_INDEXED_FILTERING: &str =
    "ANN ordering by vector requires all restricted column(s) to be indexed";
/// Refused without LIMIT.
pub const TOPK_LIMIT: &str =
    "Top-K queries must have a limit specified and the limit must be less than the query page size";
/// The largest LIMIT an ANN query takes.
pub const MAX_ANN_LIMIT: usize = 1000;

/// A planned ANN ordering.
#[derive(Debug, Clone)]
pub struct AnnPlan {
    /// The ordered vector column (index into `table.columns`).
    pub column: usize,
    /// The query vector.
    pub vector: Term,
    /// The column's vector index, as storage keeps it.
    pub index: storage::VectorIndexSpec,
}

/// Plans the ANN ordering of `select`, if it has one. Call it after the WHERE clause's
/// markers were numbered and before LIMIT's: markers count in statement order.
///
/// # Errors
/// InvalidRequest with Cassandra's messages.
pub fn plan_ann(
    select: &Select,
    table: &Table,
    restrictions: &Restrictions,
    aggregate: bool,
    markers: &mut Markers,
) -> Result<Option<AnnPlan>, QueryError> {
    let Some(ann) = select.ann.first() else {
        return Ok(None);
    };
    if select.ann.len() > 1 {
        return Err(QueryError::invalid(
            "Cannot specify more than one ANN ordering",
        ));
    }
    if !select.order_by.is_empty() {
        return Err(QueryError::invalid(
            "ANN ordering does not support any other ordering",
        ));
    }
    let Some(column) = table.columns.iter().position(|c| c.name == ann.column) else {
        return Err(QueryError::invalid(format!(
            "Undefined column name {}",
            ann.column
        )));
    };
    let col = &table.columns[column];
    if !matches!(col.data_type, DataType::Vector(..)) {
        return Err(QueryError::invalid(
            "ANN ordering is only supported on float vector indexes",
        ));
    }
    if ann.order == Some(Order::Desc) {
        return Err(QueryError::invalid(
            "Descending ANN ordering is not supported",
        ));
    }
    let similarity = table
        .indexes
        .iter()
        .filter(|i| i.column == col.name)
        .find_map(|i| i.vector_similarity(table))
        .ok_or_else(|| QueryError::invalid(ANN_REQUIRES_INDEX))?;
    let DataType::Vector(_, dimension) = &col.data_type else {
        return Err(QueryError::invalid(ANN_REQUIRES_INDEX));
    };
    let index = storage::VectorIndexSpec {
        column: col.id,
        dimension: *dimension as usize,
        similarity,
    };
    for f in &restrictions.filters {
        let name = &table.columns[f.column].name;
        if !table.indexes.iter().any(|i| &i.column == name) {
            return Err(QueryError::invalid(ANN_REQUIRES_INDEXED_FILTERING));
        }
    }
    if aggregate {
        return Err(QueryError::invalid(
            "Top-K queries can not be run with aggregation",
        ));
    }
    if select.per_partition_limit.is_some() {
        return Err(QueryError::invalid(
            "Top-K queries do not support per-partition limits",
        ));
    }
    if select.limit.is_none() {
        return Err(QueryError::invalid(TOPK_LIMIT));
    }
    let vector = markers.term_named(
        &ann.vector,
        &col.data_type,
        &table.keyspace,
        &table.name,
        &col.name,
        &col.name,
    )?;
    Ok(Some(AnnPlan {
        column,
        vector,
        index,
    }))
}
