//! Evaluating the selectors of a SELECT on a user table: scalar and user functions, casts, fields
//! and elements per row, and aggregates (user aggregates too) and `count(*)` folded per group (consecutive rows with equal
//! GROUP BY keys).

use crate::error::QueryError;
use crate::executor::functions::{self, Aggregator};
use crate::planner::selection::Selection;
use crate::udf::calls::AggregateState;
use bytes::Bytes;
use cql::types::{DataType, Value};

impl Selection {
    /// Evaluates a non-aggregate selection on one row; `leaf` answers columns, writetime, ttl
    /// and token.
    ///
    /// # Errors
    /// Function failures (InvalidRequest).
    pub(crate) fn eval(
        &self,
        leaf: &dyn Fn(&Selection) -> Option<Bytes>,
    ) -> Result<Option<Bytes>, QueryError> {
        match self {
            Selection::Const(b) => Ok(b.clone()),
            // Bound by `SelectPlan::execute` before any row is read; elsewhere unsupported.
            Selection::Marker(_) => Err(QueryError::invalid(
                "Bind markers are not supported in this selection",
            )),
            Selection::Scalar { name, args } => {
                let mut values = Vec::with_capacity(args.len());
                let mut types = Vec::with_capacity(args.len());
                for (a, t) in args {
                    let v = match a.eval(leaf)? {
                        Some(b) => Some(
                            Value::decode(t, &b).map_err(|e| QueryError::invalid(e.to_string()))?,
                        ),
                        None => None,
                    };
                    values.push(v);
                    types.push(t.clone());
                }
                Ok(functions::call_scalar(name, &values, &types)?
                    .map(|v| Bytes::from(v.to_bytes())))
            }
            Selection::UserFunction { call, args } => {
                let values = eval_args(args, leaf)?;
                Ok(call.call(&values)?.map(|v| Bytes::from(v.to_bytes())))
            }
            Selection::Cast { arg, from, to } => {
                let v = match arg.eval(leaf)? {
                    Some(b) => Some(
                        Value::decode(from, &b).map_err(|e| QueryError::invalid(e.to_string()))?,
                    ),
                    None => None,
                };
                Ok(functions::cast(v, from, to)?.map(|v| Bytes::from(v.to_bytes())))
            }
            Selection::Field {
                arg,
                arg_type,
                index,
            } => {
                let Some(b) = arg.eval(leaf)? else {
                    return Ok(None);
                };
                match Value::decode(arg_type, &b) {
                    Ok(Value::Udt(fields)) => Ok(fields
                        .get(*index)
                        .and_then(|(_, v)| v.as_ref())
                        .map(|v| Bytes::from(v.to_bytes()))),
                    _ => Ok(None),
                }
            }
            Selection::Element { arg, arg_type, key } => {
                let Some(b) = arg.eval(leaf)? else {
                    return Ok(None);
                };
                Ok(element_of(&b, arg_type, key).map(|v| Bytes::from(v.to_bytes())))
            }
            Selection::ToJson { arg, arg_type } => {
                let json = match arg.eval(leaf)? {
                    Some(b) => match Value::decode(arg_type, &b) {
                        Ok(v) => crate::executor::json::to_json(&v, arg_type),
                        Err(_) => serde_json::Value::Null,
                    },
                    None => serde_json::Value::Null,
                };
                Ok(Some(Bytes::from(crate::executor::json::to_text(&json))))
            }
            Selection::CountStar
            | Selection::Aggregate { .. }
            | Selection::UserAggregate { .. } => Ok(None),
            leafy => Ok(leaf(leafy)),
        }
    }
}

/// The values of a call's arguments on one row, decoded by their types.
fn eval_args(
    args: &[(Selection, DataType)],
    leaf: &dyn Fn(&Selection) -> Option<Bytes>,
) -> Result<Vec<Option<Value>>, QueryError> {
    args.iter()
        .map(|(a, t)| match a.eval(leaf)? {
            Some(b) => Value::decode(t, &b)
                .map(Some)
                .map_err(|e| QueryError::invalid(e.to_string())),
            None => Ok(None),
        })
        .collect()
}

/// The element `key` of a serialized collection of type `ty` (list index, map key, set element).
pub(crate) fn element_of(bytes: &[u8], ty: &DataType, key: &Value) -> Option<Value> {
    use crate::executor::order::compare_values;
    match (Value::decode(ty, bytes).ok()?, ty.unfrozen()) {
        (Value::List(items), _) => match key {
            Value::Int(i) => usize::try_from(*i).ok().and_then(|i| items.get(i).cloned()),
            _ => None,
        },
        (Value::Map(entries), DataType::Map(kt, _)) => entries
            .into_iter()
            .find(|(k, _)| compare_values(k, key, kt).is_eq())
            .map(|(_, v)| v),
        (Value::Set(items), DataType::Set(et)) => items
            .into_iter()
            .find(|x| compare_values(x, key, et).is_eq()),
        _ => None,
    }
}

