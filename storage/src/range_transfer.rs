//! Copying a table's token range between stores, item by item as fjall holds it:
//! [`Storage::export_range`] reads the range from one snapshot, [`Storage::import_range`]
//! replaces the range's contents with what an export gave. A cluster moves a physical
//! partition's replica to another node this way (its Raft snapshot carries the items).

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use fjall::Readable;

use crate::blocked_bloom::KeyBits;
use crate::counting::PartitionCounter;
use crate::engine::Storage;
use crate::item_cache;
use crate::routing_map::token_key_bounds;
use crate::{StorageError, TableId};

/// Receives an exported range: first the table's content flags, then its items in order.
pub trait RangeSink {
    /// The table's content flags, which the importing store must carry too (they tell its
    /// reads which items to expect). Called once, before any item.
    ///
    /// # Errors
    /// What the sink fails with ends the export.
    fn flags(&mut self, flags: u8) -> Result<(), StorageError>;

    /// One stored item.
    ///
    /// # Errors
    /// What the sink fails with ends the export.
    fn item(&mut self, key: &[u8], value: &[u8]) -> Result<(), StorageError>;
}

/// Items committed per fjall batch by an import.
const BATCH_ITEMS: usize = 4096;

/// What an import added to one physical partition.
#[derive(Default)]
struct Added {
    bytes: u64,
    partitions: PartitionCounter,
    /// Bytes of the logical partition being imported, and the largest one's.
    current: u64,
    largest: u64,
    /// The import's range covers the whole physical partition.
    whole: bool,
}

impl Storage {
    /// Gives `sink` the content flags of table `id`, then every stored item (key, value)
    /// whose token is in `(start, end]`, in token order, from one snapshot. A split of the
    /// table waits until the export ends.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], a fjall error, or what `sink` returns.
    pub fn export_range(
        &self,
        id: TableId,
        start: i64,
        end: i64,
        sink: &mut dyn RangeSink,
    ) -> Result<(), StorageError> {
        let table = self.table(id)?;
        let _split = table
            .ring
            .split_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let snapshot = self.inner.db.snapshot();
        // After the snapshot: every item it holds had its flag set before it committed.
        sink.flags(table.ring.content.bits())?;
        let view = table.ring.current();
        for (i, p) in view.parts.iter().enumerate() {
            let (p_start, p_end) = (view.map.start(i), view.map.ranges[i].end);
            if p_end <= start || p_start >= end {
                continue;
            }
            let (lo, hi) = token_key_bounds(p_start.max(start), p_end.min(end));
            let items = match hi {
                Some(hi) => snapshot.range(&p.keyspace, lo..hi),
                None => snapshot.range(&p.keyspace, lo..),
            };
            for guard in items {
                let (k, v) = guard.into_inner()?;
                sink.item(&k, &v)?;
            }
        }
        Ok(())
    }

