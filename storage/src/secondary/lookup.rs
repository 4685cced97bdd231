//! Index lookups: the rows an index names for a value, read in token order and paged like a
//! scan ([`crate::Storage::index_scan`]).

use std::collections::BTreeMap;
use std::ops::Bound;

use super::entry::{index_base, Indexer};
use super::spec::{IndexLookup, IndexValues};
use crate::cursor::{Cursor, ScanPosition};
use crate::engine::Storage;
use crate::key::{self, KeyReader};
use crate::open_tables::Table;
use crate::partition_head::PartitionDeletions;
use crate::read_ctx::{into_inner, range_at, ReadCtx};
use crate::scan_page::{ScanPage, ScannedPartition, TokenRange};
use crate::stripes::Stripes;
use crate::token::{split_partition_key, MAX_TOKEN, MIN_TOKEN};
use crate::{StorageError, TableId};

/// Row keys named by index entries, in key order, each with the encoded value its entry holds.
type RowKeys<'s> = Box<dyn Iterator<Item = Result<(Vec<u8>, Vec<u8>), StorageError>> + 's>;

/// Stale entries purged per lookup at most.
const MAX_PURGED: usize = 256;

/// An entry whose row did not hold its value when read.
struct Stale {
    token: i64,
    /// The length of the row's partition prefix.
    prefix_len: usize,
    /// The whole entry key.
    entry: Vec<u8>,
    /// Where the value starts in `entry`.
    value_at: usize,
    /// Where the row key starts in `entry`.
    row_at: usize,
}

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
        // Index entries read (the candidates' iterator counts them as it goes).
        let entries_read = std::cell::Cell::new(0u64);
        let snap = self.inner.db.snapshot();
        let view = table.ring.current();
        let base = index_base(table_id, &lookup.index);
        let candidates =
            self.candidates(table_id, lookup, &indexer, &window, &snap, &entries_read)?;
        let mut ctx = ReadCtx::on_snapshot(&snap, &table, &view.parts[0].keyspace, self.now());
        let pk_len = table.layout.partition_key.len();
        let mut remaining = limit;
        let mut open: Option<(Vec<u8>, PartitionDeletions, ScannedPartition)> = None;
        // A resumed partition comes first, as its prefix followed by AFTER_PREFIX.
        let resumed = resume.map(|(prefix, after)| {
            let mut row = prefix;
            row.push(key::AFTER_PREFIX);
            Ok((row, Vec::new(), Some(after)))
        });
        let rest = candidates.map(|c| c.map(|(row, value)| (row, value, None)));
        let mut stale: Vec<Stale> = Vec::new();
        for item in resumed.into_iter().chain(rest) {
            let (row, value, resume_after) = item?;
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
            // An entry whose row no longer holds its value is purged after the page.
            if resume_after.is_none() && stale.len() < MAX_PURGED {
                let gone = rows.is_empty() && (!per_partition || part.static_cells.is_empty());
                let holds = !gone
                    && indexer.holds(
                        &part.partition_key,
                        &part.static_cells,
                        rows.first(),
                        &value,
                    );
                if !holds {
                    stale.push(Stale {
                        token,
                        prefix_len: p.len(),
                        entry: [base.as_slice(), &value, &row].concat(),
                        value_at: base.len(),
                        row_at: base.len() + value.len(),
                    });
                }
            }
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
        page.items_read = ctx.items + entries_read.get();
        self.count_items(page.items_read);
        drop(snap);
        if !stale.is_empty() {
            if let Err(e) = self.purge_stale(&table, &indexer, per_partition, &stale) {
                tracing::warn!(table = %table_id, "purging stale index entries failed: {e}");
            }
        }
        Ok(page)
    }

    /// Removes the entries of `stale` whose rows still do not hold their values, read again
    /// under the rows' write-lock stripes: a writer adding the same entry holds its stripe
    /// too, so an entry is never removed from under a row that holds its value.
    fn purge_stale(
        &self,
        table: &Table,
        indexer: &Indexer<'_>,
        per_partition: bool,
        stale: &[Stale],
    ) -> Result<(), StorageError> {
        let mask = stale
            .iter()
            .fold(0u64, |m, s| m | 1 << Stripes::of(table.id, s.token));
        let _guards = self.inner.stripes.lock(mask);
        let snap = self.inner.db.snapshot();
        let view = table.ring.current();
        let mut ctx = ReadCtx::on_snapshot(&snap, table, &view.parts[0].keyspace, self.now());
        let pk_len = table.layout.partition_key.len();
        let mut batch = self.inner.db.batch();
        let mut purged = 0;
        for s in stale {
            let row = &s.entry[s.row_at..];
            let value = &s.entry[s.value_at..s.row_at];
            let (prefix, clustering) = row.split_at(s.prefix_len);
            let (_, pk, _) = key::split_partition_prefix(prefix)?;
            let partition_key = split_partition_key(&pk, pk_len)
                .ok_or_else(|| StorageError::corrupt("partition key components"))?;
            ctx.ks = &view.parts[view.map.index(s.token)].keyspace;
            let (dels, statics) = ctx.head_and_statics(prefix)?;
            let (rows, _) = if per_partition {
                ctx.rows(prefix, &dels, &[], &[key::AFTER_PREFIX], false, 1)?
            } else {
                let hi = [clustering, &[key::CLUSTERING_END + 1]].concat();
                ctx.rows(prefix, &dels, clustering, &hi, false, 1)?
            };
            let gone = rows.is_empty() && (!per_partition || statics.is_empty());
            if gone || !indexer.holds(&partition_key, &statics, rows.first(), value) {
                batch.remove(&self.inner.indexes.ks, s.entry.as_slice());
                purged += 1;
            }
        }
        self.count_items(ctx.items);
        batch.commit()?;
        tracing::debug!(table = %table.id, purged, "stale index entries purged");
        Ok(())
    }

    /// The row keys the index names for the lookup's values inside `window`, in key order.
    fn candidates<'s>(
        &self,
        table_id: TableId,
        lookup: &IndexLookup,
        indexer: &Indexer<'_>,
        window: &Window,
        snap: &'s fjall::Snapshot,
        entries_read: &'s std::cell::Cell<u64>,
    ) -> Result<RowKeys<'s>, StorageError> {
        let ks = &self.inner.indexes.ks;
        let base = index_base(table_id, &lookup.index);
        let (lower, upper) = match &lookup.values {
            IndexValues::Eq(v) => {
                let value = indexer.lookup_value(v, None);
                return Ok(self.value_rows(ks, snap, base, value, window, entries_read));
            }
            IndexValues::Entry(k, v) => {
                let value = indexer.lookup_value(k, Some(v));
                return Ok(self.value_rows(ks, snap, base, value, window, entries_read));
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
        // One value per row (a stale entry's row may come twice).
        let mut rows = BTreeMap::new();
        for guard in range_at(ks, snap, start..) {
            let (k, _) = into_inner(guard)?;
            entries_read.set(entries_read.get() + 1);
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
                rows.entry(row.to_vec()).or_insert_with(|| value.to_vec());
            }
        }
        Ok(Box::new(rows.into_iter().map(Ok)))
    }

    /// The row keys of one value's entries inside `window`.
    fn value_rows<'s>(
        &self,
        ks: &fjall::Keyspace,
        snap: &'s fjall::Snapshot,
        mut base: Vec<u8>,
        value: Vec<u8>,
        window: &Window,
        entries_read: &'s std::cell::Cell<u64>,
    ) -> RowKeys<'s> {
        base.extend_from_slice(&value);
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
                entries_read.set(entries_read.get() + 1);
                let row = k.strip_prefix(base.as_slice())?;
                if high.as_deref().is_some_and(|h| row >= h) {
                    return None;
                }
                Some(Ok((row.to_vec(), value.clone())))
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
