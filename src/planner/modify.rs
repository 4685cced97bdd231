//! Planning INSERT, UPDATE and DELETE against the table: columns and operations resolved, key
//! restrictions and IF conditions planned, markers numbered in statement order, Cassandra's
//! rules on USING checked. The executor's `modify` module binds a plan into mutations.

use crate::error::QueryError;
use crate::planner::conditions::{plan_conditions, PlannedConditions};
use crate::planner::restrictions::{KeyValues, Restrictions};
use crate::planner::terms::{Markers, Term};
use crate::schema::{ColumnKind, Table};
use cql::ast::{Assignment, Delete, DeleteTarget, Insert, InsertValues, Update, Using};
use cql::types::{DataType, NativeType, Value};
use std::sync::Arc;

/// What to do to one column.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// `c = v`.
    Set(Term),
    /// `c = c + v`: a counter increment or collection append.
    Add(Term),
    /// `c = c - v`: a counter decrement or collection removal.
    Subtract(Term),
    /// `c = v + c` on a list.
    Prepend(Term),
    /// `c[k] = v`.
    SetElement(Term, Term),
    /// `c.field = v`, by field position.
    SetField(usize, Term),
    /// DELETE c.
    Delete,
    /// DELETE c[k].
    DeleteElement(Term),
    /// DELETE c.field, by field position.
    DeleteField(usize),
}

/// A planned modification.
#[derive(Debug, Clone)]
pub struct ModifyPlan {
    /// The table written.
    pub(crate) table: Arc<Table>,
    /// The WHERE clause (or INSERT's key columns): which partitions and rows.
    pub(crate) keys: Restrictions,
    /// Operations on non-key columns (indexes into `table.columns`), in statement order.
    pub(crate) ops: Vec<(usize, Op)>,
    /// USING TTL.
    pub(crate) ttl: Option<Term>,
    /// USING TIMESTAMP.
    pub(crate) timestamp: Option<Term>,
    /// INSERT writes a row liveness marker; UPDATE does not.
    pub(crate) liveness: bool,
    /// DELETE without columns removes rows (or partitions, or ranges).
    pub(crate) delete_rows: bool,
    /// IF NOT EXISTS / IF EXISTS / IF conditions.
    pub(crate) conditions: Option<PlannedConditions>,
    /// INSERT JSON ?: the marker holding the JSON text, and DEFAULT UNSET.
    pub(crate) json: Option<(Term, bool)>,
}

/// Builds the plan of `INSERT INTO t JSON '<text>'`: every column named in the object is set,
/// the others are set to null unless DEFAULT UNSET. `INSERT JSON ?` calls it once its marker is
/// bound.
pub(crate) fn json_plan(
    table: &Arc<Table>,
    text: &str,
    default_unset: bool,
) -> Result<ModifyPlan, QueryError> {
    let parsed: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        QueryError::invalid(format!(
            "Could not decode JSON string as a map: {e}. (String was: {text})"
        ))
    })?;
    let serde_json::Value::Object(object) = parsed else {
        return Err(QueryError::invalid(format!(
            "Could not decode JSON string as a map: not an object. (String was: {text})"
        )));
    };
    let mut given: Vec<(usize, Option<Value>)> = Vec::new();
    for (k, v) in &object {
        let name = crate::executor::json::unquote_key(k);
        let i = table
            .columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| {
                QueryError::invalid(format!(
                    "JSON values map contains unrecognized column: {name}"
                ))
            })?;
        let col = &table.columns[i];
        given.push((
            i,
            crate::executor::json::from_json(v, &col.data_type, &col.name)?,
        ));
    }
    let mut pk: Vec<Option<KeyValues>> = vec![None; table.partition_key().count()];
    let mut ck: Vec<Option<KeyValues>> = vec![None; table.clustering().count()];
    let mut ops = Vec::new();
    for (i, col) in table.columns.iter().enumerate() {
        let v = given.iter().find(|(g, _)| *g == i).map(|(_, v)| v.clone());
        match col.kind {
            ColumnKind::PartitionKey | ColumnKind::Clustering => {
                let Some(Some(v)) = v else {
                    return Err(QueryError::invalid(format!(
                        "Invalid null value in condition for column {}",
                        col.name
                    )));
                };
                let slot = if col.kind == ColumnKind::PartitionKey {
                    &mut pk
                } else {
                    &mut ck
                };
                slot[col.position as usize] = Some(KeyValues::Eq(Term::Const(Some(v))));
            }
            _ => match v {
                Some(v) => ops.push((i, Op::Set(Term::Const(v)))),
                None if !default_unset => ops.push((i, Op::Set(Term::Const(None)))),
                None => {}
            },
        }
    }
    let keys = Restrictions {
        partition: Some(pk.into_iter().flatten().collect()),
        clustering_eq: ck.into_iter().flatten().collect(),
        ..Restrictions::default()
    };
    Ok(ModifyPlan {
        table: table.clone(),
        keys,
        ops,
        ttl: None,
        timestamp: None,
        liveness: true,
        delete_rows: false,
        conditions: None,
        json: None,
    })
}

