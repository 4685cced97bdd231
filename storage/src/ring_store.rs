//! The persisted half of each table's ring: its routing map and its physical partitions'
//! size statistics, in the meta keyspace.
//!
//! The map lives under `\0storage\0ring\0{table}\0v{version}`, with `…\0current` naming the
//! live version. Every change writes the new version, switches `current` and removes the old
//! version in one atomic fjall batch (fsynced when it matters: see [`crate::split`]).
//! Statistics live under `\0storage\0stats\0{table}\0{id}`.

use std::sync::Arc;

use fjall::{Database, Keyspace, PersistMode};

use crate::content::ContentFlags;
use crate::names::table_meta_prefix;
use crate::open_tables::Table;
use crate::physical::Physical;
use crate::routing_map::RoutingMap;
use crate::{StorageError, TableId};

fn map_version_key(table: TableId, version: u64) -> Vec<u8> {
    let mut k = table_meta_prefix("ring", table);
    k.push(b'v');
    k.extend_from_slice(&version.to_be_bytes());
    k
}

fn map_current_key(table: TableId) -> Vec<u8> {
    let mut k = table_meta_prefix("ring", table);
    k.extend_from_slice(b"current");
    k
}

fn stats_key(table: TableId, id: u64) -> Vec<u8> {
    let mut k = table_meta_prefix("stats", table);
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// Where the routing maps and statistics of one store are kept; cheap to clone.
#[derive(Clone)]
pub(crate) struct RingStore {
    pub(crate) db: Database,
    /// The meta keyspace.
    pub(crate) meta: Keyspace,
}

impl RingStore {
    /// The maps and statistics kept in `meta`, a keyspace of `db`.
    pub(crate) fn new(db: Database, meta: Keyspace) -> RingStore {
        RingStore { db, meta }
    }

    /// Persists `map` (already carrying its new version) and switches to it atomically;
    /// `stats` are written in the same batch, `drop_stats` removed. `durable` fsyncs the
    /// journal (which also makes every earlier write durable).
    pub(crate) fn save_map(
        &self,
        table: TableId,
        map: &RoutingMap,
        stats: &[&Physical],
        drop_stats: &[u64],
        durable: bool,
    ) -> Result<(), StorageError> {
        let meta = &self.meta;
        let mut batch = self.db.batch();
        batch.insert(meta, map_version_key(table, map.version), map.encode());
        batch.insert(
            meta,
            map_current_key(table),
            map.version.to_be_bytes().to_vec(),
        );
        if map.version > 0 {
            batch.remove(meta, map_version_key(table, map.version - 1));
        }
        for p in stats {
            batch.insert(meta, stats_key(table, p.id), encode_stats(p));
        }
        for id in drop_stats {
            batch.remove(meta, stats_key(table, *id));
        }
        batch.commit()?;
        if durable {
            self.db.persist(PersistMode::SyncAll)?;
        }
        Ok(())
    }

    /// The current routing map of `table` (`None`: a new table).
    pub(crate) fn load_map(&self, table: TableId) -> Result<Option<RoutingMap>, StorageError> {
        let Some(v) = self.meta.get(map_current_key(table))? else {
            return Ok(None);
        };
        let v: [u8; 8] = v
            .as_ref()
            .try_into()
            .map_err(|_| StorageError::corrupt("routing map version"))?;
        let version = u64::from_be_bytes(v);
        let bytes = self
            .meta
            .get(map_version_key(table, version))?
            .ok_or_else(|| StorageError::corrupt("current routing map version missing"))?;
        RoutingMap::decode(&bytes).map(Some)
    }

    /// The size statistics saved for partition `id` of `table`: (bytes, logical partitions,
    /// the largest logical partition's bytes; 0 when saved before it was kept).
    pub(crate) fn load_stats(
        &self,
        table: TableId,
        id: u64,
    ) -> Result<Option<(u64, u64, u64)>, StorageError> {
        match self.meta.get(stats_key(table, id))? {
            Some(v) => decode_stats(&v).map(Some),
            None => Ok(None),
        }
    }

    /// Writes the size statistics of every physical partition of `tables` in one batch.
    pub(crate) fn save_stats(&self, tables: &[Arc<Table>]) -> Result<(), StorageError> {
        let meta = &self.meta;
        let mut batch = self.db.batch();
        for t in tables {
            for p in &t.ring.current().parts {
                batch.insert(meta, stats_key(t.id, p.id), encode_stats(p));
            }
        }
        batch.commit()?;
        Ok(())
    }

    /// Removes a dropped table's routing map and statistics from the meta keyspace.
    pub(crate) fn forget(&self, table: TableId) -> Result<(), StorageError> {
        let meta = &self.meta;
        let mut batch = self.db.batch();
        for prefix in [
            table_meta_prefix("ring", table),
            table_meta_prefix("stats", table),
            ContentFlags::meta_prefix(table),
        ] {
            for g in meta.prefix(&prefix) {
                batch.remove(meta, g.key()?);
            }
        }
        batch.commit()?;
        Ok(())
    }
}

fn encode_stats(p: &Physical) -> Vec<u8> {
    let mut v = p.bytes().to_be_bytes().to_vec();
    v.extend_from_slice(&p.partitions().to_be_bytes());
    v.extend_from_slice(&p.largest_partition().to_be_bytes());
    v
}

/// (bytes, partitions, largest): 16 bytes as saved before the largest was kept, or 24.
fn decode_stats(v: &[u8]) -> Result<(u64, u64, u64), StorageError> {
    let corrupt = || StorageError::corrupt("partition stats");
    let (b, rest) = v.split_first_chunk::<8>().ok_or_else(corrupt)?;
    let (p, rest) = rest.split_first_chunk::<8>().ok_or_else(corrupt)?;
    let largest = match rest.len() {
        0 => 0,
        _ => u64::from_be_bytes(rest.try_into().map_err(|_| corrupt())?),
    };
    Ok((u64::from_be_bytes(*b), u64::from_be_bytes(*p), largest))
}
