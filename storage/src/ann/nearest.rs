//! [`Storage::nearest`]: the rows whose vectors score highest against a query vector, over a
//! token range, merged across physical partitions.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::decode_vector;
use super::graph::RowRef;
use crate::engine::Storage;
use crate::key::ClusteringBound;
use crate::partition_address::address;
use crate::ring::RingView;
use crate::row::{ColumnValue, Row};
use crate::scan_page::TokenRange;
use crate::slice::Slice;
use crate::token::{MAX_TOKEN, MIN_TOKEN};
use crate::{StorageError, TableId};

/// Rows per page of an exact read of a partition whose graph is not built yet.
const EXACT_PAGE: usize = 1000;

/// One row [`Storage::nearest`] found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NearestRow {
    /// Its similarity score (higher is nearer).
    pub score: f32,
    /// Its partition's token.
    pub token: i64,
    /// Partition-key components, protocol-serialized.
    pub partition_key: Vec<Vec<u8>>,
    /// The partition's live static columns.
    pub static_cells: BTreeMap<u32, ColumnValue>,
    /// The row.
    pub row: Row,
}

/// The token range of the `index`th physical partition of `view`.
pub(crate) fn part_range(view: &RingView, index: usize) -> TokenRange {
    let start = match index {
        0 => MIN_TOKEN,
        i => view.map.ranges[i - 1].end,
    };
    TokenRange {
        start,
        end: view.map.ranges[index].end,
    }
}

/// `a ∩ b` as a scan range, or None when empty (`end` MIN or MAX: the end of the ring).
fn intersect(a: TokenRange, b: TokenRange) -> Option<TokenRange> {
    let end_of = |r: TokenRange| if r.end == MIN_TOKEN { MAX_TOKEN } else { r.end };
    let start = a.start.max(b.start);
    let end = end_of(a).min(end_of(b));
    (start < end).then_some(TokenRange { start, end })
}

fn contains(r: TokenRange, token: i64) -> bool {
    token > r.start && token <= r.end
}

