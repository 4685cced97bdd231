//! The metadata group's state: the members, the schema version and the groups of every table
//! (physical partition → replicas). Replicated by applying the same entries in the same order.

use super::raft_types::{GroupId, GroupInfo, Member, Move, NodeId, TypeConfig};
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
    /// The lowest group id never used (ids of dropped groups are not reused: a node that
    /// missed the drop may still hold their logs).
    #[serde(default)]
    pub unused_group: GroupId,
    /// The replicas moving, by group (one move per group at a time).
    #[serde(default)]
    pub moves: BTreeMap<GroupId, Move>,
    /// The nodes leaving the cluster: `true` when dead (removenode), `false` when
    /// decommissioned.
    #[serde(default)]
    pub leaving: BTreeMap<NodeId, bool>,
    /// Groups replaced by a new one after losing their majority (old id → new id).
    #[serde(default)]
    pub replaced: BTreeMap<GroupId, GroupId>,
}

/// The state as ringdb saved it before moves existed (postcard keeps no field names, so a
/// saved state is read as the newest layout or, failing that, this one).
#[derive(Deserialize)]
struct MetaStateBeforeMoves {
    last_applied: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, openraft::BasicNode>,
    members: BTreeMap<NodeId, Member>,
    catalog_version: Option<uuid::Uuid>,
    groups: BTreeMap<GroupId, GroupInfo>,
    auth_version: u64,
    unused_group: GroupId,
}

impl MetaState {
    /// Reads a saved state, in the newest layout or an older one.
    ///
    /// # Errors
    /// When the bytes are no saved state.
    pub fn decode_saved(bytes: &[u8]) -> Result<MetaState, super::codec::CodecError> {
        use super::codec::decode_whole as decode;
        if let Ok(s) = decode::<MetaState>(bytes) {
            return Ok(s);
        }
        let s = decode::<MetaStateBeforeMoves>(bytes)?;
        Ok(MetaState {
            last_applied: s.last_applied,
            membership: s.membership,
            members: s.members,
            catalog_version: s.catalog_version,
            groups: s.groups,
            auth_version: s.auth_version,
            unused_group: s.unused_group,
            moves: BTreeMap::new(),
            leaving: BTreeMap::new(),
            replaced: BTreeMap::new(),
        })
    }

    /// Replaces `group` by a new group with the same range on `survivors`; returns the new
    /// id, or `None` when the group is gone or no survivor is given.
    pub fn reseed(&mut self, group: GroupId, survivors: Vec<NodeId>) -> Option<GroupId> {
        if survivors.is_empty() {
            return None;
        }
        let old = self.groups.get(&group)?.clone();
        let id = self.next_group_id();
        self.groups.remove(&group);
        self.moves.remove(&group);
        self.add_groups([GroupInfo {
            id,
            replicas: survivors,
            parent: None,
            ..old
        }]);
        self.replaced.insert(group, id);
        Some(id)
    }

    /// The groups of `table`, in token order.
    pub fn table_groups(&self, table: TableId) -> Vec<&GroupInfo> {
        let mut groups: Vec<&GroupInfo> =
            self.groups.values().filter(|g| g.table == table).collect();
        groups.sort_by_key(|g| g.end);
        groups
    }

    /// The next free group id.
    pub fn next_group_id(&self) -> GroupId {
        let after_last = self.groups.keys().next_back().map_or(1, |id| id + 1);
        after_last.max(self.unused_group)
    }

    /// Records new groups (their ids are used from now on).
    pub fn add_groups(&mut self, groups: impl IntoIterator<Item = GroupInfo>) {
        for g in groups {
            self.unused_group = self.unused_group.max(g.id + 1);
            self.groups.insert(g.id, g);
        }
    }

    /// Splits `group` of `table` at `at`: the group keeps `(start, at]`, a new group with the
    /// same replicas takes `(at, end]`. Returns the new group, or `None` when the group is
    /// not the table's or `at` is not strictly inside its range (a split already applied).
    pub fn split(&mut self, table: TableId, group: GroupId, at: i64) -> Option<GroupInfo> {
        let ranges: Vec<(i64, GroupId)> = {
            let mut start = i64::MIN;
            self.table_groups(table)
                .into_iter()
                .map(|g| {
                    let s = start;
                    start = g.end;
                    (s, g.id)
                })
                .collect()
        };
        let start = ranges.iter().find(|(_, id)| *id == group)?.0;
        let left = self.groups.get(&group)?;
        if !(start < at && at < left.end) {
            return None;
        }
        let right = GroupInfo {
            id: self.next_group_id(),
            table,
            end: left.end,
            replicas: left.replicas.clone(),
            parent: Some((group, at)),
        };
        if let Some(left) = self.groups.get_mut(&group) {
            left.end = at;
        }
        self.add_groups([right.clone()]);
        Some(right)
    }

