//! INSERT, UPDATE and DELETE: planned against the table (markers in statement order), then
//! bound into one storage `Mutation` per partition, applied atomically per partition.

use crate::error::QueryError;
use crate::executor::clock;
use crate::executor::keys::{
    bind_partition_keys, bind_prefixes, bind_slice, storage_bounds, too_long, KeyBytes, SliceBounds,
};
use crate::executor::values::{Bound, BoundBytes, Values};
use crate::planner::conditions::{plan_conditions, PlannedConditions};
use crate::planner::restrictions::{KeyValues, Restrictions};
use crate::planner::terms::{Markers, Term};
use crate::schema::MAX_TTL;
use crate::schema::{ColumnKind, Table};
use crate::shard::Shards;
use cql::ast::{Assignment, Delete, DeleteTarget, Insert, InsertValues, Update, Using};
use cql::types::{DataType, NativeType, Value};
use std::sync::Arc;
use storage::{ColumnOp, ColumnWrite, Deletion, Liveness, Mutation, RangeDeletion, RowWrite};

/// A collection element: (element key, serialized value).
type ElementCell = (Vec<u8>, Vec<u8>);

/// What to do to one column.
#[derive(Debug, Clone)]
enum Op {
    Set(Term),
    Add(Term),
    Subtract(Term),
    Prepend(Term),
    SetElement(Term, Term),
    SetField(usize, Term),
    Delete,
    DeleteElement(Term),
    DeleteField(usize),
}

/// A planned modification.
#[derive(Debug, Clone)]
pub struct ModifyPlan {
    table: Arc<Table>,
    keys: Restrictions,
    ops: Vec<(usize, Op)>,
    ttl: Option<Term>,
    timestamp: Option<Term>,
    /// INSERT writes a row liveness marker; UPDATE does not.
    liveness: bool,
    /// DELETE without columns removes rows (or partitions, or ranges).
    delete_rows: bool,
    /// IF NOT EXISTS / IF EXISTS / IF conditions.
    conditions: Option<PlannedConditions>,
    /// INSERT JSON ?: the marker holding the JSON text, and DEFAULT UNSET.
    json: Option<(Term, bool)>,
}

