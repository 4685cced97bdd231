//! Opening a table's ring: its routing map loaded from the meta keyspace and its physical
//! partitions opened, after bringing the two back in agreement where a crash interrupted a
//! split (see [`crate::split`]).

use std::sync::Arc;

use crate::content::ContentFlags;
use crate::counting::recount;
use crate::names::parse_keyspace_name;
use crate::partition_filter::PartitionFilter;
use crate::physical::{delete_keyspace, open_keyspace, trim, Physical};
use crate::ring::{RingView, TableRing};
use crate::ring_store::RingStore;
use crate::routing_map::RoutingMap;
use crate::{StorageError, TableId};

/// Loads a table's routing map and opens its physical partitions, recovering from an
/// interrupted split: a split that had not switched is rolled back (its half-copied keyspaces
/// deleted; the source still holds everything), a switched split's old keyspace is trimmed,
/// stray keyspaces are removed. A table never seen before gets the initial map.
pub(crate) fn open_ring(store: &RingStore, table: TableId) -> Result<TableRing, StorageError> {
    let db = &store.db;
    let (mut map, new_table) = match store.load_map(table)? {
        Some(map) => (map, false),
        None => {
            let map = RoutingMap::initial();
            store.save_map(table, &map, &[], &[], true)?;
            (map, true)
        }
    };
    let content = ContentFlags::load(&store.meta, table, new_table)?;
    if let Some(split) = map.split.take() {
        tracing::warn!(%table, source = split.source, "rolling back an interrupted split");
        delete_keyspace(db, table, split.upper)?;
        map.version += 1;
        store.save_map(table, &map, &[], &[split.upper], true)?;
    }
    for name in db.list_keyspace_names() {
        if let Some((t, id)) = parse_keyspace_name(&name) {
            if t == table && !map.ranges.iter().any(|r| r.id == id) {
                tracing::warn!(%table, id, "deleting a stray physical partition");
                delete_keyspace(db, table, id)?;
            }
        }
    }
    let mut parts = Vec::with_capacity(map.ranges.len());
    for (i, r) in map.ranges.iter().enumerate() {
        let keyspace = open_keyspace(db, table, r.id)?;
        let (bytes, partitions, largest) = if map.garbage.contains(&r.id) {
            tracing::info!(%table, id = r.id, "trimming the moved half of a finished split");
            let (lo, hi) = map.key_bounds(i);
            trim(db, &keyspace, &lo, hi.as_deref())?;
            recount(&keyspace)?
        } else {
            match store.load_stats(table, r.id)? {
                Some(stats) => stats,
                None => recount(&keyspace)?,
            }
        };
        let p = Physical::new(r.id, keyspace, bytes, partitions);
        p.saw_partition_size(largest);
        p.set_oversized(r.oversized);
        parts.push(Arc::new(p));
    }
    if !map.garbage.is_empty() {
        map.garbage.clear();
        map.version += 1;
        let stats: Vec<&Physical> = parts.iter().map(|p| &**p).collect();
        store.save_map(table, &map, &stats, &[], true)?;
    }
    let stored: u64 = parts.iter().map(|p| p.partitions()).sum();
    let view = RingView {
        map,
        parts,
        split: None,
    };
    // A new table stores nothing, so its empty filter is complete; an existing one's is
    // filled by a `crate::filter_builder` (see `Storage::create_table`).
    let filter = PartitionFilter::new(stored, new_table);
    Ok(TableRing::new(view, content, filter))
}
