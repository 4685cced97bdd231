//! The balancer: on the metadata leader, plans replica moves so that every physical partition
//! has `min(RF, live nodes)` replicas and the live nodes hold about as many partitions each
//! (counts within one), a few moves at a time (`max_concurrent_moves`). A node that joins
//! therefore fills up, and a replication factor raised by ALTER KEYSPACE gets its replicas.

use super::meta_state::MetaState;
use super::raft_types::{Command, GroupId, Move, NodeId, META_GROUP};
use super::Cluster;
use openraft::ServerState;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use storage::TableId;
use tokio_util::sync::CancellationToken;
use tracing::info;

/// How often the balancer looks.
const EVERY: Duration = Duration::from_secs(1);

/// The moves to start now: at most `room`, given the replication factor of each table and the
/// live nodes.
pub fn plan(
    state: &MetaState,
    rf: &HashMap<TableId, usize>,
    live: &[NodeId],
    room: usize,
) -> Vec<(GroupId, Move)> {
    let mut planned = Vec::new();
    if live.is_empty() || room == 0 {
        return planned;
    }
    // Held counts as they will be once the moves in flight end.
    let mut held: BTreeMap<NodeId, i64> = live.iter().map(|n| (*n, 0)).collect();
    let mut replicas: BTreeMap<GroupId, Vec<NodeId>> = BTreeMap::new();
    for g in state.groups.values() {
        let mut r = g.replicas.clone();
        if let Some(m) = state.moves.get(&g.id) {
            r.retain(|n| Some(*n) != m.from);
            r.push(m.to);
        }
        for n in &r {
            if let Some(c) = held.get_mut(n) {
                *c += 1;
            }
        }
        replicas.insert(g.id, r);
    }
    let least_loaded = |held: &BTreeMap<NodeId, i64>, excluded: &[NodeId]| {
        held.iter()
            .filter(|(n, _)| !excluded.contains(n))
            .min_by_key(|(n, c)| (**c, **n))
            .map(|(n, _)| *n)
    };
    // Missing replicas first.
    for g in state.groups.values() {
        if planned.len() >= room {
            return planned;
        }
        if state.moves.contains_key(&g.id) {
            continue;
        }
        let want = rf.get(&g.table).copied().unwrap_or(1).min(live.len());
        let current = &replicas[&g.id];
        if current.len() < want {
            if let Some(to) = least_loaded(&held, current) {
                planned.push((g.id, Move { from: None, to }));
                *held.entry(to).or_default() += 1;
            }
        }
    }
    // Then the counts: from the most loaded node to the least, one group at a time.
    let mut moving: Vec<GroupId> = planned.iter().map(|(g, _)| *g).collect();
    while planned.len() < room {
        let Some((&max_node, &max)) = held
            .iter()
            .max_by_key(|(n, c)| (**c, std::cmp::Reverse(**n)))
        else {
            break;
        };
        let Some((&min_node, &min)) = held.iter().min_by_key(|(n, c)| (**c, **n)) else {
            break;
        };
        if max - min <= 1 {
            break;
        }
        let candidate = state.groups.values().find(|g| {
            !state.moves.contains_key(&g.id)
                && !moving.contains(&g.id)
                && replicas[&g.id].contains(&max_node)
                && !replicas[&g.id].contains(&min_node)
        });
        let Some(g) = candidate else { break };
        planned.push((
            g.id,
            Move {
                from: Some(max_node),
                to: min_node,
            },
        ));
        moving.push(g.id);
        *held.entry(max_node).or_default() -= 1;
        *held.entry(min_node).or_default() += 1;
    }
    planned
}

/// The replication factor of every table of the node's schema.
fn replication_factors(cluster: &Cluster) -> HashMap<TableId, usize> {
    let catalog = cluster.node().catalog();
    catalog
        .keyspaces
        .values()
        .filter(|k| !crate::schema::is_system_keyspace(&k.name))
        .flat_map(|k| {
            let rf = k.params.replicas().in_dc(crate::schema::DATA_CENTER).max(1) as usize;
            k.tables
                .values()
                .map(move |t| (crate::schema::table_id(t), rf))
        })
        .collect()
}

