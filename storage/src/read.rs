//! Reads: partition slices (forward or reverse, bounded, paged) and token-range scans.
//!
//! Every read is a range scan over the key layout of [`crate::key`] on one fjall snapshot,
//! reconciling cells with the partition, range and row deletions as it goes; nothing is sorted
//! in memory. Range tombstones of a partition are loaded first (they live in their own key
//! section), then rows stream in clustering order until the limit. A read of one row is point
//! lookups instead, and a row that is one item by its table's content flags is a single lookup
//! without a snapshot.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use fjall::{AbstractTree, Keyspace, Readable, Snapshot};
use lsm_tree::{Guard as _, IterGuardImpl};

use crate::cell::{CellValue, CellView, StoredCell};
use crate::cursor::{Cursor, ScanPosition};
use crate::engine::Storage;
use crate::open_tables::Table;
use crate::stripes::Stripes;
use crate::key::{self, ClusteringBound, ItemPath, KeyReader};
use crate::partition_address::address;
use crate::row::{ColumnValue, Row};
use crate::scan_page::{ScanPage, ScannedPartition, TokenRange};
use crate::slice::{PartitionSlice, Slice};
use crate::token::{split_partition_key, MAX_TOKEN, MIN_TOKEN};
use crate::{bundle, content, one_table, StorageError, TableId};

/// A row being assembled: encoded clustering, decoded clustering, stored items.
type PendingRow = (Vec<u8>, Vec<Vec<u8>>, Vec<(ItemPath, StoredCell)>);

/// Deletions that apply to a whole partition read.
#[derive(Default)]
struct PartitionDeletions {
    partition: Option<i64>,
    /// (start, end exclusive, timestamp) in encoded clustering bytes.
    ranges: Vec<(Vec<u8>, Vec<u8>, i64)>,
}

/// The items of a partition before its rows, gathered in key order.
#[derive(Default)]
struct PartitionHead {
    dels: PartitionDeletions,
    statics: Vec<(ItemPath, StoredCell)>,
}

impl PartitionHead {
    /// Takes one item; `rest` is its key after the partition prefix. Rows and the size cell
    /// are not head items and are ignored.
    fn add(&mut self, rest: &[u8], cell: StoredCell) -> Result<(), StorageError> {
        match rest.split_first() {
            Some((&key::SECTION_PARTITION_DELETION, [])) => {
                self.dels.partition = Some(cell.timestamp());
            }
            Some((&key::SECTION_STATIC, path)) => {
                self.statics.push((ItemPath::decode(path)?, cell));
            }
            Some((&key::SECTION_RANGE_TOMBSTONE, body)) => {
                let (len, rest) = body
                    .split_first_chunk::<2>()
                    .ok_or_else(|| StorageError::corrupt("range tombstone key"))?;
                let len = usize::from(u16::from_be_bytes(*len));
                if rest.len() < len {
                    return Err(StorageError::corrupt("range tombstone key"));
                }
                let (lo, hi) = rest.split_at(len);
                self.dels
                    .ranges
                    .push((lo.to_vec(), hi.to_vec(), cell.timestamp()));
            }
            _ => {}
        }
        Ok(())
    }
}

impl PartitionDeletions {
    fn covering(&self, clustering: &[u8]) -> Option<i64> {
        self.ranges
            .iter()
            .filter(|(lo, hi, _)| lo.as_slice() <= clustering && clustering < hi.as_slice())
            .map(|r| r.2)
            .chain(self.partition)
            .max()
    }
}

/// Where a read's single-item lookups come from.
trait Lookup: Copy {
    fn lookup(self, ks: &Keyspace, key: &[u8]) -> Result<Option<fjall::Slice>, StorageError>;
}

/// One consistent snapshot: for reads of several items or ranges.
impl Lookup for &Snapshot {
    fn lookup(self, ks: &Keyspace, key: &[u8]) -> Result<Option<fjall::Slice>, StorageError> {
        Ok(Readable::get(self, ks, key)?)
    }
}

