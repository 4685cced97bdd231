//! What the node asks of its cluster, through hooks the cluster installs at startup: the other
//! nodes (for `system.peers`) and the replicated schema log that DDL goes through. A node
//! without them (tests that run the server in-process) is a single node.

use crate::error::QueryError;
use crate::schema::Catalog;
use cql::response::SchemaChange;
use std::net::IpAddr;
use uuid::Uuid;

/// Another node, as `system.peers` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Its host id.
    pub host_id: Uuid,
    /// The address clients reach it at.
    pub rpc_address: IpAddr,
    /// Its native port.
    pub rpc_port: u16,
    /// Its tokens.
    pub tokens: Vec<i64>,
    /// The schema version it last reported.
    pub schema_version: Uuid,
}

/// One member with its state, as `system_views.cluster_nodes` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    /// Its host id.
    pub host_id: Uuid,
    /// Its CQL address.
    pub native: std::net::SocketAddr,
    /// Its internode address.
    pub internode: std::net::SocketAddr,
    /// Up or down, as this node sees it (this node is always up).
    pub up: bool,
    /// `NORMAL`, `LEAVING` (decommissioned) or `REMOVING` (removed while dead).
    pub state: &'static str,
    /// Physical partitions it leads.
    pub groups_led: u32,
    /// Physical partitions it holds a replica of.
    pub groups_held: u32,
    /// Bytes of table data it stores.
    pub bytes: u64,
}

/// A physical partition's group: its token range's end, where its replicas are and which of
/// them leads, as `system_views.physical_partitions` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The table.
    pub table: storage::TableId,
    /// The last token of the group's range.
    pub end: i64,
    /// The CQL addresses of its replicas.
    pub replicas: Vec<IpAddr>,
    /// The CQL address of its leader, when this node knows it.
    pub leader: Option<IpAddr>,
}

/// A replica move in flight, as `system_views.moves` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveStatus {
    /// The group (physical partition) moving.
    pub group: u64,
    /// Its table.
    pub table: storage::TableId,
    /// The host id of the node giving up its replica (none: a replica is added).
    pub from: Option<Uuid>,
    /// The host id of the node receiving it (none: the replica is dropped).
    pub to: Option<Uuid>,
    /// Bytes of the range's snapshot received so far.
    pub bytes_received: u64,
    /// Bytes of the range's snapshot (0 until it is made).
    pub bytes_total: u64,
    /// Milliseconds since this node saw the move start.
    pub elapsed_ms: u64,
}

/// One local Raft replica, as the metrics report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaftGroupStatus {
    /// The group (0: the metadata group).
    pub group: u64,
    /// Its current term.
    pub term: u64,
    /// The leader this replica knows of.
    pub leader: Option<u64>,
    /// Whether this node leads it.
    pub leads: bool,
    /// Entries logged here and not yet applied.
    pub lag: u64,
}

/// What `ringdb cleanup` did on one node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// Token ranges (groups) looked at.
    pub ranges: u64,
    /// Ranges the node holds no replica of, whose rows were removed.
    pub foreign: u64,
    /// Bytes (keys and values) removed.
    pub bytes: u64,
}

/// How an operator changes a member's state (`ringdb decommission` and `ringdb removenode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeState {
    /// Decommission: the live node's replicas move to the others, then it leaves.
    Leaving,
    /// Removenode: the dead node's replicas are made again from the others', then it leaves.
    Removing,
}

/// The cluster, as the node sees it.
pub trait ClusterHooks: Send + Sync {
    /// The other nodes that are members of the cluster.
    fn peers(&self) -> Vec<Peer>;

    /// Every member (this node included) with its state.
    fn nodes(&self) -> Vec<NodeStatus>;

    /// This node's tokens (empty: the single node's own token stands).
    fn local_tokens(&self) -> Vec<i64>;

    /// Every group of every table, in token order per table.
    fn placements(&self) -> Vec<Placement>;

    /// The shards a request at `level` reads and writes through: the replicated groups when
    /// the cluster has more than one member, else None (this node's store, directly).
    fn shards_at(&self, level: cql::request::Consistency) -> Option<Box<dyn crate::shard::Shards>>;

    /// True when the cluster has more than one member.
    fn has_peers(&self) -> bool;

    /// The replica moves in flight.
    fn moves(&self) -> Vec<MoveStatus>;

    /// This node's Raft replicas (the metadata group's included).
    fn raft_groups(&self) -> Vec<RaftGroupStatus>;

    /// Starts the member `host_id`'s leaving. Blocks until the metadata group records it.
    ///
    /// # Errors
    /// Invalid for an unknown host or a removal of a live node (or decommission of a dead
    /// one); Unavailable without a majority of the metadata group.
    fn set_node_state(&self, host_id: Uuid, state: NodeState) -> Result<(), QueryError>;

    /// Sends a trace this node coordinated to its peers (in the background), so that any node
    /// answers `system_traces` reads of it.
    fn share_trace(&self, session: &crate::query_trace::TraceSession);

    /// Removes the rows this node stores of ranges it holds no replica of (`ringdb cleanup`),
    /// calling `progress` with (ranges done, ranges in all). Blocks.
    ///
    /// # Errors
    /// The store failed to remove a range.
    fn cleanup(&self, progress: &mut dyn FnMut(u64, u64)) -> Result<Cleaned, String>;

    /// Replicates a schema change: `next` replaces the catalog whose version is `expected`.
    /// Blocks until this node has installed it. [`SchemaProposal::Stale`] when another
    /// change got in first (the caller plans again on the new catalog).
    ///
    /// # Errors
    /// Unavailable without a majority of the metadata group; a ServerError on I/O failure.
    fn propose_schema(
        &self,
        expected: Uuid,
        next: &Catalog,
        change: &SchemaChange,
    ) -> Result<SchemaProposal, QueryError>;
}

/// The outcome of [`ClusterHooks::propose_schema`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaProposal {
    /// Installed on this node.
    Installed,
    /// The catalog changed since `expected`: plan again.
    Stale,
}
