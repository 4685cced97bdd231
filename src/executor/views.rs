//! Materialized views kept in step with their base table. A write to a table with views
//! reads the rows it touches before and after it is applied, and writes each view's rows
//! that change: the old view row is deleted when the view's key moved, the new one is
//! written with the base row's values (Cassandra's `ViewUpdateGenerator`, here as a
//! read-before-write on the coordinator). `CREATE MATERIALIZED VIEW` fills a new view from
//! the base's rows.
//!
//! Conditional (LWT) writes are watched the same way ([`around_conditional`]). Views are kept
//! on a best-effort basis, as Cassandra warns: two writes racing on one base row may leave a
//! view row behind.

use std::collections::BTreeMap;
use std::sync::Arc;

use storage::{
    ClusteringBound, ColumnOp, ColumnValue, ColumnWrite, Deletion, Liveness, Mutation, Row,
    RowWrite, Slice, TokenRange,
};

use crate::error::QueryError;
use crate::executor::values::Values;
use crate::node::Node;
use crate::planner::modify::ModifyPlan;
use crate::schema::{self, Catalog, ColumnKind, Table};
use crate::shard::Shards;

/// The warning Cassandra gives every `CREATE MATERIALIZED VIEW`.
pub(crate) const EXPERIMENTAL: &str =
    "Materialized views are experimental and are not recommended for production use.";

/// Cassandra's refusal when the setting is off.
pub(crate) fn check_enabled(node: &Node) -> Result<(), QueryError> {
    if node.config().materialized_views_enabled {
        Ok(())
    } else {
        Err(QueryError::invalid(
            "Materialized views are disabled. Enable in cassandra.yaml to use.",
        ))
    }
}

/// Cassandra's refusal of a write naming a view.
pub(crate) fn check_writable(table: &Table) -> Result<(), QueryError> {
    match &table.view {
        Some(_) => Err(QueryError::invalid(format!(
            "Cannot directly modify a materialized view {}.{}",
            table.keyspace, table.name
        ))),
        None => Ok(()),
    }
}

/// One base row's values by base column name: key columns and regular cells.
type BaseRow = BTreeMap<String, ColumnValue>;

fn simple(value: Vec<u8>) -> ColumnValue {
    ColumnValue::Simple(storage::CellValue {
        value,
        timestamp: 0,
        ttl: None,
    })
}

/// The values of `row` of the partition `key` of `base`, by column name.
fn base_row(base: &Table, key: &[Vec<u8>], row: &Row) -> BaseRow {
    let mut out = BaseRow::new();
    for (c, v) in base.partition_key().zip(key) {
        out.insert(c.name.clone(), simple(v.clone()));
    }
    for (c, v) in base.clustering().zip(&row.clustering) {
        out.insert(c.name.clone(), simple(v.clone()));
    }
    for c in &base.columns {
        if matches!(c.kind, ColumnKind::Regular) {
            if let Some(v) = row.cells.get(&c.id) {
                out.insert(c.name.clone(), v.clone());
            }
        }
    }
    out
}

fn key_bytes(v: &ColumnValue) -> Option<Vec<u8>> {
    match v {
        ColumnValue::Simple(c) => Some(c.value.clone()),
        ColumnValue::Collection(_) => None,
    }
}

/// A view row's key: (partition key components, clustering values).
type ViewKey = (Vec<Vec<u8>>, Vec<Vec<u8>>);

/// True when a base row meets the view's restrictions on the base's key columns.
fn passes(view: &Table, row: &BaseRow) -> bool {
    let Some(def) = &view.view else {
        return true;
    };
    def.filters.iter().all(|f| {
        let Some(ty) = view.column(&f.column).map(|c| &c.data_type) else {
            return false;
        };
        let Some(cell) = row.get(&f.column).and_then(key_bytes) else {
            return false;
        };
        let Ok(cell) = cql::types::Value::decode(ty, &cell) else {
            return false;
        };
        let cmp = |v: &Vec<u8>| {
            cql::types::Value::decode(ty, v)
                .ok()
                .map(|v| super::order::compare_values(&cell, &v, ty))
        };
        let first = f.values.first().and_then(cmp);
        match f.op.as_str() {
            "IN" => f
                .values
                .iter()
                .any(|v| cmp(v) == Some(std::cmp::Ordering::Equal)),
            "=" => first == Some(std::cmp::Ordering::Equal),
            "<" => first == Some(std::cmp::Ordering::Less),
            "<=" => first.is_some_and(|o| o != std::cmp::Ordering::Greater),
            ">" => first == Some(std::cmp::Ordering::Greater),
            ">=" => first.is_some_and(|o| o != std::cmp::Ordering::Less),
            _ => false,
        }
    })
}

