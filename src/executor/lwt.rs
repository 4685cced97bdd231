//! Lightweight transactions on one node: a statement's or batch's IF NOT EXISTS, IF EXISTS and
//! IF conditions (planned in `planner::conditions`) checked and applied in one compare-and-set
//! on the partition's shard, answered with `[applied]` and, when not applied, the current values
//! (reference §7).

use crate::error::QueryError;
use crate::executor::column_bytes::serialize_column;
use crate::executor::order::compare_values;
use crate::executor::values::{Bound, Values};
use crate::planner::conditions::{PlannedCondition, PlannedConditions, Target};
use crate::planner::modify::ModifyPlan;
use crate::schema::table_id;
use crate::schema::{ClusteringOrder, ColumnKind, Table};
use crate::shard::{CasError, Shards};
use bytes::Bytes;
use cql::ast::Operator;
use cql::response::{ColumnSpec, ResultMetadata, Rows};
use cql::types::{DataType, NativeType, Value};
use std::cmp::Ordering;
use std::sync::Arc;
use storage::{ClusteringBound, Slice};

/// The current row a condition is checked against.
struct Current {
    exists: bool,
    /// The partition has static cells.
    has_static: bool,
    /// Serialized values per table column index (None = null).
    cells: Vec<Option<Bytes>>,
}

/// What one conditional statement checked, for the result of a rejected request.
struct Checked {
    /// The statement's clustering (empty: the static row, or the row of a table without
    /// clustering columns).
    clustering: Vec<Vec<u8>>,
    /// The condition columns (indexes into `table.columns`), in IF order.
    columns: Vec<usize>,
    /// The row read.
    current: Current,
    /// IF EXISTS / IF NOT EXISTS: the rejected result shows every column.
    all: bool,
}

fn read_current(
    shards: &dyn Shards,
    table: &Table,
    pk: &[Vec<u8>],
    clustering: &[Vec<u8>],
) -> Result<Current, QueryError> {
    let bound = if clustering.is_empty() {
        ClusteringBound::Unbounded
    } else {
        ClusteringBound::Inclusive(clustering.to_vec())
    };
    let read = shards.read(
        table_id(table),
        pk,
        &Slice {
            start: bound.clone(),
            end: bound,
            reversed: false,
            limit: Some(1),
            cursor: None,
        },
    )?;
    let row = read.rows.first();
    let has_clustering = table.clustering().next().is_some();
    let exists = row.is_some() || (!has_clustering && !read.static_cells.is_empty());
    let cells = table
        .columns
        .iter()
        .map(|c| match c.kind {
            ColumnKind::PartitionKey => pk
                .get(c.position as usize)
                .map(|b| Bytes::copy_from_slice(b)),
            // A static condition reads the partition's first row: its clustering is shown.
            ColumnKind::Clustering => clustering
                .get(c.position as usize)
                .or_else(|| row.and_then(|r| r.clustering.get(c.position as usize)))
                .map(|b| Bytes::copy_from_slice(b)),
            ColumnKind::Static => read
                .static_cells
                .get(&c.id)
                .and_then(|v| serialize_column(v, &c.data_type)),
            ColumnKind::Regular => row
                .and_then(|r| r.cells.get(&c.id))
                .and_then(|v| serialize_column(v, &c.data_type)),
        })
        .collect();
    Ok(Current {
        exists,
        has_static: !read.static_cells.is_empty(),
        cells,
    })
}

