//! Forward range reads straight from a tree that is one table and nothing in memory.
//!
//! fjall's range read merges every source a tree has (the memtables and each sorted run)
//! through a heap, de-duplicates versions in a peeking MVCC stream and filters tombstones,
//! each layer a boxed iterator. A physical partition that idle compaction left as a single
//! table, with empty memtables, has one source; reading that table's iterator directly and
//! resolving versions in one loop is what the layers amount to then, for less work per item.
//!
//! This uses lsm-tree's `Table::range`, which it exports (hidden from its docs) for fjall;
//! the version is pinned in Cargo.lock and `tests` compare this path with fjall's on the
//! same data, versions and snapshots.

use std::ops::Bound;

use fjall::AbstractTree;
use lsm_tree::{InternalValue, SeqNo, Slice, Table};

use crate::StorageError;

/// The id of `tree`'s current version (its set of tables), read before a snapshot is opened
/// for [`forward`].
pub(crate) fn version_before_snapshot(tree: &impl AbstractTree) -> u64 {
    tree.current_version().id()
}

/// The items at or after `start` that the snapshot at `seqno` sees, read straight from the
/// one table of `tree`; `None` when the tree has memtable data, several tables or a version
/// other than `version_before` (read through fjall then).
///
/// Why this is what fjall would read: fjall maps a snapshot to the newest of lsm-tree's
/// versions that was published before the snapshot's sequence number, since a flush or a
/// compaction after it may have dropped versions the snapshot sees. Here the tables are
/// the same before the snapshot was opened (`version_before`) and after it: every change of
/// the table set (flush, compaction, trivial move, drop, clear, ingestion) publishes a
/// version with a new id, and publishes its sequence number before anyone can see it. So
/// every item of the table was written at or below the version's own sequence number,
/// itself below `seqno`: the snapshot sees each key's newest version in the table. A write
/// the snapshot sees was inserted into a memtable before fjall published its sequence number
/// (the same holds for fjall's own read), and memtable data only reaches a table through a
/// flush, which would change the version (it removes the sealed memtable in the same step):
/// it is in the table, or still in the active memtable (found empty) or a sealed one (none
/// is sealed after that check; a memtable is sealed before it is flushed). Memtables are
/// only replaced in place by a rotation (the same data, sealed) and by recovery.
pub(crate) fn forward(
    tree: &impl AbstractTree,
    version_before: u64,
    start: &[u8],
    seqno: SeqNo,
) -> Option<Visible<impl Iterator<Item = lsm_tree::Result<InternalValue>>>> {
    // A tree with key-value separation keeps pointers in its tables, not values (ringdb's
    // keyspaces have none).
    if tree.tree_type() != lsm_tree::TreeType::Standard
        || !tree.active_memtable().is_empty()
        || tree.sealed_memtable_count() != 0
    {
        return None;
    }
    let version = tree.current_version();
    if version.id() != version_before || version.table_count() != 1 {
        return None;
    }
    let table = version.iter_tables().next()?.clone();
    let items = table.range((Bound::Included(Slice::from(start)), Bound::Unbounded));
    Some(Visible {
        items,
        _table: table,
        seqno,
        last: Vec::new(),
        has_last: false,
    })
}

/// A table's items as a snapshot sees them: for each key its newest version below the
/// snapshot's sequence number, keys whose newest version is a tombstone left out.
pub(crate) struct Visible<I> {
    items: I,
    /// The table the items come from: its file stays while it is read (the open snapshot
    /// keeps the version that holds it too, but the iterator need not rely on that).
    _table: Table,
    seqno: SeqNo,
    /// The key of the last version taken (older versions of it follow and are skipped).
    last: Vec<u8>,
    has_last: bool,
}

impl<I: Iterator<Item = lsm_tree::Result<InternalValue>>> Iterator for Visible<I> {
    type Item = Result<(Slice, Slice), StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let item = match self.items.next()? {
                Ok(item) => item,
                Err(e) => return Some(Err(fjall::Error::from(e).into())),
            };
            if item.key.seqno >= self.seqno {
                continue;
            }
            // A table orders a key's versions newest first: the first one seen is the one.
            if self.has_last && *item.key.user_key == *self.last {
                continue;
            }
            self.last.clear();
            self.last.extend_from_slice(&item.key.user_key);
            self.has_last = true;
            if item.key.is_tombstone() {
                continue;
            }
            return Some(Ok((item.key.user_key, item.value)));
        }
    }
}

#[cfg(test)]
mod tests {
    use fjall::{Database, Keyspace, Readable, Snapshot};

    use super::*;
    use crate::tests::scratch_fjall;

    type Items = Vec<(Vec<u8>, Vec<u8>)>;

    fn key(i: u32) -> Vec<u8> {
        format!("key-{i:05}-with-a-long-enough-tail").into_bytes()
    }

