//! The internode messages: Raft's own RPCs addressed to a group, and the cluster's (join,
//! forwarded proposals, liveness). Encoded with [`super::codec`], carried by the transport.

use super::raft_types::{Command, GroupId, Member, Move, NodeId, Reply, TypeConfig};
use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::{Deserialize, Serialize};

/// A request from one node to another.
#[derive(Debug, Serialize, Deserialize)]
pub enum Request {
    /// Raft: append entries (and heartbeats) to a group's replica.
    AppendEntries(GroupId, AppendEntriesRequest<TypeConfig>),
    /// Raft: a candidate asks for a vote.
    Vote(GroupId, VoteRequest<NodeId>),
    /// Raft: a chunk of a snapshot.
    InstallSnapshot(GroupId, InstallSnapshotRequest<TypeConfig>),
    /// A new node asks to join the cluster (sent to a seed, forwarded to the metadata leader).
    Join(Member),
    /// A command for a group's leader, forwarded by a node that does not lead it.
    Propose(GroupId, Command),
    /// Liveness and the peer's schema version.
    Ping,
    /// A partition read at a replica of its group.
    Read {
        /// The group.
        group: GroupId,
        /// The table.
        table: storage::TableId,
        /// The partition key's serialized components.
        partition_key: Vec<Vec<u8>>,
        /// What to read.
        slice: storage::Slice,
        /// Read at the leader after a read index (QUORUM and above), else any replica.
        linearizable: bool,
    },
    /// Vector search over part of a group's token range at a replica (its graphs).
    Nearest {
        /// The group.
        group: GroupId,
        /// The table.
        table: storage::TableId,
        /// The range, inside the group's.
        range: storage::TokenRange,
        /// The vector index.
        index: storage::VectorIndexSpec,
        /// The query vector.
        query: Vec<f32>,
        /// Most rows.
        k: usize,
        /// As for [`Request::Read`].
        linearizable: bool,
    },
    /// A scan of part of a group's token range at a replica.
    Scan {
        /// The group.
        group: GroupId,
        /// The table.
        table: storage::TableId,
        /// The range, inside the group's.
        range: storage::TokenRange,
        /// Most rows.
        limit: usize,
        /// Where to continue.
        cursor: Option<storage::Cursor>,
        /// The secondary index whose rows to read instead of every row.
        index: Option<storage::IndexLookup>,
        /// As for [`Request::Read`].
        linearizable: bool,
    },
    /// To a group's leader: run a replica move (`super::moves::execute`).
    Move {
        /// The group.
        group: GroupId,
        /// The move.
        mv: Move,
    },
    /// To a group's leader: roll a replica move back (`super::moves::roll_back`).
    AbortMove {
        /// The group.
        group: GroupId,
        /// The move.
        mv: Move,
    },
    /// To a replica of a group: start an election, until the group has a leader among its
    /// voters (its leader left it), or once (`take_over`: its leader hands over).
    Elect {
        /// The group.
        group: GroupId,
        /// Elect once even though the group has a leader.
        take_over: bool,
    },
    /// A trace the sender coordinated, for the receiver to keep (`system_traces` reads).
    Trace(Box<crate::query_trace::TraceSession>),
    /// To a group's leader: hand the leadership to replica `to` (the balancer evens the
    /// groups each node leads).
    TransferLeader {
        /// The group.
        group: GroupId,
        /// The replica to lead it.
        to: NodeId,
    },
}

/// What a node holds: `ringdb status` and `system_views.cluster_nodes` show it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStats {
    /// Bytes of table data stored.
    pub bytes: u64,
    /// Physical partitions it holds a replica of.
    pub groups_held: u32,
    /// Physical partitions it leads.
    pub groups_led: u32,
}

/// Why a forwarded proposal did not commit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ProposeFailure {
    /// The receiver does not lead the group; the leader it knows of, if any.
    NotLeader(Option<NodeId>),
    /// The receiver holds no replica of the group.
    NoGroup,
    /// The group cannot commit (no majority) or failed.
    Failed(String),
    /// Every replica refuses the write alike, or the read is invalid.
    Rejected(crate::shard::Rejected),
    /// The group no longer owns the token (it split); the coordinator routes again.
    Moved,
    /// The physical partition's throughput budget is spent: retry after these milliseconds
    /// (`super::leader_budgets`).
    Throttled(u64),
}

/// The answer to a [`Request`].
#[derive(Debug, Serialize, Deserialize)]
pub enum Response {
    /// To [`Request::AppendEntries`].
    AppendEntries(Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>),
    /// To [`Request::Vote`].
    Vote(Result<VoteResponse<NodeId>, RaftError<NodeId>>),
    /// To [`Request::InstallSnapshot`].
    InstallSnapshot(
        Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>,
    ),
    /// To [`Request::Join`]: the cluster's members once joined.
    Joined(Result<Vec<Member>, String>),
    /// To [`Request::Propose`].
    Proposed(Result<Reply, ProposeFailure>),
    /// To [`Request::Ping`]: the schema version the peer runs and what it holds.
    Pong {
        /// The peer's schema version.
        schema_version: uuid::Uuid,
        /// What the peer holds and leads.
        stats: NodeStats,
        /// The groups the peer leads.
        led: Vec<super::raft_types::GroupId>,
        /// The bytes of each group the peer holds a replica of.
        sizes: Vec<(super::raft_types::GroupId, u64)>,
        /// The peer's snapshot transfers.
        transfers: Vec<super::transfers::Transfer>,
    },
    /// To [`Request::Read`].
    Read(Result<storage::PartitionSlice, ProposeFailure>),
    /// To [`Request::Scan`].
    Scan(Result<storage::ScanPage, ProposeFailure>),
    /// To [`Request::Nearest`]: best first.
    Nearest(Result<Vec<storage::NearestRow>, ProposeFailure>),
    /// To [`Request::Move`] (true), [`Request::AbortMove`] (whether the move had finished),
    /// [`Request::Elect`] and [`Request::TransferLeader`] (whether the leadership moved).
    Moved(Result<bool, ProposeFailure>),
    /// The receiver holds no replica of the group addressed.
    NoGroup,
    /// To [`Request::Trace`]: kept.
    TraceKept,
    /// The request could not be decoded.
    BadRequest(String),
}
