//! Selectors of a SELECT on a user table: columns, `writetime`/`ttl`/`token`, native scalar
//! functions and casts (evaluated per row), aggregates and `count(*)` (folded per group, with
//! GROUP BY on a primary-key prefix).

use crate::error::QueryError;
use crate::executor::functions::{self, Aggregator, ArgKind, FunctionArg};
use crate::executor::literal::literal_value;
use crate::schema::{ColumnKind, Table};
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
    /// True for aggregates and `count(*)`, anywhere in the tree.
    pub(crate) fn is_aggregate(&self) -> bool {
        match self {
            Selection::CountStar | Selection::Aggregate { .. } => true,
            Selection::Scalar { args, .. } => args.iter().any(|(a, _)| a.is_aggregate()),
            Selection::Cast { arg, .. }
            | Selection::Field { arg, .. }
            | Selection::Element { arg, .. }
            | Selection::ToJson { arg, .. } => arg.is_aggregate(),
            _ => false,
        }
    }

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
            Selection::CountStar | Selection::Aggregate { .. } => Ok(None),
            leafy => Ok(leaf(leafy)),
        }
    }
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

/// Plans one selector expression against `table`.
///
/// # Errors
/// InvalidRequest with Cassandra's messages for unknown columns and functions.
pub(crate) fn plan_selector(expr: &Expr, table: &Table) -> Result<Planned, QueryError> {
    let index_of = |name: &str| {
        table
            .columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| undefined(name))
    };
    let name = selector_name(expr);
    let (selection, data_type) = match expr {
        Expr::Column(c) => {
            let i = index_of(c)?;
            (Selection::Column(i), table.columns[i].data_type.clone())
        }
        Expr::Cast { expr, to } => {
            let inner = plan_selector(expr, table)?;
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
                    let inner = plan_selector(arg, table)?;
                    (
                        Selection::ToJson {
                            arg: Box::new(inner.selection),
                            arg_type: inner.data_type,
                        },
                        DataType::Native(NativeType::Text),
                    )
                }
                (agg, [arg]) if functions::is_aggregate(agg) => {
                    let inner = plan_selector(arg, table)?;
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
                (scalar, args) => {
                    let planned: Vec<Option<Planned>> = args
                        .iter()
                        .map(|a| match a {
                            Expr::Literal(_) => Ok(None),
                            other => plan_selector(other, table).map(Some),
                        })
                        .collect::<Result<_, _>>()?;
                    let call: Vec<FunctionArg<'_>> = args
                        .iter()
                        .zip(&planned)
                        .map(|(a, p)| FunctionArg {
                            kind: match (a, p) {
                                (Expr::Literal(l), _) => ArgKind::Literal(l),
                                (_, Some(p)) => ArgKind::Typed(&p.data_type),
                                _ => ArgKind::Marker,
                            },
                            text: a.to_string(),
                        })
                        .collect();
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
            let inner = plan_selector(inner, table)?;
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
            let inner = plan_selector(inner, table)?;
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

/// One output row of a group, with the partition key the group belongs to.
pub(crate) type GroupRow = (Vec<Vec<u8>>, Vec<Option<Bytes>>);

/// Per-group state of one output.
enum Fold {
    /// `count(*)`.
    Count(i64),
    /// An aggregate function.
    Agg(Aggregator, Box<Selection>, DataType),
    /// A plain selection: the value on the group's first row.
    First(Option<Bytes>, bool),
}

/// Folds rows into one output row per group (consecutive rows with equal GROUP BY keys).
pub(crate) struct Grouper<'a> {
    outputs: &'a [(Selection, DataType)],
    key: Option<Vec<Option<Bytes>>>,
    partition: Vec<Vec<u8>>,
    folds: Vec<Fold>,
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

    fn fresh(&self) -> Result<Vec<Fold>, QueryError> {
        self.outputs
            .iter()
            .map(|(s, _)| match s {
                Selection::CountStar => Ok(Fold::Count(0)),
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
            .map(|f| match f {
                Fold::Count(n) => Some(Bytes::copy_from_slice(&n.to_be_bytes())),
                Fold::Agg(agg, _, _) => agg.finish().map(|v| Bytes::from(v.to_bytes())),
                Fold::First(v, _) => v,
            })
            .collect();
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