fn check(
    cond: &PlannedCondition,
    table: &Table,
    current: &Current,
    values: &Values<'_>,
) -> Result<bool, QueryError> {
    let col = &table.columns[cond.column];
    let whole = current.cells[cond.column]
        .as_ref()
        .and_then(|b| Value::decode(&col.data_type, b).ok());
    let (actual, ty): (Option<Value>, DataType) = match &cond.target {
        Target::Whole => (whole, col.data_type.clone()),
        Target::Element(k) => {
            let key = match values.bind(k)? {
                Bound::Value(v) => v,
                _ => {
                    return Err(QueryError::invalid(format!(
                        "Invalid null value for {} element access",
                        col.name
                    )))
                }
            };
            match (whole, col.data_type.unfrozen()) {
                (Some(Value::List(items)), DataType::List(e)) => {
                    let Value::Int(i) = key else {
                        return Err(QueryError::invalid("Invalid list index"));
                    };
                    (
                        usize::try_from(i).ok().and_then(|i| items.get(i).cloned()),
                        (**e).clone(),
                    )
                }
                (Some(Value::Map(entries)), DataType::Map(kt, vt)) => (
                    entries
                        .into_iter()
                        .find(|(k, _)| compare_values(k, &key, kt) == Ordering::Equal)
                        .map(|(_, v)| v),
                    (**vt).clone(),
                ),
                (_, DataType::List(e)) => (None, (**e).clone()),
                (_, DataType::Map(_, vt)) => (None, (**vt).clone()),
                (_, other) => (None, other.clone()),
            }
        }
        Target::Field(fi) => match (whole, col.data_type.unfrozen()) {
            (Some(Value::Udt(fields)), DataType::Udt(u)) => (
                fields.get(*fi).and_then(|(_, v)| v.clone()),
                u.fields[*fi].1.clone(),
            ),
            (_, DataType::Udt(u)) => (None, u.fields[*fi].1.clone()),
            (_, other) => (None, other.clone()),
        },
    };
    let mut operands: Vec<Option<Value>> = Vec::new();
    for t in &cond.values {
        match values.bind(t)? {
            Bound::Value(Value::List(items)) if cond.in_marker => {
                operands.extend(items.into_iter().map(Some))
            }
            Bound::Value(v) => operands.push(Some(v)),
            Bound::Null => operands.push(None),
            Bound::Unset => {
                return Err(QueryError::invalid(format!(
                    "Invalid 'unset' value in condition on {}",
                    col.name
                )))
            }
        }
    }
    let eq = |a: &Option<Value>, b: &Option<Value>| match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => compare_values(x, y, &ty) == Ordering::Equal,
        _ => false,
    };
    Ok(match cond.op {
        Operator::Eq => operands.first().is_some_and(|o| eq(&actual, o)),
        Operator::Ne => operands.first().is_some_and(|o| !eq(&actual, o)),
        Operator::In => operands.iter().any(|o| eq(&actual, o)),
        op => {
            let Some(Some(operand)) = operands.first() else {
                return Err(QueryError::invalid(format!(
                    "Invalid comparison with null for operator \"{op:?}\""
                )));
            };
            match actual {
                None => false,
                Some(a) => {
                    let o = compare_values(&a, operand, &ty);
                    match op {
                        Operator::Lt => o == Ordering::Less,
                        Operator::Le => o != Ordering::Greater,
                        Operator::Gt => o == Ordering::Greater,
                        Operator::Ge => o != Ordering::Less,
                        _ => false,
                    }
                }
            }
        }
    })
}

