//! `ringdb cleanup`: removes the rows this node stores of token ranges it holds no replica of
//! (as Cassandra's `nodetool cleanup`): ranges kept after their replica moved away
//! (`clear_moved_replicas = false`), or left by a node that stopped between a move's end and
//! its clearing. A range this node is receiving (a move to it in flight) is kept. Each range
//! is checked and removed under the groups' turn ([`super::groups`]), so no move starts
//! filling a range while it is being removed.

use super::raft_types::GroupInfo;
use super::routing::ranges_of;
use super::Cluster;
use crate::cluster_hooks::Cleaned;
use std::collections::BTreeSet;
use std::sync::Arc;
use storage::TableId;

/// Removes the rows of every range this node holds no replica of, calling `progress` with
/// (ranges done, ranges in all) after each. Blocks: run it off the async threads.
///
/// # Errors
/// The store failed to remove a range (the ranges before it stay removed).
pub fn run(
    cluster: &Arc<Cluster>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Cleaned, storage::StorageError> {
    let me = cluster.me().id;
    let ranges: Vec<(TableId, i64, i64)> = cluster.meta_state().with(|s| {
        let tables: BTreeSet<TableId> = s.groups.values().map(|g| g.table).collect();
        tables
            .into_iter()
            .flat_map(|t| ranges_of(s, t))
            .map(|(start, g)| (g.table, start, g.end))
            .collect()
    });
    let total = ranges.len() as u64;
    let mut cleaned = Cleaned::default();
    let storage = cluster.node().storage();
    for (table, start, end) in ranges {
        let _turn = cluster.groups.turn.blocking_lock();
        // Looked up again under the turn: the metadata may have moved on since the list.
        let foreign = cluster.meta_state().with(|s| {
            ranges_of(s, table)
                .into_iter()
                .find(|(s0, g)| *s0 == start && g.end == end)
                .is_some_and(|(_, g)| !holds(s, &g, me))
        });
        if foreign {
            match storage.drop_range(table, start, end) {
                Ok(bytes) => {
                    cleaned.foreign += 1;
                    cleaned.bytes += bytes;
                    tracing::info!(%table, start, end, bytes, "cleanup removed a range held elsewhere");
                }
                Err(storage::StorageError::UnknownTable(_)) => {}
                Err(e) => return Err(e),
            }
        }
        cleaned.ranges += 1;
        progress(cleaned.ranges, total);
    }
    Ok(cleaned)
}

/// Whether node `me` holds a replica of `group` or is receiving one.
fn holds(s: &super::meta_state::MetaState, group: &GroupInfo, me: u64) -> bool {
    group.replicas.contains(&me) || s.moves.get(&group.id).is_some_and(|m| m.to == Some(me))
}
