//! Splits of physical partitions in a cluster. Each node's store splits a partition that
//! grows past `physical_partition_max_bytes` on its own (never cutting a logical partition);
//! the leader of a group whose range its store has cut that way proposes the cut to the
//! metadata group (`Command::Split`): the group keeps the left half and a new group with the
//! same replicas takes the right half. The leader then commits a fence to the group
//! (`Command::Fence`), after which the group answers `Moved` for the right half's tokens and
//! the new group's replicas start applying (they wait for it: `DataMachine`). Every replica
//! cuts its own store at the same token, so a group's data is its own physical partitions.
//! A table whose provisioned throughput needs more groups is cut the same way, by the leader
//! of its widest group (`cut_for_throughput`).

use super::raft_types::{Command, GroupId, GroupInfo, Reply, META_GROUP};
use super::routing::ranges_of;
use super::Cluster;
use std::sync::Arc;
use std::time::Duration;
use storage::TableId;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

/// How often a node looks for splits to propose and fences it owes.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Proposes the splits and fences of the groups this node leads, until `shutdown`.
pub async fn watch(cluster: Arc<Cluster>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if cluster.has_peers() {
            check(&cluster).await;
        }
    }
}

/// One group this node leads, with the token its range starts after.
struct Led {
    table: TableId,
    start: i64,
    group: GroupInfo,
    /// The group split and its replicas may not have applied the fence yet.
    owes_fence: bool,
}

/// The groups this node leads (a group with one replica here counts as led).
fn led_groups(cluster: &Cluster) -> Vec<Led> {
    let me = cluster.me().id;
    cluster.meta_state().with(|state| {
        let tables: std::collections::BTreeSet<TableId> =
            state.groups.values().map(|g| g.table).collect();
        let parents: std::collections::HashSet<GroupId> = state
            .groups
            .values()
            .filter_map(|g| g.parent.map(|(p, _)| p))
            .collect();
        let mut led = Vec::new();
        for table in tables {
            for (start, group) in ranges_of(state, table) {
                let leads = group.replicas == [me]
                    || cluster
                        .group(group.id)
                        .is_some_and(|raft| raft.metrics().borrow().current_leader == Some(me));
                if !leads {
                    continue;
                }
                let owes_fence = parents.contains(&group.id)
                    && group.replicas.len() > 1
                    && cluster
                        .fences()
                        .get(group.id)
                        .is_none_or(|end| end > group.end);
                led.push(Led {
                    table,
                    start,
                    group,
                    owes_fence,
                });
            }
        }
        led
    })
}

/// The tokens where this node's store has cut `table` (its partitions' ends).
fn store_cuts(cluster: &Cluster, table: TableId) -> Vec<i64> {
    cluster
        .node()
        .storage()
        .physical_partitions(table)
        .map(|parts| parts.iter().map(|p| p.end_token).collect())
        .unwrap_or_default()
}

/// For each table whose provisioned throughput needs more groups than it has (at most
/// `max_ru_per_physical_partition` each), cuts this node's store in the middle of the
/// table's widest group when this node leads it: the cut is then proposed as any other
/// (one split per table and check, so a table ends with about as many groups as it needs).
fn cut_for_throughput(cluster: &Cluster, led: &[Led]) {
    let node = cluster.node();
    let max = node.budgets().max_per_partition();
    for (table, needed) in crate::throughput::partitions_needed(&node.catalog(), max) {
        let groups = cluster.meta_state().with(|s| ranges_of(s, table));
        if groups.is_empty() || groups.len() >= needed {
            continue;
        }
        let widest = groups.iter().max_by_key(|(start, g)| {
            (
                i128::from(g.end) - i128::from(*start),
                std::cmp::Reverse(*start),
            )
        });
        let Some((start, group)) = widest else {
            continue;
        };
        if !led.iter().any(|l| l.group.id == group.id) {
            continue;
        }
        let middle = (i128::from(*start) + i128::from(group.end)) / 2;
        let Ok(at) = i64::try_from(middle) else {
            continue;
        };
        if at <= *start || at >= group.end {
            continue;
        }
        info!(%table, group = group.id, at, groups = groups.len(), needed, "cutting a group for throughput");
        let cut = tokio::task::block_in_place(|| node.storage().split_at(table, at));
        if let Err(e) = cut {
            debug!(%table, error = %e, "a cut for throughput failed; retried");
        }
    }
}

async fn check(cluster: &Arc<Cluster>) {
    let mut cuts: std::collections::HashMap<TableId, Vec<i64>> = std::collections::HashMap::new();
    let led = led_groups(cluster);
    cut_for_throughput(cluster, &led);
    for led in led {
        let group = led.group.id;
        if led.owes_fence {
            fence(cluster, group, led.group.end).await;
            continue;
        }
        let table_cuts = cuts
            .entry(led.table)
            .or_insert_with(|| store_cuts(cluster, led.table));
        // A token strictly inside the group's range where the store has cut the table.
        let start = table_cuts.partition_point(|t| *t <= led.start);
        if let Some(at) = table_cuts.get(start).filter(|t| **t < led.group.end) {
            propose_split(cluster, led.table, group, *at).await;
        }
    }
}

async fn fence(cluster: &Arc<Cluster>, group: GroupId, at: i64) {
    let Some(raft) = cluster.group(group) else {
        return;
    };
    match super::propose::propose_local(&raft, Command::Fence { at }).await {
        Ok(_) => debug!(group, at, "fenced a split group"),
        Err(e) => debug!(group, error = ?e, "fencing a split group failed; retried"),
    }
}

async fn propose_split(cluster: &Arc<Cluster>, table: TableId, group: GroupId, at: i64) {
    let voters = cluster.meta_voters();
    let command = Command::Split { table, group, at };
    match cluster
        .propose(META_GROUP, &voters, command, Duration::from_secs(5))
        .await
    {
        Ok(Reply::Done) => {
            info!(%table, group, at, "proposed a split of a physical partition");
            // The fence follows at once rather than on the next check.
            if cluster.group(group).is_some() {
                fence(cluster, group, at).await;
            }
        }
        Ok(other) => debug!(%table, group, at, reply = ?other, "split not applied"),
        Err(e) => debug!(%table, group, at, error = %e, "split not committed; retried"),
    }
}
