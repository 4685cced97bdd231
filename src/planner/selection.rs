//! Planning the selectors of a SELECT on a user table: columns, `writetime`/`ttl`/`token`,
//! native scalar functions and casts, aggregates and `count(*)`, user functions and aggregates
//! (`user_calls`), resolved and typed against the table and named as Cassandra names result
//! columns; and GROUP BY on a primary-key prefix. The executor's `selection` module evaluates
//! them.

use crate::error::QueryError;
use crate::executor::functions::{self, ArgKind, FunctionArg};
use crate::executor::literal::literal_value;
use crate::schema::{Catalog, ColumnKind, Table};
use bytes::Bytes;
use cql::ast::Expr;
use cql::types::{DataType, NativeType, Value};

/// What one selector computes.
#[derive(Debug, Clone)]
pub(crate) enum Selection {
    /// A column (index into `table.columns`).
    Column(usize),
    /// `writetime(c)`.
    WriteTime(usize),
    /// `ttl(c)`.
    Ttl(usize),
    /// `token(pk...)`.
    Token,
    /// `count(*)` / `count(1)`.
    CountStar,
    /// A constant argument.
    Const(Option<Bytes>),
    /// A bind marker argument (a [`Term::Marker`](crate::planner::terms::Term)), numbered by
    /// [`number_markers`] and replaced by its bound value before the rows are read.
    Marker(crate::planner::terms::Term),
    /// A native scalar function over other selections.
    Scalar {
        /// Registered function name.
        name: String,
        /// Arguments with their types.
        args: Vec<(Selection, DataType)>,
    },
    /// `CAST(x AS t)`.
    Cast {
        /// The value cast.
        arg: Box<Selection>,
        /// Its type.
        from: DataType,
        /// The target type.
        to: DataType,
    },
    /// `udt.field`.
    Field {
        /// The UDT value.
        arg: Box<Selection>,
        /// Its type.
        arg_type: DataType,
        /// The field's position.
        index: usize,
    },
    /// `collection[key]`.
    Element {
        /// The collection value.
        arg: Box<Selection>,
        /// Its type.
        arg_type: DataType,
        /// The key (list index, map key or set element).
        key: Value,
    },
    /// `toJson(x)`.
    ToJson {
        /// The value.
        arg: Box<Selection>,
        /// Its type.
        arg_type: DataType,
    },
    /// A user-defined function over other selections.
    UserFunction {
        /// The function, its types resolved.
        call: std::sync::Arc<crate::udf::calls::FunctionCall>,
        /// Arguments with their types.
        args: Vec<(Selection, DataType)>,
    },
    /// A user-defined aggregate over other selections.
    UserAggregate {
        /// The aggregate, its functions found.
        call: std::sync::Arc<crate::udf::calls::AggregateCall>,
        /// Arguments with their types.
        args: Vec<(Selection, DataType)>,
    },
    /// An aggregate over its argument.
    Aggregate {
        /// `count`, `min`, `max`, `sum`, `avg`.
        name: String,
        /// The aggregated value.
        arg: Box<Selection>,
        /// Its type.
        arg_type: DataType,
    },
}

/// A planned selector: what it computes, its type and its result column name.
pub(crate) struct Planned {
    pub(crate) selection: Selection,
    pub(crate) data_type: DataType,
    pub(crate) name: String,
}

const SELECTION_FUNCTIONS: [&str; 2] = ["writetime", "ttl"];

fn undefined(name: &str) -> QueryError {
    QueryError::invalid(format!("Undefined column name {name} in selection clause"))
}

impl Selection {
    /// Adds the user functions and aggregates this selection calls to `out`.
    pub(crate) fn user_functions(&self, out: &mut Vec<crate::auth::AuthResource>) {
        use crate::auth::AuthResource;
        let function = |call: &crate::udf::calls::FunctionCall| {
            AuthResource::function(&call.def.keyspace, &call.def.name, &call.def.arg_types)
        };
        match self {
            Selection::UserFunction { call, args } => {
                out.push(function(call));
                args.iter().for_each(|(a, _)| a.user_functions(out));
            }
            Selection::UserAggregate { call, args } => {
                if let Some((ks, name)) = call.name.split_once('.') {
                    out.push(AuthResource::function(ks, name, &call.declared_args));
                }
                out.push(function(&call.state_func));
                out.extend(call.final_func.as_ref().map(function));
                args.iter().for_each(|(a, _)| a.user_functions(out));
            }
            Selection::Scalar { args, .. } => args.iter().for_each(|(a, _)| a.user_functions(out)),
            Selection::Cast { arg, .. }
            | Selection::Field { arg, .. }
            | Selection::Element { arg, .. }
            | Selection::ToJson { arg, .. }
            | Selection::Aggregate { arg, .. } => arg.user_functions(out),
            _ => {}
        }
    }