impl Storage {
    /// The at most `k` live rows of `range` whose vectors in `column` score highest against
    /// `query` under the column's vector index, best first. Each physical partition answers
    /// from its graph once built, by reading its rows exactly before; every row is read again
    /// and scored on its stored vector.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], [`StorageError::InvalidRequest`] when `column` has no
    /// vector index or `query` another length, else as [`Storage::scan`].
    pub fn nearest(
        &self,
        table_id: TableId,
        range: TokenRange,
        column: u32,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<NearestRow>, StorageError> {
        let table = self.table(table_id)?;
        let spec = table
            .layout
            .vector_indexes
            .iter()
            .find(|s| s.column == column)
            .copied()
            .ok_or_else(|| {
                StorageError::InvalidRequest(format!("column {column} has no vector index"))
            })?;
        if query.len() != spec.dimension {
            return Err(StorageError::InvalidRequest(format!(
                "a query vector of {} elements for vectors of {}",
                query.len(),
                spec.dimension
            )));
        }
        let score_of = |row: &Row| spec.score_row(query, row);
        let view = table.ring.current();
        let ids: Vec<u64> = view.parts.iter().map(|p| p.id).collect();
        self.inner.ann.retain_parts(table_id, &ids);
        let mut found: Vec<NearestRow> = Vec::new();
        // Candidates of built graphs: (graph distance, index into `graphs`, row).
        let mut pool: Vec<(f32, usize, Arc<RowRef>)> = Vec::new();
        // Built graphs asked: (partition id, range, graph, repeats, candidates read, stale).
        let mut graphs = Vec::new();
        for (index, part) in view.parts.iter().enumerate() {
            let Some(r) = intersect(part_range(&view, index), range) else {
                continue;
            };
            let graph = self
                .inner
                .ann
                .ensure(table_id, &spec, part.id)
                .filter(|g| g.is_complete());
            let Some(graph) = graph else {
                tracing::debug!(table = %table_id, part = part.id, "vector search reads a partition exactly (no built graph)");
                let mut cursor = None;
                loop {
                    let page = self.scan(table_id, r, EXACT_PAGE, cursor.as_ref())?;
                    for p in page.partitions {
                        for row in p.rows {
                            if let Some(score) = score_of(&row) {
                                found.push(NearestRow {
                                    score,
                                    token: p.token,
                                    partition_key: p.partition_key.clone(),
                                    static_cells: p.static_cells.clone(),
                                    row,
                                });
                            }
                        }
                    }
                    keep_best(&mut found, k);
                    match page.cursor {
                        Some(c) => cursor = Some(c),
                        None => break,
                    }
                }
                continue;
            };
            // Twice k from the graph: some candidates are stale or outside the range.
            let (candidates, repeats) = graph.candidates(query, k.saturating_mul(2).max(k + 8));
            tracing::debug!(
                table = %table_id,
                part = part.id,
                candidates = candidates.len(),
                repeats,
                "vector search asks a graph"
            );
            let at = graphs.len();
            pool.extend(candidates.into_iter().map(|(d, c)| (d, at, c)));
            graphs.push((part.id, r, graph, repeats, 0usize, 0usize));
        }
        // The graphs' candidates, nearest first by the vectors the graphs hold, are read until
        // k of them are live: a candidate read stale (deleted, expired, or now holding another
        // vector, which has an entry of its own) costs one more read.
        pool.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut from_graphs = 0;
        for (distance, at, candidate) in pool {
            if from_graphs >= k {
                break;
            }
            let (_, r, _, _, read_count, stale) = &mut graphs[at];
            let token = address(&table.layout, &candidate.partition_key)?.token;
            if !contains(*r, token) {
                continue;
            }
            *read_count += 1;
            let bound = ClusteringBound::Inclusive(candidate.clustering.clone());
            let slice = Slice {
                start: bound.clone(),
                end: bound,
                reversed: false,
                limit: Some(1),
                cursor: None,
            };
            let read = self.read_partition(table_id, &candidate.partition_key, &slice)?;
            let mut live = false;
            for row in read.rows {
                let Some(ColumnValue::Simple(cell)) = row.cells.get(&column) else {
                    continue;
                };
                let Some(v) = decode_vector(&cell.value, spec.dimension) else {
                    continue;
                };
                let score = spec.similarity.score(query, &v);
                if score.is_nan() {
                    continue;
                }
                // The graph's vector, unless the row was written again since (its new vector
                // has an entry of its own): only such a row counts towards k.
                let now = spec.similarity.distance(query, &v);
                live = (now - distance).abs() <= 1e-4 * (1.0 + distance.abs());
                found.push(NearestRow {
                    score,
                    token,
                    partition_key: candidate.partition_key.clone(),
                    static_cells: read.static_cells.clone(),
                    row,
                });
            }
            if live {
                from_graphs += 1;
            } else {
                *stale += 1;
            }
        }
        for (id, _, graph, repeats, read_count, stale) in graphs {
            if graph.worn_out(read_count + repeats, stale + repeats) {
                self.inner.ann.forget((table_id, column, id));
            }
        }
        keep_best(&mut found, k);
        Ok(found)
    }
}

/// Sorts best first and keeps `k`.
fn keep_best(found: &mut Vec<NearestRow>, k: usize) {
    found.sort_by(|a, b| b.score.total_cmp(&a.score));
    found.truncate(k);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_intersect_with_the_ring_end() {
        let full = TokenRange::FULL;
        let part = TokenRange {
            start: 10,
            end: MAX_TOKEN,
        };
        assert_eq!(intersect(part, full), Some(part));
        let q = TokenRange {
            start: MIN_TOKEN,
            end: 20,
        };
        assert_eq!(intersect(part, q), Some(TokenRange { start: 10, end: 20 }));
        assert_eq!(
            intersect(
                TokenRange {
                    start: MIN_TOKEN,
                    end: 5
                },
                part
            ),
            None
        );
        assert!(contains(TokenRange { start: 10, end: 20 }, 20));
        assert!(!contains(TokenRange { start: 10, end: 20 }, 10));
    }
}
