//! Index lookups: the rows an index names for a value, read in token order and paged like a
//! scan ([`crate::Storage::index_scan`]).

use std::collections::BTreeSet;
use std::ops::Bound;

use super::entry::{index_base, Indexer};
use super::spec::{IndexLookup, IndexValues};
use crate::cursor::{Cursor, ScanPosition};
use crate::engine::Storage;
use crate::key::{self, KeyReader};
use crate::partition_head::PartitionDeletions;
use crate::read_ctx::{into_inner, range_at, ReadCtx};
use crate::scan_page::{ScanPage, ScannedPartition, TokenRange};
use crate::token::{split_partition_key, MAX_TOKEN, MIN_TOKEN};
use crate::{StorageError, TableId};

/// Row keys named by index entries, in key order.
type RowKeys<'s> = Box<dyn Iterator<Item = Result<Vec<u8>, StorageError>> + 's>;

/// Where a lookup's candidates start and stop, in row-key bytes.
struct Window {
    /// Candidates must be greater than this (exclusive).
    after: Option<Vec<u8>>,
    /// Candidates must be at least this (the range's first token).
    low: Vec<u8>,
    /// Candidates must be below this (past the range's last token).
    high: Option<Vec<u8>>,
}

impl Window {
    fn admits(&self, row: &[u8]) -> bool {
        row >= self.low.as_slice()
            && self.after.as_deref().is_none_or(|a| row > a)
            && self.high.as_deref().is_none_or(|h| row < h)
    }
}