    /// True for aggregates and `count(*)`, anywhere in the tree.
    pub(crate) fn is_aggregate(&self) -> bool {
        match self {
            Selection::CountStar
            | Selection::Aggregate { .. }
            | Selection::UserAggregate { .. } => true,
            Selection::Scalar { args, .. } | Selection::UserFunction { args, .. } => {
                args.iter().any(|(a, _)| a.is_aggregate())
            }
            Selection::Cast { arg, .. }
            | Selection::Field { arg, .. }
            | Selection::Element { arg, .. }
            | Selection::ToJson { arg, .. } => arg.is_aggregate(),
            _ => false,
        }
    }
}

/// The printed name of a selector expression, as Cassandra names result columns.
pub(crate) fn selector_name(expr: &Expr) -> String {
    match expr {
        Expr::Column(c) => c.clone(),
        Expr::FunctionCall { name, args }
            if name.name == "count"
                && args.len() == 1
                && matches!(args[0], Expr::Star | Expr::Literal(_)) =>
        {
            "count".to_string()
        }
        Expr::FunctionCall { name, args } => {
            let arg_names: Vec<String> = args.iter().map(selector_name).collect();
            match name.name.as_str() {
                "token" => format!("system.token({})", arg_names.join(", ")),
                "tojson" => format!("system.tojson({})", arg_names.join(", ")),
                "writetime" | "ttl" => format!("{}({})", name.name, arg_names.join(", ")),
                n => functions::result_column_name(n, &arg_names),
            }
        }
        Expr::Star => "*".into(),
        Expr::FieldAccess { expr, field } => format!("{}.{field}", selector_name(expr)),
        Expr::ElementAccess { expr, key } => format!("{}[{key}]", selector_name(expr)),
        other => other.to_string(),
    }
}

/// A call's arguments as the function resolver weighs them: a literal as written, a
/// planned selector by its type, anything else (a bind marker) to be inferred.
pub(crate) fn call_args<'a>(
    args: &'a [Expr],
    planned: &'a [Option<Planned>],
) -> Vec<FunctionArg<'a>> {
    args.iter()
        .zip(planned)
        .map(|(a, p)| FunctionArg {
            kind: match (a, p) {
                (Expr::Literal(l), _) => ArgKind::Literal(l),
                (_, Some(p)) => ArgKind::Typed(&p.data_type),
                _ => ArgKind::Marker,
            },
            text: a.to_string(),
        })
        .collect()
}

