//! The Raft logs and votes of every group this node holds, in one fjall database
//! (`DATA_DIR/raft`): entries under `group ++ index`, and each group's vote, committed id and
//! purge point under `group ++ tag`. Appends reach the OS before openraft is told (a process
//! crash loses nothing); with `commitlog_sync: batch` they are fsynced first.

// openraft's storage traits fix the error type (`StorageError`, 224 bytes); helpers return it too.
#![allow(clippy::result_large_err)]

use super::codec::{decode, encode};
use super::raft_types::{GroupId, NodeId, TypeConfig};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, LogId, RaftLogReader, StorageError, StorageIOError, Vote};
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc;

const VOTE: u8 = 1;
const COMMITTED: u8 = 2;
const PURGED: u8 = 3;
const MACHINE: u8 = 4;

/// The node's Raft database.
#[derive(Clone)]
pub struct RaftDb {
    inner: Arc<DbInner>,
}

struct DbInner {
    db: Database,
    log: Keyspace,
    state: Keyspace,
    mode: PersistMode,
}

impl RaftDb {
    /// Opens (or creates) the database in `dir`; `fsync` makes every append and vote fsynced
    /// before it is reported durable.
    ///
    /// # Errors
    /// When fjall cannot open the directory.
    pub fn open(dir: &Path, fsync: bool) -> Result<RaftDb, fjall::Error> {
        let db = Database::builder(dir).open()?;
        let log = db.keyspace("log", KeyspaceCreateOptions::default)?;
        let state = db.keyspace("state", KeyspaceCreateOptions::default)?;
        let mode = if fsync {
            PersistMode::SyncData
        } else {
            PersistMode::Buffer
        };
        Ok(RaftDb {
            inner: Arc::new(DbInner {
                db,
                log,
                state,
                mode,
            }),
        })
    }

    /// The log store of one group.
    pub fn group(&self, group: GroupId) -> LogStore {
        LogStore {
            group,
            db: self.clone(),
        }
    }

    /// Removes a group's log and state (the group left this node).
    ///
    /// # Errors
    /// On I/O failure.
    pub fn remove_group(&self, group: GroupId) -> Result<(), fjall::Error> {
        let inner = &self.inner;
        let mut batch = inner.db.batch();
        for g in inner.log.prefix(group.to_be_bytes()) {
            batch.remove(&inner.log, g.key()?);
        }
        for g in inner.state.prefix(group.to_be_bytes()) {
            batch.remove(&inner.state, g.key()?);
        }
        batch.commit()?;
        inner.db.persist(inner.mode)?;
        Ok(())
    }

    /// Stores a state machine's state (the metadata group keeps its whole state here, written
    /// after each entry it applies).
    ///
    /// # Errors
    /// On I/O failure.
    pub fn save_machine(&self, group: GroupId, bytes: &[u8]) -> Result<(), fjall::Error> {
        let inner = &self.inner;
        inner.state.insert(state_key(group, MACHINE), bytes)?;
        inner.db.persist(inner.mode)
    }

    /// Reads what [`RaftDb::save_machine`] stored.
    ///
    /// # Errors
    /// On I/O failure.
    pub fn load_machine(&self, group: GroupId) -> Result<Option<Vec<u8>>, fjall::Error> {
        Ok(self
            .inner
            .state
            .get(state_key(group, MACHINE))?
            .map(|v| v.to_vec()))
    }

    /// Fsyncs everything (shutdown, periodic sync).
    ///
    /// # Errors
    /// On I/O failure.
    pub fn sync(&self) -> Result<(), fjall::Error> {
        self.inner.db.persist(PersistMode::SyncData)
    }
}

/// One group's log.
#[derive(Clone)]
pub struct LogStore {
    group: GroupId,
    db: RaftDb,
}

fn entry_key(group: GroupId, index: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&group.to_be_bytes());
    k[8..].copy_from_slice(&index.to_be_bytes());
    k
}

fn state_key(group: GroupId, tag: u8) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[..8].copy_from_slice(&group.to_be_bytes());
    k[8] = tag;
    k
}

