//! Data modification: `INSERT`, `UPDATE`, `DELETE` and `BATCH`.

use std::fmt;

use super::expr::RelationValue;
use super::select::WhereClause;
use super::{Comma, Expr, Ident, Operator, QualifiedName, Relation, Statement};

/// `USING TTL ... AND TIMESTAMP ...`, either written first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Using {
    /// `TTL n` (an integer literal or a bind marker).
    pub ttl: Option<Expr>,
    /// `TIMESTAMP n` (an integer literal or a bind marker).
    pub timestamp: Option<Expr>,
    /// True when both are given and `TIMESTAMP` was written before `TTL`. Bind markers are
    /// numbered in the order written, so `USING TIMESTAMP ? AND TTL ?` binds the timestamp
    /// first.
    pub timestamp_first: bool,
}

impl Using {
    /// True when neither TTL nor timestamp is set.
    pub fn is_empty(&self) -> bool {
        self.ttl.is_none() && self.timestamp.is_none()
    }
}

/// What an `INSERT` writes.
#[derive(Debug, Clone, PartialEq)]
pub enum InsertValues {
    /// `(cols) VALUES (v1, v2, ...)`.
    Values(Vec<Expr>),
    /// `JSON 'document'` or `JSON ?`.
    Json(Expr),
}

/// `INSERT INTO table (cols) VALUES (...) | JSON ... [DEFAULT NULL|UNSET] [IF NOT EXISTS]
/// [USING ...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Insert {
    /// The table.
    pub table: QualifiedName,
    /// The column names (empty for `INSERT JSON`).
    pub columns: Vec<String>,
    /// The values.
    pub values: InsertValues,
    /// `DEFAULT UNSET` (JSON only; the default is `DEFAULT NULL`).
    pub default_unset: bool,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// `USING ...`.
    pub using: Using,
}

/// One `SET` item of an `UPDATE`.
#[derive(Debug, Clone, PartialEq)]
pub enum Assignment {
    /// `c = v`.
    Set {
        /// The column.
        column: String,
        /// The new value.
        value: Expr,
    },
    /// `c = c + v` or `c += v` (counter increment, collection append/union).
    Add {
        /// The column.
        column: String,
        /// What is added.
        value: Expr,
    },
    /// `c = c - v` or `c -= v`.
    Subtract {
        /// The column.
        column: String,
        /// What is subtracted/removed.
        value: Expr,
    },
    /// `c = v + c` (list prepend).
    Prepend {
        /// The column.
        column: String,
        /// What is prepended.
        value: Expr,
    },
    /// `c[k] = v`.
    SetElement {
        /// The collection column.
        column: String,
        /// The element's key or index.
        key: Expr,
        /// The new value.
        value: Expr,
    },
    /// `c.field = v`.
    SetField {
        /// The UDT column.
        column: String,
        /// The field.
        field: String,
        /// The new value.
        value: Expr,
    },
}

/// A column, collection element or UDT field: what `DELETE` removes, and the left-hand side
/// of an `IF` condition.
#[derive(Debug, Clone, PartialEq)]
pub enum DeleteTarget {
    /// `c`.
    Column(String),
    /// `c[key]`.
    Element(String, Expr),
    /// `c.field`.
    Field(String, String),
}

/// One `IF` condition of a lightweight transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// What is tested.
    pub target: DeleteTarget,
    /// The operator (`IN` takes a list or a marker, like in relations).
    pub op: Operator,
    /// The value compared against.
    pub value: Expr,
}

/// The `IF` clause of an `UPDATE` or `DELETE`.
#[derive(Debug, Clone, PartialEq)]
pub enum Conditions {
    /// `IF EXISTS`.
    IfExists,
    /// `IF c1 = v1 AND ...`.
    List(Vec<Condition>),
}

/// `UPDATE table [USING ...] SET ... WHERE ... [IF ...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    /// The table.
    pub table: QualifiedName,
    /// `USING ...`.
    pub using: Using,
    /// The `SET` items.
    pub assignments: Vec<Assignment>,
    /// `WHERE` relations.
    pub where_clause: Vec<Relation>,
    /// The `IF` clause.
    pub conditions: Option<Conditions>,
}

/// `DELETE [targets] FROM table [USING TIMESTAMP t] WHERE ... [IF ...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Delete {
    /// What to delete; empty for the whole row(s).
    pub columns: Vec<DeleteTarget>,
    /// The table.
    pub table: QualifiedName,
    /// `USING TIMESTAMP` (a `DELETE` never has a TTL).
    pub using: Using,
    /// `WHERE` relations.
    pub where_clause: Vec<Relation>,
    /// The `IF` clause.
    pub conditions: Option<Conditions>,
}