/// Items as published at a sequence number (a write batch is published whole, so none is
/// seen in part), read without registering a snapshot. Only for a single lookup that re-reads
/// a miss through a snapshot: an unregistered read may miss a version that compaction dropped
/// for a newer one meanwhile, but never sees a wrong one.
#[derive(Clone, Copy)]
struct Published(fjall::SeqNo);

impl Lookup for Published {
    fn lookup(self, ks: &Keyspace, key: &[u8]) -> Result<Option<fjall::Slice>, StorageError> {
        Ok(AbstractTree::get(&ks.tree, key, self.0).map_err(fjall::Error::from)?)
    }
}

/// The item cache in front of the newest published items: a miss takes the partition's
/// write-lock stripe, reads the item at the newest published sequence number and caches it
/// (see `crate::item_cache`). Only for a single lookup, as [`Published`].
#[derive(Clone, Copy)]
struct Cached<'a> {
    storage: &'a Storage,
    /// The partition's id in the item cache.
    part: u64,
    /// The partition's write-lock stripe.
    stripe: usize,
}

impl Lookup for Cached<'_> {
    fn lookup(self, ks: &Keyspace, key: &[u8]) -> Result<Option<fjall::Slice>, StorageError> {
        let inner = &self.storage.inner;
        if !inner.item_cache.enabled() {
            // Nothing to fill: no stripe to take.
            return Published(inner.db.visible_seqno()).lookup(ks, key);
        }
        if let Some(v) = inner.item_cache.get_unlocked(self.part, key, self.stripe) {
            return Ok(Some(v));
        }
        let _stripe = inner.stripes.lock(1 << self.stripe);
        let v = Published(inner.db.visible_seqno()).lookup(ks, key)?;
        if let Some(v) = &v {
            inner.item_cache.before_fill();
            inner.item_cache.put(self.part, key, v);
        }
        Ok(v)
    }
}

struct ReadCtx<'a, S = &'a Snapshot> {
    snap: S,
    table: &'a Table,
    /// The keyspace of the physical partition being read.
    ks: &'a Keyspace,
    now: i64,
    items: u64,
    /// The id of the keyspace tree's version read before the snapshot was opened: a forward
    /// range read of a tree that is one table reads it directly (see `crate::one_table`).
    version_before: Option<u64>,
}

