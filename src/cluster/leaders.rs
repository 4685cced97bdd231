//! Who leads each data group, as this node knows it, and the tokens each node reports from
//! that: drivers route a partition to the node listing the first token at or after its own,
//! so a node lists the end token of every group it leads. A node knows the leaders of the
//! groups it holds from their Raft state and learns the others from its peers' pings (each
//! lists the groups it leads); a group with no known leader goes to its first replica. When a
//! node's tokens change (a failover, a split) the node tells its clients (TOPOLOGY_CHANGE
//! MOVED_NODE), so token-aware drivers refresh their ring.

use super::meta_state::MetaState;
use super::raft_types::{GroupId, GroupInfo, NodeId};
use super::Cluster;
use std::collections::{BTreeMap, HashMap};

/// The groups this node leads now (a group whose only replica it is included).
pub fn led_here(cluster: &Cluster) -> Vec<GroupId> {
    let me = cluster.me().id;
    let mut led: Vec<GroupId> = cluster
        .groups
        .all()
        .into_iter()
        .filter(|(_, raft)| raft.metrics().borrow().current_leader == Some(me))
        .map(|(id, _)| id)
        .collect();
    cluster.meta_state().with(|s| {
        led.extend(
            s.groups
                .values()
                .filter(|g| g.replicas == [me])
                .map(|g| g.id),
        );
    });
    // A single-replica group running Raft for a move is listed once.
    led.sort_unstable();
    led.dedup();
    led
}

/// The node that leads `group` as far as this node knows.
fn leader_of(cluster: &Cluster, group: &GroupInfo, claims: &HashMap<GroupId, NodeId>) -> NodeId {
    let me = cluster.me().id;
    let up = |n: NodeId| n == me || cluster.liveness().is_up(n);
    let local = cluster
        .group(group.id)
        .and_then(|raft| raft.metrics().borrow().current_leader)
        .filter(|l| up(*l));
    local
        .or_else(|| claims.get(&group.id).copied().filter(|l| up(*l)))
        .or_else(|| group.replicas.first().copied())
        .unwrap_or(me)
}

/// Each node's tokens: the end token of every group it leads. Tables created alike share
/// their ends; an end goes to the leader of its oldest group.
pub fn node_tokens(cluster: &Cluster) -> HashMap<NodeId, Vec<i64>> {
    let mut claims: HashMap<GroupId, NodeId> = HashMap::new();
    for (node, led) in cluster.liveness().led_by_peers() {
        for g in led {
            claims.insert(g, node);
        }
    }
    let groups: Vec<GroupInfo> = cluster.meta_state().with(|s: &MetaState| {
        let mut groups: Vec<GroupInfo> = s.groups.values().cloned().collect();
        groups.sort_by_key(|g| g.id);
        groups
    });
    let mut owner: BTreeMap<i64, NodeId> = BTreeMap::new();
    for g in &groups {
        owner
            .entry(g.end)
            .or_insert_with(|| leader_of(cluster, g, &claims));
    }
    let mut tokens: HashMap<NodeId, Vec<i64>> = HashMap::new();
    for (end, node) in owner {
        tokens.entry(node).or_default().push(end);
    }
    tokens
}

/// Sends MOVED_NODE for every member whose tokens changed since `previous` (then updates it).
pub fn announce_moves(cluster: &Cluster, previous: &mut HashMap<NodeId, Vec<i64>>) {
    let now = node_tokens(cluster);
    if previous.is_empty() {
        *previous = now;
        return;
    }
    let members: Vec<(NodeId, std::net::SocketAddr)> = cluster
        .meta_state()
        .with(|s| s.members.values().map(|m| (m.id, m.native)).collect());
    for (id, native) in members {
        if now.get(&id) != previous.get(&id) {
            tracing::debug!(node = id, "tokens moved");
            cluster
                .node()
                .publish(cql::response::Event::TopologyChange {
                    change: "MOVED_NODE".into(),
                    address: native,
                });
        }
    }
    *previous = now;
}
