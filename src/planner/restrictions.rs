//! Planning WHERE clauses on user tables: which partitions (keys, token range or all), which
//! clustering slice, and which rows must be filtered in memory; with Cassandra's rules and
//! messages. The executor's `keys` module binds these to request values.

use crate::error::QueryError;
use crate::planner::terms::{Markers, Term};
use crate::schema::{ClusteringOrder, Column, ColumnKind, Table};
use cql::ast::{Expr, Operator, Relation};
use cql::types::{DataType, NativeType, Value};

/// Values for one key column: `= x`, `IN (a, b)` or `IN ?`.
#[derive(Debug, Clone)]
pub enum KeyValues {
    /// One value.
    Eq(Term),
    /// A list of values.
    In(Vec<Term>),
    /// One marker holding a list.
    InMarker(Term),
    /// A multi-column relation on `width` consecutive clustering columns: `(a, b) = (1, 2)`,
    /// `(a, b) IN ((1, 2), (3, 4))` or `(a, b) IN ?`; each term is a tuple (or, with
    /// `in_marker`, one list of tuples).
    Tuples {
        /// The tuple terms.
        terms: Vec<Term>,
        /// One marker holding a list of tuples.
        in_marker: bool,
        /// Number of clustering columns covered.
        width: usize,
    },
}

impl KeyValues {
    /// Clustering columns covered by this entry.
    pub fn width(&self) -> usize {
        match self {
            KeyValues::Tuples { width, .. } => *width,
            _ => 1,
        }
    }
}

/// One side of a range.
#[derive(Debug, Clone)]
pub struct RangeEnd {
    /// The bound value (a tuple when `width > 1`).
    pub term: Term,
    /// Whether the value itself is included.
    pub inclusive: bool,
    /// Clustering columns the bound covers (1 for a single-column relation).
    pub width: usize,
}

/// A filter evaluated on each row.
#[derive(Debug, Clone)]
pub struct RowFilter {
    /// Column index in `table.columns`.
    pub column: usize,
    /// For `m[key] = v`: the map key.
    pub key: Option<Term>,
    /// Operator.
    pub op: Operator,
    /// Operand (a list for IN).
    pub values: KeyValues,
}

/// A planned WHERE clause.
#[derive(Debug, Clone, Default)]
pub struct Restrictions {
    /// Per partition-key column (in key order), when every one is restricted by = or IN.
    pub partition: Option<Vec<KeyValues>>,
    /// token(pk) > / >= lower bound.
    pub token_start: Option<RangeEnd>,
    /// token(pk) < / <= upper bound.
    pub token_end: Option<RangeEnd>,
    /// Clustering prefix restricted by = or IN.
    pub clustering_eq: Vec<KeyValues>,
    /// A slice on the clustering column after the prefix: (lower, upper) in value order.
    pub clustering_slice: Option<(Option<RangeEnd>, Option<RangeEnd>)>,
    /// Filters on any column, applied to each row (need ALLOW FILTERING unless on keys served above).
    pub filters: Vec<RowFilter>,
}

fn undefined(name: &str) -> QueryError {
    QueryError::invalid(format!("Undefined column name {name}"))
}

const FILTERING: &str = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING";

fn key_values(
    markers: &mut Markers,
    table: &Table,
    col: &Column,
    op: Operator,
    value: &Expr,
) -> Result<KeyValues, QueryError> {
    let (ks, tn) = (&table.keyspace, &table.name);
    Ok(match (op, value) {
        (Operator::Eq, _) => {
            KeyValues::Eq(markers.term(value, &col.data_type, ks, tn, &col.name)?)
        }
        (Operator::In, Expr::BindMarker(_)) => KeyValues::InMarker(markers.term_named(
            value,
            &DataType::List(Box::new(col.data_type.clone())),
            ks,
            tn,
            &col.name,
            &format!("in({})", col.name),
        )?),
        (Operator::In, Expr::List(items) | Expr::Tuple(items)) => KeyValues::In(
            items
                .iter()
                .map(|e| markers.term(e, &col.data_type, ks, tn, &col.name))
                .collect::<Result<_, _>>()?,
        ),
        _ => {
            return Err(QueryError::invalid(format!(
                "Invalid operator for column {}",
                col.name
            )))
        }
    })
}

