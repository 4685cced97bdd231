//! Planning SELECT on user tables: selectors, WHERE restrictions, ORDER BY, GROUP BY, LIMIT and
//! PER PARTITION LIMIT checked against the table with Cassandra's messages, and what every
//! execution shares (result columns, paging fingerprint, the wire-form shortcut) built once.
//! The executor's `select` module runs a plan.

use crate::error::QueryError;
use crate::planner::ann::AnnPlan;
use crate::planner::restrictions::{KeyValues, Restrictions};
use crate::planner::selection::{plan_group_by, plan_selector, Selection};
use crate::planner::terms::{Markers, Term};
use crate::schema::{ClusteringOrder, ColumnKind, Table};
use cql::ast::{Order, Select};
use cql::response::ColumnSpec;
use cql::types::{DataType, NativeType};
use std::sync::Arc;

fn self_table_has(table: &Table, name: &str) -> bool {
    table.columns.iter().any(|c| c.name == name)
}

/// A planned SELECT on a user table.
#[derive(Debug, Clone)]
pub struct SelectPlan {
    /// The table read.
    pub(crate) table: Arc<Table>,
    /// The selectors, with their result column specs.
    pub(crate) outputs: Vec<(Selection, ColumnSpec)>,
    /// `outputs` with their types, as the grouper folds them (built once, not per execution).
    pub(crate) fold_outputs: Vec<(Selection, DataType)>,
    /// The WHERE clause.
    pub(crate) restrictions: Restrictions,
    /// ORDER BY against the clustering order: slices are read backwards.
    pub(crate) reversed: bool,
    /// ORDER BY with IN on the partition key: the rows of all partitions are sorted in memory
    /// by these columns (indexes into `table.columns`, true for descending) before LIMIT, and
    /// paging is refused, as Cassandra's post-query ordering does.
    pub(crate) post_order: Option<Vec<(usize, bool)>>,
    /// LIMIT.
    pub(crate) limit: Option<Term>,
    /// PER PARTITION LIMIT.
    pub(crate) per_partition_limit: Option<Term>,
    /// SELECT DISTINCT: one row per partition.
    pub(crate) distinct: bool,
    /// Aggregates or GROUP BY: rows are folded into groups.
    pub(crate) aggregate: bool,
    /// GROUP BY columns (indexes into `table.columns`).
    pub(crate) group_by: Vec<usize>,
    /// SELECT JSON: each row becomes one JSON text.
    pub(crate) json: bool,
    /// Identifies the statement inside paging states, so a state from another query is refused.
    pub(crate) fingerprint: u64,
    /// The result's column specs (see [`SelectPlan::columns`]), shared by every execution.
    pub(crate) result_columns: Arc<[ColumnSpec]>,
    /// The selected columns (indexes into `table.columns`) when every output is a plain
    /// column and rows are neither folded nor turned into JSON: such rows are written
    /// straight into wire form.
    pub(crate) wire_columns: Option<Vec<usize>>,
    /// True when a selector holds a bind marker (a similarity function's argument): the
    /// selections are then bound to the request's values before the read.
    pub(crate) selection_markers: bool,
    /// `ORDER BY v ANN OF [...]`: rows come best first from the vector index.
    pub(crate) ann: Option<AnnPlan>,
}

