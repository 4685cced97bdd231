//! `CREATE`/`DROP FUNCTION` and `CREATE`/`DROP AGGREGATE` applied to the catalog, with the
//! checks and messages of Cassandra 5.0's `CreateFunctionStatement`,
//! `CreateAggregateStatement`, `DropFunctionStatement` and `DropAggregateStatement`. The
//! `user_defined_functions_enabled` gate and the language check are the executor's (they
//! depend on the node's settings).

use super::functions::{signature_key, type_list, AggregateDef, FunctionDef};
use super::Catalog;
use super::{change, keyspace_of, user_keyspace, DdlOutcome};
use crate::error::QueryError;
use cql::ast::{CreateAggregate, CreateFunction, DropAggregate, DropFunction};
use cql::response::{SchemaChangeTarget, SchemaChangeType};
use cql::types::DataType;
use std::collections::HashSet;
use std::sync::Arc;

fn ire(message: String) -> QueryError {
    QueryError::invalid(message)
}

/// Cassandra refuses `frozen<>` on argument, return and state types (`CQL3Type.Raw.isFrozen`).
fn check_not_frozen(what: &str, t: &DataType) -> Result<(), QueryError> {
    if matches!(t, DataType::Frozen(inner) if !matches!(**inner, DataType::Tuple(_))) {
        return Err(ire(format!(
            "{what} '{t}' cannot be frozen; remove frozen<> modifier from '{t}'"
        )));
    }
    Ok(())
}

/// Checks that every type exists in `keyspace` (UDTs), as `CQL3Type.Raw.prepare` does.
fn check_types(catalog: &Catalog, keyspace: &str, types: &[&DataType]) -> Result<(), QueryError> {
    for t in types {
        catalog
            .resolve_type(keyspace, t)
            .map_err(QueryError::invalid)?;
    }
    Ok(())
}

/// The types two overloads could both hold a value of (`AbstractType.isCompatibleWith`, here
/// equality up to frozenness).
fn compatible(new: &DataType, old: &DataType) -> bool {
    new.unfrozen() == old.unfrozen() || crate::executor::functions::is_value_compatible(new, old)
}

/// `CREATE [OR REPLACE] FUNCTION [IF NOT EXISTS]`.
pub(super) fn create_function(
    catalog: &mut Catalog,
    s: &CreateFunction,
    current: Option<&str>,
) -> Result<DdlOutcome, QueryError> {
    let mut out = DdlOutcome::default();
    if s.if_not_exists && s.or_replace {
        return Err(ire(
            "Cannot use both 'OR REPLACE' and 'IF NOT EXISTS' directives".into(),
        ));
    }
    let ks_name = keyspace_of(&s.name, current)?;
    let name = &s.name.name;
    let arg_names: Vec<String> = s.args.iter().map(|(n, _)| n.clone()).collect();
    let arg_types: Vec<DataType> = s.args.iter().map(|(_, t)| t.clone()).collect();
    if arg_names.iter().collect::<HashSet<_>>().len() != arg_names.len() {
        return Err(ire(format!(
            "Duplicate argument names for given function {name} with argument names [{}]",
            arg_names.join(", ")
        )));
    }
    for t in &arg_types {
        check_not_frozen("Argument", t)?;
    }
    check_not_frozen("Return type", &s.return_type)?;
    let mut all: Vec<&DataType> = arg_types.iter().collect();
    all.push(&s.return_type);
    user_keyspace(catalog, &ks_name)?;
    check_types(catalog, &ks_name, &all)?;
    let ks = user_keyspace(catalog, &ks_name)?;
    if ks.aggregate(name, &arg_types).is_some() {
        return Err(ire(format!(
            "Function '{name}' cannot replace an aggregate"
        )));
    }
    let existing = ks.function(name, &arg_types).cloned();
    if let Some(old) = &existing {
        if s.if_not_exists {
            return Ok(out);
        }
        if !s.or_replace {
            return Err(ire(format!("Function '{name}' already exists")));
        }
        if old.called_on_null_input != s.called_on_null_input {
            let directive = if s.called_on_null_input {
                "CALLED ON NULL INPUT"
            } else {
                "RETURNS NULL ON NULL INPUT"
            };
            return Err(ire(format!(
                "Function '{name}' must have {directive} directive"
            )));
        }
        if !compatible(&s.return_type, &old.return_type) {
            return Err(ire(format!(
                "Cannot replace function '{name}', the new return type {} is not compatible with the return type {} of existing function",
                s.return_type, old.return_type
            )));
        }
    }
    let def = FunctionDef {
        keyspace: ks_name.clone(),
        name: name.clone(),
        arg_names,
        arg_types: arg_types.clone(),
        return_type: s.return_type.clone(),
        called_on_null_input: s.called_on_null_input,
        language: s.language.clone(),
        body: s.body.clone(),
    };
    if existing.as_deref() == Some(&def) {
        return Ok(out);
    }
    ks.functions
        .insert(signature_key(name, &arg_types), Arc::new(def));
    out.change = change(
        if existing.is_some() {
            SchemaChangeType::Updated
        } else {
            SchemaChangeType::Created
        },
        SchemaChangeTarget::Function {
            keyspace: ks_name,
            name: name.clone(),
            arg_types: arg_types.iter().map(ToString::to_string).collect(),
        },
    );
    Ok(out)
}