impl<S: Lookup> ReadCtx<'_, S> {
    fn kv(&mut self, guard: IterGuardImpl) -> Result<(fjall::Slice, StoredCell), StorageError> {
        let (k, v) = into_inner(guard)?;
        Ok((k, self.cell(&v)?))
    }

    /// Decodes a stored value, counting the item as read.
    fn cell(&mut self, value: &[u8]) -> Result<StoredCell, StorageError> {
        self.items += 1;
        StoredCell::decode(value)
    }

    /// Live columns of one row (or the static row) from its stored items.
    /// Consumes `items` (the vector is left empty, its capacity kept for the next row).
    fn build(
        &self,
        items: &mut Vec<(ItemPath, StoredCell)>,
        deleted: Option<i64>,
        reversed: bool,
    ) -> Result<(BTreeMap<u32, ColumnValue>, bool), StorageError> {
        if let [(ItemPath::Liveness, marker)] = items.as_slice() {
            if deleted.is_none() {
                let now = self.now;
                let built = self.build_bundle(
                    marker.live_value(now),
                    marker.timestamp(),
                    marker.ttl_remaining(now),
                );
                items.clear();
                return built;
            }
        }
        let row_del = items
            .iter()
            .filter(|(p, _)| *p == ItemPath::RowDeletion)
            .map(|(_, c)| c.timestamp())
            .chain(deleted)
            .max();
        let shadowed = |c: &StoredCell, del: Option<i64>| del.is_some_and(|d| c.timestamp() <= d);
        let mut col_del: BTreeMap<u32, i64> = BTreeMap::new();
        for (p, c) in items.iter() {
            if let ItemPath::Complex(col, None) = p {
                col_del.insert(*col, c.timestamp());
            }
        }
        let now = self.now;
        // Moves a live cell's value out (no copy); None when it is dead at `now`.
        let value = |c: StoredCell| {
            let (timestamp, ttl) = (c.timestamp(), c.ttl_remaining(now));
            c.into_live_value(now).map(|value| CellValue {
                value,
                timestamp,
                ttl,
            })
        };
        let mut live_marker = false;
        let mut cells = BTreeMap::new();
        // Simple cells, bundled or separate: the reconciled winner per column.
        let mut simple: BTreeMap<u32, StoredCell> = BTreeMap::new();
        let mut keep = |col: u32, cell: StoredCell| match simple.entry(col) {
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(cell);
            }
            std::collections::btree_map::Entry::Occupied(mut e) => {
                if cell.wins_over(e.get()) {
                    e.insert(cell);
                }
            }
        };
        for (path, cell) in items.drain(..) {
            match path {
                ItemPath::Liveness => {
                    live_marker |= cell.live_value(now).is_some() && !shadowed(&cell, row_del);
                    for bundled in bundle::cells(bundle::bytes_of(&cell)) {
                        let (col, v) = bundled?;
                        keep(col, bundle::with_value(&cell, v.to_vec()));
                    }
                }
                ItemPath::RowDeletion | ItemPath::Complex(_, None) => {}
                ItemPath::Cell(col) => keep(col, cell),
                ItemPath::Complex(col, Some(elem)) => {
                    let del = row_del.max(col_del.get(&col).copied());
                    let shadow = shadowed(&cell, del);
                    if let Some(v) = value(cell).filter(|_| !shadow) {
                        let ty = self.element_type(col)?;
                        let mut reader = KeyReader::new(&elem, false);
                        let elem_key = key::decode_value(&ty, &mut reader)?;
                        let entry = cells
                            .entry(col)
                            .or_insert_with(|| ColumnValue::Collection(Vec::new()));
                        if let ColumnValue::Collection(list) = entry {
                            list.push((elem_key, v));
                        }
                    }
                }
            }
        }
        for (col, cell) in simple {
            let shadow = shadowed(&cell, row_del);
            if let Some(v) = value(cell).filter(|_| !shadow) {
                cells.insert(col, ColumnValue::Simple(v));
            }
        }
        if reversed {
            for v in cells.values_mut() {
                if let ColumnValue::Collection(list) = v {
                    list.reverse();
                }
            }
        }
        let live = live_marker || !cells.is_empty();
        Ok((cells, live))
    }

    /// [`Self::build`] of a row that is its liveness item alone, with no deletion over it
    /// (the only shape rows take in tables that never stored a row deletion or a separate
    /// cell), from the marker's value when live at the read's time, its timestamp and its TTL
    /// left: the bundled cells are the row's columns as they are, one per column in column
    /// order, and share the marker's liveness (a dead marker has no live cell).
    fn build_bundle(
        &self,
        live: Option<&[u8]>,
        timestamp: i64,
        ttl: Option<u32>,
    ) -> Result<(BTreeMap<u32, ColumnValue>, bool), StorageError> {
        let mut cells = BTreeMap::new();
        let Some(bytes) = live else {
            return Ok((cells, false));
        };
        for bundled in bundle::cells(bytes) {
            let (col, v) = bundled?;
            let value = CellValue {
                value: v.to_vec(),
                timestamp,
                ttl,
            };
            cells.insert(col, ColumnValue::Simple(value));
        }
        Ok((cells, true))
    }

    fn element_type(&self, col: u32) -> Result<cql::types::DataType, StorageError> {
        use cql::types::{DataType, NativeType};
        match self.table.layout.columns.get(&col).map(DataType::unfrozen) {
            Some(DataType::List(_)) => Ok(NativeType::Timeuuid.into()),
            Some(DataType::Set(t)) | Some(DataType::Map(t, _)) => Ok((**t).clone()),
            Some(DataType::Udt(_)) => Ok(NativeType::Smallint.into()),
            _ => Err(StorageError::corrupt(format!(
                "collection element stored for non-collection column {col}"
            ))),
        }
    }

    /// The one row with encoded clustering `clustering`, read with a point lookup per item
    /// (liveness, row deletion, each of `columns`): bloom filters skip the LSM tables that do
    /// not hold the row, where a range read would open every level.
    fn point_row(
        &mut self,
        prefix: &[u8],
        dels: &PartitionDeletions,
        clustering: &[u8],
        columns: &[u32],
        row_deletions: bool,
        separate_cells: bool,
    ) -> Result<Vec<Row>, StorageError> {
        let mut row_key = Vec::with_capacity(prefix.len() + clustering.len() + 8);
        row_key.extend_from_slice(prefix);
        row_key.push(key::SECTION_ROWS);
        row_key.extend_from_slice(clustering);
        row_key.push(key::CLUSTERING_END);
        let base = row_key.len();
        // The row deletion is looked up only in tables that ever stored one, and separate
        // cells only in tables that ever stored one outside a bundle (`crate::bundle`).
        let columns = if separate_cells { columns } else { &[] };
        let paths = [ItemPath::Liveness]
            .into_iter()
            .chain(row_deletions.then_some(ItemPath::RowDeletion))
            .chain(columns.iter().map(|&c| ItemPath::Cell(c)));
        // Kept as stored: a row that is its liveness item alone is built from these bytes.
        let mut stored = Vec::new();
        for path in paths {
            row_key.truncate(base);
            path.encode(&mut row_key);
            if let Some(v) = self.snap.lookup(self.ks, &row_key)? {
                self.items += 1;
                stored.push((path, v));
            }
        }
        let mut rows = Vec::new();
        if !stored.is_empty() {
            let values = self.clustering_of(&row_key[prefix.len() + 1..])?.0;
            self.finish_stored_row(&mut rows, clustering, values, &mut stored, dels, false)?;
        }
        Ok(rows)
    }

    /// A row starting at `rest` (its key after the rows section byte): its encoded and
    /// decoded clustering, no items yet.
    fn start_row(&self, rest: &[u8]) -> Result<PendingRow, StorageError> {
        let (values, c_len) = self.clustering_of(rest)?;
        Ok((rest[..c_len].to_vec(), values, Vec::new()))
    }

    /// The decoded clustering of a row key `rest` (its key after the rows section byte) and
    /// the length of its encoding, which the clustering end byte follows.
    fn clustering_of(&self, rest: &[u8]) -> Result<(Vec<Vec<u8>>, usize), StorageError> {
        let mut reader = KeyReader::new(rest, false);
        let values = key::decode_clustering_from(&self.table.layout.clustering, &mut reader)?;
        let c_len = rest.len() - reader.remaining().len();
        if reader.byte()? != key::CLUSTERING_END {
            return Err(StorageError::corrupt("row key without clustering end"));
        }
        Ok((values, c_len))
    }

    fn finish_row(
        &self,
        rows: &mut Vec<Row>,
        encoded: &[u8],
        clustering: Vec<Vec<u8>>,
        items: &mut Vec<(ItemPath, StoredCell)>,
        dels: &PartitionDeletions,
        reversed: bool,
    ) -> Result<(), StorageError> {
        let (cells, live) = self.build(items, dels.covering(encoded), reversed)?;
        if live {
            rows.push(Row { clustering, cells });
        }
        Ok(())
    }

    /// [`Self::finish_row`] of items still as stored. A row that is its liveness item
    /// alone is built from the item's bytes (its cells' values copied once, not first into
    /// a decoded cell); other rows decode their items and go through [`Self::build`].
    fn finish_stored_row(
        &self,
        rows: &mut Vec<Row>,
        encoded: &[u8],
        clustering: Vec<Vec<u8>>,
        stored: &mut Vec<(ItemPath, fjall::Slice)>,
        dels: &PartitionDeletions,
        reversed: bool,
    ) -> Result<(), StorageError> {
        let deleted = dels.covering(encoded);
        if let ([(ItemPath::Liveness, bytes)], None) = (stored.as_slice(), deleted) {
            let marker = CellView::parse(bytes)?;
            let now = self.now;
            let (cells, live) = self.build_bundle(
                marker.live_value(now),
                marker.timestamp(),
                marker.ttl_remaining(now),
            )?;
            stored.clear();
            if live {
                rows.push(Row { clustering, cells });
            }
            return Ok(());
        }
        let mut items = stored
            .drain(..)
            .map(|(path, bytes)| Ok((path, StoredCell::decode(&bytes)?)))
            .collect::<Result<Vec<_>, StorageError>>()?;
        self.finish_row(rows, encoded, clustering, &mut items, dels, reversed)
    }
}

