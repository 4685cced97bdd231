//! The bind markers of a statement, in the order they appear in its text, each with the
//! name and type Cassandra gives it (a column's own, `[limit]`, `partition key token`, ...),
//! and which of them bind the partition key (the drivers route by them).

use crate::catalog::{Kind, Table};
use cql::ast::{Assignment, Conditions, DeleteTarget, Expr, Operator, Relation, Statement, Using};
use cql::response::result::ColumnSpec;
use cql::types::{DataType, NativeType};

/// A statement's markers and which of them bind the partition key, in key order.
#[derive(Debug, Default)]
pub(crate) struct Markers {
    /// Each marker's name and type.
    pub(crate) specs: Vec<ColumnSpec>,
    /// For each partition key column, the marker bound to it by `=` (all or none).
    pub(crate) pk_indexes: Vec<u16>,
}

/// Collects markers of one table's statement.
struct Collector<'t> {
    table: &'t Table,
    specs: Vec<ColumnSpec>,
    /// (partition key column, marker index) of `pk = ?`.
    key_markers: Vec<(String, u16)>,
}

fn native(t: NativeType) -> DataType {
    DataType::Native(t)
}

/// The element type of a collection (what `CONTAINS` compares with).
fn element_of(t: &DataType) -> DataType {
    match t.unfrozen() {
        DataType::List(e) | DataType::Set(e) => (**e).clone(),
        DataType::Map(_, v) => (**v).clone(),
        other => other.clone(),
    }
}

/// The key type of a map.
fn key_of(t: &DataType) -> DataType {
    match t.unfrozen() {
        DataType::Map(k, _) => (**k).clone(),
        other => other.clone(),
    }
}

impl Collector<'_> {
    fn column_type(&self, name: &str) -> DataType {
        self.table
            .column(name)
            .map_or(native(NativeType::Blob), |c| c.data_type.clone())
    }

    fn push(&mut self, name: Option<&str>, default_name: &str, data_type: DataType) {
        self.specs.push(ColumnSpec {
            keyspace: self.table.keyspace.clone(),
            table: self.table.name.clone(),
            name: name.unwrap_or(default_name).to_string(),
            data_type,
        });
    }

    /// The markers of `expr`, a value of type `data_type` named `name`.
    fn expr(&mut self, expr: &Expr, name: &str, data_type: &DataType) {
        match expr {
            Expr::BindMarker(named) => self.push(named.as_deref(), name, data_type.clone()),
            Expr::TypeHint { ty, expr } => self.expr(expr, name, ty),
            Expr::List(items) | Expr::Set(items) => {
                let element = element_of(data_type);
                for item in items {
                    self.expr(item, name, &element);
                }
            }
            Expr::Tuple(items) => {
                let types: Vec<DataType> = match data_type.unfrozen() {
                    DataType::Tuple(ts) => ts.clone(),
                    _ => Vec::new(),
                };
                for (i, item) in items.iter().enumerate() {
                    let t = types.get(i).cloned().unwrap_or(native(NativeType::Blob));
                    self.expr(item, name, &t);
                }
            }
            Expr::Map(entries) => {
                let (k, v) = (key_of(data_type), element_of(data_type));
                for (key, value) in entries {
                    self.expr(key, name, &k);
                    self.expr(value, name, &v);
                }
            }
            Expr::FunctionCall { args, .. } => {
                for arg in args {
                    self.expr(arg, name, &native(NativeType::Blob));
                }
            }
            _ => {}
        }
    }

    fn using(&mut self, using: &Using) {
        let ttl = using.ttl.as_ref().map(|e| (e, "[ttl]", NativeType::Int));
        let ts = using
            .timestamp
            .as_ref()
            .map(|e| (e, "[timestamp]", NativeType::Bigint));
        let order = if using.timestamp_first {
            [ts, ttl]
        } else {
            [ttl, ts]
        };
        for (expr, name, t) in order.into_iter().flatten() {
            self.expr(expr, name, &native(t));
        }
    }

    fn relation(&mut self, relation: &Relation) {
        match relation {
            Relation::Simple { column, op, value } => {
                let t = self.column_type(column);
                let at = self.specs.len();
                match op {
                    Operator::In => match value {
                        Expr::BindMarker(named) => {
                            let list = DataType::List(Box::new(t));
                            self.push(named.as_deref(), &format!("in({column})"), list);
                        }
                        other => self.expr(other, column, &DataType::List(Box::new(t))),
                    },
                    Operator::Contains => self.expr(value, column, &element_of(&t)),
                    Operator::ContainsKey => self.expr(value, column, &key_of(&t)),
                    _ => self.expr(value, column, &t),
                }
                let is_key = self
                    .table
                    .column(column)
                    .is_some_and(|c| c.kind == Kind::PartitionKey);
                if is_key
                    && *op == Operator::Eq
                    && matches!(value, Expr::BindMarker(_))
                    && self.specs.len() == at + 1
                {
                    self.key_markers.push((column.clone(), at as u16));
                }
            }
            Relation::MultiColumn { columns, value, .. } => {
                let types = columns.iter().map(|c| self.column_type(c)).collect();
                self.expr(value, "tuple", &DataType::Tuple(types));
            }
            Relation::Token { value, .. } => {
                self.expr(value, "partition key token", &native(NativeType::Bigint));
            }
            Relation::MapElement {
                column, key, value, ..
            } => {
                let t = self.column_type(column);
                self.expr(key, column, &key_of(&t));
                self.expr(value, column, &element_of(&t));
            }
        }
    }

    fn conditions(&mut self, conditions: Option<&Conditions>) {
        let Some(Conditions::List(list)) = conditions else {
            return;
        };
        for c in list {
            let column = match &c.target {
                DeleteTarget::Column(c)
                | DeleteTarget::Element(c, _)
                | DeleteTarget::Field(c, _) => c,
            };
            let t = self.column_type(column);
            self.expr(&c.value, column, &t);
        }
    }
}

