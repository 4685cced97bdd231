//! Planning the IF clause of a conditional INSERT, UPDATE or DELETE (IF NOT EXISTS, IF EXISTS,
//! IF conditions): columns resolved, operands typed. The executor's `lwt` module checks and
//! applies them.

use crate::error::QueryError;
use crate::planner::terms::{Markers, Term};
use crate::schema::{ColumnKind, Table};
use cql::ast::{Condition, Conditions, DeleteTarget, Expr, Operator};
use cql::types::{DataType, NativeType};

/// What a condition looks at in a column.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// The whole value.
    Whole,
    /// A list or map element: `c[key]`.
    Element(Term),
    /// A UDT field, by position: `c.field`.
    Field(usize),
}

/// One planned `IF` condition.
#[derive(Debug, Clone)]
pub struct PlannedCondition {
    /// Column index in `table.columns`.
    pub(crate) column: usize,
    /// What of the column is compared.
    pub(crate) target: Target,
    /// The comparison.
    pub(crate) op: Operator,
    /// One operand, or the IN list.
    pub(crate) values: Vec<Term>,
    /// `IN ?`: one marker holding the list.
    pub(crate) in_marker: bool,
}

/// The conditions of a conditional statement.
#[derive(Debug, Clone)]
pub enum PlannedConditions {
    /// INSERT ... IF NOT EXISTS.
    IfNotExists,
    /// UPDATE/DELETE ... IF EXISTS.
    IfExists,
    /// IF a = x AND b > y ...
    List(Vec<PlannedCondition>),
}

/// Plans the IF clause (its markers come after the WHERE clause's).
///
/// # Errors
/// InvalidRequest for unknown columns or conditions on key columns.
pub fn plan_conditions(
    c: &Conditions,
    table: &Table,
    markers: &mut Markers,
) -> Result<PlannedConditions, QueryError> {
    match c {
        Conditions::IfExists => Ok(PlannedConditions::IfExists),
        Conditions::List(list) => {
            let mut out = Vec::new();
            for cond in list {
                out.push(plan_one(cond, table, markers)?);
            }
            Ok(PlannedConditions::List(out))
        }
    }
}

fn plan_one(
    cond: &Condition,
    table: &Table,
    markers: &mut Markers,
) -> Result<PlannedCondition, QueryError> {
    let (ks, tn) = (table.keyspace.as_str(), table.name.as_str());
    let name = match &cond.target {
        DeleteTarget::Column(c) | DeleteTarget::Element(c, _) | DeleteTarget::Field(c, _) => c,
    };
    let column = table
        .columns
        .iter()
        .position(|c| &c.name == name)
        .ok_or_else(|| QueryError::invalid(format!("Undefined column name {name}")))?;
    let col = &table.columns[column];
    if matches!(col.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
        return Err(QueryError::invalid(format!(
            "PRIMARY KEY column '{name}' cannot have IF conditions"
        )));
    }
    let (target, operand_type) = match &cond.target {
        DeleteTarget::Column(_) => (Target::Whole, col.data_type.clone()),
        DeleteTarget::Element(_, key) => {
            let (kt, vt) = match col.data_type.unfrozen() {
                DataType::List(e) => (DataType::Native(NativeType::Int), (**e).clone()),
                DataType::Map(k, v) => ((**k).clone(), (**v).clone()),
                _ => {
                    return Err(QueryError::invalid(format!(
                        "Invalid element access syntax for non-collection column {name}"
                    )))
                }
            };
            (
                Target::Element(markers.term_named(
                    key,
                    &kt,
                    ks,
                    tn,
                    name,
                    &format!("key({name})"),
                )?),
                vt,
            )
        }
        DeleteTarget::Field(_, field) => {
            let DataType::Udt(u) = col.data_type.unfrozen() else {
                return Err(QueryError::invalid(format!(
                    "Invalid field selection for non-UDT column {name}"
                )));
            };
            let fi = u
                .fields
                .iter()
                .position(|(n, _)| n == field)
                .ok_or_else(|| {
                    QueryError::invalid(format!("Unknown field {field} for column {name}"))
                })?;
            (Target::Field(fi), u.fields[fi].1.clone())
        }
    };
    if matches!(
        cond.op,
        Operator::Lt | Operator::Le | Operator::Gt | Operator::Ge
    ) && operand_type.references_duration()
    {
        return Err(QueryError::invalid(format!(
            "Slice conditions ( {} ) are not supported on durations",
            cond.op
        )));
    }
    let (values, in_marker) = match (cond.op, &cond.value) {
        (Operator::In, Expr::BindMarker(_)) => (
            vec![markers.term_named(
                &cond.value,
                &DataType::List(Box::new(operand_type)),
                ks,
                tn,
                name,
                &format!("in({name})"),
            )?],
            true,
        ),
        (Operator::In, Expr::List(items) | Expr::Tuple(items)) => (
            items
                .iter()
                .map(|e| markers.term(e, &operand_type, ks, tn, name))
                .collect::<Result<_, _>>()?,
            false,
        ),
        (
            Operator::Eq | Operator::Ne | Operator::Lt | Operator::Le | Operator::Gt | Operator::Ge,
            v,
        ) => (vec![markers.term(v, &operand_type, ks, tn, name)?], false),
        (op, _) => {
            return Err(QueryError::invalid(format!(
                "Unsupported operator {op:?} in IF condition on {name}"
            )))
        }
    };
    Ok(PlannedCondition {
        column,
        target,
        op: cond.op,
        values,
        in_marker,
    })
}