/// The view's key of a base row; `None` when a key column is null or the row does not meet
/// the view's WHERE clause.
fn view_key(view: &Table, row: &BaseRow) -> Option<ViewKey> {
    if !passes(view, row) {
        return None;
    }
    let pk = view
        .partition_key()
        .map(|c| row.get(&c.name).and_then(key_bytes))
        .collect::<Option<Vec<_>>>()?;
    let ck = view
        .clustering()
        .map(|c| row.get(&c.name).and_then(key_bytes))
        .collect::<Option<Vec<_>>>()?;
    Some((pk, ck))
}

/// The view row a base row makes, written at `ts` (with `ttl`).
fn upsert(view: &Table, row: &BaseRow, ts: i64, ttl: Option<u32>) -> Option<Mutation> {
    let (partition_key, clustering) = view_key(view, row)?;
    let mut columns = Vec::new();
    for c in view
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Regular)
    {
        match row.get(&c.name) {
            Some(ColumnValue::Simple(cell)) => columns.push(ColumnWrite {
                column: c.id,
                op: ColumnOp::Set {
                    value: cell.value.clone(),
                    timestamp: ts,
                    ttl,
                },
            }),
            Some(ColumnValue::Collection(elements)) => {
                // The old elements go first (just below the new ones' timestamp).
                columns.push(ColumnWrite {
                    column: c.id,
                    op: ColumnOp::DeleteCollection { timestamp: ts - 1 },
                });
                for (key, cell) in elements {
                    columns.push(ColumnWrite {
                        column: c.id,
                        op: ColumnOp::SetElement {
                            key: key.clone(),
                            value: cell.value.clone(),
                            timestamp: ts,
                            ttl,
                        },
                    });
                }
            }
            None => columns.push(ColumnWrite {
                column: c.id,
                op: ColumnOp::Delete { timestamp: ts },
            }),
        }
    }
    Some(Mutation {
        partition_key,
        rows: vec![RowWrite {
            clustering,
            liveness: Some(Liveness { timestamp: ts, ttl }),
            deletion: None,
            columns,
        }],
        ..Mutation::default()
    })
}

/// The deletion of the view row a base row made.
fn delete(view: &Table, row: &BaseRow, ts: i64) -> Option<Mutation> {
    let (partition_key, clustering) = view_key(view, row)?;
    Some(Mutation {
        partition_key,
        rows: vec![RowWrite {
            clustering,
            liveness: None,
            deletion: Some(Deletion { timestamp: ts }),
            columns: Vec::new(),
        }],
        ..Mutation::default()
    })
}

/// The newest timestamp and the TTL a base mutation writes with.
fn timestamp_of(m: &Mutation) -> (i64, Option<u32>) {
    let mut ts = i64::MIN;
    let mut ttl = None;
    if let Some(d) = m.partition_deletion {
        ts = ts.max(d.timestamp);
    }
    for r in &m.range_deletions {
        ts = ts.max(r.deletion.timestamp);
    }
    for r in &m.rows {
        if let Some(l) = r.liveness {
            ts = ts.max(l.timestamp);
            ttl = ttl.or(l.ttl.filter(|t| *t > 0));
        }
        if let Some(d) = r.deletion {
            ts = ts.max(d.timestamp);
        }
        for c in &r.columns {
            let (t, cell_ttl) = match &c.op {
                ColumnOp::Set { timestamp, ttl, .. }
                | ColumnOp::SetElement { timestamp, ttl, .. } => (*timestamp, *ttl),
                ColumnOp::Delete { timestamp }
                | ColumnOp::DeleteCollection { timestamp }
                | ColumnOp::DeleteElement { timestamp, .. }
                | ColumnOp::AddCounter { timestamp, .. } => (*timestamp, None),
            };
            ts = ts.max(t);
            ttl = ttl.or(cell_ttl.filter(|t| *t > 0));
        }
    }
    (ts, ttl)
}

/// The rows of the partition `m` writes that it may change, read now, by clustering.
fn touched_rows(
    shards: &dyn Shards,
    base: &Table,
    m: &Mutation,
) -> Result<BTreeMap<Vec<Vec<u8>>, BaseRow>, QueryError> {
    let id = schema::table_id(base);
    let mut slices = Vec::new();
    if m.partition_deletion.is_some() || !m.range_deletions.is_empty() {
        slices.push(Slice {
            start: ClusteringBound::Unbounded,
            end: ClusteringBound::Unbounded,
            reversed: false,
            limit: None,
            cursor: None,
        });
    } else {
        for r in &m.rows {
            slices.push(Slice {
                start: ClusteringBound::Inclusive(r.clustering.clone()),
                end: ClusteringBound::Inclusive(r.clustering.clone()),
                reversed: false,
                limit: None,
                cursor: None,
            });
        }
    }
    let mut rows = BTreeMap::new();
    for slice in &slices {
        let read = shards.read(id, &m.partition_key, slice)?;
        for row in &read.rows {
            rows.insert(
                row.clustering.clone(),
                base_row(base, &m.partition_key, row),
            );
        }
    }
    Ok(rows)
}

