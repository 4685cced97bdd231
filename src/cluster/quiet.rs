//! Idle data groups stay quiet. A data group's leader sends Raft heartbeats only while the
//! group is busy: its log grew in the last few seconds, a follower has not caught up, or a
//! replica just came back. Data groups never start elections on their own timers (a quiet
//! group would elect all the time); instead the nodes' liveness pings, one per peer for every
//! group, stand in for their heartbeats: when a group's leader is seen down, the first live
//! voter in the group's order (the metadata's replicas, then voters a move part-way added)
//! starts an election, and the next ones take their turn, 2 s apart, while none wins. A group with no known leader (just created, or the whole cluster
//! restarted) is elected the same way.

use super::raft_types::{GroupId, NodeId, Raft};
use super::Cluster;
use openraft::ServerState;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

/// How often each group is looked at.
const CHECK_EVERY: Duration = Duration::from_millis(250);
/// How long a leader keeps heartbeating after its group's last change (a few heartbeats carry
/// the last commit index to the followers).
const BUSY_FOR: Duration = Duration::from_secs(3);
/// How long a group may go without a known leader before its first live replica elects.
const LEADERLESS_FOR: Duration = Duration::from_secs(2);
/// The mean time between a node's first two elections in one group (doubling after each
/// one it starts, up to 8×); each wait is drawn between half and one and a half times it, so
/// two replicas past their turns do not elect on the same beat (they would split the votes
/// every time).
const ELECT_EVERY: Duration = Duration::from_secs(1);

/// What the watcher remembers of one group.
struct Seen {
    last_log: Option<u64>,
    changed: Instant,
    /// Since when the group has had no known leader (or a leader seen down).
    leaderless: Option<Instant>,
    elected: Option<Instant>,
    /// How long after `elected` this node may elect again.
    elect_again: Duration,
    /// Elections this node started since the group last had a leader.
    elections: u32,
    heartbeat: bool,
}

/// Turns heartbeats on and off and starts elections, until `shutdown`.
pub async fn watch(cluster: Arc<Cluster>, shutdown: CancellationToken) {
    let mut groups: HashMap<GroupId, Seen> = HashMap::new();
    let mut peers_up: HashMap<NodeId, (bool, Instant)> = HashMap::new();
    let mut tick = tokio::time::interval(CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let now = Instant::now();
        let members: Vec<NodeId> = cluster
            .meta_state()
            .with(|s| s.members.keys().copied().collect());
        for id in members {
            let up = id == cluster.me().id || cluster.liveness().is_up(id);
            let entry = peers_up.entry(id).or_insert((up, now));
            if entry.0 != up {
                *entry = (up, now);
            }
        }
        // Each group's replicas, and the node a move in flight adds.
        let replicas: HashMap<GroupId, (Vec<NodeId>, Option<NodeId>)> =
            cluster.meta_state().with(|s| {
                s.groups
                    .values()
                    .map(|g| {
                        let to = s.moves.get(&g.id).and_then(|m| m.to);
                        (g.id, (g.replicas.clone(), to))
                    })
                    .collect()
            });
        let running = cluster.groups.all();
        groups.retain(|id, _| running.iter().any(|(g, _)| g == id));
        for (id, raft) in running {
            let Some((order, moving_to)) = replicas.get(&id) else {
                continue;
            };
            let seen = groups.entry(id).or_insert(Seen {
                last_log: None,
                changed: now,
                leaderless: None,
                elected: None,
                elect_again: ELECT_EVERY,
                elections: 0,
                heartbeat: true,
            });
            let group = Group {
                id,
                raft: &raft,
                order,
                moving_to: *moving_to,
            };
            look_at(&cluster, &group, seen, &peers_up, now).await;
        }
    }
}

/// One group as the watcher looks at it.
struct Group<'a> {
    id: GroupId,
    raft: &'a Raft,
    /// Its replicas, in the metadata's order.
    order: &'a [NodeId],
    /// The node a move in flight adds, if any.
    moving_to: Option<NodeId>,
}

