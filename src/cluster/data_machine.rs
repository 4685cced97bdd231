//! A physical partition's state machine: applies replicated writes to this node's store, each
//! in one fjall batch with the entry's log position (`Storage::apply_replicated`), so after a
//! crash the data and the applied position agree and no entry is applied twice (counters stay
//! exact). Writes every replica refuses alike (an invalid value, the partition cap) are
//! answered as refusals; any other failure stops the replica rather than let it diverge.

// openraft's storage traits fix the error type (`StorageError`, 224 bytes).
#![allow(clippy::result_large_err)]

use super::codec::{decode, encode};
use super::data_snapshot::{self, Applied, DataSnapshotBuilder, SnapshotFiles};
use super::fences::Fences;
use super::raft_types::{Command, GroupId, NodeId, Reply, TypeConfig};
use super::snapshot_file::SnapshotFile;
use crate::shard::Rejected;
use openraft::storage::RaftStateMachine;
use openraft::{
    BasicNode, EntryPayload, Snapshot, SnapshotMeta, StorageError, StorageIOError, StoredMembership,
};
use std::sync::Arc;
use std::time::Duration;
use storage::token::partition_token;
use storage::Storage;

type Result<T> = std::result::Result<T, StorageError<NodeId>>;

/// Where a group's token range is now, `(start, end]`, from the metadata group.
pub type RangeOf = Arc<dyn Fn() -> Option<(i64, i64)> + Send + Sync>;

/// What a data group's snapshots need beside the store.
pub struct SnapshotSupport {
    /// The group's range, for the snapshots a new replica receives.
    pub range: RangeOf,
    /// Where the size of a snapshot being sent is recorded.
    pub transfers: Arc<super::transfers::Transfers>,
    /// Where snapshot files are made.
    pub files: SnapshotFiles,
    /// The pace snapshots are sent and imported at.
    pub pace: Arc<super::stream_pace::StreamPace>,
}