    /// Replaces the rows of table `id` whose token is in `(start, end]` with `items`, as
    /// [`Storage::export_range`] gave them (`flags`: its content flags). The range is cleared
    /// first; the items are committed in batches, so a crash part-way leaves part of them
    /// (the caller imports again). Physical partitions' sizes are counted again.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], a fjall error, an error `items` yields, or
    /// [`StorageError::Corrupt`] for an item outside the range.
    pub fn import_range(
        &self,
        id: TableId,
        start: i64,
        end: i64,
        flags: u8,
        items: &mut dyn Iterator<Item = Result<(Vec<u8>, Vec<u8>), StorageError>>,
    ) -> Result<u64, StorageError> {
        self.drop_range(id, start, end)?;
        let table = self.table(id)?;
        let _split = table
            .ring
            .split_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let view = table.ring.current();
        let mut batch = self.inner.db.batch();
        // Set before any item commits: a read that can see an item honours its flag.
        let marked = table.ring.content.mark(flags, &self.inner.meta, &mut batch);
        let mut added: HashMap<u64, Added> = HashMap::new();
        let mut count = 0u64;
        let mut result = Ok(());
        for item in items {
            let (k, v) = match item {
                Ok(kv) => kv,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            let token = match crate::key::split_partition_prefix(&k) {
                Ok((token, _, _)) if token > start && token <= end => token,
                Ok(_) => {
                    result = Err(StorageError::corrupt(
                        "an imported item is outside its range",
                    ));
                    break;
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            let i = view.map.index(token);
            let part = &view.parts[i];
            let a = added.entry(part.id).or_insert_with(|| Added {
                whole: start <= view.map.start(i) && view.map.ranges[i].end <= end,
                ..Added::default()
            });
            let size = (k.len() + v.len()) as u64;
            a.bytes += size;
            match a.partitions.see(&k) {
                Ok(true) => {
                    a.current = 0;
                    let size_key = crate::key::size_cell_key(a.partitions.prefix());
                    table.ring.filter.add(KeyBits::of(&size_key));
                }
                Ok(false) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            a.current += size;
            a.largest = a.largest.max(a.current);
            batch.insert(&part.keyspace, k, v);
            count += 1;
            if batch.len() >= BATCH_ITEMS {
                if let Err(e) = std::mem::replace(&mut batch, self.inner.db.batch()).commit() {
                    result = Err(e.into());
                    break;
                }
            }
        }
        if result.is_ok() {
            match batch.commit() {
                Ok(()) => table.ring.content.committed(marked),
                Err(e) => result = Err(e.into()),
            }
        }
        // The items went in without the write-lock stripes: nothing else writes the range
        // (its group applies nothing while it installs), and holding every stripe for a
        // whole import held up every write of the node. The sizes and the item cache are
        // settled under them.
        let all = self.inner.stripes.lock(u64::MAX);
        // Graphs built while the items went in may lack them: built again from the rows.
        self.inner.ann.forget_table(id);
        let mut retired = Vec::new();
        for p in view.parts.iter() {
            let Some(a) = added.get(&p.id) else { continue };
            retired.push(p.cache_id.swap(item_cache::fresh_id(), Ordering::Relaxed));
            let (bytes, partitions, largest) = if a.whole {
                (a.bytes, a.partitions.count, a.largest)
            } else {
                match crate::counting::recount(&p.keyspace) {
                    Ok(counted) => counted,
                    Err(e) => {
                        result = result.and(Err(e));
                        continue;
                    }
                }
            };
            p.bytes.store(bytes, Ordering::Relaxed);
            p.partitions.store(partitions, Ordering::Relaxed);
            p.saw_partition_size(largest);
        }
        drop(all);
        self.inner.item_cache.forget_partitions(&retired);
        result?;
        // The items came without index entries: the range's are written before the import
        // returns (a crash before then has the caller import again).
        self.index_range(id, start, end)?;
        self.after_write()?;
        Ok(count)
    }
}

/// Collects an export (tests).
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Collected {
    /// The content flags exported.
    pub(crate) flags: u8,
    /// The items, in order.
    pub(crate) items: Vec<(Vec<u8>, Vec<u8>)>,
}

#[cfg(test)]
impl RangeSink for Collected {
    fn flags(&mut self, flags: u8) -> Result<(), StorageError> {
        self.flags = flags;
        Ok(())
    }

    fn item(&mut self, key: &[u8], value: &[u8]) -> Result<(), StorageError> {
        self.items.push((key.to_vec(), value.to_vec()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Collected;
    use crate::{
        Liveness, Mutation, RowWrite, Slice, Storage, StorageOptions, TableId, TableLayout,
    };
    use cql::types::NativeType;

    fn layout() -> TableLayout {
        TableLayout {
            partition_key: vec![NativeType::Int.into()],
            clustering: vec![(NativeType::Int.into(), crate::key::Order::Asc)],
            ..Default::default()
        }
    }

    fn write(db: &Storage, table: TableId, pk: i32, c: i32) {
        db.apply(
            table,
            &Mutation {
                partition_key: vec![pk.to_be_bytes().to_vec()],
                rows: vec![RowWrite {
                    clustering: vec![c.to_be_bytes().to_vec()],
                    liveness: Some(Liveness {
                        timestamp: 1,
                        ttl: None,
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            },
        )
        .expect("write");
    }

    fn rows(db: &Storage, table: TableId, pk: i32) -> usize {
        db.read_partition(table, &[pk.to_be_bytes().to_vec()], &Slice::default())
            .expect("read")
            .rows
            .len()
    }

    #[test]
    fn an_exported_range_imports_whole_and_replaces_what_the_range_held() {
        let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = Storage::open(a_dir.path(), StorageOptions::default()).unwrap();
        let b = Storage::open(b_dir.path(), StorageOptions::default()).unwrap();
        let t = TableId(3);
        a.create_table(t, layout()).unwrap();
        b.create_table(t, layout()).unwrap();
        for pk in 0..200 {
            for c in 0..3 {
                write(&a, t, pk, c);
            }
        }
        // b holds stale rows in the range (replaced) and rows outside it (kept).
        let (start, end) = (i64::MIN, 0i64);
        let token = |pk: i32| crate::token::partition_token(&[pk.to_be_bytes().to_vec()]);
        for pk in 1000..1100 {
            write(&b, t, pk, 9);
        }
        let mut out = Collected::default();
        a.export_range(t, start, end, &mut out).unwrap();
        assert!(!out.items.is_empty());
        let n = b
            .import_range(t, start, end, out.flags, &mut out.items.into_iter().map(Ok))
            .unwrap();
        assert!(n > 0);
        for pk in 0..200 {
            let expected = if token(pk) <= end { 3 } else { 0 };
            assert_eq!(rows(&b, t, pk), expected, "pk {pk}");
        }
        for pk in 1000..1100 {
            let expected = if token(pk) <= end { 0 } else { 1 };
            assert_eq!(rows(&b, t, pk), expected, "pk {pk}");
        }
        let in_range = (0..200).filter(|pk| token(*pk) <= end).count() as u64
            + (1000..1100).filter(|pk| token(*pk) > end).count() as u64;
        assert_eq!(b.table_stats(t).unwrap().partitions, in_range);
        // A write to an imported partition reconciles with it (the filter knows it).
        let pk = (0..200).find(|pk| token(*pk) <= end).unwrap();
        write(&b, t, pk, 7);
        assert_eq!(rows(&b, t, pk), 4);
    }

    #[test]
    fn an_item_outside_the_range_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = Storage::open(dir.path(), StorageOptions::default()).unwrap();
        let t = TableId(3);
        db.create_table(t, layout()).unwrap();
        write(&db, t, 1, 1);
        let mut out = Collected::default();
        db.export_range(t, i64::MIN, i64::MAX, &mut out).unwrap();
        let token = crate::token::partition_token(&[1i32.to_be_bytes().to_vec()]);
        let err = db
            .import_range(t, token, i64::MAX, 0, &mut out.items.into_iter().map(Ok))
            .unwrap_err();
        assert!(matches!(err, StorageError::Corrupt(_)), "{err:?}");
    }
    use crate::StorageError;
}
