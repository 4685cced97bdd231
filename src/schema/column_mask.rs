//! Column masks (Cassandra 5.0's dynamic data masking, `ColumnMask`): a masking function
//! attached to a column by `MASKED WITH fn(args)` in CREATE or ALTER TABLE. The column's value
//! is the function's first argument; the other arguments are constants fixed when the mask is
//! attached. Users without the UNMASK permission read the function's result instead of the
//! value (see `crate::executor::select`); the stored data never changes.

use cql::ast::{ColumnMaskDef, Expr};
use cql::types::{DataType, Value};
use serde::{Deserialize, Serialize};

use crate::error::QueryError;
use crate::executor::functions::{self, mask, ArgKind, FunctionArg};
use crate::executor::literal::literal_value;

/// A masking function partially applied to a column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnMask {
    /// The native masking function's registered name (`mask_inner`), in `system`.
    pub function: String,
    /// The types of the arguments after the column's value.
    #[serde(with = "super::type_list_text")]
    pub arg_types: Vec<DataType>,
    /// Their serialized values (`None`: null).
    pub arg_values: Vec<Option<Vec<u8>>>,
}

impl ColumnMask {
    /// The mask `def` of column `column` of type `ty`, as `ColumnMask.Raw.prepare` checks it.
    ///
    /// # Errors
    /// InvalidRequest with Cassandra's messages: an unknown or non-masking function, an
    /// aggregate, arguments that do not fit, or a result of another type than the column's.
    /// Masks by user-defined functions are refused.
    pub fn prepare(
        def: &ColumnMaskDef,
        column: &str,
        ty: &DataType,
    ) -> Result<ColumnMask, QueryError> {
        let name = def.function.name.as_str();
        let native = def
            .function
            .keyspace
            .as_deref()
            .is_none_or(|ks| ks == "system");
        if !native || !functions::is_known_function(name) {
            return Err(QueryError::invalid(format!(
                "Unable to find masking function for {column}, no declared function matches the \
                 signature {def_text}",
                def_text = raw_text(def)
            )));
        }
        if functions::is_aggregate(name) {
            return Err(QueryError::invalid(format!(
                "Aggregate function {} cannot be used for masking table columns",
                raw_text(def)
            )));
        }
        if !mask::is_mask_function(name) {
            return Err(QueryError::invalid(format!(
                "Not-masking function {} cannot be used for masking table columns",
                raw_text(def)
            )));
        }
        let mut call = vec![FunctionArg {
            kind: ArgKind::Typed(ty),
            text: column.to_string(),
        }];
        for arg in &def.args {
            let kind = match arg {
                Expr::Literal(l) => ArgKind::Literal(l),
                other => {
                    return Err(QueryError::invalid(format!(
                        "Masking function arguments must be constants, but found {other}"
                    )))
                }
            };
            call.push(FunctionArg {
                kind,
                text: arg.to_string(),
            });
        }
        let sig = mask::resolve(name, &call)?;
        if sig.return_type.unfrozen() != ty.unfrozen() {
            return Err(QueryError::invalid(format!(
                "Masking function {} return type is {}. This is different to the type of the \
                 masked column {column} of type {ty}. Masking functions can only be attached to \
                 table columns if they return the same data type as the masked column.",
                raw_text(def),
                sig.return_type
            )));
        }
        let arg_types: Vec<DataType> = sig.arg_types.iter().skip(1).cloned().collect();
        let mut arg_values = Vec::with_capacity(arg_types.len());
        for (arg, t) in def.args.iter().zip(&arg_types) {
            let value = literal_value(arg, t, &sig.qualified_name())?;
            arg_values.push(value.map(|v| v.to_bytes()));
        }
        Ok(ColumnMask {
            function: sig.name,
            arg_types,
            arg_values,
        })
    }

    /// The masked form of `value`, a value of the masked column's type `ty`.
    ///
    /// # Errors
    /// What the masking function fails with.
    pub fn apply(&self, ty: &DataType, value: Option<Value>) -> Result<Option<Value>, QueryError> {
        let mut types = Vec::with_capacity(self.arg_types.len() + 1);
        types.push(ty.clone());
        types.extend(self.arg_types.iter().cloned());
        let mut args = Vec::with_capacity(types.len());
        args.push(value);
        for (bytes, t) in self.arg_values.iter().zip(&self.arg_types) {
            args.push(match bytes {
                Some(b) => Some(
                    Value::decode(t, b)
                        .map_err(|e| QueryError::invalid(format!("bad mask argument: {e}")))?,
                ),
                None => None,
            });
        }
        functions::call_scalar(&self.function, &args, &types)
    }

    /// The arguments after the column's value as CQL literals (`null` for a null).
    pub fn argument_texts(&self) -> Vec<String> {
        self.arg_values
            .iter()
            .zip(&self.arg_types)
            .map(
                |(bytes, t)| match bytes.as_deref().map(|b| Value::decode(t, b)) {
                    Some(Ok(v)) => v.to_cql_literal(),
                    _ => "null".to_string(),
                },
            )
            .collect()
    }

    /// As `ColumnMask.toString`: `system.mask_inner(1, null)`.
    pub fn cql(&self) -> String {
        format!(
            "system.{}({})",
            self.function,
            self.argument_texts().join(", ")
        )
    }
}

/// The mask as written, for messages (`ColumnMask.Raw.toString`).
fn raw_text(def: &ColumnMaskDef) -> String {
    let args: Vec<String> = def.args.iter().map(ToString::to_string).collect();
    format!("{}({})", def.function, args.join(", "))
}
