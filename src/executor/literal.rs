//! CQL literals (constants, collection literals, type hints) turned into typed values for a
//! receiving column type, with Cassandra's compatibility rules and messages.

use crate::error::QueryError;
use cql::ast::{Expr, Literal};
use cql::types::{DataType, NativeType, Value};
use std::net::IpAddr;

/// Converts a constant expression to a value of type `ty` (None for `null`).
/// Bind markers are handled by the caller; here they are an error.
///
/// # Errors
/// InvalidRequest when the literal does not fit the type, naming `receiver`.
pub fn literal_value(
    expr: &Expr,
    ty: &DataType,
    receiver: &str,
) -> Result<Option<Value>, QueryError> {
    let invalid = || {
        let text = match expr {
            Expr::Literal(Literal::String(s)) => s.clone(),
            other => other.to_string(),
        };
        QueryError::invalid(format!(
            "Invalid {} constant ({text}) for \"{receiver}\" of type {ty}",
            kind_name(expr)
        ))
    };
    let ty_un = ty.unfrozen();
    Ok(Some(match (expr, ty_un) {
        (Expr::Literal(Literal::Null), _) => return Ok(None),
        (Expr::FunctionCall { name, args }, _)
            if name.name == "fromjson"
                && name.keyspace.as_deref().is_none_or(|k| k == "system") =>
        {
            let [Expr::Literal(Literal::String(text))] = args.as_slice() else {
                return Err(QueryError::invalid(
                    "fromJson() takes exactly one string literal argument here",
                ));
            };
            let json: serde_json::Value = serde_json::from_str(text).map_err(|e| {
                QueryError::invalid(format!("Could not decode JSON string '{text}': {e}"))
            })?;
            return crate::executor::json::from_json(&json, ty, receiver);
        }
        (Expr::FunctionCall { .. }, _) => {
            let (value, returned) = constant_call(expr)?;
            let fits = returned == *ty_un
                || (matches!(ty_un, DataType::Native(NativeType::Uuid))
                    && matches!(returned, DataType::Native(NativeType::Timeuuid)))
                || (matches!(
                    ty_un,
                    DataType::Native(NativeType::Text | NativeType::Ascii)
                ) && matches!(
                    returned,
                    DataType::Native(NativeType::Text | NativeType::Ascii)
                ));
            if !fits {
                return Err(QueryError::invalid(format!(
                    "Type error: cannot assign result of function {expr} (type {returned}) to {receiver} (type {ty})"
                )));
            }
            return Ok(value.map(|v| match (v, ty_un) {
                (Value::Timeuuid(u), DataType::Native(NativeType::Uuid)) => Value::Uuid(u),
                (Value::Text(t), DataType::Native(NativeType::Ascii)) => Value::Ascii(t),
                (v, _) => v,
            }));
        }
        (Expr::TypeHint { ty: hint, expr }, _) => return literal_value(expr, hint, receiver),
        (Expr::Negate(inner), DataType::Native(_)) => match inner.as_ref() {
            Expr::Literal(Literal::Integer(s)) => integer(&format!("-{s}"), ty_un, receiver)?,
            Expr::Literal(Literal::Float(s)) => float(&format!("-{s}"), ty_un, receiver)?,
            Expr::Literal(Literal::Infinity { negative }) => {
                return literal_value(
                    &Expr::Literal(Literal::Infinity {
                        negative: !negative,
                    }),
                    ty,
                    receiver,
                )
            }
            _ => return Err(invalid()),
        },
        (Expr::Literal(lit), DataType::Native(n)) => {
            native(lit, *n, receiver).ok_or_else(invalid)??
        }
        // A composite's string form ('abc:123'), as CompositeType.fromString reads it.
        (Expr::Literal(Literal::String(text)), DataType::Custom(class)) => {
            let marshal = cql::types::marshal::MarshalType::parse(class).map_err(|_| invalid())?;
            match marshal.composite_from_string(text) {
                Some(Ok(bytes)) => Value::Blob(bytes),
                Some(Err(why)) => {
                    return Err(QueryError::invalid(format!(
                        "Invalid STRING constant ({text}) for \"{receiver}\" of type {ty}: {why}"
                    )))
                }
                None => return Err(invalid()),
            }
        }
        (Expr::Literal(Literal::Blob(bytes)), DataType::Custom(_)) => Value::Blob(bytes.clone()),
        (Expr::List(items), DataType::List(elem)) => Value::List(elements(items, elem, receiver)?),
        // Cassandra's `VectorType` literal (`Vectors.Literal.validateAssignableTo`).
        (Expr::List(items), DataType::Vector(elem, n)) => {
            check_vector_len(items.len(), ty_un, *n, receiver)?;
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(
                    literal_value(item, elem, receiver)?.ok_or_else(|| {
                        QueryError::invalid("null is not supported inside vectors")
                    })?,
                );
            }
            Value::Vector(out)
        }
        (Expr::List(items), DataType::Set(elem)) | (Expr::Set(items), DataType::Set(elem)) => {
            let mut v = elements(items, elem, receiver)?;
            crate::executor::order::sort_set(&mut v, elem);
            Value::Set(v)
        }
        (Expr::Set(items), DataType::Map(_, _)) if items.is_empty() => Value::Map(Vec::new()),
        (Expr::Map(entries), DataType::Map(kt, vt)) => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let k = literal_value(k, kt, receiver)?.ok_or_else(|| {
                    QueryError::invalid("null is not supported inside collections".to_string())
                })?;
                let v = literal_value(v, vt, receiver)?.ok_or_else(|| {
                    QueryError::invalid("null is not supported inside collections".to_string())
                })?;
                out.push((k, v));
            }
            crate::executor::order::sort_map(&mut out, kt);
            Value::Map(out)
        }
        (Expr::Tuple(items), DataType::Tuple(types)) => {
            if items.len() > types.len() {
                return Err(QueryError::invalid(format!(
                    "Invalid tuple literal for {receiver}: too many elements. Type {ty} expects {} but got {}",
                    types.len(),
                    items.len()
                )));
            }
            let mut out = Vec::with_capacity(items.len());
            for (k, (item, t)) in items.iter().zip(types).enumerate() {
                out.push(literal_value(item, t, receiver).map_err(|_| {
                    QueryError::invalid(format!(
                        "Invalid tuple literal for {receiver}: component {k} is not of type {t}"
                    ))
                })?);
            }
            Value::Tuple(out)
        }
        (Expr::UdtLiteral(fields), DataType::Udt(u)) => {
            for (name, _) in fields {
                if !u.fields.iter().any(|(f, _)| f == name) {
                    return Err(QueryError::invalid(format!(
                        "Unknown field '{name}' in value of user defined type {}",
                        u.name
                    )));
                }
            }
            let mut out = Vec::with_capacity(u.fields.len());
            for (fname, ftype) in &u.fields {
                let v = match fields.iter().find(|(n, _)| n == fname) {
                    Some((_, e)) => literal_value(e, ftype, receiver)?,
                    None => None,
                };
                out.push((fname.clone(), v));
            }
            Value::Udt(out)
        }
        _ => return Err(invalid()),
    }))
}