/// Range reads: only on a snapshot.
impl ReadCtx<'_> {
    /// The items of `range` as the read's snapshot sees them, straight from the keyspace's
    /// tree at the snapshot's sequence number. fjall's `Snapshot::range` would register a
    /// second snapshot for the iterator (a shared-map entry, removed again when it is
    /// dropped: ~4% of a 10-row slice's CPU); the snapshot this read holds until it returns
    /// already keeps every version the iterator reads.
    fn range<R: std::ops::RangeBounds<Vec<u8>>>(
        &self,
        range: R,
    ) -> Box<dyn DoubleEndedIterator<Item = IterGuardImpl> + Send + 'static> {
        range_at(self.ks, self.snap, range)
    }

    /// Everything a partition holds before its rows, in one range read: the partition
    /// deletion, the static row's items and the range tombstones.
    fn head(
        &mut self,
        prefix: &[u8],
    ) -> Result<(PartitionDeletions, Vec<(ItemPath, StoredCell)>), StorageError> {
        let mut start = prefix.to_vec();
        start.push(key::SECTION_PARTITION_DELETION);
        let mut end = prefix.to_vec();
        end.push(key::SECTION_ROWS);
        let mut head = PartitionHead::default();
        for guard in self.range(start..end) {
            let (k, cell) = self.kv(guard)?;
            head.add(&k[prefix.len()..], cell)?;
        }
        Ok((head.dels, head.statics))
    }

    /// The partition's deletions and live static columns.
    fn head_and_statics(
        &mut self,
        prefix: &[u8],
    ) -> Result<(PartitionDeletions, BTreeMap<u32, ColumnValue>), StorageError> {
        let (dels, mut items) = self.head(prefix)?;
        let statics = self.build(&mut items, dels.partition, false)?.0;
        Ok((dels, statics))
    }

    /// Rows with encoded clustering in `[lo, hi)`, up to `limit`; also returns the encoded
    /// clustering of the last row when the limit stopped the read before the end.
    fn rows(
        &mut self,
        prefix: &[u8],
        dels: &PartitionDeletions,
        lo: &[u8],
        hi: &[u8],
        reversed: bool,
        limit: usize,
    ) -> Result<(Vec<Row>, Option<Vec<u8>>), StorageError> {
        let with = |bound: &[u8]| {
            let mut key = Vec::with_capacity(prefix.len() + 1 + bound.len());
            key.extend_from_slice(prefix);
            key.push(key::SECTION_ROWS);
            key.extend_from_slice(bound);
            key
        };
        let base_len = prefix.len() + 1;
        let (start, end) = (with(lo), with(hi));
        let mut rows = Vec::with_capacity(limit.min(16));
        if limit == 0 || start >= end {
            return Ok((rows, None));
        }
        // A forward read leaves the range open above and stops at `end` itself: fjall then
        // skips the upper-bound seek into every table it merges, which cost a tenth of a
        // 10-row slice's CPU.
        type Items<'i> =
            Box<dyn Iterator<Item = Result<(fjall::Slice, fjall::Slice), StorageError>> + 'i>;
        let iter: Items<'_> = if reversed {
            Box::new(self.range(start..end.clone()).rev().map(into_inner))
        } else if let Some(visible) = self
            .version_before
            .and_then(|before| one_table::forward(&self.ks.tree, before, &start, self.snap.seqno()))
        {
            Box::new(visible)
        } else {
            Box::new(self.range(start..).map(into_inner))
        };
        // The row being assembled: its decoded clustering, and in `encoded` its clustering as
        // its keys encode it. Its items gather, as stored, in `items`. Both buffers serve
        // every row.
        let mut current: Option<Vec<Vec<u8>>> = None;
        let mut encoded = Vec::new();
        let mut items = Vec::new();
        for item in iter {
            let (k, v) = item?;
            if !reversed && *k >= *end {
                break;
            }
            self.items += 1;
            let rest = &k[base_len..];
            let same_row = current.is_some()
                && rest.starts_with(&encoded)
                && rest.get(encoded.len()) == Some(&key::CLUSTERING_END);
            if !same_row {
                if let Some(values) = current.take() {
                    self.finish_stored_row(
                        &mut rows, &encoded, values, &mut items, dels, reversed,
                    )?;
                    if rows.len() >= limit {
                        return Ok((rows, Some(encoded)));
                    }
                }
                let (values, c_len) = self.clustering_of(rest)?;
                encoded.clear();
                encoded.extend_from_slice(&rest[..c_len]);
                current = Some(values);
            }
            let path = ItemPath::decode(&rest[encoded.len() + 1..])?;
            items.push((path, v));
        }
        if let Some(values) = current.take() {
            self.finish_stored_row(&mut rows, &encoded, values, &mut items, dels, reversed)?;
        }
        Ok((rows, None))
    }
}

