//! Reading at a replica: any replica answers a read at ONE from its own store; a linearizable
//! read (QUORUM and above) is answered by the group's leader once a read index confirms its
//! leadership and its store has applied everything committed before the read.

use super::leader_budgets;
use super::raft_types::GroupId;
use super::rpc::ProposeFailure;
use super::Cluster;
use crate::shard::Rejected;
use crate::throughput::request_units::ReadCost;
use openraft::error::{CheckIsLeaderError, RaftError};
use storage::{Storage, StorageError, TableId};

/// Runs `read` of `table` on this node's replica of `group`; `last_token` is the highest
/// token it reads. A table with a throughput is read at the group's leader, which keeps its
/// budget (`super::leader_budgets`).
///
/// # Errors
/// `NotLeader` (with the leader when known) for a linearizable or metered read at a
/// follower, `NoGroup` when this node holds no replica, `Moved` when the group split and no
/// longer owns `last_token`, `Throttled` when the budget is spent, `Rejected`/`Failed` when
/// the store fails.
pub async fn read_here<T: ReadCost>(
    cluster: &Cluster,
    group: GroupId,
    table: TableId,
    last_token: i64,
    linearizable: bool,
    read: impl FnOnce(&Storage) -> Result<T, StorageError>,
) -> Result<T, ProposeFailure> {
    let metered = leader_budgets::metered(cluster, table);
    match cluster.group(group) {
        Some(raft) => {
            if metered && !linearizable {
                let leader = raft.metrics().borrow().current_leader;
                if leader != Some(cluster.me().id) {
                    return Err(ProposeFailure::NotLeader(leader));
                }
            }
            if linearizable {
                cluster.groups.wait_hand_over(group).await;
                match raft.ensure_linearizable().await {
                    Ok(_) => {}
                    Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => {
                        return Err(ProposeFailure::NotLeader(f.leader_id))
                    }
                    Err(e) => return Err(ProposeFailure::Failed(e.to_string())),
                }
            }
        }
        None => {
            let only_here = cluster.meta_state().with(|s| {
                s.groups
                    .get(&group)
                    .is_some_and(|g| g.replicas == [cluster.me().id])
            });
            if !only_here {
                return Err(ProposeFailure::NoGroup);
            }
        }
    }
    // After the read index: a split committed before the read is applied here, fence included.
    if !cluster.fences().owns(group, last_token) {
        return Err(ProposeFailure::Moved);
    }
    if metered {
        leader_budgets::admit_read(cluster, group, table)?;
    }
    let rows = read(cluster.node().storage()).map_err(|e| match Rejected::of(&e) {
        Some(r) => ProposeFailure::Rejected(r),
        None => ProposeFailure::Failed(e.to_string()),
    })?;
    // A replica that moved away clears its range once the metadata says so. Still listed
    // after the read, it was not cleared before the read ended (a read held up between its
    // read index and the store, under load, found the range already empty).
    if !keeps_range(cluster, group) {
        return Err(ProposeFailure::NoGroup);
    }
    if metered {
        leader_budgets::pay_read(cluster, group, table, linearizable, &rows);
    }
    Ok(rows)
}

/// Whether this node keeps `group`'s range: a replica of it, or receiving one by a move
/// (what `super::groups::reconcile` clears the range of a group without).
fn keeps_range(cluster: &Cluster, group: GroupId) -> bool {
    let me = cluster.me().id;
    cluster.meta_state().with(|s| {
        let moving_here = s.moves.get(&group).is_some_and(|m| m.to == Some(me));
        let replica = s
            .groups
            .get(&group)
            .is_some_and(|g| g.replicas.contains(&me));
        replica || moving_here
    })
}
