//! The Raft type configuration shared by every group (the metadata group and one group per
//! physical partition), and the entries they replicate.

use serde::{Deserialize, Serialize};
use storage::{Mutation, TableId};

/// A node's id in the cluster (from its host id).
pub type NodeId = u64;
/// A Raft group's id: [`META_GROUP`] or a physical partition's group.
pub type GroupId = u64;
/// The metadata group (membership, schema, routing), as ScyllaDB's group 0.
pub const META_GROUP: GroupId = 0;

openraft::declare_raft_types!(
    /// ringdb's Raft types.
    pub TypeConfig:
        D = Command,
        R = Reply,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = super::snapshot_file::SnapshotFile,
        AsyncRuntime = openraft::TokioRuntime,
);

/// The Raft handle of one group.
pub type Raft = openraft::Raft<TypeConfig>;

/// One node of the cluster as the metadata group records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// The node id (the first 8 bytes of the host id).
    pub id: NodeId,
    /// The stable host id.
    pub host_id: uuid::Uuid,
    /// The internode address peers connect to.
    pub internode: std::net::SocketAddr,
    /// The CQL address clients connect to.
    pub native: std::net::SocketAddr,
}

/// One physical partition's group: a token range of a table and the nodes holding it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupInfo {
    /// The group id.
    pub id: GroupId,
    /// The table.
    pub table: TableId,
    /// The last token the group owns (inclusive); the group owns the tokens after the previous
    /// group's end. The table's last group ends at `i64::MAX`.
    pub end: i64,
    /// The nodes holding a replica; the first one starts the group.
    pub replicas: Vec<NodeId>,
    /// For the right half of a split: the group it was split from and the token that group
    /// now ends at. Its replicas apply nothing before their copy of that group has applied
    /// the matching fence (`Command::Fence`), so every replica sees the halves' entries in
    /// the same order.
    #[serde(default)]
    pub parent: Option<(GroupId, i64)>,
}

/// A replicated log entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Command {
    /// Metadata group: a node joins (or updates its addresses).
    Join(Member),
    /// Metadata group: the schema changes from version `expected` to `catalog` (the catalog's
    /// JSON, as `schema.json` holds it), with the groups of the tables it creates. Refused
    /// when the current version is not `expected` (the proposer then retries on the new one).
    SetCatalog {
        /// The schema version the change was made against.
        expected: uuid::Uuid,
        /// The new catalog, as JSON.
        catalog: String,
        /// The groups of the tables the change creates.
        groups: Vec<GroupInfo>,
        /// The SCHEMA_CHANGE event every node sends its registered connections (encoded).
        change: Option<Vec<u8>>,
    },
    /// Metadata group: roles and permissions change from version `expected` to `state`
    /// (`auth.json`'s content: password hashes travel only here, and never reach a log line).
    SetAuth {
        /// The auth version the change was made against.
        expected: u64,
        /// The new state, as JSON.
        state: Secret,
    },
    /// Metadata group: `group` of `table` splits at token `at`: it keeps `(start, at]` and a
    /// new group with the same replicas takes `(at, end]`. Refused when the group no longer
    /// holds `at` strictly inside its range.
    Split {
        /// The table.
        table: TableId,
        /// The group that splits.
        group: GroupId,
        /// The last token the group keeps.
        at: i64,
    },
    /// Data group: from this entry on, the group owns no token after `at` (its range was
    /// split there); writes to later tokens are answered [`Reply::Moved`].
    Fence {
        /// The group's new last token.
        at: i64,
    },
    /// Data group: TRUNCATE of `table`'s rows in the group's range `(start, end]`.
    Truncate {
        /// The table.
        table: TableId,
        /// The token the group's range starts after.
        start: i64,
        /// The group's last token.
        end: i64,
    },
    /// Data group: writes, applied atomically with `now` (seconds) as the expiry base.
    Write {
        /// The coordinator's clock when the write was made (TTL and tombstone base).
        now: i64,
        /// The mutations.
        writes: Vec<(TableId, Mutation)>,
    },
    /// Data group: a lightweight transaction's write, made only if the reads its decision
    /// made still return the same (`super::cas`).
    Cas {
        /// The coordinator's clock (seconds): TTL base and the time the reads are redone at.
        now: i64,
        /// The table.
        table: TableId,
        /// The partition's key.
        partition_key: Vec<Vec<u8>>,
        /// The reads of the decision.
        reads: Vec<super::cas::CasRead>,
        /// The write.
        mutation: Mutation,
    },
    /// Metadata group: a replica of `group` starts moving from `from` (`None`: a replica is
    /// added) to `to` (`None`: the replica is dropped). Refused while the group has a move in
    /// flight, or when `to` already holds it or `from` does not.
    MoveStart {
        /// The group.
        group: GroupId,
        /// The replica leaving, if any.
        from: Option<NodeId>,
        /// The node receiving the replica, if any.
        to: Option<NodeId>,
    },
    /// Metadata group: `group`'s move ends: done with the group's new replicas, or rolled
    /// back (`None`).
    MoveEnd {
        /// The group.
        group: GroupId,
        /// The group's replicas after the move; `None` when it rolled back.
        replicas: Option<Vec<NodeId>>,
    },
    /// Metadata group: `node` leaves the cluster: decommissioned while alive, or removed
    /// while dead (`dead`). The balancer moves its replicas to the others.
    Leave {
        /// The node.
        node: NodeId,
        /// It is dead (removenode): its replicas are re-created from the others'.
        dead: bool,
    },
    /// Metadata group: a node that left and holds nothing is forgotten.
    Forget {
        /// The node.
        node: NodeId,
    },
    /// Metadata group: `group` lost a majority of its replicas to removed (dead) nodes, so
    /// its Raft can commit nothing more: a new group takes its range on the `survivors`,
    /// which keep their copies (each first applies what its log still holds).
    Reseed {
        /// The group.
        group: GroupId,
        /// Its replicas still alive (one live node when none is: the range starts empty).
        survivors: Vec<NodeId>,
    },
}

/// A replica of a physical partition moving between nodes (see `super::moves`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// The replica leaving (`None`: one is added).
    pub from: Option<NodeId>,
    /// The node receiving it (`None`: the replica is dropped).
    pub to: Option<NodeId>,
}

impl Move {
    /// The group's replicas once the move is done. The received replica comes last: the
    /// replicas that were there before come first in the order the group's elections follow
    /// (`super::quiet`), so the one a leaving leader asks to elect is also first in turn, and
    /// two of them do not start elections against each other.
    pub fn apply(&self, replicas: &[NodeId]) -> Vec<NodeId> {
        let mut r: Vec<NodeId> = replicas.to_vec();
        match (
            self.from.and_then(|f| r.iter().position(|x| *x == f)),
            self.to,
        ) {
            (Some(i), Some(to)) => {
                r.remove(i);
                r.push(to);
            }
            (Some(i), None) => {
                r.remove(i);
            }
            (None, Some(to)) => r.push(to),
            (None, None) => {}
        }
        r
    }
}

/// Text that must not reach a log line (its `Debug` is redacted).
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// What applying an entry answered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reply {
    /// Applied.
    #[default]
    Done,
    /// Not applied, with the reason (a stale schema version).
    Refused(String),
    /// A write every replica refused alike.
    Rejected(crate::shard::Rejected),
    /// A compare-and-set whose reads changed since its decision: nothing was written.
    CasConflict,
    /// The group no longer owns a token the command touches (it split): nothing was written;
    /// the coordinator routes the command again.
    Moved,
}
