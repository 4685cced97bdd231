//! Moving a physical partition's replica from one node to another (or adding one), online.
//!
//! A move is recorded in the metadata group (`Command::MoveStart`), which makes the receiving
//! node start a Raft instance for the group. The metadata leader then drives it
//! ([`drive`]): it asks the group's leader to [`execute`] it, which
//! 1. records a snapshot at the applied position and purges the log before it, so the new
//!    replica starts from the data (a snapshot of the range, `super::data_snapshot`) and not
//!    from a log that may not hold it all;
//! 2. adds the receiver as a learner and waits until it has caught up;
//! 3. makes it a voter in place of the leaving replica (Raft's joint consensus).
//!
//! The driver then commits `Command::MoveEnd` with the new replicas; the leaving node stops
//! its Raft instance and clears the range (`super::groups`). A move that does not finish in
//! time is rolled back: the learner is removed and the move ends with the old replicas. Every
//! step can be repeated, so a driver or a group leader that dies part-way is simply retried.

use super::codec::{decode, encode};
use super::raft_types::{Command, GroupId, Move, NodeId, Raft, META_GROUP};
use super::rpc::{ProposeFailure, Request, Response};
use super::Cluster;
use openraft::{BasicNode, ChangeMembers, ServerState};
use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// How long a learner may take to catch up before the move is retried.
const CATCH_UP: Duration = Duration::from_secs(60);
/// How long a move may take in all before it is rolled back.
const MOVE_DEADLINE: Duration = Duration::from_secs(300);
/// Entries a learner may still lack when it is made a voter.
const LEARNER_LAG: u64 = 64;
/// How long a move's receiver may be down before the move rolls back.
const RECEIVER_DOWN: Duration = Duration::from_secs(5);
/// How long a step waits for a snapshot or a purge to be recorded.
const STEP: Duration = Duration::from_secs(30);

fn failed(e: impl std::fmt::Display) -> ProposeFailure {
    ProposeFailure::Failed(e.to_string())
}

/// This node's Raft of `group` when it leads it; `NotLeader` or `NoGroup` otherwise.
fn led(cluster: &Cluster, group: GroupId) -> Result<Raft, ProposeFailure> {
    let raft = cluster.group(group).ok_or(ProposeFailure::NoGroup)?;
    let metrics = raft.metrics().borrow().clone();
    if metrics.state != ServerState::Leader {
        return Err(ProposeFailure::NotLeader(
            metrics.current_leader.filter(|l| *l != cluster.me().id),
        ));
    }
    Ok(raft)
}

fn voters(raft: &Raft) -> BTreeSet<NodeId> {
    raft.metrics()
        .borrow()
        .membership_config
        .membership()
        .voter_ids()
        .collect()
}