/// Plans USING's TTL (`[ttl]`, int) and TIMESTAMP (`[timestamp]`, bigint), numbering their
/// markers in the order written, as Cassandra does: `USING TIMESTAMP ? AND TTL ?` binds the
/// timestamp first.
fn using_terms(
    using: &Using,
    table: &Table,
    markers: &mut Markers,
) -> Result<(Option<Term>, Option<Term>), QueryError> {
    let ttl_term = |markers: &mut Markers| {
        using
            .ttl
            .as_ref()
            .map(|e| {
                markers.term_named(
                    e,
                    &DataType::Native(NativeType::Int),
                    &table.keyspace,
                    &table.name,
                    "[ttl]",
                    "[ttl]",
                )
            })
            .transpose()
    };
    let ts_term = |markers: &mut Markers| {
        using
            .timestamp
            .as_ref()
            .map(|e| {
                markers.term_named(
                    e,
                    &DataType::Native(NativeType::Bigint),
                    &table.keyspace,
                    &table.name,
                    "[timestamp]",
                    "[timestamp]",
                )
            })
            .transpose()
    };
    if using.timestamp_first {
        let ts = ts_term(markers)?;
        Ok((ttl_term(markers)?, ts))
    } else {
        let ttl = ttl_term(markers)?;
        Ok((ttl, ts_term(markers)?))
    }
}

fn column_index(table: &Table, name: &str) -> Result<usize, QueryError> {
    table
        .columns
        .iter()
        .position(|c| c.name == name)
        .ok_or_else(|| QueryError::invalid(format!("Undefined column name {name}")))
}

fn element_types(ty: &DataType) -> Option<(DataType, DataType)> {
    match ty.unfrozen() {
        DataType::List(e) => Some((DataType::Native(NativeType::Int), (**e).clone())),
        DataType::Map(k, v) => Some(((**k).clone(), (**v).clone())),
        _ => None,
    }
}

