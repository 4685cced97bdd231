//! Materialized views: `CREATE MATERIALIZED VIEW` and `DROP MATERIALIZED VIEW`.

use std::fmt;

use super::ddl::{Names, PrimaryKey, WithOptions};
use super::select::WhereClause;
use super::{
    if_exists, if_not_exists, OptionValue, Properties, QualifiedName, Relation, TableOptions,
};

/// `CREATE MATERIALIZED VIEW [IF NOT EXISTS] name AS SELECT columns FROM base WHERE ...
/// PRIMARY KEY (...) [WITH ...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateView {
    /// The view.
    pub name: QualifiedName,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// The selected columns; empty for `*`.
    pub columns: Vec<String>,
    /// The base table.
    pub base: QualifiedName,
    /// The `WHERE` relations (`IS NOT NULL` on every primary key column, and filters).
    pub where_clause: Vec<Relation>,
    /// The view's partition key columns.
    pub partition_key: Vec<String>,
    /// The view's clustering columns.
    pub clustering_key: Vec<String>,
    /// `WITH` options (clustering order and table properties).
    pub options: TableOptions,
}

/// `ALTER MATERIALIZED VIEW [IF EXISTS] name WITH property = value AND ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterView {
    /// The view.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// The properties, in the order written.
    pub properties: Vec<(String, OptionValue)>,
}

impl fmt::Display for AlterView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ALTER MATERIALIZED VIEW{} {} WITH {}",
            if_exists(self.if_exists),
            self.name,
            Properties(&self.properties)
        )
    }
}

/// `DROP MATERIALIZED VIEW [IF EXISTS] name`.
#[derive(Debug, Clone, PartialEq)]
pub struct DropView {
    /// The view.
    pub name: QualifiedName,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

impl fmt::Display for CreateView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CREATE MATERIALIZED VIEW{} {} AS SELECT ",
            if_not_exists(self.if_not_exists),
            self.name
        )?;
        if self.columns.is_empty() {
            f.write_str("*")?;
        } else {
            Names(&self.columns).fmt(f)?;
        }
        write!(f, " FROM {}", self.base)?;
        WhereClause(&self.where_clause).fmt(f)?;
        write!(
            f,
            " {}",
            PrimaryKey(&self.partition_key, &self.clustering_key)
        )?;
        WithOptions(&self.options).fmt(f)
    }
}

impl fmt::Display for DropView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DROP MATERIALIZED VIEW{} {}",
            if_exists(self.if_exists),
            self.name
        )
    }
}
