//! Evaluating the selectors of a SELECT on a user table per row: columns, scalar and user
//! functions, casts, fields and elements (aggregates are folded by `grouper`).

use crate::error::QueryError;
use crate::executor::functions;
use crate::planner::selection::Selection;
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
pub(crate) fn eval_args(
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