impl ModifyPlan {
    /// Plans an INSERT.
    ///
    /// # Errors
    /// InvalidRequest with Cassandra's messages.
    pub fn insert(
        s: &Insert,
        table: Arc<Table>,
        markers: &mut Markers,
    ) -> Result<ModifyPlan, QueryError> {
        if table.is_counter() {
            return Err(QueryError::invalid(
                "INSERT statements are not allowed on counter tables, use UPDATE instead",
            ));
        }
        let values = match &s.values {
            InsertValues::Values(values) => values,
            InsertValues::Json(expr) => {
                let text_term = markers.term_named(
                    expr,
                    &DataType::Native(NativeType::Text),
                    &table.keyspace,
                    &table.name,
                    "[json]",
                    "[json]",
                )?;
                let (ttl, timestamp) = using_terms(&s.using, &table, markers)?;
                let conditions = s.if_not_exists.then_some(PlannedConditions::IfNotExists);
                return match text_term {
                    Term::Const(Some(Value::Text(json))) => {
                        let mut plan = json_plan(&table, &json, s.default_unset)?;
                        plan.ttl = ttl;
                        plan.timestamp = timestamp;
                        plan.conditions = conditions;
                        Ok(plan)
                    }
                    Term::Marker { .. } => Ok(ModifyPlan {
                        table,
                        keys: Restrictions::default(),
                        ops: Vec::new(),
                        ttl,
                        timestamp,
                        liveness: true,
                        delete_rows: false,
                        conditions,
                        json: Some((text_term, s.default_unset)),
                    }),
                    _ => Err(QueryError::invalid("Got null for INSERT JSON values")),
                };
            }
        };
        if values.len() != s.columns.len() {
            return Err(QueryError::invalid(format!(
                "Unmatched column names/values: {} columns, {} values",
                s.columns.len(),
                values.len()
            )));
        }
        let mut keys = Restrictions::default();
        let pk_len = table.partition_key().count();
        let ck_len = table.clustering().count();
        let mut pk: Vec<Option<KeyValues>> = vec![None; pk_len];
        let mut ck: Vec<Option<KeyValues>> = vec![None; ck_len];
        let mut ops = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (name, expr) in s.columns.iter().zip(values) {
            if !seen.insert(name.as_str()) {
                return Err(QueryError::invalid(format!(
                    "Multiple definitions found for column {name}"
                )));
            }
            let i = column_index(&table, name)?;
            let col = &table.columns[i];
            let term = markers.term(
                expr,
                &col.data_type,
                &table.keyspace,
                &table.name,
                &col.name,
            )?;
            match col.kind {
                ColumnKind::PartitionKey => pk[col.position as usize] = Some(KeyValues::Eq(term)),
                ColumnKind::Clustering => ck[col.position as usize] = Some(KeyValues::Eq(term)),
                _ => ops.push((i, Op::Set(term))),
            }
        }
        for (c, v) in table.partition_key().zip(&pk) {
            if v.is_none() {
                return Err(QueryError::invalid(format!(
                    "Some partition key parts are missing: {}",
                    c.name
                )));
            }
        }
        let static_only = !ops.is_empty()
            && ops
                .iter()
                .all(|(i, _)| table.columns[*i].kind == ColumnKind::Static)
            && ck.iter().all(Option::is_none);
        for (c, v) in table.clustering().zip(&ck) {
            if v.is_none() && !static_only {
                return Err(QueryError::invalid(format!(
                    "Some clustering keys are missing: {}",
                    c.name
                )));
            }
        }
        keys.partition = Some(pk.into_iter().flatten().collect());
        keys.clustering_eq = ck.into_iter().flatten().collect();
        let (ttl, timestamp) = using_terms(&s.using, &table, markers)?;
        ModifyPlan {
            table,
            keys,
            ops,
            ttl,
            timestamp,
            liveness: true,
            delete_rows: false,
            conditions: s.if_not_exists.then_some(PlannedConditions::IfNotExists),
            json: None,
        }
        .validated()
    }

