//! Binding INSERT, UPDATE and DELETE plans: a plan and a request's values become one storage
//! `Mutation` per partition (column writes, row and range deletions, TTL and timestamp), reading
//! the current list first where an operation needs element positions.

use crate::error::QueryError;
use crate::executor::clock;
use crate::executor::keys::{
    bind_partition_keys, bind_prefixes, bind_slice, storage_bounds, too_long, KeyBytes, SliceBounds,
};
use crate::executor::values::{Bound, BoundBytes, Values};
use crate::planner::modify::{json_plan, ModifyPlan, Op};
use crate::schema::MAX_TTL;
use crate::schema::{ColumnKind, Table};
use crate::shard::Shards;
use cql::types::{DataType, Value};
use storage::{ColumnOp, ColumnWrite, Deletion, Liveness, Mutation, RangeDeletion, RowWrite};

impl ModifyPlan {
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

/// A collection element: (element key, serialized value).
type ElementCell = (Vec<u8>, Vec<u8>);

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
