//! The `SELECT` statement.

use std::fmt;

use super::{Comma, Expr, Ident, Order, QualifiedName, Relation};

/// One item of a `SELECT` clause: an expression and its optional `AS` alias.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    /// What is selected.
    pub expr: Expr,
    /// `AS alias`.
    pub alias: Option<String>,
}

/// `SELECT [JSON] [DISTINCT] selectors FROM table [WHERE ...] [GROUP BY ...] [ORDER BY ...]
/// [PER PARTITION LIMIT n] [LIMIT n] [ALLOW FILTERING]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    /// `DISTINCT`.
    pub distinct: bool,
    /// `JSON`.
    pub json: bool,
    /// The selected items; empty for `*`.
    pub selectors: Vec<Selector>,
    /// The table.
    pub table: QualifiedName,
    /// `WHERE` relations, joined by `AND`.
    pub where_clause: Vec<Relation>,
    /// `GROUP BY` columns.
    pub group_by: Vec<String>,
    /// `ORDER BY` columns.
    pub order_by: Vec<(String, Order)>,
    /// `ORDER BY column ANN OF vector` orderings (Cassandra 5.0's vector search), kept apart
    /// from `order_by` so the planner can refuse the mixes Cassandra refuses.
    pub ann: Vec<AnnOrdering>,
    /// `PER PARTITION LIMIT` (an integer literal or a bind marker).
    pub per_partition_limit: Option<Expr>,
    /// `LIMIT` (an integer literal or a bind marker).
    pub limit: Option<Expr>,
    /// `ALLOW FILTERING`.
    pub allow_filtering: bool,
}

/// One `column ANN OF vector [ASC | DESC]` item of an `ORDER BY` clause.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnOrdering {
    /// The vector column.
    pub column: String,
    /// The query vector (a literal, a marker or a cast).
    pub vector: Expr,
    /// `ASC` or `DESC` when written (Cassandra refuses `DESC`).
    pub order: Option<Order>,
    /// How many plain `order_by` items come before it in the clause.
    pub position: usize,
}

impl fmt::Display for AnnOrdering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ANN OF {}", Ident(&self.column), self.vector)?;
        if let Some(order) = self.order {
            write!(f, " {order}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        if let Some(alias) = &self.alias {
            write!(f, " AS {}", Ident(alias))?;
        }
        Ok(())
    }
}

/// Prints `WHERE` relations joined by `AND` (shared by all statements with a `WHERE`).
pub(crate) struct WhereClause<'a>(pub(crate) &'a [Relation]);

impl fmt::Display for WhereClause<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            f.write_str(if i == 0 { " WHERE " } else { " AND " })?;
            r.fmt(f)?;
        }
        Ok(())
    }
}

impl fmt::Display for Select {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        if self.json {
            f.write_str("JSON ")?;
        }
        if self.distinct {
            f.write_str("DISTINCT ")?;
        }
        match self.selectors.split_first() {
            None => f.write_str("*")?,
            Some((first, rest)) => {
                write_first_selector(f, first, self.distinct)?;
                for s in rest {
                    write!(f, ", {s}")?;
                }
            }
        }
        write!(f, " FROM {}{}", self.table, WhereClause(&self.where_clause))?;
        if !self.group_by.is_empty() {
            let cols: Vec<_> = self.group_by.iter().map(|c| Ident(c)).collect();
            write!(f, " GROUP BY {}", Comma(&cols))?;
        }
        let mut written = 0;
        let mut separator = |f: &mut fmt::Formatter<'_>| {
            written += 1;
            f.write_str(if written == 1 { " ORDER BY " } else { ", " })
        };
        let mut ann = self.ann.iter().peekable();
        for (i, (col, order)) in self.order_by.iter().enumerate() {
            while let Some(a) = ann.next_if(|a| a.position <= i) {
                separator(f)?;
                a.fmt(f)?;
            }
            separator(f)?;
            write!(f, "{} {order}", Ident(col))?;
        }
        for a in ann {
            separator(f)?;
            a.fmt(f)?;
        }
        if let Some(n) = &self.per_partition_limit {
            write!(f, " PER PARTITION LIMIT {n}")?;
        }
        if let Some(n) = &self.limit {
            write!(f, " LIMIT {n}")?;
        }
        if self.allow_filtering {
            f.write_str(" ALLOW FILTERING")?;
        }
        Ok(())
    }
}

/// Writes the first selector, quoting a leading `json`/`distinct` column: unquoted, `SELECT
/// json - x` would re-parse with the JSON flag (Cassandra's `(K_JSON selectClause)=>`).
fn write_first_selector(
    f: &mut fmt::Formatter<'_>,
    first: &Selector,
    distinct: bool,
) -> fmt::Result {
    let printed = first.to_string();
    if !distinct {
        for word in ["json", "distinct"] {
            if let Some(rest) = printed.strip_prefix(word) {
                if !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                    return write!(f, "\"{word}\"{rest}");
                }
            }
        }
    }
    f.write_str(&printed)
}