/// The markers of `statement` on `table`.
pub(crate) fn of(statement: &Statement, table: &Table) -> Markers {
    let mut c = Collector {
        table,
        specs: Vec::new(),
        key_markers: Vec::new(),
    };
    match statement {
        Statement::Insert(i) => {
            if let cql::ast::InsertValues::Values(values) = &i.values {
                for (column, value) in i.columns.iter().zip(values) {
                    let t = c.column_type(column);
                    let at = c.specs.len();
                    c.expr(value, column, &t);
                    let is_key = table
                        .column(column)
                        .is_some_and(|col| col.kind == Kind::PartitionKey);
                    if is_key && matches!(value, Expr::BindMarker(_)) {
                        c.key_markers.push((column.clone(), at as u16));
                    }
                }
            }
            c.using(&i.using);
        }
        Statement::Update(u) => {
            c.using(&u.using);
            for a in &u.assignments {
                match a {
                    Assignment::Set { column, value }
                    | Assignment::Add { column, value }
                    | Assignment::Subtract { column, value }
                    | Assignment::Prepend { column, value } => {
                        let t = c.column_type(column);
                        c.expr(value, column, &t);
                    }
                    Assignment::SetElement { column, key, value } => {
                        let t = c.column_type(column);
                        c.expr(key, column, &key_of(&t));
                        c.expr(value, column, &element_of(&t));
                    }
                    Assignment::SetField { column, value, .. } => {
                        c.expr(value, column, &native(NativeType::Blob));
                    }
                }
            }
            for r in &u.where_clause {
                c.relation(r);
            }
            c.conditions(u.conditions.as_ref());
        }
        Statement::Delete(d) => {
            c.using(&d.using);
            for r in &d.where_clause {
                c.relation(r);
            }
            c.conditions(d.conditions.as_ref());
        }
        Statement::Select(s) => {
            for r in &s.where_clause {
                c.relation(r);
            }
            if let Some(limit) = &s.per_partition_limit {
                c.expr(limit, "[per_partition_limit]", &native(NativeType::Int));
            }
            if let Some(limit) = &s.limit {
                c.expr(limit, "[limit]", &native(NativeType::Int));
            }
        }
        _ => {}
    }
    let keys: Vec<u16> = table
        .partition_key()
        .filter_map(|k| {
            c.key_markers
                .iter()
                .find(|(name, _)| *name == k.name)
                .map(|(_, i)| *i)
        })
        .collect();
    let pk_indexes = if keys.len() == table.partition_key().count() {
        keys
    } else {
        Vec::new()
    };
    Markers {
        specs: c.specs,
        pk_indexes,
    }
}
