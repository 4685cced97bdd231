//! [`ParseError`]: a CQL syntax error with Cassandra's `line:column` position.

use thiserror::Error;

/// A syntax error, displayed like Cassandra's `SyntaxException` message:
/// `line 1:14 mismatched input 'x' expecting K_FROM`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}:{column} {message}")]
#[non_exhaustive]
pub struct ParseError {
    /// 1-based line of the offending token.
    pub line: usize,
    /// 0-based character column of the offending token (as Cassandra reports it).
    pub column: usize,
    /// What went wrong, without the position prefix.
    pub message: String,
    /// True when Cassandra reports this as an InvalidRequest rather than a SyntaxError
    /// (the statement parses, but its grammar refuses what it says: a vector dimension <= 0);
    /// `message` is then the whole message, to be sent without the position.
    pub invalid: bool,
}
