//! `CREATE MATERIALIZED VIEW` and `DROP MATERIALIZED VIEW` on the catalog, with the checks of
//! Cassandra 4.1's `CreateViewStatement`: a view is a table of its own whose primary key holds
//! every primary key column of its base and at most one other column, each restricted with
//! `IS NOT NULL` or otherwise (other columns only `IS NOT NULL`). Its rows are kept by the
//! executor (`crate::executor::views`), which keeps only base rows meeting those restrictions.

use std::collections::HashSet;
use std::sync::Arc;

use cql::ast::{
    AlterView, ColumnDef, CreateTable, CreateView, DropView, Expr, Literal, Operator, Relation,
};
use cql::response::SchemaChangeType;

use super::ddl::{
    build_table, catalog_snapshot_for_types, keyspace_of, table_change, user_keyspace, DdlOutcome,
};
use super::names::check_name;
use super::{Catalog, ColumnKind, Keyspace, ViewDef, ViewFilter};
use crate::error::QueryError;

fn invalid(message: impl Into<String>) -> QueryError {
    QueryError::invalid(message)
}

/// The views of `base` in `ks`.
pub(crate) fn views_of<'a>(ks: &'a Keyspace, base: &'a str) -> impl Iterator<Item = &'a str> {
    ks.tables.values().filter_map(move |t| {
        t.view
            .as_ref()
            .filter(|v| v.base_table == base)
            .map(|_| t.name.as_str())
    })
}

/// Cassandra's refusal to drop a table views still read from, and to drop a view as a table.
pub(super) fn check_table_drop(ks: &Keyspace, table: &str) -> Result<(), QueryError> {
    if ks.tables.get(table).is_some_and(|t| t.view.is_some()) {
        return Err(invalid(
            "Cannot use DROP TABLE on a materialized view. Please use DROP MATERIALIZED VIEW instead.",
        ));
    }
    let views: Vec<String> = views_of(ks, table)
        .map(|v| format!("{}.{v}", ks.name))
        .collect();
    if views.is_empty() {
        return Ok(());
    }
    Err(invalid(format!(
        "Cannot drop table when materialized views still depend on it ({})",
        views.join(", ")
    )))
}

/// A restriction of a view's WHERE clause on a base primary key column, its values checked
/// against the column's type.
fn view_filter(
    column: &str,
    op: Operator,
    value: &Expr,
    ty: &cql::types::DataType,
) -> Result<ViewFilter, QueryError> {
    let one = |e: &Expr| -> Result<Vec<u8>, QueryError> {
        match crate::executor::literal::literal_value(e, ty, column)? {
            Some(v) => Ok(v.to_bytes()),
            None => Err(invalid(format!("Invalid null value for column {column}"))),
        }
    };
    let (op, values) = match (op, value) {
        (Operator::In, Expr::List(items)) => {
            ("IN", items.iter().map(one).collect::<Result<Vec<_>, _>>()?)
        }
        (Operator::Eq, v) => ("=", vec![one(v)?]),
        (Operator::Lt, v) => ("<", vec![one(v)?]),
        (Operator::Le, v) => ("<=", vec![one(v)?]),
        (Operator::Gt, v) => (">", vec![one(v)?]),
        (Operator::Ge, v) => (">=", vec![one(v)?]),
        (op, _) => {
            return Err(invalid(format!(
                "ringdb does not restrict materialized views with {op} on {column}"
            )))
        }
    };
    Ok(ViewFilter {
        column: column.to_string(),
        op: op.to_string(),
        values,
    })
}