impl Restrictions {
    /// Plans the WHERE clause of a SELECT (`for_select`) or a modification.
    ///
    /// # Errors
    /// InvalidRequest with Cassandra's messages.
    pub fn plan(
        relations: &[Relation],
        table: &Table,
        markers: &mut Markers,
        allow_filtering: bool,
        for_select: bool,
    ) -> Result<Restrictions, QueryError> {
        let pk: Vec<&Column> = table.partition_key().collect();
        let ck: Vec<&Column> = table.clustering().collect();
        let index_of = |name: &str| table.columns.iter().position(|c| c.name == name);
        let mut pk_values: Vec<Option<KeyValues>> = vec![None; pk.len()];
        let mut ck_eq: Vec<Option<KeyValues>> = vec![None; ck.len()];
        let mut ck_slices: Vec<(Option<RangeEnd>, Option<RangeEnd>)> = vec![(None, None); ck.len()];
        let mut covered: Vec<bool> = vec![false; ck.len()];
        let mut r = Restrictions::default();
        let mut needs_filtering = false;
        for rel in relations {
            match rel {
                Relation::Simple { column, op, value } => {
                    let i = index_of(column).ok_or_else(|| undefined(column))?;
                    let col = &table.columns[i];
                    if matches!(
                        op,
                        Operator::Lt | Operator::Le | Operator::Gt | Operator::Ge
                    ) && col.data_type.references_duration()
                    {
                        return Err(QueryError::invalid(
                            "Slice restrictions are not supported on duration columns",
                        ));
                    }
                    match (col.kind, op) {
                        (ColumnKind::PartitionKey, Operator::Eq | Operator::In) => {
                            let pos = col.position as usize;
                            if pk_values[pos].is_some() {
                                return Err(QueryError::invalid(format!(
                                    "{} cannot be restricted by more than one relation if it includes an Equal",
                                    col.name
                                )));
                            }
                            pk_values[pos] = Some(key_values(markers, table, col, *op, value)?);
                        }
                        (ColumnKind::Clustering, Operator::Eq | Operator::In) => {
                            let pos = col.position as usize;
                            if ck_eq[pos].is_some()
                                || ck_slices[pos].0.is_some()
                                || ck_slices[pos].1.is_some()
                            {
                                return Err(QueryError::invalid(format!(
                                    "{} cannot be restricted by more than one relation if it includes an Equal",
                                    col.name
                                )));
                            }
                            ck_eq[pos] = Some(key_values(markers, table, col, *op, value)?);
                        }
                        (
                            ColumnKind::Clustering,
                            Operator::Lt | Operator::Le | Operator::Gt | Operator::Ge,
                        ) => {
                            let pos = col.position as usize;
                            if ck_eq[pos].is_some() {
                                return Err(QueryError::invalid(format!(
                                    "{} cannot be restricted by both an equality and an inequality relation",
                                    col.name
                                )));
                            }
                            let term = markers.term(
                                value,
                                &col.data_type,
                                &table.keyspace,
                                &table.name,
                                &col.name,
                            )?;
                            let end = RangeEnd {
                                term,
                                inclusive: matches!(op, Operator::Le | Operator::Ge),
                                width: 1,
                            };
                            let slot = if matches!(op, Operator::Gt | Operator::Ge) {
                                &mut ck_slices[pos].0
                            } else {
                                &mut ck_slices[pos].1
                            };
                            if slot.is_some() {
                                return Err(QueryError::invalid(format!(
                                    "More than one restriction was found for the {} bound on {}",
                                    if matches!(op, Operator::Gt | Operator::Ge) {
                                        "start"
                                    } else {
                                        "end"
                                    },
                                    col.name
                                )));
                            }
                            *slot = Some(end);
                        }
                        (ColumnKind::PartitionKey, _) => {
                            if !for_select {
                                return Err(QueryError::invalid("Only EQ and IN relation are supported on the partition key (unless you use the token() function)".to_string()));
                            }
                            needs_filtering = true;
                            r.filters.push(RowFilter {
                                key: None,
                                column: i,
                                op: *op,
                                values: filter_values(markers, table, col, *op, value)?,
                            });
                        }
                        _ => {
                            if !for_select {
                                return Err(QueryError::invalid(format!(
                                    "Non PRIMARY KEY columns found in where clause: {}",
                                    col.name
                                )));
                            }
                            needs_filtering = true;
                            r.filters.push(RowFilter {
                                key: None,
                                column: i,
                                op: *op,
                                values: filter_values(markers, table, col, *op, value)?,
                            });
                        }
                    }
                }
                Relation::Token { columns, op, value } => {
                    let names: Vec<&str> = pk.iter().map(|c| c.name.as_str()).collect();
                    let given: Vec<&str> = columns.iter().map(String::as_str).collect();
                    if given != names {
                        let mut sorted_given = given.clone();
                        sorted_given.sort_unstable();
                        let mut sorted_names = names.clone();
                        sorted_names.sort_unstable();
                        return Err(QueryError::invalid(if sorted_given == sorted_names {
                            format!("The token function arguments must be in the partition key order: {}", names.join(", "))
                        } else {
                            "The token() function must be applied to all partition key components or none of them".to_string()
                        }));
                    }
                    if !for_select {
                        return Err(QueryError::invalid("The token function cannot be used in WHERE clauses for UPDATE and DELETE statements"));
                    }
                    let term = match value {
                        Expr::FunctionCall { name, args }
                            if name.name == "token"
                                && name.keyspace.as_deref().is_none_or(|k| k == "system") =>
                        {
                            if args.len() != pk.len() {
                                return Err(QueryError::invalid(format!(
                                    "Invalid number of arguments in call to function system.token: {} required but {} provided",
                                    pk.len(),
                                    args.len()
                                )));
                            }
                            let mut parts = Vec::new();
                            for (a, c) in args.iter().zip(&pk) {
                                let v = crate::executor::literal::literal_value(
                                    a,
                                    &c.data_type,
                                    &c.name,
                                )?
                                .ok_or_else(|| {
                                    QueryError::invalid("Invalid null value for token() argument")
                                })?;
                                parts.push(v.to_bytes());
                            }
                            let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
                            Term::Const(Some(Value::Bigint(storage::token::token(
                                &storage::token::serialize_partition_key(&refs),
                            ))))
                        }
                        _ => markers.term_named(
                            value,
                            &DataType::Native(NativeType::Bigint),
                            &table.keyspace,
                            &table.name,
                            "partition key token",
                            "partition key token",
                        )?,
                    };
                    match op {
                        Operator::Gt | Operator::Ge => {
                            r.token_start = Some(RangeEnd {
                                term,
                                inclusive: *op == Operator::Ge,
                                width: 1,
                            })
                        }
                        Operator::Lt | Operator::Le => {
                            r.token_end = Some(RangeEnd {
                                term,
                                inclusive: *op == Operator::Le,
                                width: 1,
                            })
                        }
                        Operator::Eq => {
                            r.token_start = Some(RangeEnd {
                                term: term.clone(),
                                inclusive: true,
                                width: 1,
                            });
                            r.token_end = Some(RangeEnd {
                                term,
                                inclusive: true,
                                width: 1,
                            });
                        }
                        _ => return Err(QueryError::invalid("Unsupported operator on token()")),
                    }
                }
                Relation::MultiColumn { columns, op, value } => {
                    let mut positions = Vec::new();
                    let mut types = Vec::new();
                    for name in columns {
                        let i = index_of(name).ok_or_else(|| undefined(name))?;
                        let col = &table.columns[i];
                        if col.kind != ColumnKind::Clustering {
                            return Err(QueryError::invalid(format!(
                                "Multi-column relations can only be applied to clustering columns but was applied to: {name}"
                            )));
                        }
                        positions.push(col.position as usize);
                        types.push(col.data_type.clone());
                    }
                    let first = positions.first().copied().unwrap_or(0);
                    if positions.iter().enumerate().any(|(k, p)| *p != first + k) {
                        return Err(QueryError::invalid(
                            "Clustering columns must appear in the PRIMARY KEY order in multi-column relations",
                        ));
                    }
                    let width = positions.len();
                    if positions.iter().any(|p| {
                        ck_eq[*p].is_some()
                            || covered[*p]
                            || ck_slices[*p].0.is_some()
                            || ck_slices[*p].1.is_some()
                    }) && !matches!(
                        op,
                        Operator::Lt | Operator::Le | Operator::Gt | Operator::Ge
                    ) {
                        return Err(QueryError::invalid(format!(
                            "Column \"{}\" cannot be restricted by more than one relation if it includes an Equal",
                            columns.first().cloned().unwrap_or_default()
                        )));
                    }
                    let check_arity = |e: &Expr| -> Result<(), QueryError> {
                        if let Expr::Tuple(items) = e {
                            if items.len() != width {
                                return Err(QueryError::invalid(format!(
                                    "Expected {width} elements in value tuple, but got {}",
                                    items.len()
                                )));
                            }
                        }
                        Ok(())
                    };
                    match value {
                        Expr::List(items) if *op == Operator::In => {
                            items.iter().try_for_each(check_arity)?
                        }
                        other => check_arity(other)?,
                    }
                    let tuple = DataType::Tuple(types.clone());
                    let label = format!("({})", columns.join(","));
                    match (op, value) {
                        (Operator::Eq, v) => {
                            let term = markers.tuple_term(
                                v,
                                columns,
                                &types,
                                &table.keyspace,
                                &table.name,
                            )?;
                            ck_eq[first] = Some(KeyValues::Tuples {
                                terms: vec![term],
                                in_marker: false,
                                width,
                            });
                        }
                        (Operator::In, Expr::BindMarker(_)) => {
                            let term = markers.term_named(
                                value,
                                &DataType::List(Box::new(tuple)),
                                &table.keyspace,
                                &table.name,
                                &label,
                                &format!("in({})", columns.join(",")),
                            )?;
                            ck_eq[first] = Some(KeyValues::Tuples {
                                terms: vec![term],
                                in_marker: true,
                                width,
                            });
                        }
                        (Operator::In, Expr::List(items) | Expr::Tuple(items)) => {
                            let terms = items
                                .iter()
                                .map(|e| {
                                    markers.tuple_term(
                                        e,
                                        columns,
                                        &types,
                                        &table.keyspace,
                                        &table.name,
                                    )
                                })
                                .collect::<Result<_, _>>()?;
                            ck_eq[first] = Some(KeyValues::Tuples {
                                terms,
                                in_marker: false,
                                width,
                            });
                        }
                        (Operator::Lt | Operator::Le | Operator::Gt | Operator::Ge, v) => {
                            let term = markers.tuple_term(
                                v,
                                columns,
                                &types,
                                &table.keyspace,
                                &table.name,
                            )?;
                            let end = RangeEnd {
                                term,
                                inclusive: matches!(op, Operator::Le | Operator::Ge),
                                width,
                            };
                            if matches!(op, Operator::Gt | Operator::Ge) {
                                ck_slices[first].0 = Some(end);
                            } else {
                                ck_slices[first].1 = Some(end);
                            }
                        }
                        _ => {
                            return Err(QueryError::invalid(format!(
                                "Unsupported operator in multi-column relation on {label}"
                            )))
                        }
                    }
                    for p in positions.iter().skip(1) {
                        covered[*p] = true;
                    }
                }
                Relation::MapElement {
                    column,
                    key,
                    op,
                    value,
                } => {
                    let i = index_of(column).ok_or_else(|| undefined(column))?;
                    let col = &table.columns[i];
                    let DataType::Map(kt, vt) = col.data_type.unfrozen() else {
                        return Err(QueryError::invalid(format!(
                            "Column {column} cannot be used as a map"
                        )));
                    };
                    if !for_select {
                        return Err(QueryError::invalid(format!(
                            "Non PRIMARY KEY columns found in where clause: {column}"
                        )));
                    }
                    let (kt, vt) = ((**kt).clone(), (**vt).clone());
                    let key = markers.term(key, &kt, &table.keyspace, &table.name, column)?;
                    let value = markers.term(value, &vt, &table.keyspace, &table.name, column)?;
                    needs_filtering = true;
                    r.filters.push(RowFilter {
                        column: i,
                        key: Some(key),
                        op: *op,
                        values: KeyValues::Eq(value),
                    });
                }
            }
        }
        // Partition key: all or nothing.
        let restricted = pk_values.iter().filter(|v| v.is_some()).count();
        if restricted == pk.len() {
            if r.token_start.is_some() || r.token_end.is_some() {
                return Err(QueryError::invalid(
                    "Columns of the partition key cannot be restricted by both token() and = or IN",
                ));
            }
            r.partition = Some(pk_values.into_iter().flatten().collect());
        } else if restricted > 0 {
            if !for_select {
                let missing = pk
                    .iter()
                    .zip(&pk_values)
                    .find(|(_, v)| v.is_none())
                    .map(|(c, _)| c.name.clone())
                    .unwrap_or_default();
                return Err(QueryError::invalid(format!(
                    "Some partition key parts are missing: {missing}"
                )));
            }
            // A partial partition key is a filter.
            needs_filtering = true;
            for (c, v) in pk.iter().zip(pk_values) {
                if let Some(v) = v {
                    let i = index_of(&c.name).ok_or_else(|| undefined(&c.name))?;
                    r.filters.push(RowFilter {
                        key: None,
                        column: i,
                        op: match v {
                            KeyValues::Eq(_) => Operator::Eq,
                            _ => Operator::In,
                        },
                        values: v,
                    });
                }
            }
        } else if !for_select {
            let missing = pk.first().map(|c| c.name.clone()).unwrap_or_default();
            return Err(QueryError::invalid(format!(
                "Some partition key parts are missing: {missing}"
            )));
        }
        // Clustering: an = / IN prefix, then at most one slice.
        let mut prefix_done = false;
        for (pos, col) in ck.iter().enumerate() {
            if covered[pos]
                && ck_eq[pos].is_none()
                && ck_slices[pos].0.is_none()
                && ck_slices[pos].1.is_none()
            {
                // Part of a multi-column relation handled at its first column.
                continue;
            }
            let eq = ck_eq[pos].take();
            let slice = std::mem::take(&mut ck_slices[pos]);
            let has_slice = slice.0.is_some() || slice.1.is_some();
            if prefix_done {
                if eq.is_some() || has_slice {
                    if !allow_filtering || !for_select {
                        let prev = &ck[pos - 1].name;
                        return Err(QueryError::invalid(if r.clustering_slice.is_some() {
                            format!("Clustering column \"{}\" cannot be restricted (preceding column \"{prev}\" is restricted by a non-EQ relation)", col.name)
                        } else {
                            format!("PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{prev}\" is not restricted", col.name)
                        }));
                    }
                    needs_filtering = true;
                    let i = index_of(&col.name).ok_or_else(|| undefined(&col.name))?;
                    if let Some(v) = eq {
                        r.filters.push(RowFilter {
                            key: None,
                            column: i,
                            op: match v {
                                KeyValues::Eq(_) => Operator::Eq,
                                _ => Operator::In,
                            },
                            values: v,
                        });
                    }
                    if let Some(lo) = slice.0 {
                        r.filters.push(RowFilter {
                            key: None,
                            column: i,
                            op: if lo.inclusive {
                                Operator::Ge
                            } else {
                                Operator::Gt
                            },
                            values: KeyValues::Eq(lo.term),
                        });
                    }
                    if let Some(hi) = slice.1 {
                        r.filters.push(RowFilter {
                            key: None,
                            column: i,
                            op: if hi.inclusive {
                                Operator::Le
                            } else {
                                Operator::Lt
                            },
                            values: KeyValues::Eq(hi.term),
                        });
                    }
                }
                continue;
            }
            match (eq, has_slice) {
                (Some(v), _) => r.clustering_eq.push(v),
                (None, true) => {
                    r.clustering_slice = Some(slice);
                    prefix_done = true;
                }
                (None, false) => prefix_done = true,
            }
        }
        if for_select
            && needs_filtering
            && !allow_filtering
            && !(r.partition.is_some()
                && r.filters
                    .iter()
                    .all(|f| table.columns[f.column].kind == ColumnKind::Clustering))
        {
            return Err(QueryError::invalid(FILTERING));
        }
        if for_select
            && r.partition.is_none()
            && (!r.clustering_eq.is_empty() || r.clustering_slice.is_some())
            && !allow_filtering
        {
            return Err(QueryError::invalid(FILTERING));
        }
        // Without partition keys the read is a scan: clustering restrictions become filters.
        if for_select && r.partition.is_none() {
            let eq = std::mem::take(&mut r.clustering_eq);
            let slice = r.clustering_slice.take();
            let mut pos = 0;
            for v in eq {
                let col = ck
                    .get(pos)
                    .copied()
                    .ok_or_else(|| QueryError::invalid("Too many clustering restrictions"))?;
                if v.width() > 1 {
                    return Err(QueryError::invalid(
                        "Multi-column relations are only supported with the partition key restricted by = or IN",
                    ));
                }
                let i = index_of(&col.name).ok_or_else(|| undefined(&col.name))?;
                let op = if matches!(v, KeyValues::Eq(_)) {
                    Operator::Eq
                } else {
                    Operator::In
                };
                r.filters.push(RowFilter {
                    key: None,
                    column: i,
                    op,
                    values: v,
                });
                pos += 1;
            }
            if let Some((lo, hi)) = slice {
                let col = ck
                    .get(pos)
                    .copied()
                    .ok_or_else(|| QueryError::invalid("Too many clustering restrictions"))?;
                let i = index_of(&col.name).ok_or_else(|| undefined(&col.name))?;
                for (end, lower) in [(lo, true), (hi, false)] {
                    if let Some(e) = end {
                        if e.width > 1 {
                            return Err(QueryError::invalid(
                                "Multi-column relations are only supported with the partition key restricted by = or IN",
                            ));
                        }
                        let op = match (lower, e.inclusive) {
                            (true, true) => Operator::Ge,
                            (true, false) => Operator::Gt,
                            (false, true) => Operator::Le,
                            (false, false) => Operator::Lt,
                        };
                        r.filters.push(RowFilter {
                            key: None,
                            column: i,
                            op,
                            values: KeyValues::Eq(e.term),
                        });
                    }
                }
            }
        }
        Ok(r)
    }

