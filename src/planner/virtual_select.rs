//! Planning SELECT on generated tables (the system keyspaces): selected columns or `count(*)`,
//! WHERE relations kept as in-memory filters, LIMIT. The executor's `virtual_select` module
//! runs a plan over the rows the node builds.

use crate::error::QueryError;
use crate::planner::terms::{Markers, Term};
use crate::schema::Table;
use cql::ast::{Expr, Operator, Relation, Select};
use cql::response::ColumnSpec;
use cql::types::{DataType, NativeType};
use std::sync::Arc;

/// What a selector produces.
#[derive(Debug, Clone)]
pub(crate) enum Output {
    /// A table column (index into `table.columns`).
    Column(usize),
    /// `count(*)`.
    Count,
    /// A native function, cast, field or element over the row's columns (`now()`,
    /// `toTimestamp(now())`, ...).
    Expr(crate::planner::selection::Selection),
}

/// Whether `selection` needs what a generated row does not have: cell timestamps, TTLs or
/// the partition token.
fn reads_cell_metadata(selection: &crate::planner::selection::Selection) -> bool {
    use crate::planner::selection::Selection as S;
    match selection {
        S::WriteTime(_) | S::Ttl(_) | S::Token => true,
        S::Scalar { args, .. } | S::UserFunction { args, .. } | S::UserAggregate { args, .. } => {
            args.iter().any(|(a, _)| reads_cell_metadata(a))
        }
        S::Cast { arg, .. }
        | S::Field { arg, .. }
        | S::Element { arg, .. }
        | S::ToJson { arg, .. }
        | S::Aggregate { arg, .. } => reads_cell_metadata(arg),
        S::Column(_) | S::CountStar | S::Const(_) | S::Marker(_) => false,
    }
}

/// A filter on one column.
#[derive(Debug, Clone)]
pub(crate) struct Filter {
    /// Column index in `table.columns`.
    pub(crate) column: usize,
    /// The comparison.
    pub(crate) op: Operator,
    /// One term, or the list of IN terms.
    pub(crate) terms: Vec<Term>,
    /// `IN ?`: a single marker holding a list.
    pub(crate) in_marker: bool,
}

/// A planned SELECT on a generated table.
#[derive(Debug, Clone)]
pub struct VirtualSelect {
    /// The table read.
    pub(crate) table: Arc<Table>,
    /// The selectors, with their result column specs.
    pub(crate) outputs: Vec<(Output, ColumnSpec)>,
    /// The WHERE clause, as filters on the generated rows.
    pub(crate) filters: Vec<Filter>,
    /// LIMIT.
    pub(crate) limit: Option<Term>,
}

fn undefined(name: &str) -> QueryError {
    QueryError::invalid(format!("Undefined column name {name}"))
}

impl VirtualSelect {
    /// Plans `select` against `table`, numbering markers into `markers`.
    ///
    /// # Errors
    /// InvalidRequest for unknown columns and unsupported selectors.
    pub fn plan(
        select: &Select,
        table: Arc<Table>,
        catalog: &crate::schema::Catalog,
        markers: &mut Markers,
    ) -> Result<VirtualSelect, QueryError> {
        let ks = table.keyspace.clone();
        let tn = table.name.clone();
        let index_of = |name: &str| table.columns.iter().position(|c| c.name == name);
        let spec = |name: &str, ty: &DataType| ColumnSpec {
            keyspace: ks.clone(),
            table: tn.clone(),
            name: name.to_string(),
            data_type: ty.clone(),
        };
        let mut outputs = Vec::new();
        if select.selectors.is_empty() {
            for c in table.select_star_order() {
                if let Some(i) = index_of(&c.name) {
                    outputs.push((Output::Column(i), spec(&c.name, &c.data_type)));
                }
            }
        } else {
            for sel in &select.selectors {
                match &sel.expr {
                    Expr::Column(name) => {
                        let i = index_of(name).ok_or_else(|| undefined(name))?;
                        let c = &table.columns[i];
                        outputs.push((
                            Output::Column(i),
                            spec(sel.alias.as_deref().unwrap_or(name), &c.data_type),
                        ));
                    }
                    Expr::FunctionCall { name, args }
                        if name.keyspace.is_none()
                            && name.name == "count"
                            && args.len() == 1
                            && matches!(args[0], Expr::Star | Expr::Literal(_)) =>
                    {
                        outputs.push((
                            Output::Count,
                            spec(
                                sel.alias.as_deref().unwrap_or("count"),
                                &DataType::Native(NativeType::Bigint),
                            ),
                        ));
                    }
                    other => {
                        let unsupported = || {
                            QueryError::invalid(format!(
                                "Selector {other} is not supported on system table {ks}.{tn}"
                            ))
                        };
                        let mut planned =
                            crate::planner::selection::plan_selector(other, &table, catalog)?;
                        // Markers in the selection come first in statement order.
                        crate::planner::selection::number_markers(
                            &mut planned.selection,
                            markers,
                            &ks,
                            &tn,
                        );
                        if planned.selection.is_aggregate()
                            || reads_cell_metadata(&planned.selection)
                        {
                            return Err(unsupported());
                        }
                        let name = sel.alias.as_deref().unwrap_or(&planned.name);
                        outputs.push((
                            Output::Expr(planned.selection),
                            spec(name, &planned.data_type),
                        ));
                    }
                }
            }
        }
        let mut filters = Vec::new();
        for rel in &select.where_clause {
            let Relation::Simple { column, op, value } = rel else {
                return Err(QueryError::invalid(format!(
                    "Unsupported restriction {rel} on system table {ks}.{tn}"
                )));
            };
            let i = index_of(column).ok_or_else(|| undefined(column))?;
            let ty = table.columns[i].data_type.clone();
            let filter = match (op, value) {
                (Operator::In, Expr::BindMarker(_)) => Filter {
                    column: i,
                    op: *op,
                    terms: vec![markers.term(
                        value,
                        &DataType::List(Box::new(ty)),
                        &ks,
                        &tn,
                        &format!("in({column})"),
                    )?],
                    in_marker: true,
                },
                (Operator::In, Expr::List(items) | Expr::Tuple(items)) => Filter {
                    column: i,
                    op: *op,
                    terms: items
                        .iter()
                        .map(|e| markers.term(e, &ty, &ks, &tn, column))
                        .collect::<Result<_, _>>()?,
                    in_marker: false,
                },
                (
                    Operator::Eq
                    | Operator::Lt
                    | Operator::Le
                    | Operator::Gt
                    | Operator::Ge
                    | Operator::Ne,
                    _,
                ) => Filter {
                    column: i,
                    op: *op,
                    terms: vec![markers.term(value, &ty, &ks, &tn, column)?],
                    in_marker: false,
                },
                _ => {
                    return Err(QueryError::invalid(format!(
                        "Unsupported restriction {rel} on system table {ks}.{tn}"
                    )))
                }
            };
            filters.push(filter);
        }
        let limit = match &select.limit {
            Some(e) => Some(markers.term_named(
                e,
                &DataType::Native(NativeType::Int),
                &ks,
                &tn,
                "[limit]",
                "[limit]",
            )?),
            None => None,
        };
        Ok(VirtualSelect {
            table,
            outputs,
            filters,
            limit,
        })
    }

    /// Result column specs.
    pub fn columns(&self) -> Vec<ColumnSpec> {
        self.outputs.iter().map(|(_, s)| s.clone()).collect()
    }

    /// The table read.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }
}
