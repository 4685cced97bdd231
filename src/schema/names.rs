//! Cassandra's rule for the names of keyspaces, tables, views and indexes.

use crate::error::QueryError;

/// Checks a schema object's name as Cassandra does: 1 to 48 characters, ASCII letters,
/// digits and underscores; `kind` names it in the message ("Table", "Index", ...).
pub(super) fn check_name(kind: &str, name: &str) -> Result<(), QueryError> {
    if name.is_empty()
        || name.len() > 48
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(QueryError::invalid(format!(
            "{kind} name must not be empty, more than 48 characters long, or contain non-alphanumeric-underscore characters (got \"{name}\")"
        )));
    }
    Ok(())
}
