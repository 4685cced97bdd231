//! Terms of a planned statement: constants folded at plan time and bind markers numbered in
//! statement order (the order of PREPARE's bind metadata). The executor's `Values` binds them to
//! a request's values.

use crate::auth::AuthResource;
use crate::error::QueryError;
use crate::executor::functions;
use crate::executor::literal::literal_value;
use crate::schema::Catalog;
use cql::ast::{Expr, QualifiedName};
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
    /// A call of a user-defined function, its arguments bound first: evaluated at every
    /// execution.
    UserCall {
        /// The function, its types resolved.
        call: std::sync::Arc<crate::udf::calls::FunctionCall>,
        /// Its arguments.
        args: Vec<Term>,
    },
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
pub struct Markers<'c> {
    /// One spec per marker, in statement order.
    pub specs: Vec<ColumnSpec>,
    /// The catalog user functions called in terms are found in (set by `planner::plan`).
    pub(crate) catalog: Option<&'c Catalog>,
    /// The user functions terms call: what EXECUTE is checked on.
    pub(crate) functions: Vec<AuthResource>,
}

impl Markers<'_> {
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
            Expr::FunctionCall { name, args } if self.user_function(name, ks).is_some() => {
                self.user_call(name, args, ty, ks, table, receiver)
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

    /// The user functions `name` may call from a statement in `ks` (a native function's
    /// unqualified name calls the native one); None when it names none.
    fn user_function(
        &self,
        name: &QualifiedName,
        ks: &str,
    ) -> Option<Vec<std::sync::Arc<crate::schema::FunctionDef>>> {
        let catalog = self.catalog?;
        let keyspace = match name.keyspace.as_deref() {
            Some("system") => return None,
            Some(k) => k,
            None if functions::is_known_function(&name.name) => return None,
            None => ks,
        };
        let found: Vec<_> = catalog
            .keyspaces
            .get(keyspace)?
            .functions_named(&name.name)
            .cloned()
            .collect();
        (!found.is_empty()).then_some(found)
    }

    /// Plans a call of a user function as a term of type `ty`: its overload picked from its
    /// arguments (literals and bind markers, planned as terms of its argument types).
    fn user_call(
        &mut self,
        name: &QualifiedName,
        args: &[Expr],
        ty: &DataType,
        ks: &str,
        table: &str,
        receiver: &str,
    ) -> Result<Term, QueryError> {
        let (Some(catalog), Some(defs)) = (self.catalog, self.user_function(name, ks)) else {
            return Err(QueryError::invalid(format!(
                "Unknown function {name} called"
            )));
        };
        let mut candidates = Vec::with_capacity(defs.len());
        for def in &defs {
            let call = crate::udf::calls::FunctionCall::resolved(catalog, def)?;
            candidates.push(call);
        }
        let sigs: Vec<functions::Signature> = candidates
            .iter()
            .map(|c| functions::Signature {
                name: c.def.name.clone(),
                arg_types: c.arg_types.clone(),
                return_type: c.return_type.clone(),
                is_aggregate: false,
                keyspace: Some(c.def.keyspace.clone()),
            })
            .collect();
        let call_args: Vec<functions::FunctionArg<'_>> = args
            .iter()
            .map(|a| functions::FunctionArg {
                kind: match a {
                    Expr::Literal(l) => functions::ArgKind::Literal(l),
                    _ => functions::ArgKind::Marker,
                },
                text: a.to_string(),
            })
            .collect();
        let sig = functions::resolve_among(&name.to_string(), sigs, &call_args)?;
        let Some(call) = candidates.into_iter().find(|c| {
            c.arg_types == sig.arg_types
                && c.def.keyspace.as_str() == sig.keyspace.as_deref().unwrap_or("")
        }) else {
            return Err(QueryError::invalid(format!(
                "Unknown function {name} called"
            )));
        };
        if !(call.return_type.unfrozen() == ty.unfrozen()
            || functions::is_value_compatible(ty, &call.return_type))
        {
            return Err(QueryError::invalid(format!(
                "Type error: {} cannot be passed as argument {receiver} of type {ty}: it \
                 returns {}",
                Expr::FunctionCall {
                    name: name.clone(),
                    args: args.to_vec()
                },
                call.return_type
            )));
        }
        let mut terms = Vec::with_capacity(args.len());
        for (i, (a, t)) in args.iter().zip(&call.arg_types).enumerate() {
            let arg_name = format!("arg{i}({})", call.def.qualified_name().to_lowercase());
            terms.push(self.term_named(a, t, ks, table, &arg_name, &arg_name)?);
        }
        self.functions.push(AuthResource::function(
            &call.def.keyspace,
            &call.def.name,
            &call.def.arg_types,
        ));
        Ok(Term::UserCall {
            call: std::sync::Arc::new(call),
            args: terms,
        })
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