impl Storage {
    /// Reads a slice of one partition: live rows between the bounds, in clustering order (or
    /// reversed), at most `limit`, continuing after `cursor`; plus the live static columns.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], [`StorageError::InvalidRequest`] /
    /// [`StorageError::InvalidValue`] for bad keys or bounds, [`StorageError::InvalidCursor`],
    /// [`StorageError::Fjall`] on I/O failure, [`StorageError::Corrupt`] for bad stored data.
    pub fn read_partition(
        &self,
        table_id: TableId,
        partition_key: &[Vec<u8>],
        slice: &Slice,
    ) -> Result<PartitionSlice, StorageError> {
        let table = self.table(table_id)?;
        let addr = address(&table.layout, partition_key)?;
        let clustering = &table.layout.clustering;
        let mut lo = key::start_bytes(clustering, &slice.start)?;
        // Routing first, then the snapshot: the partition a view routes to keeps every write
        // until the view is released (see `crate::split`).
        let view = table.ring.current();
        let limit = slice.limit.unwrap_or(usize::MAX);
        let single = if slice.cursor.is_none() && limit > 0 {
            single_row(&table, slice)
        } else {
            None
        };
        let content = &table.ring.content;
        // A row of a table that never stored a partition head, row deletion or separate cell
        // is its one liveness item: one lookup at the published sequence number, with no
        // snapshot to open. The flags are checked again after it: writers set them before
        // they commit, so still clear they say no such item was visible to the lookup.
        // Otherwise, and when the row was not found, the read starts over below.
        const ONE_ITEM: u8 = content::HEAD | content::ROW_DELETIONS | content::SEPARATE_CELLS;
        if let Some(columns) = single.filter(|_| !content.may_have(ONE_ITEM)) {
            let part = view.part(addr.token);
            let mut ctx = ReadCtx {
                snap: Cached {
                    storage: self,
                    part: part.cache_id.load(Ordering::Relaxed),
                    stripe: Stripes::of(table_id, addr.token),
                },
                table: &table,
                ks: &part.keyspace,
                now: self.now(),
                items: 0,
                version_before: None,
            };
            let dels = PartitionDeletions::default();
            let rows = ctx.point_row(&addr.prefix, &dels, &lo, columns, false, false)?;
            self.count_items(ctx.items);
            if ctx.items > 0 && !content.may_have(ONE_ITEM) {
                return Ok(PartitionSlice {
                    static_cells: BTreeMap::new(),
                    rows,
                    cursor: None,
                    items_read: ctx.items,
                });
            }
        }
        // The end is encoded only past the one-row path, which reads at `lo` alone.
        let mut hi = key::end_bytes(clustering, &slice.end)?;
        if let Some(cursor) = &slice.cursor {
            let after = cursor.slice_position()?;
            if slice.reversed {
                hi = hi.min(after.to_vec());
            } else {
                let mut next = after.to_vec();
                next.push(key::AFTER_PREFIX);
                lo = lo.max(next);
            }
        }
        let ks = &view.part(addr.token).keyspace;
        // Only a forward range read of rows can read a one-table tree directly: a row read by
        // point lookups does not take the tree's version.
        let version_before = (single.is_none() && !slice.reversed)
            .then(|| one_table::version_before_snapshot(&ks.tree));
        let snap = self.inner.db.snapshot();
        let mut ctx = ReadCtx {
            snap: &snap,
            table: &table,
            ks,
            now: self.now(),
            items: 0,
            version_before,
        };
        // Checked after the snapshot was taken (see `crate::content`): a table that never
        // stored a partition deletion, static or range tombstone has no head to read.
        let (dels, static_cells) = if content.may_have(content::HEAD) {
            // The size cell (one bloom-filtered lookup) says whether the partition has
            // anything before its rows; every write of head items keeps one, so a partition
            // without a cell has no head.
            let flags = match snap.get(ctx.ks, key::size_cell_key(&addr.prefix))? {
                Some(v) => key::decode_size_cell(&v)?.1,
                None => 0,
            };
            if flags & key::SIZE_FLAG_HEAD != 0 {
                ctx.head_and_statics(&addr.prefix)?
            } else {
                (PartitionDeletions::default(), BTreeMap::new())
            }
        } else {
            (PartitionDeletions::default(), BTreeMap::new())
        };
        let row_deletions = content.may_have(content::ROW_DELETIONS);
        let separate_cells = content.may_have(content::SEPARATE_CELLS);
        let (rows, last) = match single {
            Some(columns) => (
                ctx.point_row(
                    &addr.prefix,
                    &dels,
                    &lo,
                    columns,
                    row_deletions,
                    separate_cells,
                )?,
                None,
            ),
            None => ctx.rows(&addr.prefix, &dels, &lo, &hi, slice.reversed, limit)?,
        };
        self.count_items(ctx.items);
        let cursor = last.map(|c| Cursor::in_slice(&c));
        Ok(PartitionSlice {
            static_cells,
            rows,
            cursor,
            items_read: ctx.items,
        })
    }

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
        let mut ctx = ReadCtx {
            snap: &snap,
            table: &table,
            ks: &view.parts[0].keyspace,
            now: self.now(),
            items: 0,
            version_before: None,
        };
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