    /// A snapshot with the tree's version id read just before it, as a read takes them.
    fn snapshot(db: &Database, ks: &Keyspace) -> (u64, Snapshot) {
        (version_before_snapshot(&ks.tree), db.snapshot())
    }

    /// What fjall's own range read of `snap` returns from `start` on.
    fn through_fjall(ks: &Keyspace, snap: &Snapshot, start: &[u8]) -> Items {
        snap.range(ks, start.to_vec()..)
            .map(|g| {
                let (k, v) = g.into_inner().expect("item");
                (k.to_vec(), v.to_vec())
            })
            .collect()
    }

    fn direct(ks: &Keyspace, (before, snap): &(u64, Snapshot), start: &[u8]) -> Option<Items> {
        let visible = forward(&ks.tree, *before, start, snap.seqno())?;
        Some(
            visible
                .map(|item| {
                    let (k, v) = item.expect("item");
                    (k.to_vec(), v.to_vec())
                })
                .collect(),
        )
    }

    /// 300 keys, then every third overwritten and every fifth removed, then 50 more and one
    /// more overwrite; `first` and `second` were opened between the steps and kept open
    /// through the flush and compaction into one table.
    fn versions_in_one_table() -> (tempfile::TempDir, Database, Keyspace, [(u64, Snapshot); 2]) {
        let (dir, db, ks) = scratch_fjall();
        for i in 0..300 {
            ks.insert(key(i), format!("first {i}")).expect("insert");
        }
        let first = snapshot(&db, &ks);
        for i in (0..300).step_by(3) {
            ks.insert(key(i), format!("second {i}")).expect("overwrite");
        }
        for i in (0..300).step_by(5) {
            ks.remove(key(i)).expect("remove");
        }
        let second = snapshot(&db, &ks);
        for i in 300..350 {
            ks.insert(key(i), format!("late {i}")).expect("insert");
        }
        ks.insert(key(7), "third 7").expect("overwrite");
        ks.rotate_memtable_and_wait().expect("flush");
        ks.major_compact().expect("compact");
        assert_eq!(ks.tree.table_count(), 1);
        (dir, db, ks, [first, second])
    }

    #[test]
    fn one_table_reads_as_fjall_reads_it() {
        let (_dir, db, ks, _old) = versions_in_one_table();
        let now = snapshot(&db, &ks);
        for start in [
            Vec::new(),
            key(0),
            key(5),
            key(6),
            key(7),
            key(299),
            key(349),
            key(400),
        ] {
            let read = direct(&ks, &now, &start).expect("one table, empty memtables");
            assert_eq!(read, through_fjall(&ks, &now.1, &start));
        }
        // Overwritten, removed and later keys all came out as their newest versions.
        let all = direct(&ks, &now, &[]).expect("one table");
        assert_eq!(all.len(), 350 - 60);
        let value = |i| {
            all.iter()
                .find(|(k, _)| *k == key(i))
                .map(|(_, v)| v.clone())
        };
        assert_eq!(value(6), Some(b"second 6".to_vec()));
        assert_eq!(value(7), Some(b"third 7".to_vec()));
        assert_eq!(value(8), Some(b"first 8".to_vec()));
        assert_eq!(value(10), None);
        assert_eq!(value(320), Some(b"late 320".to_vec()));
    }

    #[test]
    fn snapshots_opened_before_the_tables_changed_are_left_to_fjall() {
        let (_dir, _db, ks, [first, second]) = versions_in_one_table();
        // The compaction may have dropped versions these snapshots see: fjall reads them
        // from the version they were opened on.
        for snap in [&first, &second] {
            assert!(direct(&ks, snap, &[]).is_none());
        }
        assert_eq!(
            first.1.get(&ks, key(6)).expect("get").as_deref(),
            Some(&b"first 6"[..])
        );
        assert_eq!(second.1.get(&ks, key(5)).expect("get"), None);
    }

    #[test]
    fn memtable_data_or_a_second_table_leaves_the_read_to_fjall() {
        let (_dir, db, ks) = scratch_fjall();
        assert!(direct(&ks, &snapshot(&db, &ks), &[]).is_none(), "no table");
        ks.insert(key(1), "a").expect("insert");
        assert!(direct(&ks, &snapshot(&db, &ks), &[]).is_none(), "memtable");
        ks.rotate_memtable_and_wait().expect("flush");
        let one = direct(&ks, &snapshot(&db, &ks), &[]).expect("one table");
        assert_eq!(one, vec![(key(1), b"a".to_vec())]);
        ks.insert(key(2), "b").expect("insert");
        assert!(direct(&ks, &snapshot(&db, &ks), &[]).is_none(), "memtable");
        ks.rotate_memtable_and_wait().expect("flush");
        assert_eq!(ks.tree.table_count(), 2);
        assert!(
            direct(&ks, &snapshot(&db, &ks), &[]).is_none(),
            "two tables"
        );
    }
}
