//! Running SELECT on user tables: partition keys, token ranges or full scans read through the
//! shards, clustering slices (reversed by ORDER BY; with IN on the partition key the rows of all
//! partitions sorted in memory, unpaged), selectors evaluated per row (columns,
//! writetime, ttl, token, functions) or folded per group (aggregates), in-memory filters
//! (ALLOW FILTERING), LIMIT / PER PARTITION LIMIT and resumable paging. Plain column selections
//! are written straight into wire form.

use crate::error::QueryError;
use crate::executor::column_bytes::{column_bytes, cow_to_bytes};
use crate::executor::grouper::Grouper;
use crate::executor::keys::{
    bind_key_values, bind_partition_keys, bind_prefixes, bind_slice, storage_bounds,
};
use crate::executor::order::{compare_values, satisfies};
use crate::executor::paging_state::PagingState;
use crate::executor::values::{Bound, Values};
use crate::planner::restrictions::{KeyValues, RangeEnd};
use crate::planner::select::SelectPlan;
use crate::planner::selection::{bind_markers, Selection};
use crate::planner::terms::Term;
use crate::schema::table_id;
use crate::schema::{ClusteringOrder, ColumnKind};
use crate::shard::Shards;
use bytes::Bytes;
use cql::ast::Operator;
use cql::response::{EncodedRows, ResultBody, ResultMetadata, Rows};
use cql::types::{DataType, Value};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use storage::{ColumnValue, Cursor, Slice, TokenRange};
use storage::{IndexLookup, IndexValues};

mod ann;

const MIN_TOKEN: i64 = i64::MIN;

/// How aggregate results are limited and paged: LIMIT, PER PARTITION LIMIT, page size, state.
type GroupPaging<'a> = (Option<usize>, Option<usize>, Option<i32>, Option<&'a Bytes>);

/// A bound row filter: column index, map key (for `m[k] = v`), operator, operand values.
type BoundFilter = (usize, Option<Value>, Operator, Vec<Value>);

/// Cassandra's refusal to page a SELECT whose rows it sorts after reading them (IN on the
/// partition key with ORDER BY).
const PAGED_POST_ORDER: &str = "Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query";

/// The rows a SELECT answers so far.
enum Output {
    /// One vector of cells per row (aggregates, JSON, computed selectors).
    Cells(Vec<Vec<Option<Bytes>>>),
    /// Plain column selections: the rows in wire form, and where each row ends in `rows.cells`
    /// (for [`Output::truncate`]).
    Wire { rows: EncodedRows, ends: Vec<usize> },
}

impl Output {
    /// Rows so far.
    fn len(&self) -> usize {
        match self {
            Output::Cells(rows) => rows.len(),
            Output::Wire { rows, .. } => rows.count,
        }
    }

    /// Keeps the first `n` rows.
    fn truncate(&mut self, n: usize) {
        match self {
            Output::Cells(rows) => rows.truncate(n),
            Output::Wire { rows, ends } if n < rows.count => {
                rows.cells
                    .truncate(n.checked_sub(1).map_or(0, |last| ends[last]));
                ends.truncate(n);
                rows.count = n;
            }
            Output::Wire { .. } => {}
        }
    }

    /// Puts the rows in the order `order` gives (a permutation of the row indexes).
    fn reorder(&mut self, order: &[usize]) {
        match self {
            Output::Cells(rows) => {
                let mut old: Vec<_> = std::mem::take(rows).into_iter().map(Some).collect();
                *rows = order
                    .iter()
                    .filter_map(|&i| old.get_mut(i).and_then(Option::take))
                    .collect();
            }
            Output::Wire { rows, ends } => {
                let old = std::mem::take(&mut rows.cells);
                let mut cells = Vec::with_capacity(old.len());
                let mut new_ends = Vec::with_capacity(ends.len());
                for &i in order {
                    let start = i.checked_sub(1).map_or(0, |prev| ends[prev]);
                    cells.extend_from_slice(&old[start..ends[i]]);
                    new_ends.push(cells.len());
                }
                rows.cells = cells;
                *ends = new_ends;
            }
        }
    }
}

/// A row being produced: partition key, statics and the storage row.
struct RowContext<'a> {
    /// The partition's token when the read already knows it (scans); a partition read
    /// computes it only for a `token(...)` selector.
    token: Option<i64>,
    pk: &'a [Vec<u8>],
    statics: &'a BTreeMap<u32, ColumnValue>,
    row: Option<&'a storage::Row>,
}