    fn count_items(&self, n: u64) {
        self.inner
            .items_read
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The regular columns to look up when `slice` selects exactly one whole row of a table whose
/// rows can be read with point lookups (see [`crate::TableLayout::point_row_columns`]).
pub(crate) fn single_row<'t>(table: &'t Table, slice: &Slice) -> Option<&'t [u32]> {
    let columns = table.layout.point_row_columns.as_deref()?;
    let clustering = &table.layout.clustering;
    let one_row = match (&slice.start, &slice.end) {
        (ClusteringBound::Inclusive(a), ClusteringBound::Inclusive(b)) => {
            a == b && a.len() == clustering.len()
        }
        (ClusteringBound::Unbounded, ClusteringBound::Unbounded) => clustering.is_empty(),
        _ => false,
    };
    one_row.then_some(columns)
}

/// `range` of `ks` at `snap`'s sequence number, without registering another snapshot (see
/// `ReadCtx::range`): only while `snap` is held.
fn range_at<R: std::ops::RangeBounds<Vec<u8>>>(
    ks: &Keyspace,
    snap: &Snapshot,
    range: R,
) -> Box<dyn DoubleEndedIterator<Item = IterGuardImpl> + Send + 'static> {
    AbstractTree::range(&ks.tree, range, snap.seqno(), None)
}

/// A range item's key and value.
fn into_inner(guard: IterGuardImpl) -> Result<(fjall::Slice, fjall::Slice), StorageError> {
    Ok(guard.into_inner().map_err(fjall::Error::from)?)
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