impl SelectPlan {
    /// Plans `select` against `table`.
    ///
    /// # Errors
    /// InvalidRequest with Cassandra's messages.
    pub fn plan(
        select: &Select,
        table: Arc<Table>,
        catalog: &crate::schema::Catalog,
        markers: &mut Markers,
    ) -> Result<SelectPlan, QueryError> {
        let (ks, tn) = (table.keyspace.clone(), table.name.clone());
        let spec = |name: &str, ty: DataType| ColumnSpec {
            keyspace: ks.clone(),
            table: tn.clone(),
            name: name.to_string(),
            data_type: ty,
        };
        let index_of = |name: &str| {
            table
                .columns
                .iter()
                .position(|c| c.name == name)
                .ok_or_else(|| {
                    QueryError::invalid(format!("Undefined column name {name} in selection clause"))
                })
        };
        let mut outputs = Vec::new();
        let mut selection_markers = false;
        if select.selectors.is_empty() {
            for c in table.select_star_order() {
                if select.distinct
                    && !matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Static)
                {
                    continue;
                }
                outputs.push((
                    Selection::Column(index_of(&c.name)?),
                    spec(&c.name, c.data_type.clone()),
                ));
            }
        } else {
            for sel in &select.selectors {
                let mut planned = plan_selector(&sel.expr, &table, catalog)?;
                // Markers in the selection come first in statement order.
                selection_markers |= crate::planner::selection::number_markers(
                    &mut planned.selection,
                    markers,
                    &ks,
                    &tn,
                );
                let name = sel.alias.clone().unwrap_or(planned.name);
                outputs.push((planned.selection, spec(&name, planned.data_type)));
            }
        }
        crate::planner::index_choice::check_index_selection(&select.where_clause, &table)?;
        let restrictions = Restrictions::plan(
            &select.where_clause,
            &table,
            markers,
            // An ANN query filters its candidates: its own checks name unindexed columns.
            select.allow_filtering
                || !select.ann.is_empty()
                || crate::planner::index_choice::served_by_indexes(&select.where_clause, &table),
            true,
        )?;
        // Leading key columns fixed by equality may be left out of GROUP BY.
        let eq_prefix = match &restrictions.partition {
            Some(p) if p.iter().all(|v| matches!(v, KeyValues::Eq(_))) => {
                p.len()
                    + restrictions
                        .clustering_eq
                        .iter()
                        .take_while(|v| matches!(v, KeyValues::Eq(_)))
                        .count()
            }
            _ => 0,
        };
        let group_by = plan_group_by(&select.group_by, &table, eq_prefix)?;
        let aggregate = !group_by.is_empty() || outputs.iter().any(|(s, _)| s.is_aggregate());
        let ann = crate::planner::ann::plan_ann(select, &table, &restrictions, aggregate, markers)?;
        // ORDER BY: all clustering columns in table order, all same or all reversed.
        let mut reversed = false;
        let mut order_columns: Vec<(usize, bool)> = Vec::new();
        if !select.order_by.is_empty() {
            if restrictions.partition.is_none() {
                return Err(QueryError::invalid("ORDER BY is only supported when the partition key is restricted by an EQ or an IN."));
            }
            let ck: Vec<_> = table.clustering().collect();
            let mut flip: Option<bool> = None;
            for (i, (name, order)) in select.order_by.iter().enumerate() {
                let Some(c) = ck.get(i).filter(|c| &c.name == name) else {
                    return Err(QueryError::invalid(if ck.iter().any(|c| &c.name == name) {
                        "Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY".to_string()
                    } else {
                        if self_table_has(&table, name) {
                            format!("Order by is currently only supported on the clustered columns of the PRIMARY KEY, got {name}")
                        } else {
                            format!("Undefined column name {name}")
                        }
                    }));
                };
                let natural = match c.order {
                    ClusteringOrder::Asc => Order::Asc,
                    ClusteringOrder::Desc => Order::Desc,
                };
                let this_flip = *order != natural;
                if flip.is_some_and(|f| f != this_flip) {
                    return Err(QueryError::invalid("Unsupported order by relation"));
                }
                flip = Some(this_flip);
                order_columns.push((index_of(name)?, *order == Order::Desc));
            }
            reversed = flip.unwrap_or(false);
        }
        // Cassandra plans a literal IN of one value as `=`; `IN ?` stays an IN whatever it binds.
        let partition_in = restrictions.partition.as_ref().is_some_and(|p| {
            p.iter().any(|v| match v {
                KeyValues::In(terms) => terms.len() != 1,
                KeyValues::InMarker(_) => true,
                _ => false,
            })
        });
        let post_order = (partition_in && !order_columns.is_empty()).then_some(order_columns);
        let int = DataType::Native(NativeType::Int);
        let per_partition_limit = match &select.per_partition_limit {
            Some(e) => Some(markers.term_named(
                e,
                &int,
                &ks,
                &tn,
                "[per_partition_limit]",
                "[per_partition_limit]",
            )?),
            None => None,
        };
        let limit = match &select.limit {
            Some(e) => Some(markers.term_named(e, &int, &ks, &tn, "[limit]", "[limit]")?),
            None => None,
        };
        if select.distinct && select.per_partition_limit.is_some() {
            return Err(QueryError::invalid(
                "PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries",
            ));
        }
        if select.distinct {
            for (s, _) in &outputs {
                if let Selection::Column(i) = s {
                    if !matches!(
                        table.columns[*i].kind,
                        ColumnKind::PartitionKey | ColumnKind::Static
                    ) {
                        return Err(QueryError::invalid(format!(
                            "SELECT DISTINCT queries must only request partition key columns and/or static columns (not {})",
                            table.columns[*i].name
                        )));
                    }
                }
            }
        }
        let fingerprint = {
            use std::hash::{Hash, Hasher};
            let mut h = std::hash::DefaultHasher::new();
            format!("{select:?}").hash(&mut h);
            table.id.hash(&mut h);
            h.finish()
        };
        let fold_outputs = outputs
            .iter()
            .map(|(s, c)| (s.clone(), c.data_type.clone()))
            .collect();
        let result_columns: Arc<[ColumnSpec]> = if select.json {
            vec![ColumnSpec {
                keyspace: table.keyspace.clone(),
                table: table.name.clone(),
                name: "[json]".into(),
                data_type: DataType::Native(NativeType::Text),
            }]
            .into()
        } else {
            outputs.iter().map(|(_, s)| s.clone()).collect()
        };
        let wire_columns = if aggregate || select.json {
            None
        } else {
            outputs
                .iter()
                .map(|(s, _)| match s {
                    Selection::Column(i) => Some(*i),
                    _ => None,
                })
                .collect()
        };
        Ok(SelectPlan {
            table,
            outputs,
            fold_outputs,
            result_columns,
            restrictions,
            reversed,
            post_order,
            limit,
            per_partition_limit,
            distinct: select.distinct,
            aggregate,
            group_by,
            json: select.json,
            fingerprint,
            wire_columns,
            selection_markers,
            ann,
        })
    }

    /// Result columns (one `[json]` text column for SELECT JSON).
    pub fn columns(&self) -> Arc<[ColumnSpec]> {
        self.result_columns.clone()
    }

    /// True when the SELECT reads only named partitions (every partition-key column given by
    /// = or IN), without filtering or aggregation: its work is bounded by its page.
    pub fn is_partition_read(&self) -> bool {
        self.restrictions.partition.is_some()
            && self.restrictions.filters.is_empty()
            && !self.aggregate
    }

    /// Marker indexes of the partition-key components, when each is bound by `pk = ?`.
    pub fn pk_indexes(&self) -> Vec<u16> {
        self.restrictions.pk_marker_indexes()
    }
}