/// Plans one selector expression against `table`.
///
/// # Errors
/// InvalidRequest with Cassandra's messages for unknown columns and functions.
pub(crate) fn plan_selector(
    expr: &Expr,
    table: &Table,
    catalog: &Catalog,
) -> Result<Planned, QueryError> {
    let index_of = |name: &str| {
        table
            .columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| undefined(name))
    };
    let name = selector_name(expr);
    let user_call = match expr {
        Expr::FunctionCall { name: f, args } => {
            super::user_calls::plan_user_call(f, args, table, catalog)?
        }
        _ => None,
    };
    if let Some((selection, data_type, name)) = user_call {
        return Ok(Planned {
            selection,
            data_type,
            name,
        });
    }
    let (selection, data_type) = match expr {
        Expr::Column(c) => {
            let i = index_of(c)?;
            (Selection::Column(i), table.columns[i].data_type.clone())
        }
        Expr::Cast { expr, to } => {
            let inner = plan_selector(expr, table, catalog)?;
            functions::check_cast(&inner.data_type, to, &inner.name).map_err(|_| {
                QueryError::invalid(format!("{} cannot be cast to {to}", inner.name))
            })?;
            let name = functions::cast_column_name(&inner.name, &inner.data_type, to);
            return Ok(Planned {
                selection: Selection::Cast {
                    arg: Box::new(inner.selection),
                    from: inner.data_type,
                    to: to.clone(),
                },
                data_type: to.clone(),
                name,
            });
        }
        Expr::FunctionCall { name: f, args }
            if f.keyspace.is_none() || f.keyspace.as_deref() == Some("system") =>
        {
            let fname = f.name.as_str();
            match (fname, args.as_slice()) {
                (w, [Expr::Column(c)]) if SELECTION_FUNCTIONS.contains(&w) => {
                    let i = index_of(c)?;
                    let col = &table.columns[i];
                    let label = if w == "ttl" { "ttl" } else { "writeTime" };
                    if matches!(col.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                        return Err(QueryError::invalid(format!(
                            "Cannot use selection function {label} on PRIMARY KEY part {c}"
                        )));
                    }
                    if col.data_type.is_multi_cell() {
                        let what = if matches!(col.data_type, DataType::Udt(_)) {
                            "UDT"
                        } else {
                            "collection"
                        };
                        return Err(QueryError::invalid(format!(
                            "Cannot use selection function {label} on non-frozen {what} {c}"
                        )));
                    }
                    if col.data_type.is_counter() {
                        return Err(QueryError::invalid(format!(
                            "Cannot use selection function {label} on counter column {c}"
                        )));
                    }
                    if w == "ttl" {
                        (Selection::Ttl(i), DataType::Native(NativeType::Int))
                    } else {
                        (
                            Selection::WriteTime(i),
                            DataType::Native(NativeType::Bigint),
                        )
                    }
                }
                ("token", cols) => {
                    let names: Vec<String> =
                        table.partition_key().map(|c| c.name.clone()).collect();
                    let given: Vec<String> = cols.iter().map(selector_name).collect();
                    if names != given {
                        return Err(QueryError::invalid(format!(
                            "Type error: {} cannot be passed as argument 0 of function system.token of type {}",
                            given.join(", "),
                            names.join(", ")
                        )));
                    }
                    (Selection::Token, DataType::Native(NativeType::Bigint))
                }
                ("count", [Expr::Star]) | ("count", [Expr::Literal(_)]) => {
                    (Selection::CountStar, DataType::Native(NativeType::Bigint))
                }
                ("tojson", [arg]) => {
                    let inner = plan_selector(arg, table, catalog)?;
                    (
                        Selection::ToJson {
                            arg: Box::new(inner.selection),
                            arg_type: inner.data_type,
                        },
                        DataType::Native(NativeType::Text),
                    )
                }
                (agg, [arg]) if functions::is_aggregate(agg) => {
                    let inner = plan_selector(arg, table, catalog)?;
                    if inner.selection.is_aggregate() {
                        return Err(QueryError::invalid("Aggregate functions cannot be used as arguments of aggregate functions"));
                    }
                    let ret = functions::aggregate_return_type(agg, &inner.data_type)?;
                    (
                        Selection::Aggregate {
                            name: agg.to_string(),
                            arg: Box::new(inner.selection),
                            arg_type: inner.data_type,
                        },
                        ret,
                    )
                }
                (similarity, args) if functions::vector::is_similarity(similarity) => {
                    plan_similarity(similarity, args, table, catalog, &name)?
                }
                (scalar, args) => {
                    let planned: Vec<Option<Planned>> = args
                        .iter()
                        .map(|a| match a {
                            Expr::Literal(_) => Ok(None),
                            other => plan_selector(other, table, catalog).map(Some),
                        })
                        .collect::<Result<_, _>>()?;
                    let call = call_args(args, &planned);
                    let sig = functions::resolve(scalar, &call)?;
                    if sig.is_aggregate {
                        return Err(QueryError::invalid(format!(
                            "Invalid number of arguments for aggregate {scalar}"
                        )));
                    }
                    let mut sargs = Vec::with_capacity(args.len());
                    for ((a, p), t) in args.iter().zip(planned).zip(&sig.arg_types) {
                        let sel = match p {
                            Some(p) => p.selection,
                            None => Selection::Const(
                                literal_value(a, t, &name)?.map(|v| Bytes::from(v.to_bytes())),
                            ),
                        };
                        sargs.push((sel, t.clone()));
                    }
                    (
                        Selection::Scalar {
                            name: sig.name.clone(),
                            args: sargs,
                        },
                        sig.return_type.clone(),
                    )
                }
            }
        }
        Expr::FieldAccess { expr: inner, field } => {
            let inner = plan_selector(inner, table, catalog)?;
            let DataType::Udt(u) = inner.data_type.unfrozen() else {
                return Err(QueryError::invalid(format!(
                    "Invalid field selection: {} of type {} is not a user type",
                    inner.name, inner.data_type
                )));
            };
            let Some(index) = u.fields.iter().position(|(f, _)| f == field) else {
                return Err(QueryError::invalid(format!(
                    "Invalid field selection: {} of type {} has no field {field}",
                    inner.name, inner.data_type
                )));
            };
            let ft = u.fields[index].1.clone();
            let arg_type = inner.data_type.clone();
            (
                Selection::Field {
                    arg: Box::new(inner.selection),
                    arg_type,
                    index,
                },
                ft,
            )
        }
        Expr::ElementAccess { expr: inner, key } => {
            let inner = plan_selector(inner, table, catalog)?;
            let (key_type, value_type) = match inner.data_type.unfrozen() {
                DataType::List(e) => (DataType::Native(NativeType::Int), (**e).clone()),
                DataType::Map(k, v) => ((**k).clone(), (**v).clone()),
                DataType::Set(e) => ((**e).clone(), (**e).clone()),
                other => {
                    return Err(QueryError::invalid(format!(
                        "Invalid element selection: {} is of type {other} is not a collection",
                        inner.name
                    )))
                }
            };
            let key = literal_value(key, &key_type, &inner.name)?.ok_or_else(|| {
                QueryError::invalid("Invalid null value for an element selection")
            })?;
            let arg_type = inner.data_type.clone();
            (
                Selection::Element {
                    arg: Box::new(inner.selection),
                    arg_type,
                    key,
                },
                value_type,
            )
        }
        // `(type) ?` and `(type) literal`: a term whose type the hint gives (Cassandra's
        // `TypeCast`), as a function's argument.
        Expr::TypeHint { ty, expr: inner } => match &**inner {
            Expr::BindMarker(_) => (
                Selection::Marker(crate::planner::terms::Term::Marker {
                    index: usize::MAX,
                    data_type: ty.clone(),
                    receiver: expr.to_string(),
                }),
                ty.clone(),
            ),
            term => {
                let value = literal_value(term, ty, &name).map_err(|_| {
                    QueryError::invalid(format!("Cannot cast value {term} to type {ty}"))
                })?;
                (
                    Selection::Const(value.map(|v| Bytes::from(v.to_bytes()))),
                    ty.clone(),
                )
            }
        },
        Expr::Literal(_) => {
            return Err(QueryError::invalid(format!(
                "Invalid selector {expr}: constants are not supported as selectors"
            )))
        }
        other => {
            return Err(QueryError::invalid(format!(
                "Selector {other} is not supported by ringdb yet"
            )))
        }
    };
    Ok(Planned {
        selection,
        data_type,
        name,
    })
}

