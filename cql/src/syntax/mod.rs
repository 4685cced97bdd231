//! The CQL language front end: [`lexer`] turns text into tokens, the nom `parser` turns
//! tokens into [`crate::ast::Statement`]s, and [`ParseError`] reports the first problem with
//! its `line:column`, as Cassandra's `SyntaxException` does.
//!
//! ```
//! use cql::ast::Statement;
//!
//! let stmt = cql::parse_statement("SELECT * FROM system.local WHERE key = 'local'").unwrap();
//! assert!(matches!(stmt, Statement::Select(_)));
//! assert_eq!(stmt.to_string(), "SELECT * FROM system.local WHERE key = 'local'");
//! ```

mod error;
pub mod lexer;
mod parser;

#[cfg(test)]
mod error_tests;
#[cfg(test)]
mod roundtrip_tests;

pub use error::ParseError;
pub use parser::{parse_data_type, parse_statement, parse_statements, parse_term};
