//! The data groups this node holds: after every metadata change, a Raft instance is started
//! for each group listing this node among two or more replicas (its first live replica
//! initializes it) or receiving a moving replica, and stopped for each group that is gone;
//! a group whose replica moved away has its range cleared here. A group with one replica and
//! no move has no Raft: its only copy is written in place (under [`Groups::in_place`]).

use super::data_machine::{DataMachine, SnapshotSupport};
use super::network::GroupNetwork;
use super::raft_types::{Command, GroupId, GroupInfo, Raft};
use super::Cluster;
use openraft::BasicNode;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// The Raft instances of the data groups this node holds.
#[derive(Default)]
pub struct Groups {
    rafts: RwLock<HashMap<GroupId, Raft>>,
    /// Each running group's state machine, alive until its Raft's state machine task ends.
    machines: Mutex<HashMap<GroupId, Weak<()>>>,
    /// Held (shared) by a write in place to a group without Raft, from its check that no Raft
    /// runs to its commit; held alone while a Raft is started, so no write in place reaches
    /// a group once its Raft (and the snapshots a new replica copies) has started.
    in_place: RwLock<()>,
    /// Groups whose leadership this node is handing over: their writes and linearizable reads
    /// wait here, so the leader sends nothing while the followers' lease on it runs out.
    handing_over: Mutex<HashSet<GroupId>>,
    /// How many groups `handing_over` holds: every write and read checks it first, without
    /// taking the lock.
    handing_over_count: AtomicUsize,
    /// Held by [`reconcile`] and by a cleanup's removal of a range (`super::cleanup`): no
    /// replica starts receiving a range while a cleanup removes it.
    pub(super) turn: tokio::sync::Mutex<()>,
}

/// How long a request waits for a leadership hand-over before it goes on anyway.
const HAND_OVER_WAIT: Duration = Duration::from_secs(3);
/// How long a stopped group's state machine may take to apply what it was sent.
const MACHINE_STOP_WAIT: Duration = Duration::from_secs(10);

/// Holds a group's requests (see [`Groups::hold`]) until dropped.
pub struct HandOver<'a> {
    groups: &'a Groups,
    group: GroupId,
}

impl Drop for HandOver<'_> {
    fn drop(&mut self) {
        self.groups
            .handing_over
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.group);
        self.groups
            .handing_over_count
            .fetch_sub(1, Ordering::Release);
    }
}

impl Groups {
    /// The Raft handle of `group`, when this node runs one.
    pub fn get(&self, group: GroupId) -> Option<Raft> {
        self.rafts
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&group)
            .cloned()
    }

    /// Runs `write` unless this node runs a Raft for `group` (`None` then); while it runs,
    /// no Raft starts.
    pub fn in_place<T>(&self, group: GroupId, write: impl FnOnce() -> T) -> Option<T> {
        let _gate = self.in_place.read().unwrap_or_else(|p| p.into_inner());
        if self.get(group).is_some() {
            return None;
        }
        Some(write())
    }

    /// Holds `group`'s writes and linearizable reads at this node (its leader) until the
    /// returned guard drops: a leadership hand-over in progress.
    pub fn hold(&self, group: GroupId) -> HandOver<'_> {
        self.handing_over
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(group);
        self.handing_over_count.fetch_add(1, Ordering::Release);
        HandOver {
            groups: self,
            group,
        }
    }

    /// Whether `group`'s leadership is being handed over from this node.
    pub fn held(&self, group: GroupId) -> bool {
        if self.handing_over_count.load(Ordering::Acquire) == 0 {
            return false;
        }
        self.handing_over
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&group)
    }

    /// Waits while `group`'s leadership is being handed over (at most a few seconds).
    pub async fn wait_hand_over(&self, group: GroupId) {
        let deadline = Instant::now() + HAND_OVER_WAIT;
        while self.held(group) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Every group this node runs.
    pub fn all(&self) -> Vec<(GroupId, Raft)> {
        self.rafts
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(g, r)| (*g, r.clone()))
            .collect()
    }
}

/// Keeps the node's groups in step with the metadata group until `shutdown`.
pub async fn keep(cluster: Arc<Cluster>, shutdown: CancellationToken) {
    let mut changes = cluster.meta_state().subscribe();
    loop {
        reconcile(&cluster).await;
        tokio::select! {
            () = shutdown.cancelled() => return,
            changed = changes.changed() => if changed.is_err() { return },
        }
    }
}