/// Plans a call of a vector similarity function (`VectorFcts`): list literals and nulls take
/// the `vector<float, n>` type of the other argument (or their own length).
fn plan_similarity(
    fname: &str,
    args: &[Expr],
    table: &Table,
    catalog: &Catalog,
    name: &str,
) -> Result<(Selection, DataType), QueryError> {
    let planned: Vec<Option<Planned>> = args
        .iter()
        .map(|a| match a {
            Expr::List(_) | Expr::Literal(cql::ast::Literal::Null) | Expr::BindMarker(_) => {
                Ok(None)
            }
            other => plan_selector(other, table, catalog).map(Some),
        })
        .collect::<Result<_, _>>()?;
    let described: Vec<(String, Option<&DataType>, Option<usize>)> = args
        .iter()
        .zip(&planned)
        .map(|(a, p)| {
            let len = match a {
                Expr::List(items) => Some(items.len()),
                _ => None,
            };
            (a.to_string(), p.as_ref().map(|p| &p.data_type), len)
        })
        .collect();
    let ty = functions::vector::argument_type(fname, &described)?;
    let mut sargs = Vec::with_capacity(args.len());
    for (i, (a, p)) in args.iter().zip(planned).enumerate() {
        let sel = match (p, a) {
            (Some(p), _) => p.selection,
            // `FunctionResolver.makeArgSpec`: the marker is named after the argument.
            (None, Expr::BindMarker(_)) => Selection::Marker(crate::planner::terms::Term::Marker {
                index: usize::MAX,
                data_type: ty.clone(),
                receiver: format!("arg{i}(system.{fname})"),
            }),
            (None, _) => Selection::Const(
                literal_value(a, &ty, name)
                    .map_err(|_| {
                        QueryError::invalid(format!(
                            "Type error: {a} cannot be passed as argument {i} of function system.{fname} of type {ty}"
                        ))
                    })?
                    .map(|v| Bytes::from(v.to_bytes())),
            ),
        };
        sargs.push((sel, ty.clone()));
    }
    Ok((
        Selection::Scalar {
            name: fname.to_string(),
            args: sargs,
        },
        DataType::Native(NativeType::Float),
    ))
}