impl SelectPlan {
    /// Rows as Cassandra's SELECT JSON prints them: one JSON object per row.
    fn to_json_rows(&self, rows: Vec<Vec<Option<Bytes>>>) -> Vec<Vec<Option<Bytes>>> {
        rows.into_iter()
            .map(|row| {
                let mut obj = serde_json::Map::new();
                for ((_, spec), cell) in self.outputs.iter().zip(row) {
                    let v = cell
                        .and_then(|b| Value::decode(&spec.data_type, &b).ok())
                        .map(|v| crate::executor::json::to_json(&v, &spec.data_type))
                        .unwrap_or(serde_json::Value::Null);
                    obj.insert(crate::executor::json::json_key(&spec.name), v);
                }
                vec![Some(Bytes::from(crate::executor::json::to_text(
                    &serde_json::Value::Object(obj),
                )))]
            })
            .collect()
    }

    /// Cassandra's warnings for an aggregate or GROUP BY query that reads more than one
    /// partition (`SelectStatement`): none restricted, or an IN of partition keys.
    fn warn_aggregation(&self) {
        let r = &self.restrictions;
        let on_key = r.partition.is_some()
            || r.token_start.is_some()
            || r.token_end.is_some()
            || r.filters.iter().any(|f| {
                self.table
                    .columns
                    .get(f.column)
                    .is_some_and(|c| c.kind == ColumnKind::PartitionKey)
            });
        let keys_in = r.partition.as_ref().is_some_and(|p| {
            p.iter()
                .any(|v| matches!(v, KeyValues::In(_) | KeyValues::InMarker(_)))
        });
        if !on_key {
            crate::client_warnings::warn("Aggregation query used without partition key".into());
        } else if keys_in {
            crate::client_warnings::warn(
                "Aggregation query used on multiple partition keys (IN restriction)".into(),
            );
        }
    }

    /// Runs the SELECT.
    ///
    /// # Errors
    /// InvalidRequest for bad values, ProtocolError for a foreign paging state.
    pub fn execute(
        &self,
        shards: &dyn Shards,
        values: &Values<'_>,
        page_size: Option<i32>,
        paging_state: Option<&Bytes>,
    ) -> Result<ResultBody, QueryError> {
        if !self.selection_markers {
            return self.execute_bound(shards, values, page_size, paging_state);
        }
        let mut bound = self.clone();
        for (s, _) in bound.outputs.iter_mut() {
            *s = bind_markers(s, values)?;
        }
        for (s, _) in bound.fold_outputs.iter_mut() {
            *s = bind_markers(s, values)?;
        }
        bound.selection_markers = false;
        bound.execute_bound(shards, values, page_size, paging_state)
    }

