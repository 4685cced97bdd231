//! Binding: a request's values matched to a statement's bind markers, and a planned
//! [`Term`] bound to a value (or straight to its serialized bytes).

use crate::error::QueryError;
use crate::executor::order::canonicalize;
use crate::planner::terms::Term;
use bytes::Bytes;
use cql::request::RawValue;
use cql::response::ColumnSpec;
use cql::types::{DataType, NativeType, Value};

/// A term bound to a request's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// null.
    Null,
    /// An unset marker (v4): leave the target untouched.
    Unset,
    /// A value.
    Value(Value),
}

/// A term bound straight to its serialized form (as cells store it).
#[derive(Debug, Clone, PartialEq)]
pub enum BoundBytes {
    /// null.
    Null,
    /// An unset marker (v4): leave the target untouched.
    Unset,
    /// A value's serialized bytes.
    Value(Vec<u8>),
}

/// The values of one request, positional or by name.
pub struct Values<'a> {
    values: &'a [RawValue],
    /// Positions of each marker's value in `values` when named; `None` is the identity
    /// (positional values, whose count matched the markers').
    order: Option<Vec<usize>>,
}

impl<'a> Values<'a> {
    /// Matches request values to the statement's markers (by name when `names` is given).
    ///
    /// # Errors
    /// InvalidRequest when the count differs or a name is unknown.
    pub fn new(
        values: &'a [RawValue],
        names: Option<&[String]>,
        markers: &[ColumnSpec],
    ) -> Result<Values<'a>, QueryError> {
        let order = match names {
            Some(names) => {
                let mut order = Vec::with_capacity(markers.len());
                for spec in markers {
                    let pos = names
                        .iter()
                        .position(|n| n.eq_ignore_ascii_case(&spec.name))
                        .ok_or_else(|| {
                            QueryError::invalid(format!(
                                "No value for named bind variable {}",
                                spec.name
                            ))
                        })?;
                    order.push(pos);
                }
                Some(order)
            }
            None => {
                if values.len() != markers.len() {
                    return Err(QueryError::invalid(format!(
                        "There were {} markers(?) in CQL but {} bound variables",
                        markers.len(),
                        values.len()
                    )));
                }
                None
            }
        };
        Ok(Values { values, order })
    }

    /// No values (a statement without markers).
    pub fn empty() -> Values<'static> {
        Values {
            values: &[],
            order: None,
        }
    }

    /// Binds a planned term to its serialized form (what [`Values::bind`] gives, encoded).
    ///
    /// # Errors
    /// InvalidRequest when the bytes are not a valid value of the marker's type.
    pub fn bind_serialized(&self, term: &Term) -> Result<BoundBytes, QueryError> {
        if let Term::Marker {
            index,
            data_type:
                DataType::Native(n @ (NativeType::Text | NativeType::Ascii | NativeType::Blob)),
            ..
        } = term
        {
            // Text, ascii and blob serialize as their request bytes: once validated, those
            // are copied as they are, without a decoded `String` between.
            if let Some(RawValue::Bytes(b)) = self.raw(*index) {
                let valid = match n {
                    NativeType::Text => std::str::from_utf8(b).is_ok(),
                    NativeType::Ascii => b.is_ascii(),
                    _ => true,
                };
                if valid {
                    return Ok(BoundBytes::Value(b.to_vec()));
                }
            }
        }
        Ok(match self.bind(term)? {
            Bound::Null => BoundBytes::Null,
            Bound::Unset => BoundBytes::Unset,
            Bound::Value(v) => BoundBytes::Value(v.to_bytes()),
        })
    }

    /// The request value of marker `index`, if any.
    fn raw(&self, index: usize) -> Option<&RawValue> {
        let position = match &self.order {
            Some(order) => order.get(index).copied()?,
            None => index,
        };
        self.values.get(position)
    }

    /// Binds a planned term.
    ///
    /// # Errors
    /// InvalidRequest when the bytes are not a valid value of the marker's type.
    pub fn bind(&self, term: &Term) -> Result<Bound, QueryError> {
        match term {
            Term::Const(None) => Ok(Bound::Null),
            Term::Const(Some(v)) => Ok(Bound::Value(v.clone())),
            Term::UserCall { call, args } => {
                let mut values = Vec::with_capacity(args.len());
                for (i, a) in args.iter().enumerate() {
                    values.push(match self.bind(a)? {
                        Bound::Value(v) => Some(v),
                        Bound::Null => None,
                        Bound::Unset => {
                            return Err(QueryError::invalid(format!(
                                "Invalid unset value for argument {i} of {}",
                                call.def.qualified_name()
                            )))
                        }
                    });
                }
                Ok(match call.call(&values)? {
                    Some(v) => Bound::Value(v),
                    None => Bound::Null,
                })
            }
            Term::Call {
                expr,
                data_type,
                receiver,
            } => Ok(
                match crate::executor::literal::literal_value(expr, data_type, receiver)? {
                    Some(v) => Bound::Value(v),
                    None => Bound::Null,
                },
            ),
            Term::Tuple(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (k, item) in items.iter().enumerate() {
                    out.push(match self.bind(item)? {
                        Bound::Value(v) => Some(v),
                        Bound::Null => None,
                        Bound::Unset => {
                            return Err(QueryError::invalid(format!(
                                "Invalid unset value for tuple field number {k}"
                            )))
                        }
                    });
                }
                Ok(Bound::Value(Value::Tuple(out)))
            }
            Term::Marker {
                index,
                data_type,
                receiver,
            } => {
                let raw = self
                    .raw(*index)
                    .ok_or_else(|| QueryError::invalid("Missing value for bind marker"))?;
                match raw {
                    RawValue::Null => Ok(Bound::Null),
                    RawValue::Unset => Ok(Bound::Unset),
                    RawValue::Bytes(b) => decode_bound(b, data_type, receiver).map(Bound::Value),
                }
            }
        }
    }
}

/// Validates request bytes for a receiver's type and decodes them, with every set and map
/// inside in Cassandra's order ([`canonicalize`]): the one form storage and comparisons see.
///
/// # Errors
/// InvalidRequest naming the receiver.
pub fn decode_bound(b: &Bytes, ty: &DataType, receiver: &str) -> Result<Value, QueryError> {
    if b.is_empty()
        && !matches!(
            ty,
            DataType::Native(NativeType::Text | NativeType::Ascii | NativeType::Blob)
        )
    {
        return Ok(Value::Empty);
    }
    let mut value = Value::decode(ty, b)
        .map_err(|e| QueryError::invalid(format!("Invalid value for column {receiver}: {e}")))?;
    canonicalize(&mut value, ty);
    Ok(value)
}