/// `CREATE [OR REPLACE] AGGREGATE [IF NOT EXISTS]`.
pub(super) fn create_aggregate(
    catalog: &mut Catalog,
    s: &CreateAggregate,
    current: Option<&str>,
) -> Result<DdlOutcome, QueryError> {
    let mut out = DdlOutcome::default();
    if s.if_not_exists && s.or_replace {
        return Err(ire(
            "Cannot use both 'OR REPLACE' and 'IF NOT EXISTS' directives".into(),
        ));
    }
    let ks_name = keyspace_of(&s.name, current)?;
    let name = &s.name.name;
    for t in &s.arg_types {
        check_not_frozen("Argument", t)?;
    }
    check_not_frozen("State type", &s.state_type)?;
    user_keyspace(catalog, &ks_name)?;
    let mut all: Vec<&DataType> = s.arg_types.iter().collect();
    all.push(&s.state_type);
    check_types(catalog, &ks_name, &all)?;
    let ks = user_keyspace(catalog, &ks_name)?;
    let mut state_args = vec![s.state_type.clone()];
    state_args.extend(s.arg_types.iter().cloned());
    let state_string = format!("{ks_name}.{}({})", s.state_func, type_list(&state_args));
    let Some(sfunc) = ks.function(&s.state_func, &state_args).cloned() else {
        return Err(ire(format!("State function {state_string} doesn't exist")));
    };
    if sfunc.return_type.unfrozen() != s.state_type.unfrozen() {
        return Err(ire(format!(
            "State function {state_string} return type must be the same as the first argument type - check STYPE, argument and return types"
        )));
    }
    let mut return_type = sfunc.return_type.clone();
    if let Some(ff) = &s.final_func {
        let Some(f) = ks.function(ff, std::slice::from_ref(&s.state_type)) else {
            return Err(ire(format!(
                "Final function {ks_name}.{ff}({}) doesn't exist",
                s.state_type
            )));
        };
        return_type = f.return_type.clone();
    }
    let mut initcond = None;
    if let Some(init) = &s.initcond {
        let state_type = catalog
            .resolve_type(&ks_name, &s.state_type)
            .map_err(QueryError::invalid)?;
        let value = crate::executor::literal::literal_value(init, &state_type, "INITCOND")
            .map_err(|_| {
                ire(format!(
                    "Invalid value for INITCOND of type {}",
                    s.state_type
                ))
            })?;
        initcond = value.map(|v| v.to_cql_literal());
    }
    if !sfunc.called_on_null_input && initcond.is_none() {
        return Err(ire(format!(
            "Cannot create aggregate '{name}' without INITCOND because state function {ks_name}.{} does not accept 'null' arguments",
            s.state_func
        )));
    }
    let ks = user_keyspace(catalog, &ks_name)?;
    if ks.function(name, &s.arg_types).is_some() {
        return Err(ire(format!("Aggregate '{name}' cannot replace a function")));
    }
    let existing = ks.aggregate(name, &s.arg_types).cloned();
    if let Some(old) = &existing {
        if s.if_not_exists {
            return Ok(out);
        }
        if !s.or_replace {
            return Err(ire(format!("Aggregate '{name}' already exists")));
        }
        if !compatible(&return_type, &old.return_type) {
            return Err(ire(format!(
                "Cannot replace aggregate '{name}', the new return type {return_type} isn't compatible with the return type {} of existing function",
                old.return_type
            )));
        }
    }
    let def = AggregateDef {
        keyspace: ks_name.clone(),
        name: name.clone(),
        arg_types: s.arg_types.clone(),
        state_func: s.state_func.clone(),
        state_type: s.state_type.clone(),
        final_func: s.final_func.clone(),
        initcond,
        return_type,
    };
    if existing.as_deref() == Some(&def) {
        return Ok(out);
    }
    ks.aggregates
        .insert(signature_key(name, &s.arg_types), Arc::new(def));
    out.change = change(
        if existing.is_some() {
            SchemaChangeType::Updated
        } else {
            SchemaChangeType::Created
        },
        SchemaChangeTarget::Aggregate {
            keyspace: ks_name,
            name: name.clone(),
            arg_types: s.arg_types.iter().map(ToString::to_string).collect(),
        },
    );
    Ok(out)
}

/// The name a DROP's messages use: `ks.f(int, text)` with argument types, else `ks.f`.
fn drop_name(ks: &str, name: &str, arg_types: Option<&[DataType]>) -> String {
    match arg_types {
        Some(t) => format!("{ks}.{name}({})", type_list(t)),
        None => format!("{ks}.{name}"),
    }
}