/// Applies `CREATE MATERIALIZED VIEW`.
pub(super) fn create_view(
    catalog: &mut Catalog,
    s: &CreateView,
    current: Option<&str>,
) -> Result<DdlOutcome, QueryError> {
    let mut out = DdlOutcome::default();
    let ks_name = keyspace_of(&s.name, current)?;
    let base_ks = match &s.base.keyspace {
        Some(k) => k.clone(),
        None => ks_name.clone(),
    };
    if base_ks != ks_name {
        return Err(invalid(
            "Cannot create a materialized view on a table in a different keyspace",
        ));
    }
    let snapshot = catalog_snapshot_for_types(catalog);
    let ks = user_keyspace(catalog, &ks_name)?;
    let Some(base) = ks.tables.get(&s.base.name).cloned() else {
        return Err(invalid(format!("table {} does not exist", s.base.name)));
    };
    if ks.tables.contains_key(&s.name.name) {
        if s.if_not_exists {
            return Ok(out);
        }
        return Err(QueryError::AlreadyExists {
            message: format!(
                "Cannot add already existing table \"{}\" to keyspace \"{ks_name}\"",
                s.name.name
            ),
            keyspace: ks_name,
            table: s.name.name.clone(),
        });
    }
    check_name("Materialized view", &s.name.name)?;
    if base.view.is_some() {
        return Err(invalid(
            "Materialized views cannot be created against other materialized views",
        ));
    }
    if base.is_counter() {
        return Err(invalid(
            "Materialized views are not supported on counter tables",
        ));
    }
    if s.options.compact_storage {
        return Err(invalid(
            "Cannot use 'COMPACT STORAGE' when defining a materialized view",
        ));
    }
    // The selected columns: all of the base's but statics for `*`.
    let mut selected: Vec<&super::Column> = Vec::new();
    if s.columns.is_empty() {
        selected.extend(base.columns.iter().filter(|c| c.kind != ColumnKind::Static));
    } else {
        for name in &s.columns {
            let Some(c) = base.column(name) else {
                return Err(invalid(format!(
                    "Unknown column name detected in CREATE MATERIALIZED VIEW statement: {name}"
                )));
            };
            if c.kind == ColumnKind::Static {
                return Err(invalid(format!(
                    "Cannot use static column {name} in materialized view {}",
                    s.name.name
                )));
            }
            selected.push(c);
        }
    }
    // The WHERE clause: `IS NOT NULL`, and restrictions on the base's primary key columns
    // (CreateViewStatement: other columns only `IS NOT NULL`).
    let mut not_null: HashSet<&str> = HashSet::new();
    let mut filters: Vec<ViewFilter> = Vec::new();
    let mut illegal: Vec<&str> = Vec::new();
    for r in &s.where_clause {
        match r {
            Relation::Simple {
                column,
                op: Operator::IsNot,
                value: Expr::Literal(Literal::Null),
            } => {
                if base.column(column).is_none() {
                    return Err(invalid(format!("Undefined column name {column}")));
                }
                not_null.insert(column.as_str());
            }
            Relation::Simple { column, op, value } => {
                let Some(c) = base.column(column) else {
                    return Err(invalid(format!("Undefined column name {column}")));
                };
                if !matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                    illegal.push(column.as_str());
                    continue;
                }
                filters.push(view_filter(column, *op, value, &c.data_type)?);
                not_null.insert(column.as_str());
            }
            other => {
                return Err(invalid(format!(
                    "ringdb restricts materialized views by IS NOT NULL and single primary key \
                     column relations only: {other}"
                )))
            }
        }
    }
    if !illegal.is_empty() {
        return Err(invalid(format!(
            "Non-primary key columns can only be restricted with 'IS NOT NULL' (got: {} \
             restricted illegally)",
            illegal.join(",")
        )));
    }
    // The view's primary key.
    let view_key: Vec<&String> = s.partition_key.iter().chain(&s.clustering_key).collect();
    let mut non_key: Option<&str> = None;
    let single_partition_key = base.partition_key().count() == 1;
    let mut unrestricted = Vec::new();
    for name in &view_key {
        let Some(c) = base.column(name) else {
            return Err(invalid(format!(
                "Unknown column name detected in CREATE MATERIALIZED VIEW statement: {name}"
            )));
        };
        let is_key = matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering);
        if c.kind == ColumnKind::Static {
            return Err(invalid(format!(
                "Cannot use static column {name} in materialized view {}",
                s.name.name
            )));
        }
        if !is_key {
            if let Some(first) = non_key {
                return Err(invalid(format!(
                    "Cannot include more than one non-primary key column in materialized view primary key (got {first}, {name})"
                )));
            }
            non_key = Some(name.as_str());
        }
        let implied = c.kind == ColumnKind::PartitionKey && single_partition_key;
        if !implied && !not_null.contains(name.as_str()) {
            unrestricted.push(name.as_str());
        }
        if !s.columns.is_empty() && !s.columns.contains(name) {
            selected.push(c);
        }
    }
    if !unrestricted.is_empty() {
        return Err(invalid(format!(
            "Primary key columns {} must be restricted with 'IS NOT NULL' or otherwise",
            unrestricted.join(", ")
        )));
    }
    let missing: Vec<&str> = base
        .columns
        .iter()
        .filter(|c| matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering))
        .filter(|c| !view_key.iter().any(|k| **k == c.name))
        .map(|c| c.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "Cannot create materialized view {} without primary key columns {} from base {}",
            s.name.name,
            missing.join(", "),
            base.name
        )));
    }
    // The view as a table: its columns in the base's order, with the base's types.
    let mut seen = HashSet::new();
    let columns: Vec<ColumnDef> = base
        .columns
        .iter()
        .filter(|c| selected.iter().any(|s| s.name == c.name))
        .filter(|c| seen.insert(c.name.clone()))
        .map(|c| ColumnDef {
            name: c.name.clone(),
            data_type: c.data_type.clone(),
            is_static: false,
            mask: None,
        })
        .collect();
    let as_table = CreateTable {
        name: s.name.clone(),
        if_not_exists: false,
        columns,
        partition_key: s.partition_key.clone(),
        clustering_key: s.clustering_key.clone(),
        options: s.options.clone(),
    };
    let mut table = build_table(&snapshot, &ks_name, &as_table)?;
    let where_clause = s
        .where_clause
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" AND ");
    table.view = Some(ViewDef {
        base_table: base.name.clone(),
        base_id: base.id,
        include_all_columns: s.columns.is_empty(),
        where_clause,
        filters,
    });
    let table = Arc::new(table);
    ks.tables.insert(s.name.name.clone(), table.clone());
    let mut with_view = (*base).clone();
    with_view.views.push(s.name.name.clone());
    ks.tables.insert(base.name.clone(), Arc::new(with_view));
    out.storage_tables.push(table);
    out.change = table_change(SchemaChangeType::Created, ks_name, s.name.name.clone());
    Ok(out)
}

