//! The bytes each data group holds: every node measures the groups it keeps a replica of
//! (its store is cut where the groups end, so each of its physical partitions lies in one
//! group) and reports them in its pings; the balancer evens the nodes' bytes with them.

use super::meta_state::MetaState;
use super::raft_types::GroupId;
use super::Cluster;
use std::collections::{BTreeMap, HashMap};

/// The bytes of each group this node keeps a replica of, from its store's partitions.
pub fn local(cluster: &Cluster) -> Vec<(GroupId, u64)> {
    let me = cluster.me().id;
    // The metadata first, then the store: no store lock is taken under the metadata's.
    let (tables, held) = cluster.meta_state().with(|s| {
        let held: Vec<GroupId> = s
            .groups
            .values()
            .filter(|g| g.replicas.contains(&me))
            .map(|g| g.id)
            .collect();
        (held_by_table(s, me), held)
    });
    let storage = cluster.node().storage();
    let mut sizes: BTreeMap<GroupId, u64> = BTreeMap::new();
    for (table, groups) in tables {
        let Ok(parts) = storage.physical_partitions(table) else {
            continue;
        };
        for p in parts {
            // The first of the table's groups that ends at or after the partition's end.
            let Some((_, id)) = groups.iter().find(|(end, _)| *end >= p.end_token) else {
                continue;
            };
            *sizes.entry(*id).or_default() += p.bytes;
        }
    }
    sizes.retain(|id, _| held.contains(id));
    sizes.into_iter().collect()
}

/// Each table's groups as `(end, id)` in token order, for the tables of which `me` holds a
/// group (every group of such a table is listed: a partition is matched against them all).
fn held_by_table(
    s: &MetaState,
    me: super::raft_types::NodeId,
) -> HashMap<storage::TableId, Vec<(i64, GroupId)>> {
    let mut by_table: HashMap<storage::TableId, Vec<(i64, GroupId)>> = HashMap::new();
    for g in s.groups.values() {
        by_table.entry(g.table).or_default().push((g.end, g.id));
    }
    by_table.retain(|table, _| {
        s.groups
            .values()
            .any(|g| g.table == *table && g.replicas.contains(&me))
    });
    for groups in by_table.values_mut() {
        groups.sort_unstable();
    }
    by_table
}

/// The bytes of every group as the nodes last reported them (this node's own measure
/// included), the largest report of each group.
pub fn all(cluster: &Cluster) -> HashMap<GroupId, u64> {
    let mut sizes: HashMap<GroupId, u64> = HashMap::new();
    let reports = cluster.liveness().sizes_by_peers();
    for (group, bytes) in reports.into_iter().flatten().chain(local(cluster)) {
        let size = sizes.entry(group).or_default();
        *size = (*size).max(bytes);
    }
    sizes
}
