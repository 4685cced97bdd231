//! Vector search by reading every row of a range: what shards without vector graphs answer
//! `ORDER BY v ANN OF` with (the default of [`Shards::nearest`]). Exact, so its recall is 1.

use super::{ShardError, Shards};
use storage::{Cursor, NearestRow, TableId, TokenRange, VectorIndexSpec};

/// Rows per page of the scan.
const PAGE: usize = 1000;

/// [`Shards::nearest`] over [`Shards::scan`] pages.
pub(super) fn exact_nearest<S: Shards + ?Sized>(
    shards: &S,
    table: TableId,
    range: TokenRange,
    index: &VectorIndexSpec,
    query: &[f32],
    k: usize,
) -> Result<Vec<NearestRow>, ShardError> {
    let mut found: Vec<NearestRow> = Vec::new();
    let mut cursor: Option<Cursor> = None;
    loop {
        let page = shards.scan(table, range, PAGE, cursor.as_ref())?;
        for p in page.partitions {
            for row in p.rows {
                let Some(score) = index.score_row(query, &row) else {
                    continue;
                };
                found.push(NearestRow {
                    score,
                    token: p.token,
                    partition_key: p.partition_key.clone(),
                    static_cells: p.static_cells.clone(),
                    row,
                });
            }
        }
        found.sort_by(|a, b| b.score.total_cmp(&a.score));
        found.truncate(k);
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(found),
        }
    }
}