    /// [`SelectPlan::execute`] once the selectors hold no bind marker.
    fn execute_bound(
        &self,
        shards: &dyn Shards,
        values: &Values<'_>,
        page_size: Option<i32>,
        paging_state: Option<&Bytes>,
    ) -> Result<ResultBody, QueryError> {
        if let Some(ann) = &self.ann {
            return self.execute_ann(shards, values, ann, page_size);
        }
        if self.aggregate {
            self.warn_aggregation();
        }
        let limit = bind_limit(&self.limit, values, "LIMIT")?;
        let per_partition = if self.distinct {
            Some(1)
        } else {
            bind_limit(&self.per_partition_limit, values, "PER PARTITION LIMIT")?
        };
        let filters = self.bind_filters(values)?;
        // IN on the partition key with ORDER BY: Cassandra sorts the rows of all partitions
        // after reading them, so it refuses to page such a query (whatever its LIMIT), and its
        // LIMIT counts the sorted rows.
        if self.post_order.is_some() && page_size.is_some_and(|p| p > 0) {
            return Err(QueryError::invalid(PAGED_POST_ORDER));
        }
        // Aggregates read everything and page their groups by offset.
        let (group_limit, group_pp) = (limit, per_partition);
        let (limit, per_partition, group_state, paging_state) = if self.aggregate {
            (None, None, paging_state, None)
        } else {
            (limit, per_partition, None, paging_state)
        };
        let sort = self.post_order.as_deref().filter(|_| !self.aggregate);
        let (limit, sorted_limit) = match sort {
            Some(_) => (None, limit),
            None => (limit, None),
        };
        // One sort key per row in `out` when the rows are sorted after the reads.
        let mut sort_keys: Option<Vec<Vec<Option<Value>>>> = sort.map(|_| Vec::new());
        let state = match paging_state {
            Some(b) => PagingState::decode(b)?,
            None => PagingState::default(),
        };
        if paging_state.is_some() && state.fingerprint != self.fingerprint {
            return Err(QueryError::Protocol(
                "Invalid value for the paging state: it belongs to another query".into(),
            ));
        }
        let page = if self.aggregate {
            None
        } else {
            page_size.filter(|p| *p > 0).map(|p| p as usize)
        };
        let mut remaining_total = limit.map(|l| l.saturating_sub(state.returned as usize));
        let want = match (page, remaining_total) {
            (Some(p), Some(r)) => Some(p.min(r)),
            (Some(p), None) => Some(p),
            (None, r) => r,
        };
        // Room for the first rows (at most 16): unpaged reads too, whose cells would
        // otherwise grow from nothing (a tenth of a 10-row slice's allocations).
        let room = want.map_or(16, |w| w.min(16));
        let mut out = match &self.wire_columns {
            Some(_) => Output::Wire {
                rows: EncodedRows {
                    cells: Vec::with_capacity(room * 128),
                    ..EncodedRows::default()
                },
                ends: Vec::with_capacity(room),
            },
            None => Output::Cells(Vec::with_capacity(room)),
        };
        // Only aggregates fold rows; other reads skip building the folds.
        let mut grouper = if self.aggregate {
            Some(Grouper::new(&self.fold_outputs, !self.group_by.is_empty())?)
        } else {
            None
        };
        let mut next_state: Option<PagingState> = None;
        let full = |n: usize| want.is_some_and(|w| n >= w);

        match &self.restrictions.partition {
            Some(partition) => {
                let mut keys = bind_partition_keys(partition, &self.table, values)?;
                // A partition named twice is read once, where first named.
                if keys.len() > 1 {
                    for k in std::mem::take(&mut keys) {
                        if !keys.contains(&k) {
                            keys.push(k);
                        }
                    }
                }
                let mut slices = self.slices(values)?;
                let mut pk_index = state.pk_index as usize;
                let mut slice_index = state.slice_index as usize;
                let mut cursor = state.cursor.clone().map(Cursor::from_bytes);
                let mut in_partition = state.in_partition as usize;
                'keys: while pk_index < keys.len() {
                    let pk = &keys[pk_index];
                    if pk.len() == 1 && pk[0].is_empty() {
                        pk_index += 1;
                        continue;
                    }
                    while slice_index < slices.len() {
                        let remaining_pp = per_partition.map(|p| p.saturating_sub(in_partition));
                        if remaining_pp == Some(0) {
                            break;
                        }
                        // Lent to the read and put back right after it (a later key or page
                        // reads it again): cloning its bounds cost allocations on every read.
                        let (start, end) = std::mem::take(&mut slices[slice_index]);
                        let batch = match (want.map(|w| w - out.len()), remaining_pp) {
                            (Some(a), Some(b)) => a.min(b),
                            (Some(a), None) => a,
                            (None, Some(b)) => b,
                            (None, None) => 1000,
                        }
                        .max(1);
                        let slice = Slice {
                            start,
                            end,
                            reversed: self.reversed,
                            limit: Some(batch),
                            cursor: cursor.take(),
                        };
                        let read = shards.read(table_id(&self.table), pk, &slice);
                        slices[slice_index] = (slice.start, slice.end);
                        let read = read?;
                        let static_only = read.rows.is_empty()
                            && !read.static_cells.is_empty()
                            && in_partition == 0
                            && self.restrictions.clustering_eq.is_empty()
                            && self.restrictions.clustering_slice.is_none();
                        // A partition with static columns alone reads as one row of them.
                        let static_row = static_only.then_some(None);
                        for row in static_row.into_iter().chain(read.rows.iter().map(Some)) {
                            let ctx = RowContext {
                                token: None,
                                pk,
                                statics: &read.static_cells,
                                row,
                            };
                            if self.matches(&ctx, &filters) {
                                in_partition += 1;
                                if let Some(grouper) = grouper.as_mut() {
                                    grouper.feed(self.group_key(&ctx), ctx.pk, &|sel| {
                                        self.leaf(&ctx, sel)
                                    })?;
                                } else {
                                    self.push_row(&mut out, &ctx)?;
                                    if let (Some(keys), Some(cols)) = (sort_keys.as_mut(), sort) {
                                        keys.push(self.sort_key(&ctx, cols));
                                    }
                                }
                            }
                        }
                        match read.cursor {
                            Some(c) if per_partition.is_none_or(|p| in_partition < p) => {
                                if full(out.len()) {
                                    next_state = Some(PagingState {
                                        fingerprint: 0,
                                        mode: 1,
                                        returned: 0,
                                        pk_index: pk_index as u32,
                                        slice_index: slice_index as u32,
                                        in_partition: in_partition as u32,
                                        cursor: Some(c.as_bytes().to_vec()),
                                        last_pk: None,
                                    });
                                    break 'keys;
                                }
                                cursor = Some(c);
                            }
                            _ => {
                                slice_index += 1;
                                cursor = None;
                                if full(out.len()) {
                                    let (pi, si, ip) = if slice_index < slices.len() {
                                        (pk_index, slice_index, in_partition)
                                    } else {
                                        (pk_index + 1, 0, 0)
                                    };
                                    if pi < keys.len() {
                                        next_state = Some(PagingState {
                                            fingerprint: 0,
                                            mode: 1,
                                            returned: 0,
                                            pk_index: pi as u32,
                                            slice_index: si as u32,
                                            in_partition: ip as u32,
                                            cursor: None,
                                            last_pk: None,
                                        });
                                    }
                                    break 'keys;
                                }
                            }
                        }
                    }
                    pk_index += 1;
                    slice_index = 0;
                    in_partition = 0;
                }
            }
            None => {
                let Some(range) = self.token_range(values)? else {
                    return self.finish(
                        out,
                        grouper,
                        None,
                        (group_limit, group_pp, page_size, group_state),
                    );
                };
                let mut cursor = state.cursor.clone().map(Cursor::from_bytes);
                let mut last_pk: Option<Vec<Vec<u8>>> = state.last_pk.clone();
                let lookup = self.index_lookup(&filters);
                let mut in_partition = state.in_partition as usize;
                loop {
                    let batch = want
                        .map(|w| w.saturating_sub(out.len()))
                        .unwrap_or(1000)
                        .clamp(1, 5000);
                    let id = table_id(&self.table);
                    let page_read = match &lookup {
                        Some(l) => shards.index_scan(id, l, range, batch, cursor.as_ref())?,
                        None => shards.scan(id, range, batch, cursor.as_ref())?,
                    };
                    for p in &page_read.partitions {
                        if last_pk.as_ref() != Some(&p.partition_key) {
                            last_pk = Some(p.partition_key.clone());
                            in_partition = 0;
                        }
                        let rows: Vec<Option<&storage::Row>> = if p.rows.is_empty() {
                            vec![None]
                        } else {
                            p.rows.iter().map(Some).collect()
                        };
                        for row in rows {
                            if per_partition.is_some_and(|pp| in_partition >= pp) {
                                break;
                            }
                            let ctx = RowContext {
                                token: Some(p.token),
                                pk: &p.partition_key,
                                statics: &p.static_cells,
                                row,
                            };
                            if row.is_none() && p.static_cells.is_empty() {
                                continue;
                            }
                            if self.matches(&ctx, &filters) {
                                in_partition += 1;
                                if let Some(grouper) = grouper.as_mut() {
                                    grouper.feed(self.group_key(&ctx), ctx.pk, &|sel| {
                                        self.leaf(&ctx, sel)
                                    })?;
                                } else {
                                    self.push_row(&mut out, &ctx)?;
                                }
                            }
                        }
                    }
                    match page_read.cursor {
                        Some(c) => {
                            if full(out.len()) {
                                next_state = Some(PagingState {
                                    fingerprint: 0,
                                    mode: 2,
                                    returned: 0,
                                    pk_index: 0,
                                    slice_index: 0,
                                    in_partition: in_partition as u32,
                                    cursor: Some(c.as_bytes().to_vec()),
                                    last_pk,
                                });
                                break;
                            }
                            cursor = Some(c);
                        }
                        None => break,
                    }
                }
            }
        }
        if let (Some(keys), Some(cols)) = (sort_keys, sort) {
            if keys.len() == out.len() {
                let mut order: Vec<usize> = (0..keys.len()).collect();
                // Stable: rows that compare equal keep the order the partitions were named in.
                order.sort_by(|&a, &b| self.compare_sort_keys(&keys[a], &keys[b], cols));
                out.reorder(&order);
            }
            if let Some(l) = sorted_limit {
                out.truncate(l);
            }
        }
        if let (Some(w), true) = (want, !self.aggregate) {
            out.truncate(w);
        }
        if let Some(r) = remaining_total.as_mut() {
            *r = r.saturating_sub(out.len());
            if *r == 0 {
                next_state = None;
            }
        }
        let next = next_state.map(|mut s| {
            s.fingerprint = self.fingerprint;
            s.returned = state.returned + out.len() as u32;
            s.encode()
        });
        self.finish(
            out,
            grouper,
            next,
            (group_limit, group_pp, page_size, group_state),
        )
    }

    fn finish(
        &self,
        out: Output,
        grouper: Option<Grouper<'_>>,
        next: Option<Bytes>,
        groups: GroupPaging<'_>,
    ) -> Result<ResultBody, QueryError> {
        let rows = match out {
            Output::Wire { mut rows, .. } => {
                rows.metadata = ResultMetadata {
                    columns: self.columns(),
                    paging_state: next,
                    no_metadata: false,
                };
                return Ok(ResultBody::EncodedRows(rows));
            }
            Output::Cells(rows) => rows,
        };
        let (rows, next) = if let Some(grouper) = grouper {
            let (limit, per_partition, page_size, state) = groups;
            let mut out = Vec::new();
            let mut last_pk: Option<Vec<Vec<u8>>> = None;
            let mut in_partition = 0usize;
            for (pk, row) in grouper.finish()? {
                if last_pk.as_ref() != Some(&pk) {
                    last_pk = Some(pk);
                    in_partition = 0;
                }
                in_partition += 1;
                if per_partition.is_some_and(|p| in_partition > p) {
                    continue;
                }
                out.push(row);
                if limit.is_some_and(|l| out.len() >= l) {
                    break;
                }
            }
            crate::executor::virtual_select::page(out, page_size, state)?
        } else {
            (rows, next)
        };
        let rows = if self.json {
            self.to_json_rows(rows)
        } else {
            rows
        };
        Ok(ResultBody::Rows(Rows {
            metadata: ResultMetadata {
                columns: self.columns(),
                paging_state: next,
                no_metadata: false,
            },
            rows,
        }))
    }

    /// The clustering slices to read in each partition (one per IN combination).
    fn slices(
        &self,
        values: &Values<'_>,
    ) -> Result<Vec<(storage::ClusteringBound, storage::ClusteringBound)>, QueryError> {
        let mut prefixes = bind_prefixes(&self.restrictions.clustering_eq, &self.table, values)?;
        // IN on clustering: read in clustering order.
        if prefixes.len() > 1 {
            let types: Vec<(DataType, ClusteringOrder)> = self
                .table
                .clustering()
                .map(|c| (c.data_type.clone(), c.order))
                .collect();
            prefixes.sort_by(|a, b| {
                for (i, (x, y)) in a.iter().zip(b).enumerate() {
                    let (ty, order) = &types[i];
                    let (Ok(xv), Ok(yv)) = (Value::decode(ty, x), Value::decode(ty, y)) else {
                        continue;
                    };
                    let o = compare_values(&xv, &yv, ty);
                    let o = if *order == ClusteringOrder::Desc {
                        o.reverse()
                    } else {
                        o
                    };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            });
            prefixes.dedup();
            if self.reversed {
                prefixes.reverse();
            }
        }
        let slice = bind_slice(&self.restrictions.clustering_slice, values)?;
        let order = self.restrictions.slice_column_order(&self.table);
        Ok(prefixes
            .into_iter()
            .map(|p| storage_bounds(p, slice.clone(), order))
            .collect())
    }

    /// The storage token range for token restrictions (None when provably empty).
    fn token_range(&self, values: &Values<'_>) -> Result<Option<TokenRange>, QueryError> {
        let bind = |e: &Option<RangeEnd>| -> Result<Option<(i64, bool)>, QueryError> {
            match e {
                None => Ok(None),
                Some(r) => match values.bind(&r.term)? {
                    Bound::Value(Value::Bigint(t)) => Ok(Some((t, r.inclusive))),
                    _ => Err(QueryError::invalid(
                        "Invalid null value for partition key token",
                    )),
                },
            }
        };
        let start = bind(&self.restrictions.token_start)?;
        let end = bind(&self.restrictions.token_end)?;
        // (start, end] with MIN meaning the ring's start/end.
        let start_excl = match start {
            None => MIN_TOKEN,
            Some((t, _)) if t == MIN_TOKEN => MIN_TOKEN,
            Some((t, true)) => t - 1,
            Some((t, false)) => t,
        };
        let end_incl = match end {
            None => MIN_TOKEN,
            Some((t, _)) if t == MIN_TOKEN => MIN_TOKEN,
            Some((t, true)) => t,
            Some((t, false)) => t - 1,
        };
        if end_incl != MIN_TOKEN && start_excl >= end_incl {
            return Ok(None);
        }
        if start_excl == i64::MAX {
            return Ok(None);
        }
        Ok(Some(TokenRange {
            start: start_excl,
            end: end_incl,
        }))
    }

    fn bind_filters(&self, values: &Values<'_>) -> Result<Vec<BoundFilter>, QueryError> {
        let mut out = Vec::new();
        for f in &self.restrictions.filters {
            let col = &self.table.columns[f.column];
            let name = &col.name;
            let vals = match bind_key_values(&f.values, values, name) {
                Err(_)
                    if !matches!(col.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) =>
                {
                    return Err(QueryError::invalid(format!(
                        "Unsupported null value for column {name}"
                    )))
                }
                other => other?,
            };
            let key = match &f.key {
                Some(t) => match values.bind(t)? {
                    Bound::Value(v) => Some(v),
                    _ => {
                        return Err(QueryError::invalid(format!(
                            "Unsupported null map key for column {name}"
                        )))
                    }
                },
                None => None,
            };
            out.push((f.column, key, f.op, vals));
        }
        Ok(out)
    }

    /// The index lookup that finds the rows a filtering query wants, when a secondary index
    /// serves one of its filters: an equality (`=`, CONTAINS, CONTAINS KEY, `m[k] =`) first,
    /// else a range on one column (SAI). The rows it names are still checked by every filter.
    fn index_lookup(&self, filters: &[BoundFilter]) -> Option<IndexLookup> {
        if self.table.indexes.is_empty() {
            return None;
        }
        let mut range: Option<(usize, IndexLookup)> = None;
        for (i, key, op, vals) in filters {
            let col = &self.table.columns[*i];
            let Some(index) = crate::planner::index_choice::serving(
                &self.table,
                &col.name,
                &col.data_type,
                *op,
                key.is_some(),
            ) else {
                continue;
            };
            let Some(spec) = crate::schema::index_spec(&self.table, index) else {
                continue;
            };
            let Some(v) = vals.first().map(Value::to_bytes) else {
                continue;
            };
            let values = match (op, key) {
                (Operator::Eq, Some(k)) => IndexValues::Entry(k.to_bytes(), v),
                (Operator::Eq | Operator::Contains | Operator::ContainsKey, None) => {
                    IndexValues::Eq(v)
                }
                (Operator::Gt | Operator::Ge | Operator::Lt | Operator::Le, None) => {
                    let bound = Some((v, matches!(op, Operator::Ge | Operator::Le)));
                    let lower = matches!(op, Operator::Gt | Operator::Ge);
                    // Two bounds on one column make one range.
                    if let Some((
                        c,
                        IndexLookup {
                            values: IndexValues::Range { lower: l, upper: u },
                            ..
                        },
                    )) = range.as_mut()
                    {
                        if *c == *i {
                            if lower {
                                *l = bound;
                            } else {
                                *u = bound;
                            }
                        }
                        continue;
                    }
                    let (lower, upper) = if lower { (bound, None) } else { (None, bound) };
                    range = Some((
                        *i,
                        IndexLookup {
                            index: spec,
                            values: IndexValues::Range { lower, upper },
                        },
                    ));
                    continue;
                }
                _ => continue,
            };
            return Some(IndexLookup {
                index: spec,
                values,
            });
        }
        range.map(|(_, l)| l)
    }

    fn cell_value(&self, ctx: &RowContext<'_>, i: usize) -> Option<Bytes> {
        self.cell_bytes(ctx, i).map(cow_to_bytes)
    }

    /// Column `i` of a row as the protocol serializes it, borrowed from the row where it is
    /// stored that way (everything but collections).
    fn cell_bytes<'r>(&self, ctx: &RowContext<'r>, i: usize) -> Option<Cow<'r, [u8]>> {
        let col = &self.table.columns[i];
        match col.kind {
            ColumnKind::PartitionKey => ctx
                .pk
                .get(col.position as usize)
                .map(|b| Cow::Borrowed(b.as_slice())),
            ColumnKind::Clustering => ctx
                .row
                .and_then(|r| r.clustering.get(col.position as usize))
                .map(|b| Cow::Borrowed(b.as_slice())),
            ColumnKind::Static => ctx
                .statics
                .get(&col.id)
                .and_then(|v| column_bytes(v, &col.data_type)),
            ColumnKind::Regular => ctx
                .row
                .and_then(|r| r.cells.get(&col.id))
                .and_then(|v| column_bytes(v, &col.data_type)),
        }
    }

    fn matches(&self, ctx: &RowContext<'_>, filters: &[BoundFilter]) -> bool {
        for (i, key, op, vals) in filters {
            let col = &self.table.columns[*i];
            let Some(bytes) = self.cell_value(ctx, *i) else {
                return false;
            };
            let (cell, ty) = match key {
                Some(k) => {
                    let DataType::Map(_, vt) = col.data_type.unfrozen() else {
                        return false;
                    };
                    match crate::executor::selection::element_of(&bytes, &col.data_type, k) {
                        Some(v) => (v, vt.as_ref()),
                        None => return false,
                    }
                }
                None => match Value::decode(&col.data_type, &bytes) {
                    Ok(v) => (v, &col.data_type),
                    Err(_) => return false,
                },
            };
            let ok = match op {
                Operator::In => vals
                    .iter()
                    .any(|v| compare_values(&cell, v, ty) == Ordering::Equal),
                Operator::Contains => match (&cell, ty.unfrozen()) {
                    (
                        Value::List(items) | Value::Set(items),
                        DataType::List(e) | DataType::Set(e),
                    ) => vals.iter().all(|v| {
                        items
                            .iter()
                            .any(|x| compare_values(x, v, e) == Ordering::Equal)
                    }),
                    (Value::Map(entries), DataType::Map(_, vt)) => vals.iter().all(|v| {
                        entries
                            .iter()
                            .any(|(_, x)| compare_values(x, v, vt) == Ordering::Equal)
                    }),
                    _ => false,
                },
                Operator::ContainsKey => match (&cell, ty.unfrozen()) {
                    (Value::Map(entries), DataType::Map(kt, _)) => vals.iter().all(|v| {
                        entries
                            .iter()
                            .any(|(k, _)| compare_values(k, v, kt) == Ordering::Equal)
                    }),
                    _ => false,
                },
                _ => vals
                    .first()
                    .is_some_and(|v| satisfies(compare_values(&cell, v, ty), *op)),
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// The values of a row that [`SelectPlan::post_order`] sorts by.
    fn sort_key(&self, ctx: &RowContext<'_>, cols: &[(usize, bool)]) -> Vec<Option<Value>> {
        cols.iter()
            .map(|&(i, _)| {
                self.cell_bytes(ctx, i)
                    .and_then(|b| Value::decode(&self.table.columns[i].data_type, &b).ok())
            })
            .collect()
    }

    /// Orders two sort keys as the ORDER BY asks: each column by its type's order, reversed
    /// for DESC; a missing value (a row of static columns alone) sorts as the lowest.
    fn compare_sort_keys(
        &self,
        a: &[Option<Value>],
        b: &[Option<Value>],
        cols: &[(usize, bool)],
    ) -> Ordering {
        for ((x, y), &(i, desc)) in a.iter().zip(b).zip(cols) {
            let o = match (x, y) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
                (Some(x), Some(y)) => compare_values(x, y, &self.table.columns[i].data_type),
            };
            let o = if desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// The group key of a row: its GROUP BY column values.
    fn group_key(&self, ctx: &RowContext<'_>) -> Vec<Option<Bytes>> {
        self.group_by
            .iter()
            .map(|i| self.cell_value(ctx, *i))
            .collect()
    }

    /// Column `i` of a row as the execution returns it: through the column's mask while the
    /// execution reads masked columns masked (see `crate::executor::masking`).
    fn returned_bytes<'r>(&self, ctx: &RowContext<'r>, i: usize) -> Option<Cow<'r, [u8]>> {
        let bytes = self.cell_bytes(ctx, i);
        let col = &self.table.columns[i];
        let Some(mask) = col.mask.as_ref().filter(|_| super::masking::active()) else {
            return bytes;
        };
        let value = bytes.and_then(|b| Value::decode(&col.data_type, &b).ok());
        // A mask that fails hides the value rather than show it.
        match mask.apply(&col.data_type, value) {
            Ok(Some(v)) => Some(Cow::Owned(v.to_bytes())),
            _ => None,
        }
    }

    /// Columns, writetime, ttl and token of one row.
    fn leaf(&self, ctx: &RowContext<'_>, sel: &Selection) -> Option<Bytes> {
        match sel {
            Selection::Column(i) => self.returned_bytes(ctx, *i).map(cow_to_bytes),
            Selection::WriteTime(i) | Selection::Ttl(i) => {
                let col = &self.table.columns[*i];
                let cell = if col.kind == ColumnKind::Static {
                    ctx.statics.get(&col.id)
                } else {
                    ctx.row.and_then(|r| r.cells.get(&col.id))
                };
                match cell {
                    Some(ColumnValue::Simple(c)) => match sel {
                        Selection::WriteTime(_) => {
                            Some(Bytes::copy_from_slice(&c.timestamp.to_be_bytes()))
                        }
                        _ => c
                            .ttl
                            .map(|t| Bytes::copy_from_slice(&(t as i32).to_be_bytes())),
                    },
                    _ => None,
                }
            }
            Selection::Token => {
                let token = ctx.token.unwrap_or_else(|| {
                    storage::token::token(&storage::token::serialize_partition_key(
                        &ctx.pk.iter().map(Vec::as_slice).collect::<Vec<_>>(),
                    ))
                });
                Some(Bytes::copy_from_slice(&token.to_be_bytes()))
            }
            _ => None,
        }
    }

    /// Adds one selected row to `out`: plain columns straight in wire form (the same bytes
    /// [`Self::project`] gives), other selections projected.
    fn push_row(&self, out: &mut Output, ctx: &RowContext<'_>) -> Result<(), QueryError> {
        let (Output::Wire { rows, ends }, Some(columns)) = (&mut *out, &self.wire_columns) else {
            if let Output::Cells(rows) = out {
                rows.push(self.project(ctx)?);
            }
            return Ok(());
        };
        for &i in columns {
            rows.push_cell(self.returned_bytes(ctx, i).as_deref());
        }
        rows.count += 1;
        ends.push(rows.cells.len());
        Ok(())
    }

    fn project(&self, ctx: &RowContext<'_>) -> Result<Vec<Option<Bytes>>, QueryError> {
        self.outputs
            .iter()
            .map(|(s, _)| s.eval(&|sel| self.leaf(ctx, sel)))
            .collect()
    }
}

fn bind_limit(
    term: &Option<Term>,
    values: &Values<'_>,
    what: &str,
) -> Result<Option<usize>, QueryError> {
    match term {
        None => Ok(None),
        Some(t) => match values.bind(t)? {
            Bound::Value(Value::Int(n)) if n > 0 => Ok(Some(n as usize)),
            Bound::Unset => Ok(None),
            Bound::Null => Err(QueryError::invalid(format!(
                "Invalid null value of {}",
                what.to_lowercase()
            ))),
            _ => Err(QueryError::invalid(format!(
                "{what} must be strictly positive"
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire_output(rows: &[[&[u8]; 2]]) -> Output {
        let mut out = EncodedRows::default();
        let mut ends = Vec::new();
        for row in rows {
            for cell in row {
                out.push_cell(Some(cell));
            }
            out.count += 1;
            ends.push(out.cells.len());
        }
        Output::Wire { rows: out, ends }
    }

    #[test]
    fn truncating_wire_rows_keeps_whole_leading_rows() {
        let rows: [[&[u8]; 2]; 3] = [[b"a", b"bb"], [b"", b"ccc"], [b"dddd", b"e"]];
        for keep in 0..=4 {
            let mut out = wire_output(&rows);
            out.truncate(keep);
            let Output::Wire { rows: got, ends } = out else {
                panic!("not wire rows");
            };
            let Output::Wire { rows: want, .. } = wire_output(&rows[..keep.min(3)]) else {
                panic!("not wire rows");
            };
            assert_eq!(got, want, "keep {keep}");
            assert_eq!(ends.len(), keep.min(3));
        }
    }

    #[test]
    fn reordering_wire_rows_moves_whole_rows() {
        let rows: [[&[u8]; 2]; 3] = [[b"a", b"bb"], [b"", b"ccc"], [b"dddd", b"e"]];
        let mut out = wire_output(&rows);
        out.reorder(&[2, 0, 1]);
        let Output::Wire { rows: got, ends } = out else {
            panic!("not wire rows");
        };
        let Output::Wire {
            rows: want,
            ends: want_ends,
        } = wire_output(&[rows[2], rows[0], rows[1]])
        else {
            panic!("not wire rows");
        };
        assert_eq!(got, want);
        assert_eq!(ends, want_ends);
    }

    #[test]
    fn reordering_cell_rows_moves_whole_rows() {
        let row = |s: &'static str| vec![Some(Bytes::from_static(s.as_bytes()))];
        let mut out = Output::Cells(vec![row("x"), row("y"), row("z")]);
        out.reorder(&[1, 2, 0]);
        let Output::Cells(got) = out else {
            panic!("not cell rows");
        };
        assert_eq!(got, vec![row("y"), row("z"), row("x")]);
    }
}
