//! Partition reads: a slice of one partition (forward or reverse, bounded, paged).
//!
//! Every read is a range scan over the key layout of [`crate::key`] on one fjall snapshot,
//! reconciling cells with the partition, range and row deletions as it goes (see
//! [`crate::read_ctx`]); nothing is sorted in memory. Range tombstones of a partition are
//! loaded first (they live in their own key section), then rows stream in clustering order
//! until the limit. A read of one row is point lookups instead, and a row that is one item by
//! its table's content flags is a single lookup without a snapshot.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use fjall::Readable;

use crate::cursor::Cursor;
use crate::engine::Storage;
use crate::key::{self, ClusteringBound};
use crate::lookup::Cached;
use crate::open_tables::Table;
use crate::partition_address::address;
use crate::partition_head::PartitionDeletions;
use crate::read_ctx::ReadCtx;
use crate::slice::{PartitionSlice, Slice};
use crate::stripes::Stripes;
use crate::{content, one_table, StorageError, TableId};

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
        self.read_partition_at(table_id, partition_key, slice, self.now())
    }

    /// As [`Storage::read_partition`], with `now` (seconds since the epoch) deciding which
    /// cells have expired: replicas evaluating a replicated compare-and-set read alike.
    ///
    /// # Errors
    /// As [`Storage::read_partition`].
    pub fn read_partition_at(
        &self,
        table_id: TableId,
        partition_key: &[Vec<u8>],
        slice: &Slice,
        now: i64,
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
                    db: &self.inner.db,
                    cache: &self.inner.item_cache,
                    stripes: &self.inner.stripes,
                    part: part.cache_id.load(Ordering::Relaxed),
                    stripe: Stripes::of(table_id, addr.token),
                },
                table: &table,
                ks: &part.keyspace,
                now,
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
        let part = view.part(addr.token);
        // A small partition may come whole from the item cache instead of the tree (see
        // `crate::partition_cache`).
        if single.is_none() {
            if let Some(cached) =
                self.cached_rows(table_id, &table, part, &addr.prefix, addr.token)?
            {
                let mut ctx = ReadCtx {
                    snap: (),
                    table: &table,
                    ks: &part.keyspace,
                    now,
                    items: 0,
                    version_before: None,
                };
                let mut head = cached.head()?;
                let static_cells = ctx.build(&mut head.statics, head.dels.partition, false)?.0;
                let items = cached.range(&lo, &hi, slice.reversed);
                let dels = head.dels;
                let (rows, last) = ctx.assemble(items, 0, None, &dels, slice.reversed, limit)?;
                self.count_items(ctx.items);
                return Ok(PartitionSlice {
                    static_cells,
                    rows,
                    cursor: last.map(|c| Cursor::in_slice(&c)),
                    items_read: ctx.items,
                });
            }
        }
        let ks = &part.keyspace;
        // Only a forward range read of rows can read a one-table tree directly: a row read by
        // point lookups does not take the tree's version.
        let version_before = (single.is_none() && !slice.reversed)
            .then(|| one_table::version_before_snapshot(&ks.tree));
        let snap = self.inner.db.snapshot();
        let mut ctx = ReadCtx {
            snap: &snap,
            table: &table,
            ks,
            now,
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