/// The overload a `DROP FUNCTION` / `DROP AGGREGATE` (`what`) of `name` names: the one of
/// `arg_types` when given, else the only one (several are Cassandra's ambiguity error).
fn named_overload<'a, T>(
    what: &str,
    name: &str,
    arg_types: Option<&[DataType]>,
    overloads: Vec<&'a Arc<T>>,
    types_of: impl Fn(&T) -> &[DataType],
) -> Result<Option<&'a Arc<T>>, QueryError> {
    if overloads.len() > 1 && arg_types.is_none() {
        return Err(ire(format!(
            "'DROP {what} {name}' matches multiple function definitions; specify the argument types by issuing a statement like 'DROP {what} {name} (type, type, ...)'. You can use cqlsh 'DESCRIBE {what} {name}' command to find all overloads"
        )));
    }
    Ok(overloads.into_iter().find(|o| match arg_types {
        Some(t) => super::functions::types_match(types_of(o), t),
        None => true,
    }))
}

/// `DROP FUNCTION [IF EXISTS] name [(types)]`.
pub(super) fn drop_function(
    catalog: &mut Catalog,
    s: &DropFunction,
    current: Option<&str>,
) -> Result<DdlOutcome, QueryError> {
    let mut out = DdlOutcome::default();
    let ks_name = keyspace_of(&s.name, current)?;
    let name = &s.name.name;
    let shown = drop_name(&ks_name, name, s.arg_types.as_deref());
    let missing = |if_exists: bool| {
        if if_exists {
            Ok(DdlOutcome::default())
        } else {
            Err(ire(format!("Function '{shown}' doesn't exist")))
        }
    };
    let Some(ks) = catalog.keyspaces.get(&ks_name) else {
        return missing(s.if_exists);
    };
    let overloads: Vec<&Arc<FunctionDef>> = ks.functions_named(name).collect();
    // Ambiguous without argument types; with them, none may be frozen.
    let found = named_overload("FUNCTION", name, s.arg_types.as_deref(), overloads, |f| {
        &f.arg_types
    })?;
    if let Some(t) =
        s.arg_types.iter().flatten().find(
            |t| matches!(t, DataType::Frozen(inner) if !matches!(**inner, DataType::Tuple(_))),
        )
    {
        return Err(ire(format!(
            "Argument '{t}' cannot be frozen; remove frozen<> modifier from '{t}'"
        )));
    }
    let Some(f) = found.cloned() else {
        return missing(s.if_exists);
    };
    let users: Vec<String> = ks
        .aggregates
        .values()
        .filter(|a| {
            let mut state_args = vec![a.state_type.clone()];
            state_args.extend(a.arg_types.iter().cloned());
            (a.state_func == f.name && super::functions::types_match(&state_args, &f.arg_types))
                || (a.final_func.as_deref() == Some(f.name.as_str())
                    && super::functions::types_match(
                        std::slice::from_ref(&a.state_type),
                        &f.arg_types,
                    ))
        })
        .map(|a| format!("{}.{}", a.keyspace, a.name))
        .collect();
    if !users.is_empty() {
        return Err(ire(format!(
            "Function '{shown}' is still referenced by aggregates {}",
            users.join(", ")
        )));
    }
    let ks = user_keyspace(catalog, &ks_name)?;
    ks.functions.remove(&signature_key(&f.name, &f.arg_types));
    out.change = change(
        SchemaChangeType::Dropped,
        SchemaChangeTarget::Function {
            keyspace: ks_name,
            name: f.name.clone(),
            arg_types: f.arg_types.iter().map(ToString::to_string).collect(),
        },
    );
    Ok(out)
}

/// `DROP AGGREGATE [IF EXISTS] name [(types)]`.
pub(super) fn drop_aggregate(
    catalog: &mut Catalog,
    s: &DropAggregate,
    current: Option<&str>,
) -> Result<DdlOutcome, QueryError> {
    let mut out = DdlOutcome::default();
    let ks_name = keyspace_of(&s.name, current)?;
    let name = &s.name.name;
    let shown = drop_name(&ks_name, name, s.arg_types.as_deref());
    let missing = |if_exists: bool| {
        if if_exists {
            Ok(DdlOutcome::default())
        } else {
            Err(ire(format!("Aggregate '{shown}' doesn't exist")))
        }
    };
    let Some(ks) = catalog.keyspaces.get(&ks_name) else {
        return missing(s.if_exists);
    };
    let overloads: Vec<&Arc<AggregateDef>> = ks.aggregates_named(name).collect();
    let found = named_overload("AGGREGATE", name, s.arg_types.as_deref(), overloads, |a| {
        &a.arg_types
    })?;
    let Some(a) = found.cloned() else {
        return missing(s.if_exists);
    };
    let ks = user_keyspace(catalog, &ks_name)?;
    ks.aggregates.remove(&signature_key(&a.name, &a.arg_types));
    out.change = change(
        SchemaChangeType::Dropped,
        SchemaChangeTarget::Aggregate {
            keyspace: ks_name,
            name: a.name.clone(),
            arg_types: a.arg_types.iter().map(ToString::to_string).collect(),
        },
    );
    Ok(out)
}