fn io(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// The meta key holding a group's applied position.
fn marker_key(group: GroupId) -> Vec<u8> {
    let mut k = b"raft/applied/".to_vec();
    k.extend_from_slice(&group.to_be_bytes());
    k
}

/// A data group's state machine.
pub struct DataMachine {
    group: GroupId,
    table: storage::TableId,
    storage: Storage,
    applied: Applied,
    fences: Arc<Fences>,
    /// For the right half of a split: the group it came from and the fence this replica's
    /// copy of that group must have applied before this group applies anything.
    parent: Option<(GroupId, i64)>,
    /// The group's range, the transfers' record and the snapshot files.
    snapshots: SnapshotSupport,
    /// Raft asked for the current snapshot once (at start, for its position only).
    started: bool,
    /// Dropped with the machine: its Raft's state machine task has ended (see [`Self::alive`]).
    alive: Arc<()>,
}

impl DataMachine {
    /// Opens the machine at the position its last applied entry left.
    ///
    /// # Errors
    /// When the position cannot be read.
    pub fn open(
        group: GroupId,
        table: storage::TableId,
        storage: Storage,
        fences: Arc<Fences>,
        parent: Option<(GroupId, i64)>,
        snapshots: SnapshotSupport,
    ) -> std::io::Result<DataMachine> {
        let applied = match storage.get_meta(&marker_key(group)).map_err(io)? {
            Some(bytes) => decode(&bytes).map_err(io)?,
            None => (None, StoredMembership::default()),
        };
        fences.load(group, &storage).map_err(io)?;
        Ok(DataMachine {
            group,
            table,
            storage,
            applied,
            fences,
            parent,
            snapshots,
            started: false,
            alive: Arc::new(()),
        })
    }

    /// Waits until this node's copy of the parent group has applied the fence this group was
    /// split at: every entry the parent committed for this group's tokens is applied first.
    async fn wait_for_parent(&mut self) {
        let Some((parent, at)) = self.parent else {
            return;
        };
        let mut waited = 0u32;
        loop {
            let fenced = match self.fences.get(parent) {
                Some(end) => end <= at,
                None => self
                    .fences
                    .load(parent, &self.storage)
                    .ok()
                    .flatten()
                    .is_some_and(|end| end <= at),
            };
            // A dropped table's groups stop: nothing is left to order.
            if fenced || self.storage.table_stats(self.table).is_err() {
                break;
            }
            waited += 1;
            if waited % 500 == 0 {
                tracing::info!(
                    group = self.group,
                    parent,
                    "waiting for the split group's fence"
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.parent = None;
    }

    /// Whether every token `tokens` yields is still this group's.
    fn owns_all(&self, mut tokens: impl Iterator<Item = i64>) -> bool {
        match self.fences.get(self.group) {
            None => true,
            Some(end) => tokens.all(|t| t <= end),
        }
    }

    /// A handle that stops upgrading once this machine is dropped: after its Raft shuts
    /// down, the state machine task still applies the entries it was sent, then drops it.
    pub fn alive(&self) -> std::sync::Weak<()> {
        Arc::downgrade(&self.alive)
    }

    /// Forgets a group's position (the group left this node).
    ///
    /// # Errors
    /// On I/O failure.
    pub fn forget(
        group: GroupId,
        storage: &Storage,
    ) -> std::result::Result<(), storage::StorageError> {
        storage.delete_meta(&marker_key(group))?;
        data_snapshot::forget(group, storage)
    }

    fn persist_applied(&self) -> std::io::Result<()> {
        let marker = encode(&self.applied).map_err(io)?;
        self.storage
            .put_meta(&marker_key(self.group), &marker)
            .map_err(io)
    }

    fn apply_one(&mut self, entry: openraft::Entry<TypeConfig>) -> Result<Reply> {
        let log_id = entry.log_id;
        let mut conflict = false;
        let mut moved = false;
        let (writes, now) = match entry.payload {
            EntryPayload::Blank => (Vec::new(), 0),
            EntryPayload::Membership(m) => {
                self.applied.1 = StoredMembership::new(Some(log_id), m);
                (Vec::new(), 0)
            }
            EntryPayload::Normal(Command::Write { now, writes })
                if !self.owns_all(
                    writes
                        .iter()
                        .map(|(_, m)| partition_token(&m.partition_key)),
                ) =>
            {
                moved = true;
                (Vec::new(), now)
            }
            EntryPayload::Normal(Command::Write { now, writes }) => (writes, now),
            EntryPayload::Normal(Command::Truncate { end, .. })
                if !self.owns_all(std::iter::once(end)) =>
            {
                moved = true;
                (Vec::new(), 0)
            }
            EntryPayload::Normal(Command::Truncate { table, start, end }) => {
                // Applied before the position is saved: replayed after a crash, it is
                // idempotent, and no later entry was applied before it.
                match self.storage.truncate_range(table, start, end) {
                    Ok(()) => {}
                    Err(e) if Rejected::of(&e).is_some() => {}
                    Err(e) => return Err(StorageIOError::apply(log_id, &io(e)).into()),
                }
                (Vec::new(), 0)
            }
            EntryPayload::Normal(Command::Fence { at }) => {
                self.fences
                    .cut(self.group, at, &self.storage)
                    .map_err(|e| StorageIOError::apply(log_id, &io(e)))?;
                (Vec::new(), 0)
            }
            EntryPayload::Normal(Command::Cas {
                now, partition_key, ..
            }) if !self.owns_all(std::iter::once(partition_token(&partition_key))) => {
                moved = true;
                (Vec::new(), now)
            }
            EntryPayload::Normal(Command::Cas {
                now,
                table,
                partition_key,
                reads,
                mutation,
            }) => {
                let holds = super::cas::still_holds(&reads, |slice| {
                    self.storage
                        .read_partition_at(table, &partition_key, slice, now)
                });
                match holds {
                    Ok(true) => (vec![(table, mutation)], now),
                    Ok(false) => {
                        conflict = true;
                        (Vec::new(), now)
                    }
                    // A read every replica fails alike (the table was dropped): no write.
                    Err(e) if Rejected::of(&e).is_some() => {
                        conflict = true;
                        (Vec::new(), now)
                    }
                    Err(e) => return Err(StorageIOError::apply(log_id, &io(e)).into()),
                }
            }
            EntryPayload::Normal(_) => (Vec::new(), 0),
        };
        self.applied.0 = Some(log_id);
        let marker = encode(&self.applied).map_err(|e| StorageIOError::apply(log_id, &io(e)))?;
        let key = marker_key(self.group);
        let refs: Vec<(storage::TableId, &storage::Mutation)> =
            writes.iter().map(|(t, m)| (*t, m)).collect();
        match self
            .storage
            .apply_replicated(&refs, now, Some((&key, &marker)))
        {
            Ok(()) if moved => Ok(Reply::Moved),
            Ok(()) if conflict => Ok(Reply::CasConflict),
            Ok(()) => Ok(Reply::Done),
            Err(e) => match Rejected::of(&e) {
                Some(rejected) => {
                    // Every replica refuses it alike; the position still moves on.
                    self.storage
                        .apply_replicated(&[], now, Some((&key, &marker)))
                        .map_err(|e| StorageIOError::apply(log_id, &io(e)))?;
                    Ok(Reply::Rejected(rejected))
                }
                None => {
                    tracing::error!(group = self.group, error = %e, "a replica could not apply an entry; stopping it");
                    Err(StorageIOError::apply(log_id, &io(e)).into())
                }
            },
        }
    }
}

impl RaftStateMachine<TypeConfig> for DataMachine {
    type SnapshotBuilder = DataSnapshotBuilder;

    async fn applied_state(&mut self) -> Result<Applied> {
        Ok(self.applied.clone())
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Reply>>
    where
        I: IntoIterator<Item = openraft::Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        self.wait_for_parent().await;
        entries.into_iter().map(|e| self.apply_one(e)).collect()
    }

    async fn get_snapshot_builder(&mut self) -> DataSnapshotBuilder {
        DataSnapshotBuilder {
            group: self.group,
            applied: self.applied.clone(),
            storage: self.storage.clone(),
            files: self.snapshots.files.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotFile>> {
        let file = self
            .snapshots
            .files
            .create()
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        Ok(Box::new(SnapshotFile::ready(file)))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<SnapshotFile>,
    ) -> Result<()> {
        let failed = |e: std::io::Error| StorageIOError::read_snapshot(Some(meta.signature()), &e);
        let storage = self.storage.clone();
        let file = snapshot.into_std().await.map_err(failed)?;
        let pace = self.snapshots.pace.clone();
        let fence =
            tokio::task::block_in_place(|| data_snapshot::import(&storage, file, &pace.import))
                .map_err(failed)?;
        if let Some(at) = fence {
            self.fences
                .cut(self.group, at, &self.storage)
                .map_err(|e| failed(io(e)))?;
        }
        // The snapshot holds everything the split's parent committed for this range.
        self.parent = None;
        self.applied = (meta.last_log_id, meta.last_membership.clone());
        self.persist_applied().map_err(failed)?;
        data_snapshot::record(self.group, &self.storage, &self.applied).map_err(failed)?;
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>> {
        let failed = |e: std::io::Error| StorageIOError::read_snapshot(None, &e);
        if !self.started {
            // At start Raft only needs the last snapshot's position.
            self.started = true;
            let Some(applied) = data_snapshot::last(self.group, &self.storage).map_err(failed)?
            else {
                return Ok(None);
            };
            let empty = self.snapshots.files.holding(&[]).map_err(failed)?;
            return Ok(Some(Snapshot {
                meta: data_snapshot::meta_of(self.group, &applied),
                snapshot: Box::new(empty),
            }));
        }
        // A replica needs the data: the range as applied now. The export thread takes the
        // store's snapshot while this machine waits, then writes the file while it applies on.
        let Some(range) = (self.snapshots.range)() else {
            return Ok(None);
        };
        let fence = self.fences.get(self.group);
        let storage = self.storage.clone();
        let (table, files) = (self.table, self.snapshots.files.clone());
        let (group, transfers) = (self.group, self.snapshots.transfers.clone());
        let (file, exported) = SnapshotFile::pending();
        let file = file.paced(self.snapshots.pace.clone());
        let (taken, on_taken) = std::sync::mpsc::channel::<()>();
        tokio::task::spawn_blocking(move || {
            let taken = Box::new(move || {
                let _ = taken.send(());
            });
            let result = data_snapshot::export(&storage, &files, table, range, fence, taken);
            match &result {
                Ok((_, bytes)) => {
                    tracing::info!(group, bytes, "sending a physical partition's snapshot");
                    transfers.sending(group, *bytes);
                }
                Err(e) => tracing::warn!(group, error = %e, "exporting a snapshot"),
            }
            let _ = exported.send(result.map(|(file, _)| file));
        });
        // Returns once the store's snapshot is taken, or the export failed before it.
        let _ = tokio::task::block_in_place(|| on_taken.recv());
        Ok(Some(Snapshot {
            meta: data_snapshot::meta_of(self.group, &self.applied),
            snapshot: Box::new(file),
        }))
    }
}