/// Applies `ALTER MATERIALIZED VIEW ... WITH`: the view's table options, with Cassandra's
/// `AlterViewStatement` refusals.
pub(super) fn alter_view(
    catalog: &mut Catalog,
    s: &AlterView,
    current: Option<&str>,
) -> Result<DdlOutcome, QueryError> {
    let mut out = DdlOutcome::default();
    let ks_name = keyspace_of(&s.name, current)?;
    let ks = user_keyspace(catalog, &ks_name)?;
    let view = match ks.tables.get(&s.name.name) {
        Some(t) if t.view.is_some() => t.clone(),
        Some(_) => return Err(invalid("Cannot use ALTER MATERIALIZED VIEW on Table")),
        None if s.if_exists => return Ok(out),
        None => {
            return Err(invalid(format!(
                "Materialized view '{ks_name}.{}' doesn't exist",
                s.name.name
            )))
        }
    };
    let mut t = (*view).clone();
    t.params.apply(&s.properties)?;
    if t.params.default_time_to_live > 0 {
        return Err(invalid(
            "Cannot set or alter default_time_to_live for a materialized view. Data in a materialized view always expire at the same time than the corresponding data in the parent table.",
        ));
    }
    if t.params.gc_grace_seconds == 0 {
        return Err(invalid(
            "Cannot alter gc_grace_seconds of a materialized view to 0, since this value is used to TTL undelivered updates. Setting gc_grace_seconds too low might cause undelivered updates to expire before being replayed.",
        ));
    }
    let t = Arc::new(t);
    ks.tables.insert(t.name.clone(), t.clone());
    out.storage_tables.push(t);
    out.change = table_change(SchemaChangeType::Updated, ks_name, s.name.name.clone());
    Ok(out)
}

/// Applies `DROP MATERIALIZED VIEW`.
pub(super) fn drop_view(
    catalog: &mut Catalog,
    s: &DropView,
    current: Option<&str>,
) -> Result<DdlOutcome, QueryError> {
    let mut out = DdlOutcome::default();
    let ks_name = keyspace_of(&s.name, current)?;
    let ks = user_keyspace(catalog, &ks_name)?;
    match ks.tables.get(&s.name.name) {
        Some(t) if t.view.is_some() => {}
        Some(_) => {
            return Err(invalid(
                "Cannot use DROP MATERIALIZED VIEW on a table. Please use DROP TABLE instead.",
            ))
        }
        None if s.if_exists => return Ok(out),
        None => {
            return Err(invalid(format!(
                "Materialized view '{ks_name}.{}' doesn't exist",
                s.name.name
            )))
        }
    }
    if let Some(t) = ks.tables.remove(&s.name.name) {
        out.dropped_tables.push(t.id);
        let base = t
            .view
            .as_ref()
            .and_then(|v| ks.tables.get(&v.base_table))
            .cloned();
        if let Some(base) = base {
            let mut without = (*base).clone();
            without.views.retain(|v| *v != s.name.name);
            ks.tables.insert(base.name.clone(), Arc::new(without));
        }
    }
    out.change = table_change(SchemaChangeType::Dropped, ks_name, s.name.name.clone());
    Ok(out)
}
