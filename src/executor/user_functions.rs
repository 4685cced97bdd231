//! The gate in front of the statements on user-defined functions and aggregates
//! (`CREATE`/`DROP FUNCTION`, `CREATE`/`DROP AGGREGATE`): the `user_defined_functions_enabled`
//! setting and the languages a function may be written in. What passes goes through the schema
//! path as any other DDL (`schema::function_ddl`).

use cql::ast::Statement;

use crate::config::Config;
use crate::error::QueryError;

/// Cassandra's refusal while the setting is off (`CreateFunctionStatement` /
/// `CreateAggregateStatement`, 5.0 naming of the setting).
pub(crate) const DISABLED: &str = "User-defined functions are disabled in cassandra.yaml - set \
     user_defined_functions_enabled=true to enable";

/// Checks that `stmt` may run on this node: creations need `user_defined_functions_enabled`;
/// a function's language must be Lua, or Java while `user_defined_functions_java_schema` is
/// set. Drops always pass (as Cassandra's `DropFunctionStatement`).
///
/// # Errors
/// Invalid with Cassandra's messages.
pub(crate) fn check(
    config: &Config,
    current: Option<&str>,
    stmt: &Statement,
) -> Result<(), QueryError> {
    match stmt {
        Statement::CreateFunction(s) => {
            check_enabled(config)?;
            let java = s.language == "java" && config.user_defined_functions_java_schema;
            if s.language != crate::udf::LUA && !java {
                let ks = crate::schema::keyspace_of(&s.name, current)?;
                // Cassandra 3.x-4.0 `UDFunction.create`: a language without a script engine.
                return Err(QueryError::invalid(format!(
                    "Invalid language '{}' for function '{ks}.{}'",
                    s.language, s.name.name
                )));
            }
            Ok(())
        }
        Statement::CreateAggregate(_) => check_enabled(config),
        _ => Ok(()),
    }
}

fn check_enabled(config: &Config) -> Result<(), QueryError> {
    if config.user_defined_functions_enabled {
        Ok(())
    } else {
        Err(QueryError::invalid(DISABLED))
    }
}
