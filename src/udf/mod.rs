//! User-defined functions: their bodies run in a sandboxed Lua 5.4 ([`lua_sandbox`]), with CQL
//! values mapped to Lua values and back ([`lua_values`]); a planned call and an aggregate's
//! running state in [`calls`].

pub mod calls;
pub mod lua_sandbox;
pub mod lua_values;

pub use lua_sandbox::{call, Limits, UdfError};

use crate::error::QueryError;

/// The language ringdb runs function bodies in.
pub const LUA: &str = "lua";

/// The FunctionFailure (0x1400) for a failed call of `keyspace.function(arg_types)`, with
/// Cassandra's message shape (`FunctionExecutionException`): `execution of 'ks.f[int, text]'
/// failed: <reason>`.
pub fn failure(keyspace: &str, function: &str, arg_types: &[String], e: &UdfError) -> QueryError {
    QueryError::FunctionFailure {
        message: format!(
            "execution of '{keyspace}.{function}[{}]' failed: {e}",
            arg_types.join(", ")
        ),
        keyspace: keyspace.to_string(),
        function: function.to_string(),
        arg_types: arg_types.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_has_cassandras_message_and_code() {
        let e = failure(
            "ks",
            "f",
            &["int".into(), "text".into()],
            &UdfError::Failed("boom".into()),
        );
        assert_eq!(e.to_string(), "execution of 'ks.f[int, text]' failed: boom");
        let body = e.to_error_body();
        assert_eq!(body.code(), cql::response::codes::FUNCTION_FAILURE);
    }
}
