//! A statement made ready to answer: its bind markers and, for a read of a user table, the
//! columns and one synthesized row it answers with, computed once at PREPARE.

use crate::catalog::{Kind, Table};
use crate::markers::{self, Markers};
use crate::synthetic;
use cql::ast::{Expr, Literal, Operator, Relation, Select, Statement};
use cql::response::result::ColumnSpec;
use cql::types::{DataType, NativeType};

/// How many rows a read of a user table answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// The whole primary key is given: one row.
    Point,
    /// A token range: the slice rows setting (`scripts/bench` sets it to a range's rows).
    Range,
    /// Anything else: the slice rows setting, or the LIMIT when it is smaller.
    Slice {
        /// A literal LIMIT.
        limit: Option<usize>,
        /// The index of the marker binding the LIMIT.
        limit_marker: Option<usize>,
    },
}

/// A read of a user table, ready to answer.
#[derive(Debug, Clone)]
pub(crate) struct Read {
    /// The result's columns.
    pub(crate) columns: std::sync::Arc<[ColumnSpec]>,
    /// One row's cells in wire form.
    pub(crate) row: Vec<u8>,
    /// How many rows it answers.
    pub(crate) shape: Shape,
}

/// A statement ready to answer.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The statement.
    pub(crate) statement: Statement,
    /// The keyspace the statement was prepared in (its session's).
    pub(crate) keyspace: Option<String>,
    /// Its markers.
    pub(crate) markers: Markers,
    /// For a read of a user table: what it answers.
    pub(crate) read: Option<Read>,
    /// Whether it is a conditional write (answered with `[applied]`).
    pub(crate) conditional: bool,
}

fn shape(select: &Select, table: &Table, markers: &Markers) -> Shape {
    let mut equal = 0;
    for r in &select.where_clause {
        match r {
            Relation::Token { .. } => return Shape::Range,
            Relation::Simple {
                column,
                op: Operator::Eq,
                ..
            } if table
                .column(column)
                .is_some_and(|c| matches!(c.kind, Kind::PartitionKey | Kind::Clustering)) =>
            {
                equal += 1
            }
            _ => {}
        }
    }
    if equal == table.primary_key_len() {
        return Shape::Point;
    }
    let (limit, limit_marker) = match &select.limit {
        Some(Expr::Literal(Literal::Integer(n))) => (n.parse().ok(), None),
        Some(Expr::BindMarker(_)) => (None, markers.specs.len().checked_sub(1)),
        _ => (None, None),
    };
    Shape::Slice {
        limit,
        limit_marker,
    }
}

fn read_of(select: &Select, table: &Table, markers: &Markers, value_size: usize) -> Read {
    let spec = |name: &str, data_type: DataType| ColumnSpec {
        keyspace: table.keyspace.clone(),
        table: table.name.clone(),
        name: name.to_string(),
        data_type,
    };
    let columns: Vec<ColumnSpec> = if select.selectors.is_empty() {
        table
            .columns
            .iter()
            .map(|c| spec(&c.name, c.data_type.clone()))
            .collect()
    } else {
        select
            .selectors
            .iter()
            .map(|s| {
                let (name, t) = match &s.expr {
                    Expr::Column(c) => (
                        c.clone(),
                        table
                            .column(c)
                            .map_or(DataType::Native(NativeType::Blob), |c| c.data_type.clone()),
                    ),
                    Expr::FunctionCall { name, .. } => {
                        (name.name.clone(), DataType::Native(NativeType::Bigint))
                    }
                    other => (other.to_string(), DataType::Native(NativeType::Blob)),
                };
                spec(s.alias.as_deref().unwrap_or(&name), t)
            })
            .collect()
    };
    let mut row = Vec::new();
    for c in &columns {
        synthetic::push_cell(
            &mut row,
            synthetic::value(&c.data_type, value_size).as_deref(),
        );
    }
    Read {
        columns: columns.into(),
        row,
        shape: shape(select, table, markers),
    }
}

impl Prepared {
    /// Makes `statement` ready; `table` is the user table it reads or writes, if any.
    pub(crate) fn new(
        statement: Statement,
        keyspace: Option<String>,
        table: Option<&Table>,
        value_size: usize,
    ) -> Prepared {
        let markers = table
            .map(|t| markers::of(&statement, t))
            .unwrap_or_default();
        let read = match (&statement, table) {
            (Statement::Select(s), Some(t)) => Some(read_of(s, t, &markers, value_size)),
            _ => None,
        };
        let conditional = match &statement {
            Statement::Insert(i) => i.if_not_exists,
            Statement::Update(u) => u.conditions.is_some(),
            Statement::Delete(d) => d.conditions.is_some(),
            _ => false,
        };
        Prepared {
            statement,
            keyspace,
            markers,
            read,
            conditional,
        }
    }
}