/// Waits until `done` holds for the group's metrics, at most [`STEP`].
async fn wait_metrics(
    raft: &Raft,
    what: &str,
    done: impl Fn(&openraft::RaftMetrics<NodeId, BasicNode>) -> bool,
) -> Result<(), ProposeFailure> {
    let deadline = Instant::now() + STEP;
    loop {
        if done(&raft.metrics().borrow()) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(failed(format!("timed out waiting for {what}")));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the learner `to` has the group's data and its log up to the leader's last
/// entry but a few (openraft's own wait counts a learner that has received nothing as
/// caught up while the log is short). Fails at once when `to` is seen down.
async fn wait_caught_up(cluster: &Cluster, raft: &Raft, to: NodeId) -> Result<(), ProposeFailure> {
    let deadline = Instant::now() + CATCH_UP;
    loop {
        let caught_up = {
            let m = raft.metrics().borrow().clone();
            let matched = m
                .replication
                .as_ref()
                .and_then(|r| r.get(&to).cloned())
                .flatten();
            matched.is_some_and(|l| l.index + LEARNER_LAG >= m.last_log_index.unwrap_or(0))
        };
        if caught_up {
            return Ok(());
        }
        if !cluster.liveness().is_up(to) {
            return Err(failed("the receiving node is down"));
        }
        if Instant::now() >= deadline {
            return Err(failed("the new replica did not catch up in time"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs `mv` of `group` at this node, its leader (see the module docs). Ok once the receiver
/// is a voter and the leaving replica is not.
///
/// # Errors
/// `NotLeader`/`NoGroup` when this node does not lead the group, `Failed` when a step failed
/// or timed out (the driver retries).
pub async fn execute(cluster: &Cluster, group: GroupId, mv: Move) -> Result<(), ProposeFailure> {
    let raft = led(cluster, group)?;
    let me = cluster.me().id;
    let current = voters(&raft);
    let mut target = current.clone();
    target.extend(mv.to);
    if let Some(from) = mv.from {
        target.remove(&from);
    }
    if current == target {
        return Ok(());
    }
    if let Some(to) = mv.to.filter(|to| !current.contains(to)) {
        let addr = cluster
            .address_of(to)
            .ok_or_else(|| failed("the receiving node is unknown"))?;
        let learner = raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .learner_ids()
            .any(|l| l == to);
        if !learner {
            // 1. The log before the applied position goes: the receiver gets the range's data.
            // A Raft just started for a group written in place (one replica) has applied
            // nothing yet: with no log to purge, the receiver would replicate the (empty)
            // log and never get the rows the store holds. The driver retries once the
            // group has applied its first entry.
            let Some(at) = raft.metrics().borrow().last_applied else {
                return Err(failed("the group has applied nothing yet"));
            };
            let applied = Some(at);
            raft.trigger().snapshot().await.map_err(failed)?;
            wait_metrics(&raft, "the snapshot", |m| m.snapshot >= applied).await?;
            raft.trigger().purge_log(at.index).await.map_err(failed)?;
            wait_metrics(&raft, "the log purge", |m| m.purged >= applied).await?;
        }
        // 2. The receiver as a learner, caught up.
        info!(group, to, "adding a replica as a learner");
        raft.add_learner(to, BasicNode::new(addr.to_string()), false)
            .await
            .map_err(failed)?;
        wait_caught_up(cluster, &raft, to).await?;
    }
    // 3. The receiver votes; the leaving replica is removed.
    info!(group, from = ?mv.from, to = ?mv.to, "changing the group's voters");
    tokio::time::timeout(STEP, raft.change_membership(target.clone(), false))
        .await
        .map_err(|_| failed("the membership change did not commit in time"))?
        .map_err(failed)?;
    if mv.from == Some(me) {
        // This leader left the group and steps down: a new voter elects at once. A replica
        // that was there before takes over rather than the new one, which may still be
        // receiving other moves (the balancer evens the leaders later).
        // The first of them in the metadata's order, as `quiet` takes turns: two replicas
        // that both started elections would split the votes.
        let listed = cluster
            .meta_state()
            .with(|s| s.groups.get(&group).map(|g| g.replicas.clone()))
            .unwrap_or_default();
        let next = listed
            .iter()
            .chain(target.iter())
            .copied()
            .find(|n| target.contains(n) && Some(*n) != mv.to && cluster.liveness().is_up(*n))
            .or(mv.to);
        let addr = next.and_then(|n| cluster.address_of(n));
        if let (Some(addr), Ok(payload)) = (
            addr,
            encode(&Request::Elect {
                group,
                take_over: false,
            }),
        ) {
            let transport = cluster.transport().clone();
            tokio::spawn(async move {
                let _ = transport.call(addr, payload, Duration::from_secs(6)).await;
            });
        }
    }
    Ok(())
}

/// Rolls `mv` of `group` back at this node, its leader: the learner is removed. `Ok(true)`
/// when the move had in fact finished (the receiver votes), `Ok(false)` once rolled back.
///
/// # Errors
/// As [`execute`].
pub async fn roll_back(
    cluster: &Cluster,
    group: GroupId,
    mv: Move,
) -> Result<bool, ProposeFailure> {
    let raft = led(cluster, group)?;
    let current = voters(&raft);
    let Some(to) = mv.to else {
        // A dropped replica: done once it no longer votes.
        return Ok(mv.from.is_some_and(|f| !current.contains(&f)));
    };
    if current.contains(&to) {
        // Past the membership change (or part-way in a joint one): finish it.
        execute(cluster, group, mv).await?;
        return Ok(true);
    }
    let learner = raft
        .metrics()
        .borrow()
        .membership_config
        .membership()
        .learner_ids()
        .any(|l| l == to);
    if learner {
        raft.change_membership(ChangeMembers::RemoveNodes(BTreeSet::from([to])), false)
            .await
            .map_err(failed)?;
    }
    Ok(false)
}

/// Starts elections at this node's replica of `group` (its leader left the group) until the
/// group has a leader among its voters: the other replicas refuse to vote while the old
/// leader's lease lasts.
pub async fn elect(
    cluster: &Cluster,
    group: GroupId,
    take_over: bool,
) -> Result<bool, ProposeFailure> {
    let raft = cluster.group(group).ok_or(ProposeFailure::NoGroup)?;
    if take_over {
        raft.trigger().elect().await.map_err(failed)?;
        let me = cluster.me().id;
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if raft.metrics().borrow().current_leader == Some(me) {
                return Ok(true);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        return Ok(false);
    }
    for _ in 0..6 {
        let led = {
            let m = raft.metrics().borrow().clone();
            m.current_leader
                .is_some_and(|l| m.membership_config.membership().voter_ids().any(|v| v == l))
        };
        if led {
            return Ok(true);
        }
        raft.trigger().elect().await.map_err(failed)?;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    Ok(false)
}

/// Hands `group`'s leadership from this node, its leader, to its replica `to`. The group's
/// writes and linearizable reads wait at this node meanwhile ([`super::groups::Groups::hold`]):
/// once what it had sent is replicated, the leader stops its heartbeats, waits out the
/// followers' lease on its leadership (they refuse to vote while it lasts), then asks `to` to
/// elect. The waiting requests then go to the new leader. `Ok(false)` when the log grew
/// meanwhile or `to` did not win; the balancer tries again later.
pub async fn transfer_leader(
    cluster: &Cluster,
    group: GroupId,
    to: NodeId,
) -> Result<bool, ProposeFailure> {
    let raft = led(cluster, group)?;
    if !voters(&raft).contains(&to) || !cluster.liveness().is_up(to) {
        return Ok(false);
    }
    let held = cluster.groups.hold(group);
    raft.runtime_config().heartbeat(false);
    // Requests already in Raft finish replicating (their messages renew the lease).
    let settle = Instant::now() + Duration::from_secs(1);
    while !replicated(&raft) && Instant::now() < settle {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let last = raft.metrics().borrow().last_log_index;
    let lease = Duration::from_millis(cluster.data_raft_config().election_timeout_max);
    tokio::time::sleep(lease + Duration::from_millis(200)).await;
    let moved = if raft.metrics().borrow().last_log_index == last {
        let request = Request::Elect {
            group,
            take_over: true,
        };
        let elected = call(cluster, to, request, Duration::from_secs(6)).await;
        info!(group, to, ?elected, "leadership handed over");
        matches!(elected, Ok(true))
    } else {
        false
    };
    // Back to the default either way: `quiet` turns them off again when the group is idle.
    raft.runtime_config().heartbeat(true);
    drop(held);
    Ok(moved)
}

/// Whether every replica of the group has every entry of its leader's log.
fn replicated(raft: &Raft) -> bool {
    let metrics = raft.metrics();
    let m = metrics.borrow();
    m.replication.as_ref().is_some_and(|r| {
        r.values()
            .all(|matched| matched.map(|l| l.index) >= m.last_log_index)
    })
}

async fn call(
    cluster: &Cluster,
    to: NodeId,
    request: Request,
    timeout: Duration,
) -> Result<bool, ProposeFailure> {
    let addr = cluster
        .address_of(to)
        .ok_or(ProposeFailure::NotLeader(None))?;
    let payload = encode(&request).map_err(failed)?;
    let bytes = cluster
        .transport()
        .call(addr, payload, timeout)
        .await
        .map_err(failed)?;
    match decode::<Response>(&bytes) {
        Ok(Response::Moved(r)) => r,
        Ok(Response::NoGroup) => Err(ProposeFailure::NoGroup),
        Ok(other) => Err(failed(format!("unexpected answer {other:?}"))),
        Err(e) => Err(failed(e)),
    }
}

/// Sends `request` (built for the group's leader) to the group's replicas until its leader
/// answers; follows the leader hints.
async fn at_leader(
    cluster: &Cluster,
    group: GroupId,
    candidates: &[NodeId],
    request: impl Fn() -> Request,
) -> Result<bool, ProposeFailure> {
    let mut last = ProposeFailure::NotLeader(None);
    let mut hinted: Option<NodeId> = None;
    for to in candidates
        .iter()
        .copied()
        .cycle()
        .take(candidates.len() * 2)
    {
        let to = hinted.take().unwrap_or(to);
        if to != cluster.me().id && !cluster.liveness().is_up(to) {
            continue;
        }
        let timeout = CATCH_UP + STEP * 3;
        let answer = if to == cluster.me().id {
            // Bounded like a call to another node: a membership change that never commits
            // (the leader left the group part-way) must not hold the driver past its deadline.
            tokio::time::timeout(timeout, serve_here(cluster, group, request()))
                .await
                .unwrap_or_else(|_| Err(failed("no answer within the timeout")))
        } else {
            call(cluster, to, request(), timeout).await
        };
        match answer {
            Ok(v) => return Ok(v),
            Err(ProposeFailure::NotLeader(Some(l))) if l != to => {
                hinted = Some(l);
                last = ProposeFailure::NotLeader(Some(l));
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Serves a move request at this node (the transport's handler calls it too).
pub async fn serve_here(
    cluster: &Cluster,
    group: GroupId,
    request: Request,
) -> Result<bool, ProposeFailure> {
    match request {
        Request::Move { mv, .. } => execute(cluster, group, mv).await.map(|()| true),
        Request::AbortMove { mv, .. } => roll_back(cluster, group, mv).await,
        Request::Elect { take_over, .. } => elect(cluster, group, take_over).await,
        Request::TransferLeader { to, .. } => transfer_leader(cluster, group, to).await,
        _ => Err(failed("not a move request")),
    }
}

/// Drives one move to its end from the metadata leader.
async fn run(cluster: &Arc<Cluster>, group: GroupId, mv: Move) {
    let started = Instant::now();
    let replicas = |c: &Cluster| {
        c.meta_state()
            .with(|s| s.groups.get(&group).map(|g| g.replicas.clone()))
    };
    let mut outcome: Option<bool> = None;
    while started.elapsed() < MOVE_DEADLINE {
        if !leads_meta(cluster) {
            return; // The new metadata leader drives the move.
        }
        let Some(current) = replicas(cluster) else {
            return; // The table was dropped: the move went with it.
        };
        if receiver_down(cluster, &mv) {
            warn!(group, to = ?mv.to, "the receiving node is down: rolling the move back");
            break;
        }
        let mut candidates = current.clone();
        candidates.extend(mv.to);
        let request = || Request::Move {
            group,
            mv: mv.clone(),
        };
        // An attempt ends by the move's deadline, however long its leader takes.
        let remaining = MOVE_DEADLINE.saturating_sub(started.elapsed());
        let attempt =
            tokio::time::timeout(remaining, at_leader(cluster, group, &candidates, request));
        let answer = tokio::select! {
            answer = attempt => answer.unwrap_or_else(|_| Err(failed("the move's deadline passed"))),
            () = wait_receiver_down(cluster, &mv) => {
                warn!(group, to = ?mv.to, "the receiving node is down: rolling the move back");
                break;
            }
            () = wait_meta_lost(cluster) => return,
        };
        match answer {
            Ok(_) => {
                outcome = Some(true);
                break;
            }
            Err(e) => {
                warn!(group, ?e, "a replica move did not finish; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
    while outcome.is_none() {
        if !leads_meta(cluster) {
            return;
        }
        let Some(mut candidates) = replicas(cluster) else {
            return;
        };
        candidates.extend(mv.to);
        let request = || Request::AbortMove {
            group,
            mv: mv.clone(),
        };
        match at_leader(cluster, group, &candidates, request).await {
            Ok(done) => outcome = Some(done),
            Err(e) => {
                warn!(group, ?e, "rolling a replica move back; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
    let done = outcome == Some(true);
    let new = replicas(cluster).map(|r| mv.apply(&r));
    let command = Command::MoveEnd {
        group,
        replicas: if done { new } else { None },
    };
    let voters = cluster.meta_voters();
    match cluster
        .propose(META_GROUP, &voters, command, Duration::from_secs(10))
        .await
    {
        Ok(_) => info!(
            group,
            done,
            secs = started.elapsed().as_secs_f32(),
            "replica move ended"
        ),
        Err(e) => warn!(group, error = %e, "recording a move's end; it is driven again"),
    }
}

/// Whether this node leads the metadata group (only its leader drives moves: two drivers
/// would run the same move's steps against each other).
fn leads_meta(cluster: &Cluster) -> bool {
    cluster.meta().metrics().borrow().state == ServerState::Leader
}

/// Returns once this node no longer leads the metadata group.
async fn wait_meta_lost(cluster: &Cluster) {
    while leads_meta(cluster) {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Whether the move's receiver has been seen down for [`RECEIVER_DOWN`] (the move rolls
/// back; the balancer plans again once it is back).
fn receiver_down(cluster: &Cluster, mv: &Move) -> bool {
    mv.to.is_some_and(|to| {
        cluster
            .liveness()
            .seen(to)
            .is_some_and(|s| !s.up && s.at.elapsed() >= RECEIVER_DOWN)
    })
}

/// Returns once the move's receiver has been down for [`RECEIVER_DOWN`].
async fn wait_receiver_down(cluster: &Cluster, mv: &Move) {
    while !receiver_down(cluster, mv) {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// On the metadata leader, drives every move in flight until `shutdown`.
pub async fn drive(cluster: Arc<Cluster>, shutdown: CancellationToken) {
    let running: Arc<Mutex<HashSet<GroupId>>> = Arc::default();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if !leads_meta(&cluster) {
            continue;
        }
        let moves: Vec<(GroupId, Move)> = cluster
            .meta_state()
            .with(|s| s.moves.iter().map(|(g, m)| (*g, m.clone())).collect());
        for (group, mv) in moves {
            if !running
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(group)
            {
                continue;
            }
            let (c, r) = (cluster.clone(), running.clone());
            tokio::spawn(async move {
                run(&c, group, mv).await;
                r.lock().unwrap_or_else(|p| p.into_inner()).remove(&group);
            });
        }
    }
}
