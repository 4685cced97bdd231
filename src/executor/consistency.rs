//! Consistency levels a single node can honour, answered as Cassandra answers them.

use crate::error::QueryError;
use cql::ast::Statement;
use cql::request::Consistency;

/// True for INSERT/UPDATE/DELETE/BATCH statements that carry an IF clause.
fn is_conditional(stmt: &Statement) -> bool {
    match stmt {
        Statement::Insert(i) => i.if_not_exists,
        Statement::Update(u) => u.conditions.is_some(),
        Statement::Delete(d) => d.conditions.is_some(),
        Statement::Batch(b) => b.statements.iter().any(is_conditional),
        _ => false,
    }
}

/// A single node with replication factor 1 answers as Cassandra would.
///
/// # Errors
/// Invalid for SERIAL on an unconditional write or ANY on a read; Unavailable for levels
/// that need more than one replica.
pub fn check_consistency(cl: Consistency, stmt: &Statement) -> Result<(), QueryError> {
    let is_write = matches!(
        stmt,
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) | Statement::Batch(_)
    );
    if matches!(cl, Consistency::Serial | Consistency::LocalSerial)
        && is_write
        && !is_conditional(stmt)
    {
        return Err(QueryError::invalid(
            "You must use conditional updates for serializable writes",
        ));
    }
    let required = match cl {
        Consistency::Two => 2,
        Consistency::Three => 3,
        _ => 1,
    };
    if required > 1 {
        return Err(QueryError::Unavailable {
            consistency: cl,
            required,
            alive: 1,
        });
    }
    if matches!(cl, Consistency::Any) && matches!(stmt, Statement::Select(_)) {
        return Err(QueryError::invalid(
            "ANY ConsistencyLevel is only supported for writes",
        ));
    }
    Ok(())
}