/// Runs conditional statements that all address one partition (a single statement, or a
/// conditional batch: `batch`, even of one statement): checks every condition, applies all
/// writes only if all hold.
///
/// # Errors
/// InvalidRequest for statements spanning partitions or rows with IN.
pub fn execute(
    shards: &dyn Shards,
    plans: &[&ModifyPlan],
    values: &[&Values<'_>],
    timestamp: i64,
    batch: bool,
) -> Result<Rows, QueryError> {
    let first = plans
        .first()
        .ok_or_else(|| QueryError::invalid("Empty conditional batch"))?;
    let table: Arc<Table> = first.table().clone();
    // Every statement must target the same single partition.
    let mut partition: Option<Vec<Vec<u8>>> = None;
    let mut rows_checked: Vec<(usize, Vec<Vec<u8>>)> = Vec::new();
    for (i, (plan, vals)) in plans.iter().zip(values).enumerate() {
        if plan.table().id != table.id {
            return Err(QueryError::invalid(
                "Batch with conditions cannot span multiple tables",
            ));
        }
        let (pks, clusterings) = plan.bound_keys(vals)?;
        if pks.len() != 1 {
            return Err(QueryError::invalid(
                "IN on the partition key is not supported with conditional updates",
            ));
        }
        if clusterings.len() > 1 {
            return Err(QueryError::invalid(
                "IN on the clustering key columns is not supported with conditional updates",
            ));
        }
        let pk = pks.into_iter().next().unwrap_or_default();
        match &partition {
            Some(p) if *p != pk => {
                return Err(QueryError::invalid(
                    "Batch with conditions cannot span multiple partitions",
                ))
            }
            _ => partition = Some(pk),
        }
        if plan.conditions().is_some() {
            rows_checked.push((i, clusterings.into_iter().next().unwrap_or_default()));
        }
    }
    let pk = partition.unwrap_or_default();
    let mut applied = true;
    let mut shown: Vec<Checked> = Vec::new();
    let mut decide = |shards: &dyn Shards| -> Result<Option<storage::Mutation>, QueryError> {
        applied = true;
        shown.clear();
        for (i, clustering) in &rows_checked {
            let plan = plans[*i];
            let current = read_current(shards, &table, &pk, clustering)?;
            let (ok, show_all, cols) = match plan.conditions() {
                Some(PlannedConditions::IfNotExists) => (!current.exists, true, Vec::new()),
                Some(PlannedConditions::IfExists) => (current.exists, true, Vec::new()),
                Some(PlannedConditions::List(conds)) => {
                    let mut ok = true;
                    let mut cols: Vec<usize> = Vec::new();
                    for c in conds {
                        if !check(c, &table, &current, values[*i])? {
                            ok = false;
                        }
                        if !cols.contains(&c.column) {
                            cols.push(c.column);
                        }
                    }
                    (ok, false, cols)
                }
                None => (true, false, Vec::new()),
            };
            if !ok {
                applied = false;
            }
            shown.push(Checked {
                clustering: clustering.clone(),
                columns: cols,
                current,
                all: show_all,
            });
        }
        if !applied {
            return Ok(None);
        }
        let mut merged: Option<storage::Mutation> = None;
        for (plan, vals) in plans.iter().zip(values) {
            for m in plan.mutations(vals, Some(timestamp), shards)? {
                match merged.as_mut() {
                    None => merged = Some(m),
                    Some(into) => {
                        into.partition_deletion = into.partition_deletion.or(m.partition_deletion);
                        into.range_deletions.extend(m.range_deletions);
                        into.static_columns.extend(m.static_columns);
                        into.rows.extend(m.rows);
                    }
                }
            }
        }
        Ok(merged)
    };
    match shards.compare_and_set(table_id(&table), &pk, &mut decide) {
        Ok(_) => {}
        Err(CasError::Decide(e)) => return Err(e),
        Err(CasError::Apply(e)) => return Err(crate::schema::write_error(e, &table, &pk)),
    }
    Ok(result(&table, applied, &shown, batch))
}

/// Orders two clusterings of `table` as Cassandra's clustering comparator does (DESC columns
/// reversed); a shorter prefix sorts first.
fn compare_clustering(table: &Table, a: &[Vec<u8>], b: &[Vec<u8>]) -> Ordering {
    for ((x, y), col) in a.iter().zip(b).zip(table.clustering()) {
        let o = match (
            Value::decode(&col.data_type, x),
            Value::decode(&col.data_type, y),
        ) {
            (Ok(xv), Ok(yv)) => compare_values(&xv, &yv, &col.data_type),
            _ => x.cmp(y),
        };
        let o = if col.order == ClusteringOrder::Desc {
            o.reverse()
        } else {
            o
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// The rows a rejected request shows, as Cassandra's CAS read returns them: one per distinct
/// row the conditions name (statements on the same row share it), existing rows only, in
/// clustering order. A static condition names the static row, shown (as the partition's first
/// row) only when no regular row is named; when no named row exists but the partition has
/// static cells read for the conditions, one row of the partition key and statics is shown.
fn shown_rows(table: &Table, checked: &[Checked]) -> Vec<Vec<Option<Bytes>>> {
    let has_clustering = table.clustering().next().is_some();
    let mut named: Vec<&Checked> = Vec::new();
    for c in checked {
        if !named.iter().any(|n| n.clustering == c.clustering) {
            named.push(c);
        }
    }
    let regular_named = has_clustering && named.iter().any(|n| !n.clustering.is_empty());
    if regular_named {
        named.retain(|n| !n.clustering.is_empty());
    }
    named.sort_by(|a, b| compare_clustering(table, &a.clustering, &b.clustering));
    let existing: Vec<Vec<Option<Bytes>>> = named
        .iter()
        .filter(|n| n.current.exists)
        .map(|n| n.current.cells.clone())
        .collect();
    if !existing.is_empty() || !has_clustering {
        return existing;
    }
    // Static cells are read when a condition is on a static column, or every column is shown.
    let statics_read = checked.iter().any(|c| {
        c.all
            || c.columns
                .iter()
                .any(|&i| table.columns[i].kind == ColumnKind::Static)
    });
    match named.first() {
        Some(n) if statics_read && n.current.has_static => vec![table
            .columns
            .iter()
            .zip(&n.current.cells)
            .map(|(col, cell)| match col.kind {
                ColumnKind::PartitionKey | ColumnKind::Static => cell.clone(),
                ColumnKind::Clustering | ColumnKind::Regular => None,
            })
            .collect()],
        _ => Vec::new(),
    }
}

/// The answer: `[applied]`, and when rejected the rows of [`shown_rows`] with every column
/// (any IF EXISTS / IF NOT EXISTS) or, for a batch, the primary key columns and then the
/// condition columns in IF order (a single statement: the condition columns alone).
fn result(table: &Table, applied: bool, checked: &[Checked], batch: bool) -> Rows {
    let spec = |name: &str, ty: DataType| ColumnSpec {
        keyspace: table.keyspace.clone(),
        table: table.name.clone(),
        name: name.to_string(),
        data_type: ty,
    };
    let applied_cell = Some(Bytes::from_static(if applied { &[1] } else { &[0] }));
    let mut columns = vec![spec("[applied]", DataType::Native(NativeType::Boolean))];
    let shown = if applied {
        Vec::new()
    } else {
        shown_rows(table, checked)
    };
    if shown.is_empty() {
        return Rows {
            metadata: ResultMetadata {
                columns: columns.into(),
                paging_state: None,
                no_metadata: false,
            },
            rows: vec![vec![applied_cell]],
        };
    }
    let mut idx: Vec<usize> = Vec::new();
    if checked.iter().any(|c| c.all) {
        for c in table.select_star_order() {
            if let Some(i) = table.columns.iter().position(|x| x.name == c.name) {
                idx.push(i);
            }
        }
    } else {
        if batch {
            for c in table.partition_key().chain(table.clustering()) {
                if let Some(i) = table.columns.iter().position(|x| x.name == c.name) {
                    idx.push(i);
                }
            }
        }
        for c in checked {
            for i in &c.columns {
                if !idx.contains(i) {
                    idx.push(*i);
                }
            }
        }
    }
    for i in &idx {
        let c = &table.columns[*i];
        columns.push(spec(&c.name, c.data_type.clone()));
    }
    let rows = shown
        .into_iter()
        .map(|cells| {
            let mut row = vec![applied_cell.clone()];
            row.extend(idx.iter().map(|i| cells[*i].clone()));
            row
        })
        .collect();
    Rows {
        metadata: ResultMetadata {
            columns: columns.into(),
            paging_state: None,
            no_metadata: false,
        },
        rows,
    }
}
