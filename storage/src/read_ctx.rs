//! The read context: one read's source, table, partition and time, and how it assembles
//! live rows from stored items: reconciling cells with the partition, range and row deletions
//! as they stream by in key order, by range reads on a snapshot or by point lookups.

use std::collections::BTreeMap;

use fjall::{AbstractTree, Keyspace, Snapshot};
use lsm_tree::{Guard as _, IterGuardImpl};

use crate::cell::{CellValue, CellView, StoredCell};
use crate::key::{self, ItemPath, KeyReader};
use crate::lookup::Lookup;
use crate::open_tables::Table;
use crate::partition_head::{PartitionDeletions, PartitionHead};
use crate::row::{ColumnValue, Row};
use crate::{bundle, one_table, StorageError};

/// A row being assembled: encoded clustering, decoded clustering, stored items.
pub(crate) type PendingRow = (Vec<u8>, Vec<Vec<u8>>, Vec<(ItemPath, StoredCell)>);

/// One read: where its lookups come from (a snapshot unless said otherwise), the table and
/// physical partition it reads, its time, and how many stored items it pulled.
pub(crate) struct ReadCtx<'a, S = &'a Snapshot> {
    pub(crate) snap: S,
    pub(crate) table: &'a Table,
    /// The keyspace of the physical partition being read.
    pub(crate) ks: &'a Keyspace,
    /// The read's time (seconds), for TTLs.
    pub(crate) now: i64,
    /// Stored items pulled so far.
    pub(crate) items: u64,
    /// The id of the keyspace tree's version read before the snapshot was opened: a forward
    /// range read of a tree that is one table reads it directly (see `crate::one_table`).
    pub(crate) version_before: Option<u64>,
}

impl<'a> ReadCtx<'a> {
    /// A read of `table` at `snap` starting in the physical partition `ks`, at `now`.
    pub(crate) fn on_snapshot(
        snap: &'a Snapshot,
        table: &'a Table,
        ks: &'a Keyspace,
        now: i64,
    ) -> ReadCtx<'a> {
        ReadCtx {
            snap,
            table,
            ks,
            now,
            items: 0,
            version_before: None,
        }
    }
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

    /// The one row with encoded clustering `clustering`, read with a point lookup per item
    /// (liveness, row deletion, each of `columns`): bloom filters skip the LSM tables that do
    /// not hold the row, where a range read would open every level.
    pub(crate) fn point_row(
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
}