/// Builds the plan of `INSERT INTO t JSON '<text>'`: every column named in the object is set,
/// the others are set to null unless DEFAULT UNSET.
fn json_plan(
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

fn using_terms(
    using: &Using,
    table: &Table,
    markers: &mut Markers,
) -> Result<(Option<Term>, Option<Term>), QueryError> {
    // Markers in USING come in the order written; TTL and TIMESTAMP may appear in either order,
    // but the AST keeps one of each, so number them in the order Cassandra's grammar reads
    // them most often (TTL first) unless only one is present.
    let ttl = match &using.ttl {
        Some(e) => Some(markers.term_named(
            e,
            &DataType::Native(NativeType::Int),
            &table.keyspace,
            &table.name,
            "[ttl]",
            "[ttl]",
        )?),
        None => None,
    };
    let ts = match &using.timestamp {
        Some(e) => Some(markers.term_named(
            e,
            &DataType::Native(NativeType::Bigint),
            &table.keyspace,
            &table.name,
            "[timestamp]",
            "[timestamp]",
        )?),
        None => None,
    };
    Ok((ttl, ts))
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

    /// For `INSERT JSON ?`: the plan with the bound JSON text applied.
    fn resolve_json(&self, values: &Values<'_>) -> Result<Option<ModifyPlan>, QueryError> {
        let Some((term, default_unset)) = &self.json else {
            return Ok(None);
        };
        let text = match values.bind(term)? {
            Bound::Value(Value::Text(t)) => t,
            _ => return Err(QueryError::invalid("Got null for INSERT JSON values")),
        };
        let mut plan = json_plan(&self.table, &text, *default_unset)?;
        plan.ttl = self.ttl.clone();
        plan.timestamp = self.timestamp.clone();
        plan.conditions = self.conditions.clone();
        Ok(Some(plan))
    }

    /// The IF clause, for conditional statements.
    pub fn conditions(&self) -> Option<&PlannedConditions> {
        self.conditions.as_ref()
    }

    /// The bound partition keys and clustering prefixes (IN expanded).
    ///
    /// # Errors
    /// InvalidRequest for null or unset key values.
    pub fn bound_keys(
        &self,
        values: &Values<'_>,
    ) -> Result<(Vec<KeyBytes>, Vec<KeyBytes>), QueryError> {
        if let Some(resolved) = self.resolve_json(values)? {
            return resolved.bound_keys(values);
        }
        let partition = self
            .keys
            .partition
            .as_ref()
            .ok_or_else(|| QueryError::invalid("Missing partition key"))?;
        let pks = bind_partition_keys(partition, &self.table, values)?;
        let cks = bind_prefixes(&self.keys.clustering_eq, &self.table, values)?;
        Ok((pks, cks))
    }

    /// Marker indexes of the partition-key components, when each is bound by a plain marker.
    pub fn pk_indexes(&self) -> Vec<u16> {
        self.keys.pk_marker_indexes()
    }

    /// Binds the plan into mutations, one per partition.
    ///
    /// # Errors
    /// InvalidRequest for bad bound values.
    pub fn mutations(
        &self,
        values: &Values<'_>,
        default_timestamp: Option<i64>,
        shards: &dyn Shards,
    ) -> Result<Vec<Mutation>, QueryError> {
        if let Some(resolved) = self.resolve_json(values)? {
            return resolved.mutations(values, default_timestamp, shards);
        }
        let table = &self.table;
        let timestamp = match &self.timestamp {
            Some(t) => match values.bind(t)? {
                Bound::Value(Value::Bigint(ts)) => ts,
                Bound::Unset => default_timestamp.unwrap_or_else(clock::next_timestamp),
                _ => return Err(QueryError::invalid("Invalid null value of timestamp")),
            },
            None => default_timestamp.unwrap_or_else(clock::next_timestamp),
        };
        let ttl = match &self.ttl {
            Some(t) => match values.bind(t)? {
                Bound::Value(Value::Int(n)) => i64::from(n),
                Bound::Null => 0,
                Bound::Unset => i64::from(table.params.default_time_to_live),
                _ => return Err(QueryError::invalid("Invalid TTL value")),
            },
            None => i64::from(table.params.default_time_to_live),
        };
        if ttl < 0 {
            return Err(QueryError::invalid(format!(
                "A TTL must be greater or equal to 0, but was {ttl}"
            )));
        }
        if ttl > MAX_TTL {
            return Err(QueryError::invalid(format!(
                "ttl is too large. requested ({ttl}) maximum ({MAX_TTL})"
            )));
        }
        let ttl = (ttl > 0).then_some(ttl as u32);

        let ck_count = table.clustering().count();
        let partition = self
            .keys
            .partition
            .as_ref()
            .ok_or_else(|| QueryError::invalid("Missing partition key"))?;
        let partition_keys = bind_partition_keys(partition, table, values)?;
        let mut prefixes = bind_prefixes(&self.keys.clustering_eq, &self.table, values)?;
        let full_row = prefixes.first().is_some_and(|p| p.len() == ck_count) || ck_count == 0;

        let keys = partition_keys.len();
        let mut mutations = Vec::with_capacity(keys);
        for (n, pk_bytes) in partition_keys.into_iter().enumerate() {
            // The last key takes the bound prefixes; earlier ones (IN) copy them.
            let last_key = n + 1 == keys;
            if pk_bytes.len() == 1 && pk_bytes[0].is_empty() {
                return Err(QueryError::invalid("Key may not be empty"));
            }
            if let Some(c) = pk_bytes.iter().find(|c| c.len() > 0xFFFF) {
                return Err(too_long(c.len()));
            }
            let mut m = Mutation::default();
            if self.delete_rows {
                let deletion = Deletion { timestamp };
                if self.keys.clustering_eq.is_empty() && self.keys.clustering_slice.is_none() {
                    m.partition_deletion = Some(deletion);
                } else if full_row && self.keys.clustering_slice.is_none() {
                    for prefix in &prefixes {
                        m.rows.push(RowWrite {
                            clustering: prefix.clone(),
                            deletion: Some(deletion),
                            ..RowWrite::default()
                        });
                    }
                } else {
                    let slice = self.bound_slice(values)?;
                    let order = self.keys.slice_column_order(table);
                    for prefix in &prefixes {
                        let (start, end) = storage_bounds(prefix.clone(), slice.clone(), order);
                        m.range_deletions.push(RangeDeletion {
                            start,
                            end,
                            deletion,
                        });
                    }
                }
                m.partition_key = pk_bytes;
                mutations.push(m);
                continue;
            }
            // Appends the writes of the static (or else the regular) columns' operations.
            let writes = |statics: bool, clustering: &[Vec<u8>], out: &mut Vec<ColumnWrite>| {
                for (i, op) in &self.ops {
                    let col = &table.columns[*i];
                    if (col.kind == ColumnKind::Static) == statics {
                        let row = (pk_bytes.as_slice(), clustering);
                        self.column_writes(col, op, values, (timestamp, ttl), shards, row, out)?;
                    }
                }
                Ok::<(), QueryError>(())
            };
            let no_clustering = Vec::new();
            let static_row = prefixes.first().unwrap_or(&no_clustering);
            writes(true, static_row, &mut m.static_columns)?;
            let rows: Vec<Vec<Vec<u8>>> = if ck_count == 0 {
                vec![Vec::new()]
            } else if full_row && last_key {
                std::mem::take(&mut prefixes)
            } else if full_row {
                prefixes.clone()
            } else {
                Vec::new()
            };
            for clustering in rows {
                let mut row = RowWrite::default();
                if self.liveness {
                    row.liveness = Some(Liveness { timestamp, ttl });
                }
                writes(false, &clustering, &mut row.columns)?;
                if self.liveness || !row.columns.is_empty() {
                    row.clustering = clustering;
                    m.rows.push(row);
                }
            }
            m.partition_key = pk_bytes;
            mutations.push(m);
        }
        Ok(mutations)
    }

    fn bound_slice(&self, values: &Values<'_>) -> Result<SliceBounds, QueryError> {
        bind_slice(&self.keys.clustering_slice, values)
    }

    /// Appends to `out` the column writes `op` makes of `col`, given the write's
    /// (timestamp, ttl) and its row's (partition key, clustering).
    #[allow(clippy::too_many_arguments)]
    fn column_writes(
        &self,
        col: &crate::schema::Column,
        op: &Op,
        values: &Values<'_>,
        (timestamp, ttl): (i64, Option<u32>),
        shards: &dyn Shards,
        (pk, clustering): (&[Vec<u8>], &[Vec<u8>]),
        out: &mut Vec<ColumnWrite>,
    ) -> Result<(), QueryError> {
        let id = col.id;
        let w = |op: ColumnOp| ColumnWrite { column: id, op };
        let multi = col.data_type.is_multi_cell();
        match op {
            Op::Set(t) if !multi => match values.bind_serialized(t)? {
                BoundBytes::Unset => {}
                BoundBytes::Null => out.push(w(ColumnOp::Delete { timestamp })),
                BoundBytes::Value(value) => out.push(w(ColumnOp::Set {
                    value,
                    timestamp,
                    ttl,
                })),
            },
            Op::Set(t) => match values.bind(t)? {
                Bound::Unset => {}
                Bound::Null => out.push(w(if multi {
                    ColumnOp::DeleteCollection { timestamp }
                } else {
                    ColumnOp::Delete { timestamp }
                })),
                Bound::Value(v) if multi => {
                    out.push(w(ColumnOp::DeleteCollection {
                        timestamp: timestamp - 1,
                    }));
                    out.extend(
                        element_writes(col, &v, timestamp, ttl, false)?
                            .into_iter()
                            .map(w),
                    );
                }
                Bound::Value(v) => out.push(w(ColumnOp::Set {
                    value: v.to_bytes(),
                    timestamp,
                    ttl,
                })),
            },
            Op::Add(t) => match values.bind(t)? {
                Bound::Unset => {}
                Bound::Null if col.data_type.is_counter() => {
                    return Err(QueryError::invalid(format!(
                        "Invalid null value for counter increment of {}",
                        col.name
                    )))
                }
                Bound::Null => {}
                Bound::Value(Value::Bigint(d) | Value::Counter(d))
                    if col.data_type.is_counter() =>
                {
                    out.push(w(ColumnOp::AddCounter {
                        delta: d,
                        timestamp,
                    }))
                }
                Bound::Value(v) => out.extend(
                    element_writes(col, &v, timestamp, ttl, false)?
                        .into_iter()
                        .map(w),
                ),
            },
            Op::Prepend(t) => {
                if let Bound::Value(v) = values.bind(t)? {
                    out.extend(
                        element_writes(col, &v, timestamp, ttl, true)?
                            .into_iter()
                            .map(w),
                    );
                }
            }
            Op::Subtract(t) => match values.bind(t)? {
                Bound::Unset | Bound::Null => {}
                Bound::Value(Value::Bigint(d) | Value::Counter(d))
                    if col.data_type.is_counter() =>
                {
                    out.push(w(ColumnOp::AddCounter {
                        delta: d.wrapping_neg(),
                        timestamp,
                    }))
                }
                Bound::Value(Value::Set(keys))
                    if matches!(
                        col.data_type.unfrozen(),
                        DataType::Set(_) | DataType::Map(_, _)
                    ) =>
                {
                    for k in keys {
                        out.push(w(ColumnOp::DeleteElement {
                            key: k.to_bytes(),
                            timestamp,
                        }));
                    }
                }
                Bound::Value(Value::List(remove)) => {
                    let current = read_collection(shards, &self.table, pk, clustering, col)?;
                    let remove: Vec<Vec<u8>> = remove.iter().map(Value::to_bytes).collect();
                    for (key, value) in current {
                        if remove.contains(&value) {
                            out.push(w(ColumnOp::DeleteElement { key, timestamp }));
                        }
                    }
                }
                Bound::Value(_) => {
                    return Err(QueryError::invalid(format!(
                        "Invalid subtraction for column {}",
                        col.name
                    )))
                }
            },
            Op::SetElement(k, v) => {
                let key = match values.bind(k)? {
                    Bound::Value(k) => k,
                    _ => {
                        return Err(QueryError::invalid(format!(
                            "Invalid null value for the key of {}",
                            col.name
                        )))
                    }
                };
                let key_bytes = if matches!(col.data_type, DataType::List(_)) {
                    let Value::Int(idx) = key else {
                        return Err(QueryError::invalid("Invalid list index"));
                    };
                    let current = read_collection(shards, &self.table, pk, clustering, col)?;
                    let n = current.len();
                    current
                        .into_iter()
                        .nth(usize::try_from(idx).unwrap_or(usize::MAX))
                        .map(|(k, _)| k)
                        .ok_or_else(|| {
                            QueryError::invalid(format!(
                                "List index {idx} out of bound, list has size {n}"
                            ))
                        })?
                } else {
                    key.to_bytes()
                };
                match values.bind(v)? {
                    Bound::Value(v) => out.push(w(ColumnOp::SetElement {
                        key: key_bytes,
                        value: v.to_bytes(),
                        timestamp,
                        ttl,
                    })),
                    Bound::Null => out.push(w(ColumnOp::DeleteElement {
                        key: key_bytes,
                        timestamp,
                    })),
                    Bound::Unset => {}
                }
            }
            Op::SetField(fi, t) => {
                let key = (*fi as i16).to_be_bytes().to_vec();
                match values.bind(t)? {
                    Bound::Value(v) => out.push(w(ColumnOp::SetElement {
                        key,
                        value: v.to_bytes(),
                        timestamp,
                        ttl,
                    })),
                    Bound::Null => out.push(w(ColumnOp::DeleteElement { key, timestamp })),
                    Bound::Unset => {}
                }
            }
            Op::Delete => out.push(w(if multi {
                ColumnOp::DeleteCollection { timestamp }
            } else {
                ColumnOp::Delete { timestamp }
            })),
            Op::DeleteElement(k) => {
                let key = match values.bind(k)? {
                    Bound::Value(k) => k,
                    _ => {
                        return Err(QueryError::invalid(format!(
                            "Invalid null value for the element of {}",
                            col.name
                        )))
                    }
                };
                if matches!(col.data_type, DataType::List(_)) {
                    let Value::Int(idx) = key else {
                        return Err(QueryError::invalid("Invalid list index"));
                    };
                    let current = read_collection(shards, &self.table, pk, clustering, col)?;
                    if let Some((k, _)) = current
                        .into_iter()
                        .nth(usize::try_from(idx).unwrap_or(usize::MAX))
                    {
                        out.push(w(ColumnOp::DeleteElement { key: k, timestamp }));
                    }
                } else {
                    out.push(w(ColumnOp::DeleteElement {
                        key: key.to_bytes(),
                        timestamp,
                    }));
                }
            }
            Op::DeleteField(fi) => out.push(w(ColumnOp::DeleteElement {
                key: (*fi as i16).to_be_bytes().to_vec(),
                timestamp,
            })),
        }
        Ok(())
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

/// Element cells for a collection value (a whole list, set, map or UDT).
fn element_writes(
    col: &crate::schema::Column,
    v: &Value,
    timestamp: i64,
    ttl: Option<u32>,
    prepend: bool,
) -> Result<Vec<ColumnOp>, QueryError> {
    let mut out = Vec::new();
    match v {
        Value::List(items) => {
            let keys: Vec<Vec<u8>> = if prepend {
                // Prepending [a, b] must leave a before b: hand out keys last element first.
                let mut ks: Vec<Vec<u8>> = items.iter().map(|_| clock::prepend_key()).collect();
                ks.reverse();
                ks
            } else {
                items.iter().map(|_| clock::append_key()).collect()
            };
            for (k, item) in keys.into_iter().zip(items) {
                out.push(ColumnOp::SetElement {
                    key: k,
                    value: item.to_bytes(),
                    timestamp,
                    ttl,
                });
            }
        }
        Value::Set(items) => {
            for item in items {
                out.push(ColumnOp::SetElement {
                    key: item.to_bytes(),
                    value: Vec::new(),
                    timestamp,
                    ttl,
                });
            }
        }
        Value::Map(entries) => {
            for (k, val) in entries {
                out.push(ColumnOp::SetElement {
                    key: k.to_bytes(),
                    value: val.to_bytes(),
                    timestamp,
                    ttl,
                });
            }
        }
        Value::Udt(fields) => {
            for (i, (_, f)) in fields.iter().enumerate() {
                let key = (i as i16).to_be_bytes().to_vec();
                match f {
                    Some(f) => out.push(ColumnOp::SetElement {
                        key,
                        value: f.to_bytes(),
                        timestamp,
                        ttl,
                    }),
                    None => out.push(ColumnOp::DeleteElement { key, timestamp }),
                }
            }
        }
        other => {
            return Err(QueryError::invalid(format!(
                "Invalid value {} for collection column {}",
                other.to_cql_literal(),
                col.name
            )))
        }
    }
    Ok(out)
}

/// The live elements (key, value) of a collection column of one row, for list operations that
/// need the current positions (Cassandra reads before writing for these too).
fn read_collection(
    shards: &dyn Shards,
    table: &Table,
    pk: &[Vec<u8>],
    clustering: &[Vec<u8>],
    col: &crate::schema::Column,
) -> Result<Vec<ElementCell>, QueryError> {
    let slice = storage::Slice {
        start: if clustering.is_empty() {
            storage::ClusteringBound::Unbounded
        } else {
            storage::ClusteringBound::Inclusive(clustering.to_vec())
        },
        end: if clustering.is_empty() {
            storage::ClusteringBound::Unbounded
        } else {
            storage::ClusteringBound::Inclusive(clustering.to_vec())
        },
        reversed: false,
        limit: Some(1),
        cursor: None,
    };
    let read = shards.read(crate::schema::table_id(table), pk, &slice)?;
    let cells = if col.kind == ColumnKind::Static {
        read.static_cells.get(&col.id).cloned()
    } else {
        read.rows
            .first()
            .and_then(|r| r.cells.get(&col.id).cloned())
    };
    Ok(match cells {
        Some(storage::ColumnValue::Collection(items)) => {
            items.into_iter().map(|(k, c)| (k, c.value)).collect()
        }
        _ => Vec::new(),
    })
}
