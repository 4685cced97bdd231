//! `DESCRIBE` (`DESC`) statements, answered by the server since Cassandra 4.0.

use std::fmt;

use super::{Ident, QualifiedName};

/// What a `DESCRIBE` statement asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DescribeTarget {
    /// `DESCRIBE CLUSTER`.
    Cluster,
    /// `DESCRIBE [FULL] SCHEMA`.
    Schema {
        /// `FULL`: include system keyspaces.
        full: bool,
    },
    /// `DESCRIBE KEYSPACES`.
    Keyspaces,
    /// `DESCRIBE [ONLY] KEYSPACE [name]` (no name: the current keyspace).
    Keyspace {
        /// The keyspace.
        name: Option<String>,
        /// `ONLY`: the keyspace alone, without its tables and types.
        only: bool,
    },
    /// `DESCRIBE TABLES`.
    Tables,
    /// `DESCRIBE TABLE name` (or `COLUMNFAMILY`).
    Table(QualifiedName),
    /// `DESCRIBE TYPES`.
    Types,
    /// `DESCRIBE TYPE name`.
    Type(QualifiedName),
    /// `DESCRIBE FUNCTIONS`.
    Functions,
    /// `DESCRIBE FUNCTION name`.
    Function(QualifiedName),
    /// `DESCRIBE AGGREGATES`.
    Aggregates,
    /// `DESCRIBE AGGREGATE name`.
    Aggregate(QualifiedName),
    /// `DESCRIBE INDEX name`.
    Index(QualifiedName),
    /// `DESCRIBE MATERIALIZED VIEW name`.
    MaterializedView(QualifiedName),
    /// `DESCRIBE name` or `DESCRIBE ks.name`: whatever object has that name.
    Generic(QualifiedName),
}

/// `DESCRIBE target [WITH INTERNALS]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Describe {
    /// What to describe.
    pub target: DescribeTarget,
    /// `WITH INTERNALS`.
    pub with_internals: bool,
}

impl fmt::Display for Describe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DESCRIBE ")?;
        match &self.target {
            DescribeTarget::Cluster => f.write_str("CLUSTER")?,
            DescribeTarget::Schema { full } => {
                f.write_str(if *full { "FULL SCHEMA" } else { "SCHEMA" })?
            }
            DescribeTarget::Keyspaces => f.write_str("KEYSPACES")?,
            DescribeTarget::Keyspace { name, only } => {
                f.write_str(if *only { "ONLY KEYSPACE" } else { "KEYSPACE" })?;
                if let Some(name) = name {
                    write!(f, " {}", Ident(name))?;
                }
            }
            DescribeTarget::Tables => f.write_str("TABLES")?,
            DescribeTarget::Table(n) => write!(f, "TABLE {n}")?,
            DescribeTarget::Types => f.write_str("TYPES")?,
            DescribeTarget::Type(n) => write!(f, "TYPE {n}")?,
            DescribeTarget::Functions => f.write_str("FUNCTIONS")?,
            DescribeTarget::Function(n) => write!(f, "FUNCTION {n}")?,
            DescribeTarget::Aggregates => f.write_str("AGGREGATES")?,
            DescribeTarget::Aggregate(n) => write!(f, "AGGREGATE {n}")?,
            DescribeTarget::Index(n) => write!(f, "INDEX {n}")?,
            DescribeTarget::MaterializedView(n) => write!(f, "MATERIALIZED VIEW {n}")?,
            DescribeTarget::Generic(n) => write!(f, "{}", GenericName(n))?,
        }
        if self.with_internals {
            f.write_str(" WITH INTERNALS")?;
        }
        Ok(())
    }
}

/// A generic name must not print as one of the `DESCRIBE` keywords (`DESCRIBE "tables"` names
/// a table called `tables`, `DESCRIBE tables` lists all tables).
struct GenericName<'a>(&'a QualifiedName);

const DESCRIBE_WORDS: &[&str] = &[
    "cluster",
    "keyspaces",
    "tables",
    "types",
    "functions",
    "aggregates",
    "only",
    "type",
    "function",
    "aggregate",
    "columnfamilies",
];

impl fmt::Display for GenericName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        let word = |f: &mut fmt::Formatter<'_>, s: &str| {
            if DESCRIBE_WORDS.contains(&s) {
                write!(f, "\"{s}\"")
            } else {
                Ident(s).fmt(f)
            }
        };
        match &n.keyspace {
            Some(ks) => {
                word(f, ks)?;
                f.write_str(".")?;
                Ident(&n.name).fmt(f)
            }
            None => word(f, &n.name),
        }
    }
}