/// Numbers the bind markers inside `sel` in statement order, adding their specs to `markers`;
/// returns whether there was one.
pub(crate) fn number_markers(
    sel: &mut Selection,
    markers: &mut crate::planner::terms::Markers,
    ks: &str,
    table: &str,
) -> bool {
    use crate::planner::terms::Term;
    match sel {
        Selection::Marker(Term::Marker {
            index,
            data_type,
            receiver,
        }) => {
            *index = markers.specs.len();
            markers.specs.push(cql::response::ColumnSpec {
                keyspace: ks.to_string(),
                table: table.to_string(),
                name: receiver.clone(),
                data_type: data_type.clone(),
            });
            true
        }
        Selection::Scalar { args, .. }
        | Selection::UserFunction { args, .. }
        | Selection::UserAggregate { args, .. } => args.iter_mut().fold(false, |any, (a, _)| {
            number_markers(a, markers, ks, table) | any
        }),
        Selection::Cast { arg, .. }
        | Selection::Field { arg, .. }
        | Selection::Element { arg, .. }
        | Selection::ToJson { arg, .. }
        | Selection::Aggregate { arg, .. } => number_markers(arg, markers, ks, table),
        _ => false,
    }
}

/// `sel` with every bind marker replaced by its bound value.
///
/// # Errors
/// InvalidRequest when a bound value is not valid for its type.
pub(crate) fn bind_markers(
    sel: &Selection,
    values: &crate::executor::values::Values<'_>,
) -> Result<Selection, QueryError> {
    use crate::executor::values::BoundBytes;
    let bind = |arg: &Selection| bind_markers(arg, values).map(Box::new);
    let bind_args = |args: &[(Selection, DataType)]| {
        args.iter()
            .map(|(a, t)| Ok((bind_markers(a, values)?, t.clone())))
            .collect::<Result<Vec<_>, QueryError>>()
    };
    Ok(match sel {
        Selection::Marker(term) => Selection::Const(match values.bind_serialized(term)? {
            BoundBytes::Value(b) => Some(Bytes::from(b)),
            BoundBytes::Null | BoundBytes::Unset => None,
        }),
        Selection::Scalar { name, args } => Selection::Scalar {
            name: name.clone(),
            args: args
                .iter()
                .map(|(a, t)| Ok((bind_markers(a, values)?, t.clone())))
                .collect::<Result<_, QueryError>>()?,
        },
        Selection::UserFunction { call, args } => Selection::UserFunction {
            call: call.clone(),
            args: bind_args(args)?,
        },
        Selection::UserAggregate { call, args } => Selection::UserAggregate {
            call: call.clone(),
            args: bind_args(args)?,
        },
        Selection::Cast { arg, from, to } => Selection::Cast {
            arg: bind(arg)?,
            from: from.clone(),
            to: to.clone(),
        },
        Selection::Field {
            arg,
            arg_type,
            index,
        } => Selection::Field {
            arg: bind(arg)?,
            arg_type: arg_type.clone(),
            index: *index,
        },
        Selection::Element { arg, arg_type, key } => Selection::Element {
            arg: bind(arg)?,
            arg_type: arg_type.clone(),
            key: key.clone(),
        },
        Selection::ToJson { arg, arg_type } => Selection::ToJson {
            arg: bind(arg)?,
            arg_type: arg_type.clone(),
        },
        Selection::Aggregate {
            name,
            arg,
            arg_type,
        } => Selection::Aggregate {
            name: name.clone(),
            arg: bind(arg)?,
            arg_type: arg_type.clone(),
        },
        other => other.clone(),
    })
}

/// Checks GROUP BY columns: a prefix of the primary key, in order; returns their indexes.
///
/// # Errors
/// InvalidRequest with Cassandra's messages.
pub(crate) fn plan_group_by(
    group_by: &[String],
    table: &Table,
    eq_prefix: usize,
) -> Result<Vec<usize>, QueryError> {
    let key: Vec<&str> = table
        .partition_key()
        .chain(table.clustering())
        .map(|c| c.name.as_str())
        .collect();
    // Leading key columns may be left out (they are then restricted by equality).
    let offset = group_by
        .first()
        .and_then(|g| key.iter().position(|k| k == g))
        .unwrap_or(0)
        .min(eq_prefix);
    let mut out = Vec::new();
    for (i, name) in group_by.iter().enumerate() {
        let Some(col) = table.columns.iter().position(|c| &c.name == name) else {
            return Err(QueryError::invalid(format!("Undefined column name {name}")));
        };
        if !key.contains(&name.as_str()) {
            return Err(QueryError::invalid(format!(
                "Group by is currently only supported on the columns of the PRIMARY KEY, got {name}"
            )));
        }
        if key.get(i + offset) != Some(&name.as_str()) {
            return Err(QueryError::invalid(
                "Group by currently only support groups of columns following their declared order in the PRIMARY KEY",
            ));
        }
        out.push(col);
    }
    Ok(out)
}
