//! The metadata group's state machine: applies joins and schema changes, installs each
//! replicated catalog on this node, and saves its whole state after every entry (it is small),
//! so a restart resumes from there instead of replaying old catalogs.

// openraft's storage traits fix the error type (`StorageError`, 224 bytes); helpers return it too.
#![allow(clippy::result_large_err)]

use super::codec::{decode, encode};
use super::log_store::RaftDb;
use super::meta_state::MetaState;
use super::raft_types::{Command, NodeId, Reply, TypeConfig, META_GROUP};
use super::snapshot_file::SnapshotFile;
use crate::node::Node;
use crate::schema::Catalog;
use openraft::storage::RaftStateMachine;
use openraft::{
    EntryPayload, LogId, RaftSnapshotBuilder, Snapshot, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership,
};
use std::sync::{Arc, RwLock};
use tokio::sync::watch;

/// Why a schema change planned on an older schema is refused (the proposer plans again).
pub const STALE_SCHEMA: &str = "stale schema version";

/// The state the cluster reads (members, groups), shared with the state machine.
pub struct MetaShared {
    state: RwLock<MetaState>,
    /// Bumped after every applied entry.
    changed: watch::Sender<u64>,
}

impl MetaShared {
    /// A copy of the current state.
    pub fn snapshot(&self) -> MetaState {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Runs `f` on the current state.
    pub fn with<T>(&self, f: impl FnOnce(&MetaState) -> T) -> T {
        f(&self.state.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Notified after every applied entry.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// The metadata group's state machine.
pub struct MetaMachine {
    shared: Arc<MetaShared>,
    node: Arc<Node>,
    db: RaftDb,
    files: super::data_snapshot::SnapshotFiles,
}

type Result<T> = std::result::Result<T, StorageError<NodeId>>;

fn io(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// Where every group of `state` ends, by table: the cuts this node's store must have.
fn group_ends(state: &MetaState) -> Vec<(storage::TableId, i64)> {
    state.groups.values().map(|g| (g.table, g.end)).collect()
}

impl MetaMachine {
    /// Opens the machine with the state saved by the last run.
    ///
    /// # Errors
    /// When the saved state cannot be read.
    pub fn open(
        node: Arc<Node>,
        db: RaftDb,
        files: super::data_snapshot::SnapshotFiles,
    ) -> std::io::Result<(MetaMachine, Arc<MetaShared>)> {
        let state = match db.load_machine(META_GROUP).map_err(io)? {
            Some(bytes) => MetaState::decode_saved(&bytes).map_err(io)?,
            None => MetaState::default(),
        };
        let (changed, _) = watch::channel(0);
        let cuts = group_ends(&state);
        let shared = Arc::new(MetaShared {
            state: RwLock::new(state),
            changed,
        });
        let machine = MetaMachine {
            shared: shared.clone(),
            node,
            db,
            files,
        };
        // The last run may have stopped before its cuts were made (they run in the
        // background, after the command that asked for them was applied and saved).
        machine.align_storage(cuts);
        Ok((machine, shared))
    }

    fn save(&self, state: &MetaState) -> Result<()> {
        let bytes = encode(state).map_err(|e| StorageIOError::write_state_machine(&io(e)))?;
        self.db
            .save_machine(META_GROUP, &bytes)
            .map_err(|e| StorageIOError::write_state_machine(&io(e)).into())
    }

    /// Cuts this node's physical partitions of each table where its groups end (in the
    /// background: the store splits online), so a group's data is its own partitions.
    fn align_storage(&self, cuts: Vec<(storage::TableId, i64)>) {
        let cuts: Vec<(storage::TableId, i64)> = cuts
            .into_iter()
            .filter(|(_, end)| *end != i64::MAX)
            .collect();
        if cuts.is_empty() {
            return;
        }
        let storage = self.node.storage().clone();
        tokio::task::spawn_blocking(move || {
            for (table, at) in cuts {
                if let Err(e) = storage.split_at(table, at) {
                    tracing::warn!(%table, at, error = %e, "cannot cut a physical partition at its group's end");
                }
            }
        });
    }

    /// Applies one command to `state`; installs catalogs on the node.
    async fn apply_command(&self, state: &mut MetaState, command: Command) -> Result<Reply> {
        match command {
            Command::Join(member) => {
                state.members.insert(member.id, member);
                Ok(Reply::Done)
            }
            Command::SetCatalog {
                expected,
                catalog,
                groups,
                change,
            } => {
                if state.catalog_version.is_some_and(|v| v != expected) {
                    return Ok(Reply::Refused(STALE_SCHEMA.into()));
                }
                let catalog = match crate::schema::catalog_from_json(catalog.as_bytes()) {
                    Ok(c) => c,
                    Err(e) => return Ok(Reply::Refused(format!("bad catalog: {e}"))),
                };
                let change = change
                    .as_deref()
                    .and_then(|mut b| cql::response::SchemaChange::decode(&mut b).ok());
                let version = catalog.version;
                let tables: std::collections::HashSet<storage::TableId> = catalog
                    .keyspaces
                    .values()
                    .flat_map(|k| k.tables.values())
                    .map(|t| crate::schema::table_id(t))
                    .collect();
                let node = self.node.clone();
                tokio::task::spawn_blocking(move || node.install_catalog(catalog, change.as_ref()))
                    .await
                    .map_err(|e| StorageIOError::write_state_machine(&io(e)))?
                    .map_err(|e| StorageIOError::write_state_machine(&io(e)))?;
                state.catalog_version = Some(version);
                let aligned: Vec<(storage::TableId, i64)> =
                    groups.iter().map(|g| (g.table, g.end)).collect();
                state.add_groups(groups);
                state.retain_tables(&tables);
                self.align_storage(aligned);
                Ok(Reply::Done)
            }
            Command::Split { table, group, at } => match state.split(table, group, at) {
                Some(right) => {
                    tracing::info!(%table, group, at, new_group = right.id, "physical partition split");
                    self.align_storage(vec![(table, at)]);
                    Ok(Reply::Done)
                }
                None => Ok(Reply::Refused(
                    "the group does not hold that token any more".into(),
                )),
            },
            Command::SetAuth {
                expected,
                state: auth,
            } => {
                if state.auth_version != expected {
                    return Ok(Reply::Refused("stale auth version".into()));
                }
                let next: crate::auth::AuthState = match serde_json::from_str(&auth.0) {
                    Ok(s) => s,
                    Err(e) => return Ok(Reply::Refused(format!("bad auth state: {e}"))),
                };
                let node = self.node.clone();
                tokio::task::spawn_blocking(move || node.auth().install(next))
                    .await
                    .map_err(|e| StorageIOError::write_state_machine(&io(e)))?
                    .map_err(|e| StorageIOError::write_state_machine(&io(e)))?;
                // Bumped after the state is installed: a change planned on an older state
                // then always carries an older version.
                state.auth_version += 1;
                Ok(Reply::Done)
            }
            Command::MoveStart { group, from, to } => {
                if state.start_move(group, super::raft_types::Move { from, to }) {
                    tracing::info!(group, ?from, to, "a replica starts moving");
                    Ok(Reply::Done)
                } else {
                    Ok(Reply::Refused("the move is not valid now".into()))
                }
            }
            Command::MoveEnd { group, replicas } => {
                let done = replicas.is_some();
                if state.end_move(group, replicas) {
                    tracing::info!(group, done, "a replica move ended");
                    Ok(Reply::Done)
                } else {
                    Ok(Reply::Refused("no move of that group is in flight".into()))
                }
            }
            Command::Leave { node, dead } => {
                if !state.members.contains_key(&node) {
                    return Ok(Reply::Refused("no such node".into()));
                }
                tracing::info!(node, dead, "a node leaves the cluster");
                state.leaving.insert(node, dead);
                Ok(Reply::Done)
            }
            Command::Forget { node } => {
                if !state.leaving.contains_key(&node) || state.holds_anything(node) {
                    return Ok(Reply::Refused("the node still holds replicas".into()));
                }
                tracing::info!(node, "a node left the cluster");
                state.leaving.remove(&node);
                state.members.remove(&node);
                Ok(Reply::Done)
            }
            Command::Reseed { group, survivors } => match state.reseed(group, survivors) {
                Some(new) => {
                    tracing::warn!(
                        group,
                        new_group = new,
                        "a group that lost its majority starts again on its survivors"
                    );
                    Ok(Reply::Done)
                }
                None => Ok(Reply::Refused("no such group".into())),
            },
            Command::Write { .. }
            | Command::Cas { .. }
            | Command::Fence { .. }
            | Command::Truncate { .. } => Ok(Reply::Refused(
                "a data write reached the metadata group".into(),
            )),
        }
    }
}

impl RaftStateMachine<TypeConfig> for MetaMachine {
    type SnapshotBuilder = MetaSnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(
        Option<LogId<NodeId>>,
        StoredMembership<NodeId, openraft::BasicNode>,
    )> {
        Ok(self.shared.with(|s| (s.last_applied, s.membership.clone())))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Reply>>
    where
        I: IntoIterator<Item = openraft::Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let mut replies = Vec::new();
        let mut state = self.shared.snapshot();
        for entry in entries {
            state.last_applied = Some(entry.log_id);
            let reply = match entry.payload {
                EntryPayload::Blank => Reply::Done,
                EntryPayload::Membership(m) => {
                    state.membership = StoredMembership::new(Some(entry.log_id), m);
                    Reply::Done
                }
                EntryPayload::Normal(command) => self.apply_command(&mut state, command).await?,
            };
            replies.push(reply);
            // Saved before the next entry: installing a catalog is not idempotent across
            // versions, so a restart must not replay what was applied.
            self.save(&state)?;
            *self.shared.state.write().unwrap_or_else(|p| p.into_inner()) = state.clone();
        }
        self.shared.changed.send_modify(|n| *n += 1);
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        MetaSnapshotBuilder {
            state: self.shared.snapshot(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotFile>> {
        let file = self
            .files
            .holding(&[])
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        Ok(Box::new(file))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, openraft::BasicNode>,
        snapshot: Box<SnapshotFile>,
    ) -> Result<()> {
        let failed = |e: std::io::Error| StorageIOError::read_snapshot(Some(meta.signature()), &e);
        let mut file = snapshot.into_std().await.map_err(failed)?;
        let mut bytes = Vec::new();
        {
            use std::io::{Read, Seek};
            file.rewind().map_err(failed)?;
            file.read_to_end(&mut bytes).map_err(failed)?;
        }
        let (mut state, catalog): (MetaState, String) =
            decode(&bytes).map_err(|e| failed(io(e)))?;
        state.last_applied = meta.last_log_id;
        state.membership = meta.last_membership.clone();
        let catalog: Catalog = crate::schema::catalog_from_json(catalog.as_bytes())
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &io(e)))?;
        let node = self.node.clone();
        tokio::task::spawn_blocking(move || node.install_catalog(catalog, None))
            .await
            .map_err(|e| StorageIOError::write_state_machine(&io(e)))?
            .map_err(|e| StorageIOError::write_state_machine(&io(e)))?;
        self.save(&state)?;
        let cuts = group_ends(&state);
        *self.shared.state.write().unwrap_or_else(|p| p.into_inner()) = state;
        self.shared.changed.send_modify(|n| *n += 1);
        self.align_storage(cuts);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>> {
        let mut builder = self.get_snapshot_builder().await;
        builder.snapshot(&self.node, &self.files).map(Some)
    }
}

/// Builds the metadata group's snapshot: the state and the catalog.
pub struct MetaSnapshotBuilder {
    state: MetaState,
}

impl MetaSnapshotBuilder {
    fn snapshot(
        &mut self,
        node: &Node,
        files: &super::data_snapshot::SnapshotFiles,
    ) -> Result<Snapshot<TypeConfig>> {
        let catalog = serde_json::to_string(&*node.catalog())
            .map_err(|e| StorageIOError::read_state_machine(&io(e)))?;
        let bytes = encode(&(&self.state, catalog))
            .map_err(|e| StorageIOError::read_state_machine(&io(e)))?;
        let last = self.state.last_applied;
        Ok(Snapshot {
            meta: SnapshotMeta {
                last_log_id: last,
                last_membership: self.state.membership.clone(),
                snapshot_id: format!("meta-{}", last.map_or(0, |l| l.index)),
            },
            snapshot: Box::new(
                files
                    .holding(&bytes)
                    .map_err(|e| StorageIOError::read_state_machine(&e))?,
            ),
        })
    }
}

impl RaftSnapshotBuilder<TypeConfig> for MetaSnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>> {
        Err(StorageIOError::read_state_machine(&io(
            "the metadata group's snapshots are served from the state machine",
        ))
        .into())
    }
}
