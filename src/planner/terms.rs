//! Terms of a planned statement: constants folded at plan time and bind markers numbered in
//! statement order (the order of PREPARE's bind metadata). The executor's `Values` binds them to
//! a request's values.

use crate::error::QueryError;
use crate::executor::literal::literal_value;
use cql::ast::Expr;
use cql::response::ColumnSpec;
use cql::types::{DataType, Value};

/// A planned term: a constant or the n-th bind marker.
#[derive(Debug, Clone)]
pub enum Term {
    /// A constant (None = null).
    Const(Option<Value>),
    /// Bind marker number `index` (0-based, statement order).
    Marker {
        /// Position among the statement's markers.
        index: usize,
        /// Expected type.
        data_type: DataType,
        /// Column name for messages.
        receiver: String,
    },
    /// A tuple literal holding bind markers, `(?, ?)` in a multi-column relation: bound
    /// component by component.
    Tuple(Vec<Term>),
    /// A constant that calls a function of the clock or of chance (`now()`, `uuid()`,
    /// `toTimestamp(now())`, ...): evaluated at every execution, as Cassandra evaluates
    /// non-deterministic functions, never folded into a cached plan.
    Call {
        /// The call (or the literal holding one).
        expr: Expr,
        /// Expected type.
        data_type: DataType,
        /// Column name for messages.
        receiver: String,
    },
}

/// Native functions whose result differs from call to call (Cassandra's non-deterministic
/// `TimeFcts` and `UuidFcts`).
const CHANGING_FUNCTIONS: [&str; 6] = [
    "now",
    "currenttimeuuid",
    "currenttimestamp",
    "currentdate",
    "currenttime",
    "uuid",
];

/// True when `expr` calls a function whose result changes from call to call.
pub fn calls_changing_function(expr: &Expr) -> bool {
    match expr {
        Expr::FunctionCall { name, args } => {
            (name.keyspace.as_deref().is_none_or(|k| k == "system")
                && CHANGING_FUNCTIONS.contains(&name.name.as_str()))
                || args.iter().any(calls_changing_function)
        }
        Expr::Cast { expr, .. } | Expr::TypeHint { expr, .. } => calls_changing_function(expr),
        Expr::List(items) | Expr::Set(items) | Expr::Tuple(items) => {
            items.iter().any(calls_changing_function)
        }
        Expr::Map(entries) => entries
            .iter()
            .any(|(k, v)| calls_changing_function(k) || calls_changing_function(v)),
        Expr::UdtLiteral(fields) => fields.iter().any(|(_, v)| calls_changing_function(v)),
        _ => false,
    }
}

/// Collects bind-marker specs while a statement is planned.
#[derive(Debug, Default)]
pub struct Markers {
    /// One spec per marker, in statement order.
    pub specs: Vec<ColumnSpec>,
}

impl Markers {
    /// Plans `expr` as a term of type `ty`, for column `receiver` of `ks.table`.
    ///
    /// # Errors
    /// InvalidRequest when a constant does not fit the type.
    pub fn term(
        &mut self,
        expr: &Expr,
        ty: &DataType,
        ks: &str,
        table: &str,
        receiver: &str,
    ) -> Result<Term, QueryError> {
        self.term_named(expr, ty, ks, table, receiver, receiver)
    }

    /// Like [`Markers::term`], with the marker's spec named `marker_name` (e.g. `[limit]`).
    ///
    /// # Errors
    /// InvalidRequest when a constant does not fit the type.
    pub fn term_named(
        &mut self,
        expr: &Expr,
        ty: &DataType,
        ks: &str,
        table: &str,
        receiver: &str,
        marker_name: &str,
    ) -> Result<Term, QueryError> {
        match expr {
            Expr::BindMarker(name) => {
                let index = self.specs.len();
                self.specs.push(ColumnSpec {
                    keyspace: ks.to_string(),
                    table: table.to_string(),
                    name: name.clone().unwrap_or_else(|| marker_name.to_string()),
                    data_type: ty.clone(),
                });
                Ok(Term::Marker {
                    index,
                    data_type: ty.clone(),
                    receiver: receiver.to_string(),
                })
            }
            other if calls_changing_function(other) => {
                // Checked now, evaluated at each execution.
                literal_value(other, ty, receiver)?;
                Ok(Term::Call {
                    expr: other.clone(),
                    data_type: ty.clone(),
                    receiver: receiver.to_string(),
                })
            }
            other => Ok(Term::Const(literal_value(other, ty, receiver)?)),
        }
    }

    /// Plans the value of a multi-column relation on `columns` (of `types`): a tuple literal
    /// with bind markers in it gets one marker per component, named after its column as
    /// Cassandra names them; anything else is one term of the tuple type.
    ///
    /// # Errors
    /// InvalidRequest when a constant does not fit its type.
    pub fn tuple_term(
        &mut self,
        expr: &Expr,
        columns: &[String],
        types: &[DataType],
        ks: &str,
        table: &str,
    ) -> Result<Term, QueryError> {
        match expr {
            Expr::Tuple(items)
                if items.len() == types.len()
                    && items.iter().any(|e| matches!(e, Expr::BindMarker(_))) =>
            {
                let terms = items
                    .iter()
                    .zip(types.iter().zip(columns))
                    .map(|(e, (t, c))| self.term(e, t, ks, table, c))
                    .collect::<Result<_, _>>()?;
                Ok(Term::Tuple(terms))
            }
            other => {
                let label = format!("({})", columns.join(","));
                self.term(other, &DataType::Tuple(types.to_vec()), ks, table, &label)
            }
        }
    }
}