    /// Records a move of `group`'s replica; false when it is not valid now (the group is
    /// gone or already moving, `to` holds it, `from` does not).
    pub fn start_move(&mut self, group: GroupId, mv: Move) -> bool {
        let Some(g) = self.groups.get(&group) else {
            return false;
        };
        let valid = !self.moves.contains_key(&group)
            && mv.to.is_none_or(|to| {
                !g.replicas.contains(&to)
                    && self.members.contains_key(&to)
                    && !self.leaving.contains_key(&to)
            })
            && mv.from.is_none_or(|f| g.replicas.contains(&f))
            && (mv.from.is_some() || mv.to.is_some())
            && (mv.to.is_some() || g.replicas.len() > 1);
        if valid {
            self.moves.insert(group, mv);
        }
        valid
    }

    /// Ends `group`'s move: its replicas become `replicas` (done) or stay (`None`: rolled
    /// back). False when no move of it was in flight.
    pub fn end_move(&mut self, group: GroupId, replicas: Option<Vec<NodeId>>) -> bool {
        if self.moves.remove(&group).is_none() {
            return false;
        }
        if let (Some(g), Some(replicas)) = (self.groups.get_mut(&group), replicas) {
            g.replicas = replicas;
        }
        true
    }

    /// Whether `node` holds a replica or is the end of a move.
    pub fn holds_anything(&self, node: NodeId) -> bool {
        self.groups.values().any(|g| g.replicas.contains(&node))
            || self
                .moves
                .values()
                .any(|m| m.to == Some(node) || m.from == Some(node))
    }

    /// Drops the groups of tables not in `tables`.
    pub fn retain_tables(&mut self, tables: &std::collections::HashSet<TableId>) {
        self.groups.retain(|_, g| tables.contains(&g.table));
        let groups = &self.groups;
        self.moves.retain(|id, _| groups.contains_key(id));
    }
}

/// Raft's view of the metadata state.
pub type MetaMembership = StoredMembership<NodeId, openraft::BasicNode>;

/// Keeps `TypeConfig` in the signatures the state machine shares with openraft.
pub type MetaEntry = openraft::Entry<TypeConfig>;

#[cfg(test)]
mod tests {
    use super::*;

    fn group(id: GroupId, end: i64) -> GroupInfo {
        GroupInfo {
            id,
            table: TableId(7),
            end,
            replicas: vec![1, 2, 3],
            parent: None,
        }
    }

    #[test]
    fn a_state_saved_before_moves_existed_is_read() {
        #[derive(Serialize)]
        struct Old {
            last_applied: Option<LogId<NodeId>>,
            membership: StoredMembership<NodeId, openraft::BasicNode>,
            members: BTreeMap<NodeId, Member>,
            catalog_version: Option<uuid::Uuid>,
            groups: BTreeMap<GroupId, GroupInfo>,
            auth_version: u64,
            unused_group: GroupId,
        }
        let mut groups = BTreeMap::new();
        groups.insert(3, group(3, 0));
        let old = Old {
            last_applied: None,
            membership: StoredMembership::default(),
            members: BTreeMap::new(),
            catalog_version: Some(uuid::Uuid::nil()),
            groups,
            auth_version: 4,
            unused_group: 9,
        };
        let bytes = crate::cluster::codec::encode(&old).unwrap();
        let s = MetaState::decode_saved(&bytes).unwrap();
        assert_eq!(s.auth_version, 4);
        assert_eq!(s.unused_group, 9);
        assert_eq!(s.groups.len(), 1);
        assert!(s.moves.is_empty() && s.leaving.is_empty());
        let now = crate::cluster::codec::encode(&s).unwrap();
        assert_eq!(MetaState::decode_saved(&now).unwrap().auth_version, 4);
    }

    #[test]
    fn a_split_keeps_the_left_half_and_gives_the_right_half_a_new_group() {
        let mut s = MetaState::default();
        s.add_groups([group(1, 0), group(2, i64::MAX)]);
        let right = s.split(TableId(7), 2, 1_000).unwrap();
        assert_eq!(right.id, 3);
        assert_eq!(right.end, i64::MAX);
        assert_eq!(right.replicas, vec![1, 2, 3]);
        assert_eq!(right.parent, Some((2, 1_000)));
        let ends: Vec<(GroupId, i64)> = s
            .table_groups(TableId(7))
            .iter()
            .map(|g| (g.id, g.end))
            .collect();
        assert_eq!(ends, vec![(1, 0), (2, 1_000), (3, i64::MAX)]);
        // Applied twice (or at a token outside the range): refused.
        assert!(s.split(TableId(7), 2, 1_000).is_none());
        assert!(s.split(TableId(7), 2, 0).is_none());
        assert!(s.split(TableId(7), 1, 5).is_none());
        assert!(s.split(TableId(8), 1, -5).is_none());
        // Dropped groups' ids are never given out again.
        s.groups.clear();
        assert_eq!(s.next_group_id(), 4);
    }
}
