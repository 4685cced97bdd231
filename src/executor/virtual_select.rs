//! Running SELECT on generated tables (the system keyspaces): rows built in memory from the
//! catalog are filtered by the plan's WHERE clause, projected, limited and paged by row offset
//! ([`page`], which DESCRIBE pages with too).

use crate::error::QueryError;
use crate::executor::order::{compare_values, satisfies};
use crate::executor::values::{Bound, Values};
use crate::planner::virtual_select::{Output, VirtualSelect};
use bytes::{BufMut, Bytes, BytesMut};
use cql::ast::Operator;
use cql::response::{ResultMetadata, Rows};
use cql::types::Value;
use std::cmp::Ordering;

impl VirtualSelect {
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
        // The selectors' markers take their bound values.
        let outputs: Vec<Output> = self
            .outputs
            .iter()
            .map(|(o, _)| match o {
                Output::Expr(sel) => {
                    crate::planner::selection::bind_markers(sel, values).map(Output::Expr)
                }
                other => Ok(other.clone()),
            })
            .collect::<Result<_, QueryError>>()?;
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
            let first: &[Option<Bytes>] = matching.first().map_or(&[], |r| r.as_slice());
            let row = outputs
                .iter()
                .map(|o| match o {
                    Output::Count => Ok(Some(Bytes::copy_from_slice(&count.to_be_bytes()))),
                    other => output(other, first),
                })
                .collect::<Result<_, _>>()?;
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
                outputs
                    .iter()
                    .map(|o| output(o, &row))
                    .collect::<Result<_, _>>()
            })
            .collect::<Result<_, _>>()?;
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

/// One selector's value on a generated row (`count(*)` is answered by the caller).
fn output(o: &Output, row: &[Option<Bytes>]) -> Result<Option<Bytes>, QueryError> {
    match o {
        Output::Column(i) => Ok(row.get(*i).cloned().flatten()),
        Output::Count => Ok(None),
        Output::Expr(selection) => selection.eval(&|leaf| match leaf {
            crate::planner::selection::Selection::Column(i) => row.get(*i).cloned().flatten(),
            _ => None,
        }),
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
