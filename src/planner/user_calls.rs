//! Planning a selector that calls a user-defined function or aggregate: `ks.f(col)`, or `f(col)`
//! found in the table's keyspace when no native function has that name. The overload is picked
//! as for native functions (`FunctionResolver`), argument types and UDTs are resolved in the
//! function's keyspace, literals become constants and bind markers take the argument's type.

use std::sync::Arc;

use bytes::Bytes;
use cql::ast::{Expr, QualifiedName};
use cql::types::{DataType, Value};

use crate::error::QueryError;
use crate::executor::functions::{self, Signature};
use crate::executor::literal::literal_value;
use crate::planner::selection::{plan_selector, Selection};
use crate::planner::terms::Term;
use crate::schema::{AggregateDef, Catalog, FunctionDef, Keyspace, Table};
use crate::udf::calls::{AggregateCall, FunctionCall};

/// Names the selector planner handles itself before any function lookup.
const SPECIAL: [&str; 5] = ["token", "writetime", "ttl", "tojson", "count"];

/// One overload a call may resolve to.
enum Candidate {
    Function(Arc<FunctionDef>),
    Aggregate(Arc<AggregateDef>),
}

fn resolve(catalog: &Catalog, ks: &str, t: &DataType) -> Result<DataType, QueryError> {
    catalog.resolve_type(ks, t).map_err(QueryError::invalid)
}

fn resolve_all(catalog: &Catalog, ks: &str, ts: &[DataType]) -> Result<Vec<DataType>, QueryError> {
    ts.iter().map(|t| resolve(catalog, ks, t)).collect()
}

/// An aggregate definition with its functions found and its types and initial state resolved.
fn aggregate_call(
    catalog: &Catalog,
    ks: &Keyspace,
    def: &AggregateDef,
) -> Result<AggregateCall, QueryError> {
    let name = format!("{}.{}", def.keyspace, def.name);
    let broken = || QueryError::invalid(format!("Aggregate {name} refers to a missing function"));
    let mut state_args = vec![def.state_type.clone()];
    state_args.extend(def.arg_types.iter().cloned());
    let state_func = ks
        .function(&def.state_func, &state_args)
        .ok_or_else(broken)?;
    let final_func = match &def.final_func {
        Some(f) => Some(FunctionCall::resolved(
            catalog,
            ks.function(f, std::slice::from_ref(&def.state_type))
                .ok_or_else(broken)?,
        )?),
        None => None,
    };
    let state_type = resolve(catalog, &def.keyspace, &def.state_type)?;
    let initcond = match &def.initcond {
        Some(text) => {
            let term = cql::parse_term(text).map_err(|e| QueryError::invalid(e.to_string()))?;
            literal_value(&term, &state_type, "INITCOND")?
        }
        None => None,
    };
    Ok(AggregateCall {
        name,
        declared_args: def.arg_types.clone(),
        state_func: FunctionCall::resolved(catalog, state_func)?,
        final_func,
        initcond,
        arg_types: resolve_all(catalog, &def.keyspace, &def.arg_types)?,
        return_type: resolve(catalog, &def.keyspace, &def.return_type)?,
    })
}

