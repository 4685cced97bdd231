//! The metadata group's state: the members, the schema version and the groups of every table
//! (physical partition → replicas). Replicated by applying the same entries in the same order.

use super::raft_types::{GroupId, GroupInfo, Member, NodeId, TypeConfig};
use openraft::{LogId, StoredMembership};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use storage::TableId;

/// The metadata group's state machine state.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MetaState {
    /// The last entry applied.
    pub last_applied: Option<LogId<NodeId>>,
    /// The group's own membership.
    pub membership: StoredMembership<NodeId, openraft::BasicNode>,
    /// Every node that joined.
    pub members: BTreeMap<NodeId, Member>,
    /// The replicated schema's version (None before the first change).
    pub catalog_version: Option<uuid::Uuid>,
    /// Every physical partition's group.
    pub groups: BTreeMap<GroupId, GroupInfo>,
    /// The replicated roles' version (bumped by every change).
    #[serde(default)]
    pub auth_version: u64,
}

impl MetaState {
    /// The groups of `table`, in token order.
    pub fn table_groups(&self, table: TableId) -> Vec<&GroupInfo> {
        let mut groups: Vec<&GroupInfo> =
            self.groups.values().filter(|g| g.table == table).collect();
        groups.sort_by_key(|g| g.end);
        groups
    }

    /// The next free group id.
    pub fn next_group_id(&self) -> GroupId {
        self.groups.keys().next_back().map_or(1, |id| id + 1)
    }

    /// Drops the groups of tables not in `tables`.
    pub fn retain_tables(&mut self, tables: &std::collections::HashSet<TableId>) {
        self.groups.retain(|_, g| tables.contains(&g.table));
    }
}

/// Raft's view of the metadata state.
pub type MetaMembership = StoredMembership<NodeId, openraft::BasicNode>;

/// Keeps `TypeConfig` in the signatures the state machine shares with openraft.
pub type MetaEntry = openraft::Entry<TypeConfig>;