/// The views' writes for one base partition's rows `before` and `after` a write at `ts`.
fn view_writes(
    views: &[Arc<Table>],
    before: &BTreeMap<Vec<Vec<u8>>, BaseRow>,
    after: &BTreeMap<Vec<Vec<u8>>, BaseRow>,
    ts: i64,
    ttl: Option<u32>,
) -> Vec<(Arc<Table>, Mutation)> {
    let mut out = Vec::new();
    for view in views {
        for (clustering, old) in before {
            let new = after.get(clustering);
            let moved = match new {
                Some(new) => view_key(view, old) != view_key(view, new),
                None => true,
            };
            if moved {
                out.extend(delete(view, old, ts).map(|m| (view.clone(), m)));
            }
        }
        for new in after.values() {
            out.extend(upsert(view, new, ts, ttl).map(|m| (view.clone(), m)));
        }
    }
    out
}

/// The views of `table` in `catalog`.
fn views_of(catalog: &Catalog, table: &Table) -> Vec<Arc<Table>> {
    table
        .views
        .iter()
        .filter_map(|v| catalog.table(&table.keyspace, v).cloned())
        .collect()
}

/// Applies `writes` ([`super::apply`]) and keeps the views of their tables in step.
///
/// # Errors
/// The base write's error, or a view write's.
pub(crate) fn apply(
    shards: &dyn Shards,
    catalog: &Catalog,
    writes: Vec<(Arc<Table>, Mutation)>,
) -> Result<(), QueryError> {
    if writes.iter().all(|(t, _)| t.views.is_empty()) {
        return super::apply(shards, writes);
    }
    let mut watched = Vec::new();
    for (table, m) in &writes {
        let views = views_of(catalog, table);
        if views.is_empty() {
            continue;
        }
        let before = touched_rows(shards, table, m)?;
        watched.push((table.clone(), m.clone(), views, before));
    }
    super::apply(shards, writes)?;
    let mut view_updates = Vec::new();
    for (table, m, views, before) in watched {
        let after = touched_rows(shards, &table, &m)?;
        let (ts, ttl) = timestamp_of(&m);
        view_updates.extend(view_writes(&views, &before, &after, ts, ttl));
    }
    if view_updates.is_empty() {
        return Ok(());
    }
    super::apply(shards, view_updates)
}

/// Runs the conditional write `run` of `plans` (bound to `values`, at `ts`) and keeps the
/// views of their tables in step: the rows each statement's write would touch are read
/// before and after it (a condition that failed changes none of them). A statement on a view
/// is refused.
///
/// # Errors
/// `run`'s error, a read's, or a view write's.
pub(crate) fn around_conditional<R>(
    shards: &dyn Shards,
    catalog: &Catalog,
    plans: &[&ModifyPlan],
    values: &[&Values<'_>],
    ts: i64,
    run: impl FnOnce() -> Result<R, QueryError>,
) -> Result<R, QueryError> {
    let mut watched = Vec::new();
    for (plan, v) in plans.iter().zip(values) {
        check_writable(plan.table())?;
        let views = views_of(catalog, plan.table());
        if views.is_empty() {
            continue;
        }
        for m in plan.mutations(v, Some(ts), shards)? {
            let before = touched_rows(shards, plan.table(), &m)?;
            watched.push((plan.table().clone(), m, views.clone(), before));
        }
    }
    let result = run()?;
    let mut updates = Vec::new();
    for (table, m, views, before) in watched {
        let after = touched_rows(shards, &table, &m)?;
        let (ts, ttl) = timestamp_of(&m);
        updates.extend(view_writes(&views, &before, &after, ts, ttl));
    }
    if !updates.is_empty() {
        super::apply(shards, updates)?;
    }
    Ok(result)
}

/// Fills the new view `view` from every row of its base.
///
/// # Errors
/// A read of the base or a write of the view that failed.
pub(crate) fn build(
    shards: &dyn Shards,
    base: &Table,
    view: &Arc<Table>,
) -> Result<(), QueryError> {
    let ts = super::clock::next_timestamp();
    let id = schema::table_id(base);
    let mut cursor = None;
    loop {
        let page = shards.scan(id, TokenRange::FULL, 1000, cursor.as_ref())?;
        let mut writes = Vec::new();
        for p in &page.partitions {
            for row in &p.rows {
                let base_row = base_row(base, &p.partition_key, row);
                writes.extend(upsert(view, &base_row, ts, None).map(|m| (view.clone(), m)));
            }
        }
        if !writes.is_empty() {
            super::apply(shards, writes)?;
        }
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(()),
        }
    }
}
