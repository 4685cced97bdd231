//! The statements on user-defined functions and aggregates (`CREATE`/`DROP FUNCTION`,
//! `CREATE`/`DROP AGGREGATE`): the `user_defined_functions_enabled` gate and the checks made
//! before a function could enter the schema. ringdb does not store or run such functions yet, so
//! a creation that passes every check is refused with a message that says so.

use cql::ast::{QualifiedName, Statement};
use cql::response::ResultBody;

use crate::config::Config;
use crate::error::QueryError;
use crate::schema::{is_system_keyspace, Catalog};

/// Cassandra's refusal while the setting is off (`CreateFunctionStatement` /
/// `CreateAggregateStatement`, 5.0 naming of the setting).
pub(crate) const DISABLED: &str = "User-defined functions are disabled in cassandra.yaml - set \
     user_defined_functions_enabled=true to enable";

/// Runs one function or aggregate statement; any other statement is a programming error
/// reported as Invalid.
///
/// # Errors
/// Invalid for a disabled feature, a missing keyspace, a refused language or a function that
/// does not exist; Unauthorized for a system keyspace.
pub(crate) fn run(
    config: &Config,
    catalog: &Catalog,
    current: Option<&str>,
    stmt: &Statement,
) -> Result<ResultBody, QueryError> {
    match stmt {
        Statement::CreateFunction(s) => {
            check_enabled(config)?;
            let ks = existing_keyspace(catalog, &s.name, current)?;
            if s.language != "lua" && !config.user_defined_functions_java_schema {
                // Cassandra 5.0's `UDFunction`: only listed languages are accepted.
                return Err(QueryError::invalid(format!(
                    "Invalid language '{}' for function '{ks}.{}'",
                    s.language, s.name.name
                )));
            }
            Err(not_yet())
        }
        Statement::CreateAggregate(s) => {
            check_enabled(config)?;
            existing_keyspace(catalog, &s.name, current)?;
            Err(not_yet())
        }
        Statement::DropFunction(s) => drop(catalog, &s.name, current, s.if_exists, "Function"),
        Statement::DropAggregate(s) => drop(catalog, &s.name, current, s.if_exists, "Aggregate"),
        _ => Err(QueryError::invalid("Unsupported statement")),
    }
}

fn check_enabled(config: &Config) -> Result<(), QueryError> {
    if config.user_defined_functions_enabled {
        Ok(())
    } else {
        Err(QueryError::invalid(DISABLED))
    }
}

fn not_yet() -> QueryError {
    QueryError::invalid("User-defined functions and aggregates are not yet stored by ringdb")
}

/// The statement's keyspace, which must exist and be a user keyspace.
fn existing_keyspace(
    catalog: &Catalog,
    name: &QualifiedName,
    current: Option<&str>,
) -> Result<String, QueryError> {
    let ks = crate::schema::keyspace_of(name, current)?;
    if is_system_keyspace(&ks) {
        return Err(QueryError::Unauthorized(format!(
            "{ks} keyspace is not user-modifiable."
        )));
    }
    if !catalog.keyspaces.contains_key(&ks) {
        return Err(QueryError::invalid(format!(
            "Keyspace '{ks}' doesn't exist"
        )));
    }
    Ok(ks)
}

/// `DROP FUNCTION`/`DROP AGGREGATE`: no function exists, so only `IF EXISTS` succeeds (as
/// Cassandra's `DropFunctionStatement` answers a void result for a missing one).
fn drop(
    catalog: &Catalog,
    name: &QualifiedName,
    current: Option<&str>,
    if_exists: bool,
    kind: &str,
) -> Result<ResultBody, QueryError> {
    let ks = crate::schema::keyspace_of(name, current)?;
    if if_exists {
        return Ok(ResultBody::Void);
    }
    if !catalog.keyspaces.contains_key(&ks) {
        return Err(QueryError::invalid(format!(
            "Keyspace '{ks}' doesn't exist"
        )));
    }
    Err(QueryError::invalid(format!(
        "{kind} '{ks}.{}' doesn't exist",
        name.name
    )))
}