impl Storage {
    /// The rows of `range` that `lookup`'s index names, in token order, at most `limit` (a
    /// partition of only static columns counts as one), continuing after `cursor`: the same
    /// pages [`Storage::scan`] gives, holding only the rows the index names (those whose
    /// indexed column held a wanted value; callers check each row). An index that does not
    /// exist or is still being built is answered by the scan itself.
    ///
    /// # Errors
    /// As [`Storage::scan`].
    pub fn index_scan(
        &self,
        table_id: TableId,
        lookup: &IndexLookup,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, StorageError> {
        let table = self.table(table_id)?;
        let ready = self
            .inner
            .indexes
            .find(table_id, &lookup.index)
            .is_some_and(|s| s.is_ready());
        let indexer = Indexer::new(&lookup.index, &table.layout);
        let Some(indexer) = indexer.filter(|_| ready) else {
            return self.scan(table_id, range, limit, cursor);
        };
        let mut page = ScanPage::default();
        if limit == 0
            || range.start == MAX_TOKEN
            || (range.start != MIN_TOKEN && range.end != MIN_TOKEN && range.start >= range.end)
        {
            return Ok(page);
        }
        let per_partition = lookup.index.place.per_partition();
        let mut window = Window {
            after: None,
            low: if range.start == MIN_TOKEN {
                Vec::new()
            } else {
                key::encode_token(range.start + 1).to_vec()
            },
            high: (range.end != MIN_TOKEN && range.end != MAX_TOKEN)
                .then(|| key::encode_token(range.end + 1).to_vec()),
        };
        // A partition-level index's page may stop inside a partition's rows.
        let mut resume: Option<(Vec<u8>, Vec<u8>)> = None;
        if let Some(c) = cursor {
            match c.scan_position()? {
                ScanPosition::AfterPartition(prefix) => {
                    window.after = Some(after_partition(prefix))
                }
                ScanPosition::InPartition { prefix, after } if per_partition => {
                    resume = Some((prefix.to_vec(), after.to_vec()));
                    window.after = Some(after_partition(prefix));
                }
                ScanPosition::InPartition { prefix, after } => {
                    window.after = Some([prefix, after].concat());
                }
            }
        }
        let snap = self.inner.db.snapshot();
        let view = table.ring.current();
        let mut entries_read = 0u64;
        let candidates = self.candidates(
            table_id,
            lookup,
            &indexer,
            &window,
            &snap,
            &mut entries_read,
        )?;
        let mut ctx = ReadCtx {
            snap: &snap,
            table: &table,
            ks: &view.parts[0].keyspace,
            now: self.now(),
            items: 0,
            version_before: None,
        };
        let pk_len = table.layout.partition_key.len();
        let mut remaining = limit;
        let mut open: Option<(Vec<u8>, PartitionDeletions, ScannedPartition)> = None;
        // A resumed partition comes first, as its prefix followed by AFTER_PREFIX.
        let resumed = resume.map(|(prefix, after)| {
            let mut row = prefix;
            row.push(key::AFTER_PREFIX);
            Ok((row, Some(after)))
        });
        let rest = candidates.map(|row| row.map(|r| (r, None)));
        for item in resumed.into_iter().chain(rest) {
            let (row, resume_after) = item?;
            let (token, pk, rest) = key::split_partition_prefix(&row)?;
            let prefix_len = row.len() - rest.len();
            let (prefix, clustering) = match resume_after {
                Some(_) => (&row[..row.len() - 1], &[][..]),
                None => (&row[..prefix_len], rest),
            };
            if open.as_ref().is_none_or(|(p, ..)| p.as_slice() != prefix) {
                if let Some((p, _, done)) = open.take() {
                    if let Some(stop) = flush(&mut page, &p, done, &mut remaining) {
                        page.cursor = Some(stop);
                        break;
                    }
                }
                ctx.ks = &view.parts[view.map.index(token)].keyspace;
                let (dels, static_cells) = ctx.head_and_statics(prefix)?;
                let partition_key = split_partition_key(&pk, pk_len)
                    .ok_or_else(|| StorageError::corrupt("partition key components"))?;
                open = Some((
                    prefix.to_vec(),
                    dels,
                    ScannedPartition {
                        token,
                        partition_key,
                        static_cells,
                        rows: Vec::new(),
                    },
                ));
            }
            let Some((p, dels, part)) = open.as_mut() else {
                continue;
            };
            // At least 1: a partition holding `remaining` rows stopped the page already.
            let want = remaining.saturating_sub(part.rows.len()).max(1);
            let (rows, stopped) = if per_partition {
                let lo = match &resume_after {
                    Some(after) => [after.as_slice(), &[key::AFTER_PREFIX]].concat(),
                    None => Vec::new(),
                };
                ctx.rows(p, dels, &lo, &[key::AFTER_PREFIX], false, want)?
            } else {
                let hi = [clustering, &[key::CLUSTERING_END + 1]].concat();
                let (rows, _) = ctx.rows(p, dels, clustering, &hi, false, 1)?;
                let last = (!rows.is_empty()).then(|| clustering.to_vec());
                (rows, last.filter(|_| want == 1))
            };
            part.rows.extend(rows);
            if let Some(last) = stopped {
                page.cursor = Some(Cursor::in_partition(p, &last));
                if let Some((_, _, done)) = open.take() {
                    remaining = remaining.saturating_sub(done.rows.len());
                    page.partitions.push(done);
                }
                break;
            }
        }
        if let Some((p, _, done)) = open.take() {
            if let Some(stop) = flush(&mut page, &p, done, &mut remaining) {
                page.cursor = Some(stop);
            }
        }
        page.items_read = ctx.items + entries_read;
        self.count_items(page.items_read);
        Ok(page)
    }

    /// The row keys the index names for the lookup's values inside `window`, in key order.
    fn candidates<'s>(
        &self,
        table_id: TableId,
        lookup: &IndexLookup,
        indexer: &Indexer<'_>,
        window: &Window,
        snap: &'s fjall::Snapshot,
        entries_read: &mut u64,
    ) -> Result<RowKeys<'s>, StorageError> {
        let ks = &self.inner.indexes.ks;
        let mut base = index_base(table_id, &lookup.index);
        let (lower, upper) = match &lookup.values {
            IndexValues::Eq(v) => {
                base.extend(indexer.lookup_value(v, None));
                return Ok(self.value_rows(ks, snap, base, window));
            }
            IndexValues::Entry(k, v) => {
                base.extend(indexer.lookup_value(k, Some(v)));
                return Ok(self.value_rows(ks, snap, base, window));
            }
            IndexValues::Range { lower, upper } => (lower, upper),
        };
        // A range of values: their rows gathered and sorted (entries are in value order).
        let enc = |b: &Option<(Vec<u8>, bool)>| {
            b.as_ref()
                .map(|(v, inclusive)| (indexer.lookup_value(v, None), *inclusive))
        };
        let (lower, upper) = (enc(lower), enc(upper));
        let start = match &lower {
            Some((v, _)) => [base.as_slice(), v].concat(),
            None => base.clone(),
        };
        let types = indexer.value_types();
        let mut rows = BTreeSet::new();
        for guard in range_at(ks, snap, start..) {
            let (k, _) = into_inner(guard)?;
            *entries_read += 1;
            let Some(rest) = k.strip_prefix(base.as_slice()) else {
                break;
            };
            let mut reader = KeyReader::new(rest, false);
            for ty in &types {
                key::decode_value(ty, &mut reader)?;
            }
            let row = reader.remaining();
            let value = &rest[..rest.len() - row.len()];
            if let Some((lo, inclusive)) = &lower {
                if value < lo.as_slice() || (!inclusive && value == lo.as_slice()) {
                    continue;
                }
            }
            if let Some((hi, inclusive)) = &upper {
                if value > hi.as_slice() || (!inclusive && value == hi.as_slice()) {
                    break;
                }
            }
            if window.admits(row) {
                rows.insert(row.to_vec());
            }
        }
        Ok(Box::new(rows.into_iter().map(Ok)))
    }

    /// The row keys of one value's entries (`base` ends with the value) inside `window`.
    fn value_rows<'s>(
        &self,
        ks: &fjall::Keyspace,
        snap: &'s fjall::Snapshot,
        base: Vec<u8>,
        window: &Window,
    ) -> RowKeys<'s> {
        let from = match &window.after {
            Some(a) if a.as_slice() >= window.low.as_slice() => {
                Bound::Excluded([base.as_slice(), a].concat())
            }
            _ => Bound::Included([base.as_slice(), &window.low].concat()),
        };
        let high = window.high.clone();
        Box::new(
            range_at(ks, snap, (from, Bound::Unbounded)).map_while(move |guard| {
                let k = match into_inner(guard) {
                    Ok((k, _)) => k,
                    Err(e) => return Some(Err(e)),
                };
                let row = k.strip_prefix(base.as_slice())?;
                if high.as_deref().is_some_and(|h| row >= h) {
                    return None;
                }
                Some(Ok(row.to_vec()))
            }),
        )
    }
}

/// Adds a finished partition to the page when it holds anything live and counts it; returns
/// the cursor to stop at when the page is full.
fn flush(
    page: &mut ScanPage,
    prefix: &[u8],
    part: ScannedPartition,
    remaining: &mut usize,
) -> Option<Cursor> {
    let used = if part.rows.is_empty() {
        usize::from(!part.static_cells.is_empty())
    } else {
        part.rows.len()
    };
    if used > 0 {
        page.partitions.push(part);
    }
    *remaining = remaining.saturating_sub(used);
    (*remaining == 0).then(|| Cursor::after_partition(prefix))
}

fn after_partition(prefix: &[u8]) -> Vec<u8> {
    let mut p = prefix.to_vec();
    p.push(key::AFTER_PREFIX);
    p
}
