//! User-defined functions: their bodies run in a sandboxed Lua 5.4 ([`lua_sandbox`]), with CQL
//! values mapped to Lua values and back ([`lua_values`]).

pub mod lua_sandbox;
pub mod lua_values;

pub use lua_sandbox::{call, Limits, UdfError};