    /// Plans an UPDATE.
    ///
    /// # Errors
    /// InvalidRequest with Cassandra's messages.
    pub fn update(
        s: &Update,
        table: Arc<Table>,
        markers: &mut Markers,
    ) -> Result<ModifyPlan, QueryError> {
        let (ttl, timestamp) = using_terms(&s.using, &table, markers)?;
        let (ks, tn) = (table.keyspace.clone(), table.name.clone());
        let mut ops = Vec::new();
        for a in &s.assignments {
            let (name, op) = match a {
                Assignment::Set { column, value } => {
                    let i = column_index(&table, column)?;
                    let col = &table.columns[i];
                    if col.data_type.is_counter() {
                        return Err(QueryError::invalid(format!("Cannot set the value of counter column {column} (counters can only be incremented/decremented, not set)")));
                    }
                    (
                        column,
                        Op::Set(markers.term(value, &col.data_type, &ks, &tn, column)?),
                    )
                }
                Assignment::Add { column, value } | Assignment::Subtract { column, value } => {
                    let i = column_index(&table, column)?;
                    let col = &table.columns[i];
                    let operand_type = match (col.data_type.unfrozen(), a) {
                        (DataType::Map(k, _), Assignment::Subtract { .. }) => {
                            DataType::Set(k.clone())
                        }
                        (t, _) if col.data_type.is_multi_cell() => t.clone(),
                        // Cassandra types the operand of `c = c + ?` as counter.
                        (DataType::Native(NativeType::Counter), _) => {
                            DataType::Native(NativeType::Counter)
                        }
                        _ => {
                            let sign = if matches!(a, Assignment::Add { .. }) {
                                "+"
                            } else {
                                "-"
                            };
                            let what = if col.data_type.is_collection() {
                                "frozen collection column"
                            } else {
                                "non counter column"
                            };
                            return Err(QueryError::invalid(format!(
                                "Invalid operation ({column} = {column} {sign} {value}) for {what} {column}"
                            )));
                        }
                    };
                    let term = markers.term(value, &operand_type, &ks, &tn, column)?;
                    (
                        column,
                        if matches!(a, Assignment::Add { .. }) {
                            Op::Add(term)
                        } else {
                            Op::Subtract(term)
                        },
                    )
                }
                Assignment::Prepend { column, value } => {
                    let i = column_index(&table, column)?;
                    let col = &table.columns[i];
                    if !matches!(col.data_type, DataType::List(_)) {
                        return Err(QueryError::invalid(format!("Invalid operation ({column} = ? + {column}) for non list column {column}")));
                    }
                    (
                        column,
                        Op::Prepend(markers.term(value, &col.data_type, &ks, &tn, column)?),
                    )
                }
                Assignment::SetElement { column, key, value } => {
                    let i = column_index(&table, column)?;
                    let col = &table.columns[i];
                    let Some((kt, vt)) =
                        element_types(&col.data_type).filter(|_| col.data_type.is_multi_cell())
                    else {
                        return Err(QueryError::invalid(format!("Invalid operation ({column}[?] = ?) for non-collection or frozen column {column}")));
                    };
                    let k = markers.term_named(
                        key,
                        &kt,
                        &ks,
                        &tn,
                        column,
                        &format!("key({column})"),
                    )?;
                    let v = markers.term_named(
                        value,
                        &vt,
                        &ks,
                        &tn,
                        column,
                        &format!("value({column})"),
                    )?;
                    (column, Op::SetElement(k, v))
                }
                Assignment::SetField {
                    column,
                    field,
                    value,
                } => {
                    let i = column_index(&table, column)?;
                    let col = &table.columns[i];
                    let DataType::Udt(u) = &col.data_type else {
                        let what = if matches!(col.data_type.unfrozen(), DataType::Udt(_)) {
                            "frozen UDT column"
                        } else {
                            "non-UDT column"
                        };
                        return Err(QueryError::invalid(format!(
                            "Invalid operation ({column}.{field} = {value}) for {what} {column}"
                        )));
                    };
                    let Some(fi) = u.fields.iter().position(|(n, _)| n == field) else {
                        return Err(QueryError::invalid(format!(
                            "UDT column {column} does not have a field named {field}"
                        )));
                    };
                    let ft = u.fields[fi].1.clone();
                    (
                        column,
                        Op::SetField(
                            fi,
                            markers.term(value, &ft, &ks, &tn, &format!("{column}.{field}"))?,
                        ),
                    )
                }
            };
            let i = column_index(&table, name)?;
            let col = &table.columns[i];
            if matches!(col.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                return Err(QueryError::invalid(format!(
                    "PRIMARY KEY part {name} found in SET part"
                )));
            }
            ops.push((i, op));
        }
        let keys = Restrictions::plan(&s.where_clause, &table, markers, false, false)?;
        let conditions = match &s.conditions {
            Some(c) => Some(plan_conditions(c, &table, markers)?),
            None => None,
        };
        let only_static = ops
            .iter()
            .all(|(i, _)| table.columns[*i].kind == ColumnKind::Static);
        if only_static && !ops.is_empty() && !keys.clustering_eq.is_empty() {
            return Err(QueryError::invalid(
                "Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns",
            ));
        }
        check_full_clustering(&table, &keys, only_static && keys.clustering_eq.is_empty())?;
        ModifyPlan {
            table,
            keys,
            ops,
            ttl,
            timestamp,
            liveness: false,
            delete_rows: false,
            conditions,
            json: None,
        }
        .validated()
    }