/// Evaluates a function call whose arguments are constants (literals or other such calls),
/// e.g. `now()`, `maxTimeuuid('2013-01-01')`, `blobAsInt(0x0000002a)`.
///
/// # Errors
/// Unknown functions, argument type errors, function failures.
pub fn constant_call(expr: &Expr) -> Result<(Option<Value>, DataType), QueryError> {
    use crate::executor::functions::{self, ArgKind, FunctionArg};
    let Expr::FunctionCall { name, args } = expr else {
        return Err(QueryError::invalid(format!(
            "{expr} is not a function call"
        )));
    };
    let fname = match name.keyspace.as_deref() {
        None | Some("system") => name.name.as_str(),
        Some(ks) => {
            return Err(QueryError::invalid(format!(
                "Unknown function {ks}.{} called",
                name.name
            )))
        }
    };
    if !functions::is_known_function(fname) || functions::is_aggregate(fname) {
        return Err(QueryError::invalid(format!(
            "Unknown function {fname} called"
        )));
    }
    let mut nested: Vec<Option<(Option<Value>, DataType)>> = Vec::with_capacity(args.len());
    for a in args {
        nested.push(match a {
            Expr::FunctionCall { .. } => Some(constant_call(a)?),
            Expr::Literal(_) => None,
            other => {
                return Err(QueryError::invalid(format!(
                    "Only constant arguments are supported in function calls outside of selectors, got {other}"
                )))
            }
        });
    }
    let call: Vec<FunctionArg<'_>> = args
        .iter()
        .zip(&nested)
        .map(|(a, n)| FunctionArg {
            kind: match (a, n) {
                (Expr::Literal(l), _) => ArgKind::Literal(l),
                (_, Some((_, t))) => ArgKind::Typed(t),
                _ => ArgKind::Marker,
            },
            text: a.to_string(),
        })
        .collect();
    let sig = functions::resolve(fname, &call)?;
    let mut values = Vec::with_capacity(args.len());
    for ((a, n), t) in args.iter().zip(nested).zip(&sig.arg_types) {
        values.push(match n {
            Some((v, _)) => v,
            None => literal_value(a, t, &a.to_string())?,
        });
    }
    let result = functions::call_scalar(&sig.name, &values, &sig.arg_types)?;
    Ok((result, sig.return_type))
}