/// Assembling rows: from whatever source the items came.
impl<S> ReadCtx<'_, S> {
    /// Live columns of one row (or the static row) from its stored items.
    /// Consumes `items` (the vector is left empty, its capacity kept for the next row).
    pub(crate) fn build(
        &self,
        items: &mut Vec<(ItemPath, StoredCell)>,
        deleted: Option<i64>,
        reversed: bool,
    ) -> Result<(BTreeMap<u32, ColumnValue>, bool), StorageError> {
        if let [(ItemPath::Liveness, marker)] = items.as_slice() {
            if deleted.is_none() {
                let now = self.now;
                let built = self.build_bundle(
                    marker.live_value(now).is_some(),
                    marker.timestamp(),
                    marker.ttl_remaining(now),
                    bundle::bytes_of(marker),
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
                        let (col, entry) = bundled?;
                        keep(col, bundle::cell_of(&cell, entry)?);
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
    /// cell), from the marker's liveness at the read's time, its timestamp, its TTL left and
    /// its bundle bytes: plain entries share the marker's liveness (a dead marker has no live
    /// plain cell), explicit ones have their own (see [`crate::bundle`]).
    fn build_bundle(
        &self,
        marker_live: bool,
        timestamp: i64,
        ttl: Option<u32>,
        bytes: &[u8],
    ) -> Result<(BTreeMap<u32, ColumnValue>, bool), StorageError> {
        let mut cells = BTreeMap::new();
        for bundled in bundle::cells(bytes) {
            let (col, entry) = bundled?;
            let value = match entry {
                bundle::Entry::Plain(v) if marker_live => CellValue {
                    value: v.to_vec(),
                    timestamp,
                    ttl,
                },
                bundle::Entry::Plain(_) => continue,
                bundle::Entry::Explicit(stored) => {
                    let cell = CellView::parse(stored)?;
                    let Some(v) = cell.live_value(self.now) else {
                        continue;
                    };
                    CellValue {
                        value: v.to_vec(),
                        timestamp: cell.timestamp(),
                        ttl: cell.ttl_remaining(self.now),
                    }
                }
            };
            cells.insert(col, ColumnValue::Simple(value));
        }
        let live = marker_live || !cells.is_empty();
        Ok((cells, live))
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

    /// A row starting at `rest` (its key after the rows section byte): its encoded and
    /// decoded clustering, no items yet.
    pub(crate) fn start_row(&self, rest: &[u8]) -> Result<PendingRow, StorageError> {
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

    pub(crate) fn finish_row(
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
    fn finish_stored_row<V: AsRef<[u8]>>(
        &self,
        rows: &mut Vec<Row>,
        encoded: &[u8],
        clustering: Vec<Vec<u8>>,
        stored: &mut Vec<(ItemPath, V)>,
        dels: &PartitionDeletions,
        reversed: bool,
    ) -> Result<(), StorageError> {
        let deleted = dels.covering(encoded);
        if let ([(ItemPath::Liveness, bytes)], None) = (stored.as_slice(), deleted) {
            let marker = CellView::parse(bytes.as_ref())?;
            let now = self.now;
            let (cells, live) = self.build_bundle(
                marker.live_value(now).is_some(),
                marker.timestamp(),
                marker.ttl_remaining(now),
                marker.bytes(),
            )?;
            stored.clear();
            if live {
                rows.push(Row { clustering, cells });
            }
            return Ok(());
        }
        let mut items = stored
            .drain(..)
            .map(|(path, bytes)| Ok((path, StoredCell::decode(bytes.as_ref())?)))
            .collect::<Result<Vec<_>, StorageError>>()?;
        self.finish_row(rows, encoded, clustering, &mut items, dels, reversed)
    }

    /// Rows from `iter`'s items in key order (or reversed), up to `limit`; also returns the
    /// encoded clustering of the last row when the limit stopped the read before the end.
    /// An item's key after its first `skip` bytes is its row key (after the rows section
    /// byte); `stop` (a whole key) ends a forward read left open above.
    pub(crate) fn assemble<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        iter: impl Iterator<Item = Result<(K, V), StorageError>>,
        skip: usize,
        stop: Option<&[u8]>,
        dels: &PartitionDeletions,
        reversed: bool,
        limit: usize,
    ) -> Result<(Vec<Row>, Option<Vec<u8>>), StorageError> {
        let mut rows = Vec::with_capacity(limit.min(16));
        if limit == 0 {
            return Ok((rows, None));
        }
        // The row being assembled: its decoded clustering, and in `encoded` its clustering as
        // its keys encode it. Its items gather, as stored, in `items`. Both buffers serve
        // every row.
        let mut current: Option<Vec<Vec<u8>>> = None;
        let mut encoded = Vec::new();
        let mut items = Vec::new();
        for item in iter {
            let (k, v) = item?;
            let k = k.as_ref();
            if stop.is_some_and(|end| k >= end) {
                break;
            }
            self.items += 1;
            let rest = &k[skip..];
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
    pub(crate) fn head_and_statics(
        &mut self,
        prefix: &[u8],
    ) -> Result<(PartitionDeletions, BTreeMap<u32, ColumnValue>), StorageError> {
        let (dels, mut items) = self.head(prefix)?;
        let statics = self.build(&mut items, dels.partition, false)?.0;
        Ok((dels, statics))
    }

    /// Rows with encoded clustering in `[lo, hi)`, up to `limit`; also returns the encoded
    /// clustering of the last row when the limit stopped the read before the end.
    pub(crate) fn rows(
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
        if limit == 0 || start >= end {
            return Ok((Vec::new(), None));
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
        let stop = (!reversed).then_some(&end[..]);
        self.assemble(iter, base_len, stop, dels, reversed, limit)
    }
}

/// `range` of `ks` at `snap`'s sequence number, without registering another snapshot (see
/// `ReadCtx::range`): only while `snap` is held.
pub(crate) fn range_at<R: std::ops::RangeBounds<Vec<u8>>>(
    ks: &Keyspace,
    snap: &Snapshot,
    range: R,
) -> Box<dyn DoubleEndedIterator<Item = IterGuardImpl> + Send + 'static> {
    AbstractTree::range(&ks.tree, range, snap.seqno(), None)
}

/// A range item's key and value.
pub(crate) fn into_inner(
    guard: IterGuardImpl,
) -> Result<(fjall::Slice, fjall::Slice), StorageError> {
    Ok(guard.into_inner().map_err(fjall::Error::from)?)
}
