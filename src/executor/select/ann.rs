//! SELECT with `ORDER BY v ANN OF [...]`: the rows whose vectors score highest, best first,
//! from the vector index (no partition key) or from the named partitions read whole, then
//! filtered, cut at LIMIT and returned in one page, as Cassandra's top-K queries.

use super::{Output, RowContext, SelectPlan};
use crate::error::QueryError;
use crate::executor::keys::bind_partition_keys;
use crate::executor::values::{Bound, Values};
use crate::planner::ann::{AnnPlan, MAX_ANN_LIMIT, TOPK_LIMIT};
use crate::schema::table_id;
use crate::shard::Shards;
use cql::response::{EncodedRows, ResultBody};
use cql::types::Value;
use std::collections::BTreeMap;
use storage::{ColumnValue, Cursor, Row, Similarity, Slice};

/// Rows per read of a named partition.
const PARTITION_PAGE: usize = 1000;

/// A row found, with what its context needs.
struct Found {
    score: f32,
    token: Option<i64>,
    pk: Vec<Vec<u8>>,
    statics: BTreeMap<u32, ColumnValue>,
    row: Row,
}

impl SelectPlan {
    /// Runs an ANN query (see the module).
    pub(super) fn execute_ann(
        &self,
        shards: &dyn Shards,
        values: &Values<'_>,
        ann: &AnnPlan,
        page_size: Option<i32>,
    ) -> Result<ResultBody, QueryError> {
        let limit = super::bind_limit(&self.limit, values, "LIMIT")?
            .ok_or_else(|| QueryError::invalid(TOPK_LIMIT))?;
        if limit > MAX_ANN_LIMIT {
            return Err(QueryError::invalid(format!(
                "Use of ANN OF in an ORDER BY clause requires a LIMIT that is not greater than {MAX_ANN_LIMIT}. LIMIT was {limit}"
            )));
        }
        let query = self.query_vector(values, ann)?;
        if let Some(p) = page_size.filter(|p| *p > 0 && (*p as usize) < limit) {
            // SelectStatement.TOPK_PAGE_SIZE_WARNING: the rows come in one page.
            crate::client_warnings::warn(format!(
                "Top-K queries do not support paging and the page size is set to {p}, which is less than LIMIT {limit}. The page size has been set to {limit} to match the LIMIT."
            ));
        }
        let filters = self.bind_filters(values)?;
        let score = |row: &Row| ann.index.score_row(&query, row);
        let mut found: Vec<Found> = Vec::new();
        match &self.restrictions.partition {
            Some(partition) => {
                // A partition named twice is read once.
                let mut keys: Vec<Vec<Vec<u8>>> = Vec::new();
                for k in bind_partition_keys(partition, &self.table, values)? {
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
                let mut slices = self.slices(values)?;
                for pk in keys.iter().filter(|k| !(k.len() == 1 && k[0].is_empty())) {
                    for bounds in slices.iter_mut() {
                        let mut cursor: Option<Cursor> = None;
                        loop {
                            let (start, end) = std::mem::take(bounds);
                            let slice = Slice {
                                start,
                                end,
                                reversed: false,
                                limit: Some(PARTITION_PAGE),
                                cursor: cursor.take(),
                            };
                            let read = shards.read(table_id(&self.table), pk, &slice);
                            *bounds = (slice.start, slice.end);
                            let read = read?;
                            for row in read.rows {
                                let Some(s) = score(&row) else { continue };
                                found.push(Found {
                                    score: s,
                                    token: None,
                                    pk: pk.clone(),
                                    statics: read.static_cells.clone(),
                                    row,
                                });
                            }
                            match read.cursor {
                                Some(c) => cursor = Some(c),
                                None => break,
                            }
                        }
                    }
                }
            }
            None => {
                if let Some(range) = self.token_range(values)? {
                    // Filtered queries ask for more: some candidates will not pass.
                    let want = if filters.is_empty() {
                        limit
                    } else {
                        limit.saturating_mul(4).min(MAX_ANN_LIMIT * 4)
                    };
                    let rows =
                        shards.nearest(table_id(&self.table), range, &ann.index, &query, want)?;
                    found.extend(rows.into_iter().map(|n| Found {
                        score: n.score,
                        token: Some(n.token),
                        pk: n.partition_key,
                        statics: n.static_cells,
                        row: n.row,
                    }));
                }
            }
        }
        found.sort_by(|a, b| b.score.total_cmp(&a.score));
        let mut out = match &self.wire_columns {
            Some(_) => Output::Wire {
                rows: EncodedRows::default(),
                ends: Vec::new(),
            },
            None => Output::Cells(Vec::new()),
        };
        for f in &found {
            if out.len() >= limit {
                break;
            }
            let ctx = RowContext {
                token: f.token,
                pk: &f.pk,
                statics: &f.statics,
                row: Some(&f.row),
            };
            if self.matches(&ctx, &filters) {
                self.push_row(&mut out, &ctx)?;
            }
        }
        self.finish(out, None, None, (None, None, None, None))
    }

    /// The bound query vector, checked as Cassandra checks it.
    fn query_vector(&self, values: &Values<'_>, ann: &AnnPlan) -> Result<Vec<f32>, QueryError> {
        let name = &self.table.columns[ann.column].name;
        let elements = match values.bind(&ann.vector)? {
            Bound::Value(Value::Vector(elements)) => elements,
            Bound::Value(_) => {
                return Err(QueryError::invalid(format!(
                    "Invalid vector literal for {name}"
                )))
            }
            Bound::Null | Bound::Unset => {
                return Err(QueryError::invalid(format!(
                    "Unsupported null value for column {name}"
                )))
            }
        };
        let query: Vec<f32> = elements
            .iter()
            .map(|e| match e {
                Value::Float(f) => Ok(*f),
                _ => Err(QueryError::invalid(format!(
                    "Invalid vector literal for {name}"
                ))),
            })
            .collect::<Result<_, _>>()?;
        if !ann.index.similarity.indexable(&query) {
            return Err(QueryError::invalid(
                if ann.index.similarity == Similarity::Cosine {
                    "Zero and near-zero vectors cannot be indexed or queried with cosine similarity"
                } else {
                    "A query vector must hold finite values only"
                },
            ));
        }
        Ok(query)
    }
}