fn kind_name(expr: &Expr) -> &'static str {
    match expr {
        Expr::Literal(Literal::String(_)) => "STRING",
        Expr::Literal(Literal::Integer(_)) => "INTEGER",
        Expr::Literal(Literal::Float(_))
        | Expr::Literal(Literal::NaN)
        | Expr::Literal(Literal::Infinity { .. }) => "FLOAT",
        Expr::Literal(Literal::Boolean(_)) => "BOOLEAN",
        Expr::Literal(Literal::Uuid(_)) => "UUID",
        Expr::Literal(Literal::Blob(_)) => "HEX",
        Expr::Literal(Literal::Duration { .. }) => "DURATION",
        _ => "literal",
    }
}

/// Cassandra's message for a vector literal with the wrong number of elements.
pub(crate) fn check_vector_len(
    given: usize,
    ty: &DataType,
    dimension: u32,
    receiver: &str,
) -> Result<(), QueryError> {
    if usize::try_from(dimension).is_ok_and(|d| d == given) {
        return Ok(());
    }
    Err(QueryError::invalid(format!(
        "Invalid vector literal for {receiver} of type {ty}; expected {dimension} elements, but given {given}"
    )))
}

fn elements(items: &[Expr], elem: &DataType, receiver: &str) -> Result<Vec<Value>, QueryError> {
    items
        .iter()
        .map(|e| {
            literal_value(e, elem, receiver)?
                .ok_or_else(|| QueryError::invalid("null is not supported inside collections"))
        })
        .collect()
}