fn io_err(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

type Result<T, E = StorageError<NodeId>> = std::result::Result<T, E>;

impl LogStore {
    fn get_state<T: serde::de::DeserializeOwned>(&self, tag: u8) -> Result<Option<T>> {
        let raw = self
            .db
            .inner
            .state
            .get(state_key(self.group, tag))
            .map_err(|e| StorageIOError::read(&io_err(e)))?;
        raw.map(|v| decode(&v).map_err(|e| StorageIOError::read(&io_err(e)).into()))
            .transpose()
    }

    fn put_state<T: serde::Serialize>(&self, tag: u8, value: &T) -> Result<()> {
        let bytes = encode(value).map_err(|e| StorageIOError::write(&io_err(e)))?;
        let inner = &self.db.inner;
        inner
            .state
            .insert(state_key(self.group, tag), bytes)
            .map_err(|e| StorageIOError::write(&io_err(e)))?;
        inner
            .db
            .persist(inner.mode)
            .map_err(|e| StorageIOError::write(&io_err(e)))?;
        Ok(())
    }

    fn last_entry(&self) -> Result<Option<LogId<NodeId>>> {
        let last = self
            .db
            .inner
            .log
            .prefix(self.group.to_be_bytes())
            .next_back();
        match last {
            None => Ok(None),
            Some(g) => {
                let (_, v) = g
                    .into_inner()
                    .map_err(|e| StorageIOError::read_logs(&io_err(e)))?;
                let entry: Entry<TypeConfig> =
                    decode(&v).map_err(|e| StorageIOError::read_logs(&io_err(e)))?;
                Ok(Some(entry.log_id))
            }
        }
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>> {
        let start = match range.start_bound() {
            Bound::Included(i) => *i,
            Bound::Excluded(i) => i.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(i) => Bound::Included(entry_key(self.group, *i)),
            Bound::Excluded(i) => Bound::Excluded(entry_key(self.group, *i)),
            Bound::Unbounded => Bound::Included(entry_key(self.group, u64::MAX)),
        };
        let from = Bound::Included(entry_key(self.group, start));
        let mut out = Vec::new();
        for g in self.db.inner.log.range((from, end)) {
            let (_, v) = g
                .into_inner()
                .map_err(|e| StorageIOError::read_logs(&io_err(e)))?;
            out.push(decode(&v).map_err(|e| StorageIOError::read_logs(&io_err(e)))?);
        }
        Ok(out)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>> {
        let purged: Option<LogId<NodeId>> = self.get_state(PURGED)?;
        let last = self.last_entry()?.or(purged);
        Ok(LogState {
            last_purged_log_id: purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<()> {
        self.put_state(VOTE, vote)
            .map_err(|e| StorageIOError::write_vote(&io_err(e)).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>> {
        self.get_state(VOTE)
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> Result<()> {
        // Not fsynced on its own: losing it only means re-applying from the state machine's
        // own applied position, which the data groups store atomically with their data.
        let bytes = encode(&committed).map_err(|e| StorageIOError::write(&io_err(e)))?;
        self.db
            .inner
            .state
            .insert(state_key(self.group, COMMITTED), bytes)
            .map_err(|e| StorageIOError::write(&io_err(e)))?;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>> {
        Ok(self
            .get_state::<Option<LogId<NodeId>>>(COMMITTED)?
            .flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> Result<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let inner = &self.db.inner;
        let mut batch = inner.db.batch();
        for entry in entries {
            let bytes = encode(&entry)
                .map_err(|e| StorageIOError::write_log_entry(entry.log_id, &io_err(e)))?;
            batch.insert(&inner.log, entry_key(self.group, entry.log_id.index), bytes);
        }
        let result = batch
            .commit()
            .and_then(|()| inner.db.persist(inner.mode))
            .map_err(io_err);
        let failed = result.as_ref().err().map(|e| e.to_string());
        callback.log_io_completed(result);
        match failed {
            Some(e) => Err(StorageIOError::write_logs(&io_err(e)).into()),
            None => Ok(()),
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<()> {
        let inner = &self.db.inner;
        let mut batch = inner.db.batch();
        let from = entry_key(self.group, log_id.index);
        let to = entry_key(self.group, u64::MAX);
        for g in inner.log.range(from..=to) {
            let k = g
                .key()
                .map_err(|e| StorageIOError::write_logs(&io_err(e)))?;
            batch.remove(&inner.log, k);
        }
        batch
            .commit()
            .and_then(|()| inner.db.persist(inner.mode))
            .map_err(|e| StorageIOError::write_logs(&io_err(e)))?;
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<()> {
        // What is purged was in a snapshot, so committed: the saved commit position must not
        // stay behind it (openraft refuses to start with a purge past the commit, as after a
        // snapshot installed on a new replica that is killed before it saves a commit).
        let committed = self.read_committed().await?;
        if committed < Some(log_id) {
            self.save_committed(Some(log_id)).await?;
        }
        self.put_state(PURGED, &log_id)?;
        let inner = &self.db.inner;
        let mut batch = inner.db.batch();
        let from = entry_key(self.group, 0);
        let to = entry_key(self.group, log_id.index);
        for g in inner.log.range(from..=to) {
            let k = g
                .key()
                .map_err(|e| StorageIOError::write_logs(&io_err(e)))?;
            batch.remove(&inner.log, k);
        }
        batch
            .commit()
            .map_err(|e| StorageIOError::write_logs(&io_err(e)))?;
        Ok(())
    }
}