async fn look_at(
    cluster: &Cluster,
    group: &Group<'_>,
    seen: &mut Seen,
    peers_up: &HashMap<NodeId, (bool, Instant)>,
    now: Instant,
) {
    let (id, raft, order) = (group.id, group.raft, group.order);
    let me = cluster.me().id;
    let (last_log, leading, lagging, current_leader, leader_votes, voters) = {
        let metrics = raft.metrics();
        let m = metrics.borrow();
        let voters: Vec<NodeId> = m.membership_config.membership().voter_ids().collect();
        // A leader that left the group (a replica moved off it) leads it no more.
        let leader_votes = m
            .current_leader
            .is_some_and(|l| m.membership_config.membership().voter_ids().any(|v| v == l));
        let lagging = m.replication.as_ref().is_some_and(|r| {
            r.values()
                .any(|matched| matched.map(|l| l.index) < m.last_log_index)
        });
        (
            m.last_log_index,
            m.state == ServerState::Leader,
            lagging,
            m.current_leader,
            leader_votes,
            voters,
        )
    };
    if last_log != seen.last_log {
        seen.last_log = last_log;
        seen.changed = now;
    }
    if leading && cluster.groups.held(id) {
        // A hand-over in progress keeps the heartbeats off.
        return;
    }
    if leading {
        seen.leaderless = None;
        seen.elections = 0;
        let returned = order.iter().any(|r| {
            peers_up
                .get(r)
                .is_some_and(|(up, since)| *up && now.duration_since(*since) < BUSY_FOR)
        });
        let busy = lagging || returned || now.duration_since(seen.changed) < BUSY_FOR;
        if busy != seen.heartbeat {
            debug!(group = id, busy, "group heartbeats");
        }
        // Set on every look (an atomic store), not only on a change: a leadership hand-over
        // turns them off for a moment, and a leader that stayed silent would leave its
        // followers without the commit index of its last entries.
        raft.runtime_config().heartbeat(busy);
        seen.heartbeat = busy;
        return;
    }
    // Not the leader (any more): back to the default, should it lead again.
    raft.runtime_config().heartbeat(true);
    seen.heartbeat = true;
    // A leader counts while its node is up and still holds the group: a node a replica moved
    // off is up, but its Raft of the group is gone, and a follower that missed the last
    // membership change (it still lists that node as a voter) would wait for it for ever.
    let holds = |n: NodeId| group.order.contains(&n) || group.moving_to == Some(n);
    let leader_up = leader_votes
        && current_leader.is_some_and(|l| l == me || (holds(l) && cluster.liveness().is_up(l)));
    if leader_up {
        seen.leaderless = None;
        seen.elections = 0;
        return;
    }
    let since = *seen.leaderless.get_or_insert(now);
    // A leader seen down is replaced at once; a group with no known leader waits a little
    // (its leader may simply not have spoken since this node started).
    if current_leader.is_none() && now.duration_since(since) < LEADERLESS_FOR {
        return;
    }
    // The live replicas take turns: the first in the group's order elects at once, the next
    // one only after the first has had LEADERLESS_FOR to win, and so on (a replica that just
    // arrived by a move may lack the last entries and lose every election it starts).
    let live: Vec<NodeId> = election_order(order, &voters)
        .filter(|r| Some(*r) != current_leader && (*r == me || cluster.liveness().is_up(*r)))
        .collect();
    let Some(rank) = live.iter().position(|r| *r == me) else {
        return;
    };
    let waited = now.duration_since(since);
    // Only the first replica replaces a leader seen down at once; a group with no known
    // leader gives its first replica LEADERLESS_FOR, and the others always count from there
    // (a replica that still knew the old leader would otherwise elect together with the
    // first of one that did not).
    let first = if current_leader.is_none() || rank > 0 {
        LEADERLESS_FOR
    } else {
        Duration::ZERO
    };
    let turn = first + LEADERLESS_FOR * u32::try_from(rank).unwrap_or(u32::MAX);
    if waited < turn
        || seen
            .elected
            .is_some_and(|t| now.duration_since(t) < seen.elect_again)
    {
        return;
    }
    seen.elected = Some(now);
    // A replica that keeps losing backs off (1, 2, 4, then 8 s on average): it may lack the
    // last entries and never win, and each of its elections would cut short the candidacy of
    // one that can (Raft without a pre-vote).
    seen.elections = seen.elections.saturating_add(1);
    seen.elect_again = jittered(ELECT_EVERY * (1 << (seen.elections - 1).min(3)), id);
    info!(group = id, leader = ?current_leader, "group has no live leader: electing");
    if let Err(e) = raft.trigger().elect().await {
        debug!(group = id, error = %e, "election not started");
    }
}

/// `mean` scaled by a factor drawn between 0.5 and 1.5 (each node draws its own).
fn jittered(mean: Duration, group: GroupId) -> Duration {
    use std::hash::BuildHasher;
    let draw = std::collections::hash_map::RandomState::new().hash_one((group, Instant::now()));
    let factor = 0.5 + (draw % 1000) as f64 / 1000.0;
    mean.mul_f64(factor)
}

/// Who may elect a group, in turn: the voters of its Raft membership as this replica knows it,
/// those among the metadata's replicas first, in their order. A move part-way differs from
/// the metadata: the replica it adds may already vote (and be the only one that can win, its
/// log holding the membership change), and the one it removes no longer does.
fn election_order<'a>(
    order: &'a [NodeId],
    voters: &'a [NodeId],
) -> impl Iterator<Item = NodeId> + 'a {
    let listed = order.iter().copied().filter(|r| voters.contains(r));
    let added = voters.iter().copied().filter(|v| !order.contains(v));
    listed.chain(added)
}

#[cfg(test)]
mod tests {
    use super::{election_order, jittered};
    use std::time::Duration;

    #[test]
    fn waits_between_elections_are_drawn_around_the_mean() {
        let mean = Duration::from_secs(1);
        let draws: Vec<Duration> = (0..200).map(|g| jittered(mean, g)).collect();
        assert!(draws.iter().all(|d| *d >= mean / 2 && *d <= mean * 3 / 2));
        let distinct: std::collections::BTreeSet<Duration> = draws.into_iter().collect();
        assert!(distinct.len() > 50, "{} distinct waits", distinct.len());
    }

    #[test]
    fn a_moving_groups_voters_elect_in_the_metadatas_order_then_the_added_ones() {
        // The metadata lists [2, 1]; Raft's membership moved from {1, 2} to {1, 3}.
        let order: Vec<u64> = election_order(&[2, 1], &[1, 3]).collect();
        assert_eq!(order, vec![1, 3]);
        // Joint consensus part-way: all three vote.
        let order: Vec<u64> = election_order(&[2, 1], &[1, 2, 3]).collect();
        assert_eq!(order, vec![2, 1, 3]);
    }
}
