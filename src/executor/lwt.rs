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
use crate::schema::{ColumnKind, Table};
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
    /// Serialized values per table column index (None = null).
    cells: Vec<Option<Bytes>>,
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
            ColumnKind::Clustering => clustering
                .get(c.position as usize)
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
    Ok(Current { exists, cells })
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
/// conditional batch): checks every condition, applies all writes only if all hold.
///
/// # Errors
/// InvalidRequest for statements spanning partitions or rows with IN.
pub fn execute(
    shards: &dyn Shards,
    plans: &[&ModifyPlan],
    values: &[&Values<'_>],
    timestamp: i64,
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
    let mut shown: Vec<(Vec<usize>, Current, bool)> = Vec::new();
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
            shown.push((cols, current, show_all));
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
    Ok(result(&table, applied, &shown, plans.len() > 1))
}

fn result(
    table: &Table,
    applied: bool,
    shown: &[(Vec<usize>, Current, bool)],
    batch: bool,
) -> Rows {
    let spec = |name: &str, ty: DataType| ColumnSpec {
        keyspace: table.keyspace.clone(),
        table: table.name.clone(),
        name: name.to_string(),
        data_type: ty,
    };
    let applied_cell = Some(Bytes::from_static(if applied { &[1] } else { &[0] }));
    let mut columns = vec![spec("[applied]", DataType::Native(NativeType::Boolean))];
    if applied || shown.iter().all(|(_, cur, _)| !cur.exists) {
        return Rows {
            metadata: ResultMetadata {
                columns: columns.into(),
                paging_state: None,
                no_metadata: false,
            },
            rows: vec![vec![applied_cell]],
        };
    }
    // Column indexes to show: all columns for EXISTS checks, else (batch: key columns +) condition columns.
    let mut idx: Vec<usize> = Vec::new();
    let show_all = shown.iter().any(|(_, _, all)| *all);
    if show_all {
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
        for (cols, _, _) in shown {
            for c in cols {
                if !idx.contains(c) {
                    idx.push(*c);
                }
            }
        }
    }
    for i in &idx {
        let c = &table.columns[*i];
        columns.push(spec(&c.name, c.data_type.clone()));
    }
    let rows = shown
        .iter()
        .filter(|(_, cur, _)| cur.exists)
        .map(|(_, cur, _)| {
            let mut row = vec![applied_cell.clone()];
            row.extend(idx.iter().map(|i| cur.cells[*i].clone()));
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