/// One output row of a group, with the partition key the group belongs to.
pub(crate) type GroupRow = (Vec<Vec<u8>>, Vec<Option<Bytes>>);

/// Per-group state of one output.
enum Fold<'a> {
    /// `count(*)`.
    Count(i64),
    /// An aggregate function.
    Agg(Aggregator, Box<Selection>, DataType),
    /// A user-defined aggregate and its arguments.
    UserAgg(AggregateState, &'a [(Selection, DataType)]),
    /// A plain selection: the value on the group's first row.
    First(Option<Bytes>, bool),
}

/// Folds rows into one output row per group (consecutive rows with equal GROUP BY keys).
pub(crate) struct Grouper<'a> {
    outputs: &'a [(Selection, DataType)],
    key: Option<Vec<Option<Bytes>>>,
    partition: Vec<Vec<u8>>,
    folds: Vec<Fold<'a>>,
    rows: Vec<GroupRow>,
    grouped: bool,
}

impl<'a> Grouper<'a> {
    /// A grouper for these outputs; `grouped` when the query has GROUP BY.
    pub(crate) fn new(
        outputs: &'a [(Selection, DataType)],
        grouped: bool,
    ) -> Result<Grouper<'a>, QueryError> {
        let mut g = Grouper {
            outputs,
            key: None,
            partition: Vec::new(),
            folds: Vec::new(),
            rows: Vec::new(),
            grouped,
        };
        g.folds = g.fresh()?;
        Ok(g)
    }

    fn fresh(&self) -> Result<Vec<Fold<'a>>, QueryError> {
        let outputs: &'a [(Selection, DataType)] = self.outputs;
        outputs
            .iter()
            .map(|(s, _)| match s {
                Selection::CountStar => Ok(Fold::Count(0)),
                Selection::UserAggregate { call, args } => Ok(Fold::UserAgg(
                    AggregateState::new(call.clone()),
                    args.as_slice(),
                )),
                Selection::Aggregate {
                    name,
                    arg,
                    arg_type,
                } => Ok(Fold::Agg(
                    Aggregator::new(name, arg_type)?,
                    arg.clone(),
                    arg_type.clone(),
                )),
                _ => Ok(Fold::First(None, false)),
            })
            .collect()
    }

    /// Feeds one row, with its group key (empty without GROUP BY).
    ///
    /// # Errors
    /// Aggregate failures.
    pub(crate) fn feed(
        &mut self,
        key: Vec<Option<Bytes>>,
        partition: &[Vec<u8>],
        leaf: &dyn Fn(&Selection) -> Option<Bytes>,
    ) -> Result<(), QueryError> {
        if self.key.as_ref().is_some_and(|k| *k != key) {
            self.flush()?;
        }
        if self.key.is_none() {
            self.partition = partition.to_vec();
        }
        self.key = Some(key);
        for (fold, (sel, _)) in self.folds.iter_mut().zip(self.outputs) {
            match fold {
                Fold::Count(n) => *n += 1,
                Fold::Agg(agg, arg, ty) => {
                    let v = match arg.eval(leaf)? {
                        Some(b) => Value::decode(ty, &b).ok(),
                        None => None,
                    };
                    agg.add(v.as_ref())?;
                }
                Fold::UserAgg(state, args) => state.add(eval_args(args, leaf)?)?,
                Fold::First(v, seen) => {
                    if !*seen {
                        *v = sel.eval(leaf)?;
                        *seen = true;
                    }
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), QueryError> {
        let fresh = self.fresh()?;
        let folds = std::mem::replace(&mut self.folds, fresh);
        let row = folds
            .into_iter()
            .map(|f| {
                Ok(match f {
                    Fold::Count(n) => Some(Bytes::copy_from_slice(&n.to_be_bytes())),
                    Fold::Agg(agg, _, _) => agg.finish().map(|v| Bytes::from(v.to_bytes())),
                    Fold::UserAgg(state, _) => state.finish()?.map(|v| Bytes::from(v.to_bytes())),
                    Fold::First(v, _) => v,
                })
            })
            .collect::<Result<_, QueryError>>()?;
        self.rows.push((std::mem::take(&mut self.partition), row));
        self.key = None;
        Ok(())
    }

    /// The output rows with their partition keys: one per group (one in all without GROUP BY,
    /// even over no rows).
    ///
    /// # Errors
    /// Aggregate failures.
    pub(crate) fn finish(mut self) -> Result<Vec<GroupRow>, QueryError> {
        if self.key.is_some() || (!self.grouped && self.rows.is_empty()) {
            self.flush()?;
        }
        Ok(self.rows)
    }
}