    /// Marker indexes of the partition-key components when each is bound by a plain `= ?`
    /// (PREPARED's `pk_indexes`, which drivers use to route by token); empty otherwise.
    pub fn pk_marker_indexes(&self) -> Vec<u16> {
        let Some(partition) = &self.partition else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for v in partition {
            match v {
                KeyValues::Eq(Term::Marker { index, .. }) => out.push(*index as u16),
                _ => return Vec::new(),
            }
        }
        out
    }

    /// Clustering columns covered by the = / IN prefix.
    pub fn eq_width(&self) -> usize {
        self.clustering_eq.iter().map(KeyValues::width).sum()
    }

    /// The order of the sliced clustering column (slices on DESC columns swap ends).
    pub fn slice_column_order(&self, table: &Table) -> ClusteringOrder {
        table
            .clustering()
            .nth(self.eq_width())
            .map(|c| c.order)
            .unwrap_or_default()
    }
}

fn filter_values(
    markers: &mut Markers,
    table: &Table,
    col: &Column,
    op: Operator,
    value: &Expr,
) -> Result<KeyValues, QueryError> {
    let (ks, tn) = (&table.keyspace, &table.name);
    match op {
        Operator::In => key_values(markers, table, col, op, value),
        Operator::Contains => {
            let elem = match col.data_type.unfrozen() {
                DataType::List(e) | DataType::Set(e) => (**e).clone(),
                DataType::Map(_, v) => (**v).clone(),
                _ => {
                    return Err(QueryError::invalid(format!(
                        "Cannot use CONTAINS on non-collection column {}",
                        col.name
                    )))
                }
            };
            Ok(KeyValues::Eq(
                markers.term(value, &elem, ks, tn, &col.name)?,
            ))
        }
        Operator::ContainsKey => {
            let DataType::Map(k, _) = col.data_type.unfrozen() else {
                return Err(QueryError::invalid(format!(
                    "Cannot use CONTAINS KEY on non-map column {}",
                    col.name
                )));
            };
            Ok(KeyValues::Eq(markers.term(value, k, ks, tn, &col.name)?))
        }
        Operator::Eq | Operator::Lt | Operator::Le | Operator::Gt | Operator::Ge | Operator::Ne => {
            if col.data_type.is_multi_cell() && op != Operator::Eq {
                return Err(QueryError::invalid(format!("Collection column '{}' can only be restricted by CONTAINS, CONTAINS KEY, or map-entry equality", col.name)));
            }
            Ok(KeyValues::Eq(markers.term(
                value,
                &col.data_type,
                ks,
                tn,
                &col.name,
            )?))
        }
        _ => Err(QueryError::invalid(format!(
            "Unsupported operator {op:?} on column {}",
            col.name
        ))),
    }
}
