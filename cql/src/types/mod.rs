//! CQL data types and their value codecs.

mod data_type;
mod literal;
pub mod marshal;
mod value;
#[cfg(test)]
mod value_tests;
pub mod varint;

pub use data_type::{is_unquoted_identifier, write_identifier, DataType, NativeType, UserType};
pub use value::{
    join_vector, split_vector, validate, TypeError, Value, DURATION_CLASS, MAX_TIME_NANOS,
};

/// Cassandra's reserved keywords: an identifier equal to one of these must be double-quoted.
pub const RESERVED_KEYWORDS: &[&str] = &[
    "add",
    "allow",
    "alter",
    "and",
    "apply",
    "asc",
    "authorize",
    "batch",
    "begin",
    "by",
    "columnfamily",
    "create",
    "default",
    "delete",
    "desc",
    "describe",
    "drop",
    "entries",
    "execute",
    "from",
    "full",
    "grant",
    "if",
    "in",
    "index",
    "infinity",
    "insert",
    "into",
    "is",
    "keyspace",
    "limit",
    "materialized",
    "mbean",
    "mbeans",
    "modify",
    "nan",
    "norecursive",
    "not",
    "null",
    "of",
    "on",
    "or",
    "order",
    "primary",
    "rename",
    "replace",
    "revoke",
    "schema",
    "select",
    "set",
    "table",
    "to",
    "token",
    "truncate",
    "unlogged",
    "unset",
    "update",
    "use",
    "using",
    "view",
    "where",
    "with",
];