    /// Plans a DELETE.
    ///
    /// # Errors
    /// InvalidRequest with Cassandra's messages.
    pub fn delete(
        s: &Delete,
        table: Arc<Table>,
        markers: &mut Markers,
    ) -> Result<ModifyPlan, QueryError> {
        let (ks, tn) = (table.keyspace.clone(), table.name.clone());
        let mut ops = Vec::new();
        for target in &s.columns {
            let (name, op) = match target {
                DeleteTarget::Column(c) => (c, Op::Delete),
                DeleteTarget::Element(c, key) => {
                    let i = column_index(&table, c)?;
                    let col = &table.columns[i];
                    let Some((kt, _)) =
                        element_types(&col.data_type).filter(|_| col.data_type.is_multi_cell())
                    else {
                        return Err(QueryError::invalid(format!(
                            "Invalid operation ({c}[?]) for non-list/map or frozen column {c}"
                        )));
                    };
                    (
                        c,
                        Op::DeleteElement(markers.term_named(
                            key,
                            &kt,
                            &ks,
                            &tn,
                            c,
                            &format!("key({c})"),
                        )?),
                    )
                }
                DeleteTarget::Field(c, field) => {
                    let i = column_index(&table, c)?;
                    let DataType::Udt(u) = &table.columns[i].data_type else {
                        return Err(QueryError::invalid(format!(
                            "Invalid deletion operation for non-UDT column {c}"
                        )));
                    };
                    let Some(fi) = u.fields.iter().position(|(n, _)| n == field) else {
                        return Err(QueryError::invalid(format!(
                            "UDT column {c} does not have a field named {field}"
                        )));
                    };
                    (c, Op::DeleteField(fi))
                }
            };
            let i = column_index(&table, name)?;
            if matches!(
                table.columns[i].kind,
                ColumnKind::PartitionKey | ColumnKind::Clustering
            ) {
                return Err(QueryError::invalid(format!(
                    "Invalid identifier {name} for deletion (should not be a PRIMARY KEY part)"
                )));
            }
            ops.push((i, op));
        }
        if s.using.ttl.is_some() {
            return Err(QueryError::invalid(
                "TTL attribute is not allowed for DELETE statements",
            ));
        }
        let (_, timestamp) = using_terms(&s.using, &table, markers)?;
        let keys = Restrictions::plan(&s.where_clause, &table, markers, false, false)?;
        let conditions = match &s.conditions {
            Some(c) => Some(plan_conditions(c, &table, markers)?),
            None => None,
        };
        let delete_rows = ops.is_empty();
        if !delete_rows && keys.clustering_slice.is_some() {
            return Err(QueryError::invalid(
                "Range deletions are not supported for specific columns",
            ));
        }
        if !delete_rows {
            let only_static = ops
                .iter()
                .all(|(i, _)| table.columns[*i].kind == ColumnKind::Static);
            check_full_clustering(&table, &keys, only_static && keys.clustering_eq.is_empty())?;
        }
        ModifyPlan {
            table,
            keys,
            ops,
            ttl: None,
            timestamp,
            liveness: false,
            delete_rows,
            conditions,
            json: None,
        }
        .validated()
    }

    /// Cassandra's rules on USING with counters and conditions.
    fn validated(self) -> Result<ModifyPlan, QueryError> {
        if self.conditions.is_some() {
            if self.table.is_counter() {
                return Err(QueryError::invalid(
                    "Conditional updates are not supported on counter tables",
                ));
            }
            if self.timestamp.is_some() {
                return Err(QueryError::invalid(
                    "Cannot provide custom timestamp for conditional updates",
                ));
            }
        }
        if self.table.is_counter() {
            if self.ttl.is_some() {
                return Err(QueryError::invalid(
                    "Cannot provide custom TTL for counter updates",
                ));
            }
            if self.timestamp.is_some() && !self.delete_rows {
                return Err(QueryError::invalid(
                    "Cannot provide custom timestamp for counter updates",
                ));
            }
        }
        Ok(self)
    }

    /// True when the statement has its own USING TIMESTAMP.
    pub fn has_timestamp(&self) -> bool {
        self.timestamp.is_some()
    }

    /// The table written.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// The IF clause, for conditional statements.
    pub fn conditions(&self) -> Option<&PlannedConditions> {
        self.conditions.as_ref()
    }

    /// Marker indexes of the partition-key components, when each is bound by a plain marker.
    pub fn pk_indexes(&self) -> Vec<u16> {
        self.keys.pk_marker_indexes()
    }
}

fn check_full_clustering(
    table: &Table,
    keys: &Restrictions,
    only_static: bool,
) -> Result<(), QueryError> {
    let ck: Vec<_> = table.clustering().collect();
    if keys.clustering_slice.is_some() {
        return Err(QueryError::invalid(format!(
            "Slice restrictions are not supported on the clustering columns in UPDATE statements (column {})",
            ck.get(keys.eq_width()).map(|c| c.name.as_str()).unwrap_or("")
        )));
    }
    if keys.eq_width() < ck.len() && !only_static {
        return Err(QueryError::invalid(format!(
            "Some clustering keys are missing: {}",
            ck[keys.eq_width()].name
        )));
    }
    Ok(())
}
