//! SELECT over generated tables (the system keyspaces): rows are built in memory from the
//! catalog, filtered by the WHERE clause, projected, limited and paged by row offset.

use crate::error::QueryError;
use crate::executor::order::{compare_values, satisfies};
use crate::executor::values::{Bound, Values};
use crate::planner::terms::{Markers, Term};
use crate::schema::Table;
use bytes::{BufMut, Bytes, BytesMut};
use cql::ast::{Expr, Operator, Relation, Select};
use cql::response::{ColumnSpec, ResultMetadata, Rows};
use cql::types::{DataType, NativeType, Value};
use std::cmp::Ordering;
use std::sync::Arc;

/// What a selector produces.
#[derive(Debug, Clone)]
enum Output {
    /// A table column (index into `table.columns`).
    Column(usize),
    /// `count(*)`.
    Count,
}

/// A filter on one column.
#[derive(Debug, Clone)]
struct Filter {
    column: usize,
    op: Operator,
    /// One term, or the list of IN terms.
    terms: Vec<Term>,
    /// `IN ?`: a single marker holding a list.
    in_marker: bool,
}

/// A planned SELECT on a generated table.
#[derive(Debug, Clone)]
pub struct VirtualSelect {
    table: Arc<Table>,
    outputs: Vec<(Output, ColumnSpec)>,
    filters: Vec<Filter>,
    limit: Option<Term>,
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
                        return Err(QueryError::invalid(format!(
                            "Selector {other} is not supported on system table {ks}.{tn}"
                        )))
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

    /// Runs the plan over `rows` (serialized cells in `table.columns` order).
    ///
    /// # Errors
    /// InvalidRequest for bad bound values or a foreign paging state.
    pub fn execute(
        &self,
        rows: Vec<Vec<Option<Bytes>>>,
        values: &Values<'_>,
        page_size: Option<i32>,
        paging_state: Option<&Bytes>,
    ) -> Result<Rows, QueryError> {
        // Bind filters.
        let mut bound: Vec<(usize, Operator, Vec<Value>)> = Vec::new();
        for f in &self.filters {
            let mut vals = Vec::new();
            for t in &f.terms {
                match values.bind(t)? {
                    Bound::Value(Value::List(items)) if f.in_marker => vals.extend(items),
                    Bound::Value(v) => vals.push(v),
                    Bound::Null if f.in_marker => {}
                    Bound::Null | Bound::Unset => {
                        let name = &self.table.columns[f.column].name;
                        return Err(QueryError::invalid(format!(
                            "Invalid null value for column {name}"
                        )));
                    }
                }
            }
            bound.push((f.column, f.op, vals));
        }
        let limit = match &self.limit {
            None => None,
            Some(t) => match values.bind(t)? {
                Bound::Value(Value::Int(n)) if n > 0 => Some(n as usize),
                Bound::Unset | Bound::Null => None,
                _ => return Err(QueryError::invalid("LIMIT must be strictly positive")),
            },
        };
        let mut matching = Vec::new();
        'rows: for row in rows {
            for (col, op, vals) in &bound {
                let ty = &self.table.columns[*col].data_type;
                let cell = match row.get(*col).cloned().flatten() {
                    Some(b) => Value::decode(ty, &b).ok(),
                    None => None,
                };
                let Some(cell) = cell else { continue 'rows };
                let ok = match op {
                    Operator::In => vals
                        .iter()
                        .any(|v| compare_values(&cell, v, ty) == Ordering::Equal),
                    _ => vals
                        .first()
                        .is_some_and(|v| satisfies(compare_values(&cell, v, ty), *op)),
                };
                if !ok {
                    continue 'rows;
                }
            }
            matching.push(row);
        }
        if let Some(l) = limit {
            matching.truncate(l);
        }
        let columns = self.columns();
        if self.outputs.iter().any(|(o, _)| matches!(o, Output::Count)) {
            let count = matching.len() as i64;
            let row = self
                .outputs
                .iter()
                .map(|(o, _)| match o {
                    Output::Count => Some(Bytes::copy_from_slice(&count.to_be_bytes())),
                    Output::Column(i) => {
                        matching.first().and_then(|r| r.get(*i).cloned().flatten())
                    }
                })
                .collect();
            return Ok(Rows {
                metadata: ResultMetadata {
                    columns: columns.into(),
                    paging_state: None,
                    no_metadata: false,
                },
                rows: vec![row],
            });
        }
        let (page_rows, next) = page(matching, page_size, paging_state)?;
        let rows = page_rows
            .into_iter()
            .map(|row| {
                self.outputs
                    .iter()
                    .map(|(o, _)| match o {
                        Output::Column(i) => row.get(*i).cloned().flatten(),
                        Output::Count => None,
                    })
                    .collect()
            })
            .collect();
        Ok(Rows {
            metadata: ResultMetadata {
                columns: columns.into(),
                paging_state: next,
                no_metadata: false,
            },
            rows,
        })
    }
}

const PAGING_TAG: &[u8; 4] = b"rvo1";

/// Cuts one page out of fully materialised rows; the paging state is the row offset.
///
/// # Errors
/// ProtocolError for a paging state this module did not produce.
pub fn page<T>(
    rows: Vec<T>,
    page_size: Option<i32>,
    paging_state: Option<&Bytes>,
) -> Result<(Vec<T>, Option<Bytes>), QueryError> {
    let start = match paging_state {
        None => 0,
        Some(state) => decode_offset(state)?,
    };
    let total = rows.len();
    let end = match page_size.filter(|p| *p > 0) {
        Some(p) => start.saturating_add(p as usize).min(total),
        None => total,
    };
    let next = (end < total).then(|| encode_offset(end));
    let out = rows
        .into_iter()
        .skip(start)
        .take(end.saturating_sub(start))
        .collect();
    Ok((out, next))
}

fn encode_offset(offset: usize) -> Bytes {
    let mut b = BytesMut::with_capacity(12);
    b.put_slice(PAGING_TAG);
    b.put_u64(offset as u64);
    b.freeze()
}

fn decode_offset(state: &Bytes) -> Result<usize, QueryError> {
    if state.len() == 12 && &state[..4] == PAGING_TAG {
        let mut n = [0u8; 8];
        n.copy_from_slice(&state[4..]);
        return usize::try_from(u64::from_be_bytes(n))
            .map_err(|_| QueryError::Protocol("Invalid paging state".into()));
    }
    Err(QueryError::Protocol(
        "Invalid value for the paging state".into(),
    ))
}