/// The kind of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchType {
    /// `BEGIN BATCH` (the default).
    Logged,
    /// `BEGIN UNLOGGED BATCH`.
    Unlogged,
    /// `BEGIN COUNTER BATCH`.
    Counter,
}

/// `BEGIN [UNLOGGED|COUNTER] BATCH [USING ...] stmt; ... APPLY BATCH`.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// The batch kind.
    pub batch_type: BatchType,
    /// `USING ...` applying to every statement.
    pub using: Using,
    /// The statements (only `Insert`, `Update` and `Delete`).
    pub statements: Vec<Statement>,
}

impl fmt::Display for Using {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ttl = self.ttl.as_ref().map(|e| ("TTL", e));
        let ts = self.timestamp.as_ref().map(|e| ("TIMESTAMP", e));
        let items = if self.timestamp_first {
            [ts, ttl]
        } else {
            [ttl, ts]
        };
        let mut sep = " USING ";
        for (word, e) in items.into_iter().flatten() {
            write!(f, "{sep}{word} {e}")?;
            sep = " AND ";
        }
        Ok(())
    }
}

impl fmt::Display for Insert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "INSERT INTO {} ", self.table)?;
        match &self.values {
            InsertValues::Values(values) => {
                let cols: Vec<_> = self.columns.iter().map(|c| Ident(c)).collect();
                write!(f, "({}) VALUES ({})", Comma(&cols), Comma(values))?;
            }
            InsertValues::Json(value) => {
                write!(f, "JSON {value}")?;
                if self.default_unset {
                    f.write_str(" DEFAULT UNSET")?;
                }
            }
        }
        if self.if_not_exists {
            f.write_str(" IF NOT EXISTS")?;
        }
        self.using.fmt(f)
    }
}

impl fmt::Display for Assignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Assignment::Set { column, value } => write!(f, "{} = {value}", Ident(column)),
            Assignment::Add { column, value } => {
                write!(f, "{c} = {c} + {value}", c = Ident(column))
            }
            Assignment::Subtract { column, value } => {
                write!(f, "{c} = {c} - {value}", c = Ident(column))
            }
            Assignment::Prepend { column, value } => {
                write!(f, "{c} = {value} + {c}", c = Ident(column))
            }
            Assignment::SetElement { column, key, value } => {
                write!(f, "{}[{key}] = {value}", Ident(column))
            }
            Assignment::SetField {
                column,
                field,
                value,
            } => write!(f, "{}.{} = {value}", Ident(column), Ident(field)),
        }
    }
}

impl fmt::Display for DeleteTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeleteTarget::Column(c) => Ident(c).fmt(f),
            DeleteTarget::Element(c, key) => write!(f, "{}[{key}]", Ident(c)),
            DeleteTarget::Field(c, field) => write!(f, "{}.{}", Ident(c), Ident(field)),
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.target,
            self.op,
            RelationValue(self.op, &self.value)
        )
    }
}

impl fmt::Display for Conditions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Conditions::IfExists => f.write_str(" IF EXISTS"),
            Conditions::List(list) => {
                for (i, c) in list.iter().enumerate() {
                    f.write_str(if i == 0 { " IF " } else { " AND " })?;
                    c.fmt(f)?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Update {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "UPDATE {}{} SET {}{}",
            self.table,
            self.using,
            Comma(&self.assignments),
            WhereClause(&self.where_clause)
        )?;
        if let Some(c) = &self.conditions {
            c.fmt(f)?;
        }
        Ok(())
    }
}

impl fmt::Display for Delete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DELETE ")?;
        if !self.columns.is_empty() {
            write!(f, "{} ", Comma(&self.columns))?;
        }
        write!(
            f,
            "FROM {}{}{}",
            self.table,
            self.using,
            WhereClause(&self.where_clause)
        )?;
        if let Some(c) = &self.conditions {
            c.fmt(f)?;
        }
        Ok(())
    }
}

impl fmt::Display for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.batch_type {
            BatchType::Logged => "BEGIN BATCH",
            BatchType::Unlogged => "BEGIN UNLOGGED BATCH",
            BatchType::Counter => "BEGIN COUNTER BATCH",
        })?;
        self.using.fmt(f)?;
        for s in &self.statements {
            write!(f, " {s};")?;
        }
        f.write_str(" APPLY BATCH")
    }
}