/// Plans `f(args)` as a user function or aggregate call; `None` when `f` names no user
/// function and is not keyspace-qualified (the native planner then handles it).
///
/// # Errors
/// `Unknown function 'ks.f'` for a qualified name that does not exist; the resolver's
/// messages for arguments that fit no overload; argument planning errors.
pub(crate) fn plan_user_call(
    f: &QualifiedName,
    args: &[Expr],
    table: &Table,
    catalog: &Catalog,
) -> Result<Option<(Selection, DataType, String)>, QueryError> {
    let fname = f.name.as_str();
    match f.keyspace.as_deref() {
        Some("system") => return Ok(None),
        None if functions::is_known_function(fname) || SPECIAL.contains(&fname) => return Ok(None),
        _ => {}
    }
    let ks_name = f.keyspace.as_deref().unwrap_or(&table.keyspace);
    let called = match &f.keyspace {
        Some(ks) => format!("{ks}.{fname}"),
        None => fname.to_string(),
    };
    let mut candidates: Vec<(Signature, Candidate)> = Vec::new();
    if let Some(ks) = catalog.keyspaces.get(ks_name) {
        for def in ks.functions_named(fname) {
            let call = FunctionCall::resolved(catalog, def)?;
            candidates.push((
                Signature {
                    name: fname.to_string(),
                    arg_types: call.arg_types,
                    return_type: call.return_type,
                    is_aggregate: false,
                    keyspace: Some(ks_name.to_string()),
                },
                Candidate::Function(def.clone()),
            ));
        }
        for def in ks.aggregates_named(fname) {
            candidates.push((
                Signature {
                    name: fname.to_string(),
                    arg_types: resolve_all(catalog, ks_name, &def.arg_types)?,
                    return_type: resolve(catalog, ks_name, &def.return_type)?,
                    is_aggregate: true,
                    keyspace: Some(ks_name.to_string()),
                },
                Candidate::Aggregate(def.clone()),
            ));
        }
    }
    if candidates.is_empty() {
        return match f.keyspace {
            Some(_) => Err(QueryError::invalid(format!("Unknown function '{called}'"))),
            None => Ok(None),
        };
    }
    let planned = args
        .iter()
        .map(|a| match a {
            Expr::Literal(_) | Expr::BindMarker(_) => Ok(None),
            other => plan_selector(other, table, catalog).map(Some),
        })
        .collect::<Result<Vec<_>, QueryError>>()?;
    let call_args = super::selection::call_args(args, &planned);
    let sigs: Vec<Signature> = candidates.iter().map(|(s, _)| s.clone()).collect();
    let sig = functions::resolve_among(&called, sigs, &call_args)?;
    let Some((_, chosen)) = candidates.into_iter().find(|(s, _)| *s == sig) else {
        return Err(QueryError::invalid(format!("Unknown function '{called}'")));
    };
    let qualified = sig.qualified_name();
    let arg_names: Vec<String> = args
        .iter()
        .zip(&planned)
        .map(|(a, p)| p.as_ref().map_or_else(|| a.to_string(), |p| p.name.clone()))
        .collect();
    let name = format!("{qualified}({})", arg_names.join(", "));
    let mut sargs = Vec::with_capacity(args.len());
    for (i, ((a, p), t)) in args.iter().zip(planned).zip(&sig.arg_types).enumerate() {
        let sel = match (p, a) {
            (Some(p), _) => {
                if matches!(chosen, Candidate::Aggregate(_)) && p.selection.is_aggregate() {
                    return Err(QueryError::invalid(
                        "Aggregate functions cannot be used as arguments of aggregate functions",
                    ));
                }
                p.selection
            }
            // `FunctionResolver.makeArgSpec`: an anonymous marker is named after the argument.
            (None, Expr::BindMarker(marker)) => Selection::Marker(Term::Marker {
                index: usize::MAX,
                data_type: t.clone(),
                receiver: marker
                    .clone()
                    .unwrap_or_else(|| format!("arg{i}({})", qualified.to_lowercase())),
            }),
            (None, _) => Selection::Const(
                literal_value(a, t, &name)?.map(|v: Value| Bytes::from(v.to_bytes())),
            ),
        };
        sargs.push((sel, t.clone()));
    }
    let selection = match chosen {
        Candidate::Function(def) => Selection::UserFunction {
            call: Arc::new(FunctionCall::resolved(catalog, &def)?),
            args: sargs,
        },
        Candidate::Aggregate(def) => {
            let Some(ks) = catalog.keyspaces.get(ks_name) else {
                return Err(QueryError::invalid(format!("Unknown function '{called}'")));
            };
            Selection::UserAggregate {
                call: Arc::new(aggregate_call(catalog, ks, &def)?),
                args: sargs,
            }
        }
    };
    Ok(Some((selection, sig.return_type, name)))
}