/// Plans and starts moves while this node leads the metadata group, until `shutdown`.
pub async fn watch(cluster: Arc<Cluster>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if cluster.meta().metrics().borrow().state != ServerState::Leader {
            continue;
        }
        let max = cluster.node().config().max_concurrent_moves;
        let me = cluster.me().id;
        let rf = replication_factors(&cluster);
        let moves = cluster.meta_state().with(|s| {
            let live: Vec<NodeId> = s
                .members
                .keys()
                .copied()
                .filter(|n| *n == me || cluster.liveness().is_up(*n))
                .collect();
            if live.len() < s.members.len() {
                // Not while a node is down: its replicas are not lost, and it may come back.
                return Vec::new();
            }
            plan(s, &rf, &live, max.saturating_sub(s.moves.len()))
        });
        for (group, mv) in moves {
            info!(group, from = ?mv.from, to = mv.to, "balancer: moving a replica");
            let command = Command::MoveStart {
                group,
                from: mv.from,
                to: mv.to,
            };
            let voters = cluster.meta_voters();
            if let Err(e) = cluster
                .propose(META_GROUP, &voters, command, Duration::from_secs(10))
                .await
            {
                tracing::warn!(error = %e, "balancer: a move was not recorded");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::raft_types::{GroupInfo, Member};

    fn state(nodes: &[NodeId], groups: &[(GroupId, &[NodeId])]) -> MetaState {
        let mut s = MetaState::default();
        for n in nodes {
            s.members.insert(
                *n,
                Member {
                    id: *n,
                    host_id: uuid::Uuid::nil(),
                    internode: "127.0.0.1:1".parse().unwrap(),
                    native: "127.0.0.1:2".parse().unwrap(),
                },
            );
        }
        s.add_groups(groups.iter().map(|(id, r)| GroupInfo {
            id: *id,
            table: TableId(1),
            end: *id as i64,
            replicas: r.to_vec(),
            parent: None,
        }));
        s
    }

    fn apply(s: &mut MetaState, moves: &[(GroupId, Move)]) {
        for (g, m) in moves {
            assert!(s.start_move(*g, m.clone()), "{g}: {m:?}");
            let mut r = s.groups[g].replicas.clone();
            r.retain(|n| Some(*n) != m.from);
            r.push(m.to);
            assert!(s.end_move(*g, Some(r)));
        }
    }

    #[test]
    fn a_joining_node_gets_missing_replicas_then_its_share() {
        let rf3: HashMap<TableId, usize> = [(TableId(1), 3)].into();
        let mut s = state(&[1, 2, 3], &[(1, &[1]), (2, &[1]), (3, &[1]), (4, &[1])]);
        for _ in 0..20 {
            let moves = plan(&s, &rf3, &[1, 2, 3], 2);
            if moves.is_empty() {
                break;
            }
            apply(&mut s, &moves);
        }
        assert!(s.groups.values().all(|g| g.replicas.len() == 3));
        let rf1: HashMap<TableId, usize> = [(TableId(1), 1)].into();
        let mut s = state(
            &[1, 2, 3],
            &[(1, &[1]), (2, &[1]), (3, &[1]), (4, &[1]), (5, &[1])],
        );
        for _ in 0..20 {
            let moves = plan(&s, &rf1, &[1, 2, 3], 1);
            if moves.is_empty() {
                break;
            }
            apply(&mut s, &moves);
        }
        let mut held: BTreeMap<NodeId, usize> = BTreeMap::new();
        for g in s.groups.values() {
            assert_eq!(g.replicas.len(), 1);
            *held.entry(g.replicas[0]).or_default() += 1;
        }
        let (min, max) = (held.values().min(), held.values().max());
        assert!(max.unwrap() - min.unwrap() <= 1, "{held:?}");
        assert_eq!(held.len(), 3);
    }

    #[test]
    fn a_balanced_cluster_plans_nothing_and_room_bounds_the_moves() {
        let rf: HashMap<TableId, usize> = [(TableId(1), 2)].into();
        let s = state(&[1, 2], &[(1, &[1, 2]), (2, &[2, 1])]);
        assert!(plan(&s, &rf, &[1, 2], 4).is_empty());
        let s = state(&[1, 2, 3], &[(1, &[1]), (2, &[1]), (3, &[1])]);
        assert_eq!(plan(&s, &rf, &[1, 2, 3], 1).len(), 1);
        assert!(plan(&s, &rf, &[1, 2, 3], 0).is_empty());
    }
}
