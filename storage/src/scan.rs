//! Token-range scans: the live partitions of a table in token order, walking its physical
//! partitions, one pass over each one's items (partitions are assembled as their items stream
//! by), paged by row count.

use crate::cell::StoredCell;
use crate::cursor::{Cursor, ScanPosition};
use crate::engine::Storage;
use crate::key::{self, ItemPath};
use crate::partition_head::PartitionHead;
use crate::read_ctx::{into_inner, range_at, PendingRow, ReadCtx};
use crate::row::Row;
use crate::scan_page::{ScanPage, ScannedPartition, TokenRange};
use crate::token::{split_partition_key, MAX_TOKEN, MIN_TOKEN};
use crate::{StorageError, TableId};

impl Storage {
    /// Scans live partitions in token order over `range`, returning at most `limit` rows
    /// (a partition with only static columns counts as one), continuing after `cursor`.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], [`StorageError::InvalidCursor`],
    /// [`StorageError::Fjall`] on I/O failure, [`StorageError::Corrupt`] for bad stored data.
    pub fn scan(
        &self,
        table_id: TableId,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, StorageError> {
        let table = self.table(table_id)?;
        let mut page = ScanPage::default();
        if limit == 0 {
            return Ok(page);
        }
        let bounded_end = range.end != MIN_TOKEN && range.end != MAX_TOKEN;
        if range.start == MAX_TOKEN
            || (range.start != MIN_TOKEN && range.end != MIN_TOKEN && range.start >= range.end)
        {
            return Ok(page);
        }
        let upper = bounded_end.then(|| key::encode_token(range.end + 1).to_vec());
        let mut position = if range.start == MIN_TOKEN {
            Vec::new()
        } else {
            key::encode_token(range.start + 1).to_vec()
        };
        // (partition prefix, encoded clustering to continue after)
        let mut resume: Option<(Vec<u8>, Vec<u8>)> = None;
        if let Some(c) = cursor {
            match c.scan_position()? {
                ScanPosition::AfterPartition(prefix) => {
                    position = position.max(after_partition(prefix));
                }
                ScanPosition::InPartition { prefix, after } => {
                    position = position.max(prefix.to_vec());
                    resume = Some((prefix.to_vec(), after.to_vec()));
                }
            }
        }
        let view = table.ring.current();
        let snap = self.inner.db.snapshot();
        let mut ctx = ReadCtx::on_snapshot(&snap, &table, &view.parts[0].keyspace, self.now());
        let mut remaining = limit;
        let mut last_prefix: Option<Vec<u8>> = None;
        let pk_len = table.layout.partition_key.len();
        loop {
            if upper.as_ref().is_some_and(|u| &position >= u) {
                break;
            }
            // Walk the physical partitions in token order.
            let index = view.map.index(key::token_of(&position));
            let part_end = view.map.ranges[index].end;
            ctx.ks = &view.parts[index].keyspace;
            let part_upper =
                (part_end != MAX_TOKEN).then(|| key::encode_token(part_end + 1).to_vec());
            if let Some((prefix, after)) = resume.take() {
                // Finish the partition the previous page stopped inside, from its cursor.
                let (token, pk, _) = key::split_partition_prefix(&prefix)?;
                let (dels, static_cells) = ctx.head_and_statics(&prefix)?;
                let mut lo = after;
                lo.push(key::AFTER_PREFIX);
                let (rows, last) =
                    ctx.rows(&prefix, &dels, &lo, &[key::AFTER_PREFIX], false, remaining)?;
                if !rows.is_empty() {
                    remaining = remaining.saturating_sub(rows.len());
                    page.partitions.push(ScannedPartition {
                        token,
                        partition_key: split_partition_key(&pk, pk_len)
                            .ok_or_else(|| StorageError::corrupt("partition key components"))?,
                        static_cells,
                        rows,
                    });
                }
                if let Some(c) = last {
                    page.cursor = Some(Cursor::in_partition(&prefix, &c));
                    break;
                }
                position = after_partition(&prefix);
                last_prefix = Some(prefix);
                continue;
            }
            let bound = match (&upper, &part_upper) {
                (Some(a), Some(b)) => Some(a.min(b).clone()),
                (a, b) => a.clone().or_else(|| b.clone()),
            };
            // One pass over the physical partition's items: partitions are assembled as
            // their items stream by (head items sort before rows).
            let iter = match bound {
                Some(u) => range_at(ctx.ks, &snap, position.clone()..u),
                None => range_at(ctx.ks, &snap, position.clone()..),
            };
            let mut current: Option<StreamedPartition> = None;
            let mut stopped = false;
            for guard in iter {
                ctx.items += 1;
                let (k, v) = into_inner(guard)?;
                if !current.as_ref().is_some_and(|c| k.starts_with(&c.prefix)) {
                    if let Some(done) = current.take() {
                        last_prefix = Some(done.finish(&ctx, &mut page, pk_len, &mut remaining)?);
                    }
                    if remaining == 0 {
                        let last = match last_prefix.take() {
                            Some(p) => p,
                            None => prev_prefix(&position)?,
                        };
                        page.cursor = Some(Cursor::after_partition(&last));
                        stopped = true;
                        break;
                    }
                    let (token, pk, rest) = key::split_partition_prefix(&k)?;
                    current = Some(StreamedPartition {
                        token,
                        pk,
                        prefix: k[..k.len() - rest.len()].to_vec(),
                        head: PartitionHead::default(),
                        rows: Vec::new(),
                        row: None,
                    });
                }
                let Some(part) = current.as_mut() else {
                    continue;
                };
                let rest = &k[part.prefix.len()..];
                if rest == [key::SECTION_SIZE] {
                    continue; // bookkeeping, not a cell
                }
                let cell = StoredCell::decode(&v)?;
                let Some((&key::SECTION_ROWS, row_key)) = rest.split_first() else {
                    part.head.add(rest, cell)?;
                    continue;
                };
                let same_row = part.row.as_ref().is_some_and(|(c, _, _)| {
                    row_key.starts_with(c) && row_key.get(c.len()) == Some(&key::CLUSTERING_END)
                });
                if !same_row {
                    if let Some((c, values, mut items)) = part.row.take() {
                        ctx.finish_row(
                            &mut part.rows,
                            &c,
                            values,
                            &mut items,
                            &part.head.dels,
                            false,
                        )?;
                        if part.rows.len() >= remaining {
                            // The page is full inside this partition.
                            let prefix = part.prefix.clone();
                            if let Some(full) = current.take() {
                                full.finish(&ctx, &mut page, pk_len, &mut remaining)?;
                            }
                            page.cursor = Some(Cursor::in_partition(&prefix, &c));
                            stopped = true;
                            break;
                        }
                    }
                    part.row = Some(ctx.start_row(row_key)?);
                }
                if let Some((c, _, items)) = part.row.as_mut() {
                    items.push((ItemPath::decode(&row_key[c.len() + 1..])?, cell));
                }
            }
            if stopped {
                break;
            }
            if let Some(done) = current.take() {
                last_prefix = Some(done.finish(&ctx, &mut page, pk_len, &mut remaining)?);
            }
            match part_upper {
                Some(next) if index + 1 < view.parts.len() => position = position.max(next),
                _ => break,
            }
        }
        page.items_read = ctx.items;
        self.count_items(ctx.items);
        Ok(page)
    }
}

/// A partition being assembled by a scan's single pass.
struct StreamedPartition {
    token: i64,
    /// The escaped partition-key bytes.
    pk: Vec<u8>,
    prefix: Vec<u8>,
    head: PartitionHead,
    rows: Vec<Row>,
    row: Option<PendingRow>,
}

impl StreamedPartition {
    /// Finishes the partition: its last row, its statics; adds it to `page` when anything in
    /// it is live and counts what it used against `remaining`. Returns its prefix.
    fn finish(
        mut self,
        ctx: &ReadCtx<'_>,
        page: &mut ScanPage,
        pk_len: usize,
        remaining: &mut usize,
    ) -> Result<Vec<u8>, StorageError> {
        if let Some((c, values, mut items)) = self.row.take() {
            ctx.finish_row(
                &mut self.rows,
                &c,
                values,
                &mut items,
                &self.head.dels,
                false,
            )?;
        }
        let static_cells = ctx
            .build(&mut self.head.statics, self.head.dels.partition, false)?
            .0;
        let used = if self.rows.is_empty() {
            usize::from(!static_cells.is_empty())
        } else {
            self.rows.len()
        };
        if used > 0 {
            page.partitions.push(ScannedPartition {
                token: self.token,
                partition_key: split_partition_key(&self.pk, pk_len)
                    .ok_or_else(|| StorageError::corrupt("partition key components"))?,
                static_cells,
                rows: self.rows,
            });
        }
        *remaining = remaining.saturating_sub(used);
        Ok(self.prefix)
    }
}

fn after_partition(prefix: &[u8]) -> Vec<u8> {
    let mut p = prefix.to_vec();
    p.push(key::AFTER_PREFIX);
    p
}

/// The partition prefix a position made by [`after_partition`] came from.
fn prev_prefix(position: &[u8]) -> Result<Vec<u8>, StorageError> {
    match position.split_last() {
        Some((&key::AFTER_PREFIX, p)) => Ok(p.to_vec()),
        _ => Err(StorageError::InvalidCursor),
    }
}