/// Starts the groups this node should run and stops the ones it should not.
pub async fn reconcile(cluster: &Arc<Cluster>) {
    let _turn = cluster.groups.turn.lock().await;
    let me = cluster.me().id;
    let (wanted, members): (Vec<GroupInfo>, BTreeMap<u64, String>) =
        cluster.meta_state().with(|s| {
            (
                s.groups
                    .values()
                    .filter(|g| {
                        let moving = s.moves.get(&g.id);
                        (g.replicas.len() > 1 || moving.is_some())
                            && (g.replicas.contains(&me)
                                || moving.is_some_and(|m| m.to == Some(me)))
                    })
                    .cloned()
                    .collect(),
                s.members
                    .iter()
                    .map(|(id, m)| (*id, m.internode.to_string()))
                    .collect(),
            )
        });
    let in_flight: Vec<GroupId> = cluster
        .meta_state()
        .with(|s| s.moves.keys().copied().collect());
    cluster.transfers().retain(&in_flight);
    cluster
        .has_peers
        .store(members.len() > 1, std::sync::atomic::Ordering::Relaxed);
    cluster.node().set_has_peers(members.len() > 1);
    if members.contains_key(&me) {
        cluster.member.send_replace(true);
    }
    for group in &wanted {
        if cluster.groups.get(group.id).is_some() {
            continue;
        }
        match start_group(cluster, group, &members).await {
            Ok((raft, machine)) => {
                cluster
                    .groups
                    .machines
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(group.id, machine);
                let _gate = cluster
                    .groups
                    .in_place
                    .write()
                    .unwrap_or_else(|p| p.into_inner());
                cluster
                    .groups
                    .rafts
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(group.id, raft);
            }
            Err(e) => warn!(group = group.id, error = %e, "cannot start a data group"),
        }
    }
    let gone: Vec<(GroupId, Raft)> = {
        let mut rafts = cluster
            .groups
            .rafts
            .write()
            .unwrap_or_else(|p| p.into_inner());
        let ids: Vec<GroupId> = rafts
            .keys()
            .filter(|id| !wanted.iter().any(|g| g.id == **id))
            .copied()
            .collect();
        ids.into_iter()
            .filter_map(|id| rafts.remove(&id).map(|r| (id, r)))
            .collect()
    };
    for (id, raft) in gone {
        let _ = raft.shutdown().await;
        // The state machine task applies what it was sent before it ends: what is left of
        // the log is read only after it (else entries would be applied twice).
        let machine = cluster
            .groups
            .machines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let Some(machine) = machine {
            let deadline = Instant::now() + MACHINE_STOP_WAIT;
            while machine.strong_count() > 0 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            if machine.strong_count() > 0 {
                warn!(
                    group = id,
                    "a stopped group's state machine is still running"
                );
            }
        }
        let reseeded = cluster.meta_state().with(|s| {
            let new = s.replaced.get(&id)?;
            let g = s.groups.get(new)?;
            g.replicas.contains(&me).then_some(g.table)
        });
        // A group whose only replica is now this node, written in place from here on: a
        // single replica's move ended (here, or rolled back at its sender). The leader that
        // moved it away stepped down as soon as it committed the membership without itself,
        // before telling this replica how far the log is committed: this log may hold
        // acknowledged writes not applied yet.
        let held_alone = cluster.meta_state().with(|s| {
            let g = s.groups.get(&id)?;
            (g.replicas == [me]).then_some(g.table)
        });
        if let Some(table) = reseeded.or(held_alone) {
            // The group commits nothing more: what its log holds beyond the applied
            // position may have been acknowledged, so it is applied before the log goes.
            match apply_rest_of_log(cluster, id, table).await {
                Ok((n, writes)) => info!(
                    group = id,
                    entries = n,
                    writes,
                    replaced = reseeded.is_some(),
                    "applied the rest of a stopped group's log"
                ),
                Err(e) => {
                    warn!(group = id, error = %e, "applying the rest of a stopped group's log")
                }
            }
        }
        if let Err(e) = cluster.raft_db().remove_group(id) {
            warn!(group = id, error = %e, "removing a stopped group's log");
        }
        let storage = cluster.node().storage();
        let _ = DataMachine::forget(id, storage);
        let _ = cluster.fences().forget(id, storage);
        // A replica that moved away (or a move here that rolled back): its rows go too,
        // unless they are kept for `ringdb cleanup`.
        let clear = cluster.node().config().clear_moved_replicas;
        let moved_away = cluster.meta_state().with(|s| {
            let g = s.groups.get(&id)?;
            let start = super::routing::ranges_of(s, g.table)
                .into_iter()
                .find(|(_, r)| r.id == id)?
                .0;
            (clear && !g.replicas.contains(&me)).then_some((g.table, start, g.end))
        });
        match moved_away {
            Some((table, start, end)) => {
                let storage = storage.clone();
                let cleared =
                    tokio::task::spawn_blocking(move || storage.drop_range(table, start, end))
                        .await;
                info!(
                    group = id,
                    ok = matches!(cleared, Ok(Ok(_))),
                    "a replica left this node; its rows are removed"
                );
            }
            None => info!(group = id, "stopped a group"),
        }
    }
}

