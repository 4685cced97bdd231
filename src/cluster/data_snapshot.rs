//! A physical partition's Raft snapshot. The state machine is the store itself, so building a
//! snapshot only records the position it stands for (and lets Raft purge the log up to it);
//! the data is read when a replica needs it: the group's token range exported from one store
//! snapshot ([`storage::Storage::export_range`]) at the machine's applied position, and
//! imported in place of the range at the receiver.

// openraft's storage traits fix the error type (`StorageError`, 224 bytes).
#![allow(clippy::result_large_err)]

use super::codec::{decode, encode};
use super::raft_types::{GroupId, NodeId, TypeConfig};
use openraft::{
    BasicNode, LogId, RaftSnapshotBuilder, Snapshot, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership,
};
use serde::{Deserialize, Serialize};
use std::io::Cursor;
use storage::{Storage, TableId};

type Result<T> = std::result::Result<T, StorageError<NodeId>>;

/// The position a snapshot stands for: the last entry applied and the membership then.
pub type Applied = (Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>);

fn io(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// The meta key holding the position of a group's last snapshot.
fn snapshot_key(group: GroupId) -> Vec<u8> {
    let mut k = b"raft/snapshot/".to_vec();
    k.extend_from_slice(&group.to_be_bytes());
    k
}

/// A group's range and the items it held, as a snapshot carries them.
#[derive(Serialize, Deserialize)]
pub struct RangeSnapshot {
    /// The table.
    pub table: TableId,
    /// The token the group's range starts after.
    pub start: i64,
    /// The group's last token.
    pub end: i64,
    /// Where the group was cut by a split, if it was (its fence).
    pub fence: Option<i64>,
    /// The table's content flags at the source.
    pub flags: u8,
    /// The stored items, in key order.
    pub items: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The snapshot metadata for `applied` in `group`.
pub fn meta_of(group: GroupId, applied: &Applied) -> SnapshotMeta<NodeId, BasicNode> {
    SnapshotMeta {
        last_log_id: applied.0,
        last_membership: applied.1.clone(),
        snapshot_id: format!("g{group}-{}", applied.0.map_or(0, |l| l.index)),
    }
}

/// The position of `group`'s last snapshot on this node, if it made or installed one.
///
/// # Errors
/// When the position cannot be read.
pub fn last(group: GroupId, storage: &Storage) -> std::io::Result<Option<Applied>> {
    match storage.get_meta(&snapshot_key(group)).map_err(io)? {
        Some(bytes) => decode(&bytes).map(Some).map_err(io),
        None => Ok(None),
    }
}

/// Records that `group`'s snapshot stands at `applied`.
///
/// # Errors
/// On I/O failure.
pub fn record(group: GroupId, storage: &Storage, applied: &Applied) -> std::io::Result<()> {
    let bytes = encode(applied).map_err(io)?;
    storage.put_meta(&snapshot_key(group), &bytes).map_err(io)
}

/// Forgets `group`'s snapshot position (the group left this node).
///
/// # Errors
/// On I/O failure.
pub fn forget(group: GroupId, storage: &Storage) -> std::result::Result<(), storage::StorageError> {
    storage.delete_meta(&snapshot_key(group))
}

/// Exports `table`'s range `(start, end]` from `storage` into a snapshot's bytes.
///
/// # Errors
/// When the store cannot be read.
pub fn export(
    storage: &Storage,
    table: TableId,
    (start, end): (i64, i64),
    fence: Option<i64>,
) -> std::io::Result<Vec<u8>> {
    let mut items = Vec::new();
    let flags = storage
        .export_range(table, start, end, &mut |k, v| {
            items.push((k.to_vec(), v.to_vec()));
            Ok(())
        })
        .map_err(io)?;
    encode(&RangeSnapshot {
        table,
        start,
        end,
        fence,
        flags,
        items,
    })
    .map_err(io)
}

/// Imports a snapshot's bytes into `storage` in place of its range; returns the decoded
/// range's fence, if any.
///
/// # Errors
/// When the bytes are not a snapshot or the store fails.
pub fn import(storage: &Storage, bytes: &[u8]) -> std::io::Result<Option<i64>> {
    let snapshot: RangeSnapshot = decode(bytes).map_err(io)?;
    let count = snapshot.items.len();
    let imported = storage
        .import_range(
            snapshot.table,
            snapshot.start,
            snapshot.end,
            snapshot.flags,
            &mut snapshot.items.into_iter().map(Ok),
        )
        .map_err(io)?;
    tracing::info!(
        table = ?snapshot.table,
        start = snapshot.start,
        end = snapshot.end,
        items = count,
        imported,
        "installed a physical partition's snapshot"
    );
    Ok(snapshot.fence)
}

/// Builds a data group's snapshot: records the applied position; the data is the store's.
pub struct DataSnapshotBuilder {
    /// The group.
    pub group: GroupId,
    /// Its position when the build was asked for.
    pub applied: Applied,
    /// The store.
    pub storage: Storage,
}

impl RaftSnapshotBuilder<TypeConfig> for DataSnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>> {
        record(self.group, &self.storage, &self.applied)
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        Ok(Snapshot {
            meta: meta_of(self.group, &self.applied),
            snapshot: Box::new(Cursor::new(Vec::new())),
        })
    }
}