/// A scalar literal for a native type; `None` when the literal kind does not fit the type.
fn native(lit: &Literal, n: NativeType, receiver: &str) -> Option<Result<Value, QueryError>> {
    use NativeType as N;
    let ty = DataType::Native(n);
    Some(match (lit, n) {
        (Literal::String(s), N::Text) => Ok(Value::Text(s.clone())),
        (Literal::String(s), N::Ascii) => {
            if s.is_ascii() {
                Ok(Value::Ascii(s.clone()))
            } else {
                Err(QueryError::invalid(format!(
                    "Invalid ASCII character in string literal for {receiver}"
                )))
            }
        }
        (Literal::String(s), N::Inet) => s
            .parse::<IpAddr>()
            .map(Value::Inet)
            .map_err(|_| QueryError::invalid(format!("Unable to make inet address from '{s}'"))),
        (Literal::String(s), N::Timestamp) => {
            crate::executor::time::parse_timestamp(s).map(Value::Timestamp)
        }
        (Literal::String(s), N::Date) => crate::executor::time::parse_date(s).map(Value::Date),
        (Literal::String(s), N::Time) => crate::executor::time::parse_time(s).map(Value::Time),
        (Literal::Integer(s), _) => integer(s, &ty, receiver),
        (Literal::Float(s), _) => float(s, &ty, receiver),
        (Literal::NaN, N::Double) => Ok(Value::Double(f64::NAN)),
        (Literal::NaN, N::Float) => Ok(Value::Float(f32::NAN)),
        (Literal::Infinity { negative }, N::Double) => Ok(Value::Double(if *negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        })),
        (Literal::Infinity { negative }, N::Float) => Ok(Value::Float(if *negative {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        })),
        (Literal::Boolean(b), N::Boolean) => Ok(Value::Boolean(*b)),
        (Literal::Uuid(u), N::Uuid) => Ok(Value::Uuid(*u)),
        (Literal::Uuid(u), N::Timeuuid) => {
            if u.get_version_num() == 1 {
                Ok(Value::Timeuuid(*u))
            } else {
                Err(QueryError::invalid(format!(
                    "Unsupported UUID for timeuuid {receiver}: {u} is not a version 1 UUID"
                )))
            }
        }
        (Literal::Blob(b), N::Blob) => Ok(Value::Blob(b.clone())),
        (
            Literal::Duration {
                months,
                days,
                nanos,
            },
            N::Duration,
        ) => Ok(Value::Duration {
            months: *months,
            days: *days,
            nanos: *nanos,
        }),
        _ => return None,
    })
}

fn out_of_range(s: &str, ty: &DataType, receiver: &str) -> QueryError {
    QueryError::invalid(format!(
        "Invalid INTEGER constant ({s}) for \"{receiver}\" of type {ty}"
    ))
}

fn integer(s: &str, ty: &DataType, receiver: &str) -> Result<Value, QueryError> {
    use NativeType as N;
    let DataType::Native(n) = ty else {
        return Err(out_of_range(s, ty, receiver));
    };
    let bad = || QueryError::invalid(format!("Unable to make {ty} from '{s}'"));
    Ok(match n {
        N::Tinyint => Value::Tinyint(s.parse().map_err(|_| bad())?),
        N::Smallint => Value::Smallint(s.parse().map_err(|_| bad())?),
        N::Int => Value::Int(s.parse().map_err(|_| bad())?),
        N::Bigint => Value::Bigint(s.parse().map_err(|_| bad())?),
        N::Counter => Value::Counter(s.parse().map_err(|_| bad())?),
        N::Timestamp => Value::Timestamp(s.parse().map_err(|_| bad())?),
        N::Time => {
            let v: i64 = s.parse().map_err(|_| bad())?;
            if !(0..86_400_000_000_000).contains(&v) {
                return Err(bad());
            }
            Value::Time(v)
        }
        N::Date => {
            let v: i64 = s.parse().map_err(|_| bad())?;
            Value::Date(u32::try_from(v).map_err(|_| bad())?)
        }
        N::Varint => {
            Value::Varint(crate::executor::numeric::varint_from_decimal_str(s).ok_or_else(bad)?)
        }
        N::Decimal => crate::executor::numeric::decimal_from_str(s).ok_or_else(bad)?,
        N::Double => Value::Double(s.parse().map_err(|_| bad())?),
        N::Float => Value::Float(s.parse().map_err(|_| bad())?),
        _ => return Err(out_of_range(s, ty, receiver)),
    })
}

fn float(s: &str, ty: &DataType, receiver: &str) -> Result<Value, QueryError> {
    use NativeType as N;
    let bad = || {
        QueryError::invalid(format!(
            "Invalid FLOAT constant ({s}) for \"{receiver}\" of type {ty}"
        ))
    };
    Ok(match ty {
        DataType::Native(N::Double) => Value::Double(s.parse().map_err(|_| bad())?),
        DataType::Native(N::Float) => Value::Float(s.parse().map_err(|_| bad())?),
        DataType::Native(N::Decimal) => {
            crate::executor::numeric::decimal_from_str(s).ok_or_else(bad)?
        }
        _ => return Err(bad()),
    })
}