/// Applies to the store every entry of `group`'s log after its applied position; returns
/// how many, and how many of them are writes.
async fn apply_rest_of_log(
    cluster: &Arc<Cluster>,
    group: GroupId,
    table: storage::TableId,
) -> Result<(usize, usize), String> {
    use openraft::storage::RaftStateMachine;
    use openraft::RaftLogReader;
    let mut machine = DataMachine::open(
        group,
        table,
        cluster.node().storage().clone(),
        cluster.fences().clone(),
        None,
        SnapshotSupport {
            range: Arc::new(|| None),
            transfers: cluster.transfers().clone(),
            files: cluster.snapshot_files().clone(),
            pace: cluster.stream_pace().clone(),
        },
    )
    .map_err(|e| e.to_string())?;
    let applied = machine.applied_state().await.map_err(|e| e.to_string())?.0;
    let from = applied.map_or(0, |l| l.index + 1);
    let entries = cluster
        .raft_db()
        .group(group)
        .try_get_log_entries(from..)
        .await
        .map_err(|e| e.to_string())?;
    let n = entries.len();
    let writes = entries
        .iter()
        .filter(|e| {
            matches!(
                e.payload,
                openraft::EntryPayload::Normal(Command::Write { .. })
            )
        })
        .count();
    if n > 0 {
        machine.apply(entries).await.map_err(|e| e.to_string())?;
    }
    Ok((n, writes))
}

/// The range `(start, end]` of `group` in the metadata group's map, looked up when asked.
fn range_of(cluster: &Arc<Cluster>, group: GroupId) -> super::data_machine::RangeOf {
    let shared = cluster.meta_state_arc();
    Arc::new(move || {
        shared.with(|s| {
            let table = s.groups.get(&group)?.table;
            super::routing::ranges_of(s, table)
                .into_iter()
                .find(|(_, g)| g.id == group)
                .map(|(start, g)| (start, g.end))
        })
    })
}

/// Starts `group`'s Raft at this node; returns it and its state machine's [`DataMachine::alive`].
async fn start_group(
    cluster: &Arc<Cluster>,
    group: &GroupInfo,
    members: &BTreeMap<u64, String>,
) -> Result<(Raft, Weak<()>), String> {
    let me = cluster.me().id;
    // A replica that did not hold the split's parent has nothing to wait for: it starts from
    // a snapshot taken after the split. Nor has one whose parent is a single replica applying
    // its writes in place, with no log (unless it runs Raft itself, for a move of its own):
    // every write the parent took is applied already, and no fence would ever come.
    let parent = group.parent.filter(|(p, _)| {
        let (held, logged) = cluster.meta_state().with(|s| {
            s.groups.get(p).map_or((false, false), |g| {
                (g.replicas.contains(&me), g.replicas.len() > 1)
            })
        });
        held && (logged || cluster.group(*p).is_some()) && group.replicas.contains(&me)
    });
    let machine = DataMachine::open(
        group.id,
        group.table,
        cluster.node().storage().clone(),
        cluster.fences().clone(),
        parent,
        SnapshotSupport {
            range: range_of(cluster, group.id),
            transfers: cluster.transfers().clone(),
            files: cluster.snapshot_files().clone(),
            pace: cluster.stream_pace().clone(),
        },
    )
    .map_err(|e| e.to_string())?;
    let alive = machine.alive();
    let raft = Raft::new(
        cluster.me().id,
        cluster.data_raft_config().clone(),
        GroupNetwork::new(group.id, cluster.transport().clone()),
        cluster.raft_db().group(group.id),
        machine,
    )
    .await
    .map_err(|e| e.to_string())?;
    let changes = super::leader_watch::counter(cluster.node().metrics(), group.id);
    super::leader_watch::watch(&raft, group.id, changes);
    // The first live replica starts the group (its first replica, unless that one is down:
    // a table made while a node is down still gets leaders). Two replicas initializing with
    // the same members is safe.
    let first_live = group
        .replicas
        .iter()
        .find(|r| **r == me || cluster.liveness().is_up(**r));
    if first_live == Some(&me) && !raft.is_initialized().await.unwrap_or(true) {
        let nodes: BTreeMap<u64, BasicNode> = group
            .replicas
            .iter()
            .filter_map(|id| {
                members
                    .get(id)
                    .map(|addr| (*id, BasicNode { addr: addr.clone() }))
            })
            .collect();
        if let Err(e) = raft.initialize(nodes).await {
            warn!(group = group.id, error = %e, "initializing a data group");
        }
    }
    Ok((raft, alive))
}
