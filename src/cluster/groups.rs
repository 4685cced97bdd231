//! The data groups this node holds: after every metadata change, a Raft instance is started
//! for each group listing this node among two or more replicas (its first live replica
//! initializes it), and stopped for each group that is gone. A group with one replica has no Raft: its
//! only copy is written in place.

use super::data_machine::DataMachine;
use super::network::GroupNetwork;
use super::raft_types::{GroupId, GroupInfo, Raft};
use super::Cluster;
use openraft::BasicNode;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// The Raft instances of the data groups this node holds.
#[derive(Default)]
pub struct Groups {
    rafts: RwLock<HashMap<GroupId, Raft>>,
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
    let me = cluster.me().id;
    let (wanted, members): (Vec<GroupInfo>, BTreeMap<u64, String>) =
        cluster.meta_state().with(|s| {
            (
                s.groups
                    .values()
                    .filter(|g| g.replicas.len() > 1 && g.replicas.contains(&me))
                    .cloned()
                    .collect(),
                s.members
                    .iter()
                    .map(|(id, m)| (*id, m.internode.to_string()))
                    .collect(),
            )
        });
    cluster
        .has_peers
        .store(members.len() > 1, std::sync::atomic::Ordering::Relaxed);
    cluster.node().set_has_peers(members.len() > 1);
    for group in &wanted {
        if cluster.groups.get(group.id).is_some() {
            continue;
        }
        match start_group(cluster, group, &members).await {
            Ok(raft) => {
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
        if let Err(e) = cluster.raft_db().remove_group(id) {
            warn!(group = id, error = %e, "removing a dropped group's log");
        }
        let _ = DataMachine::forget(id, cluster.node().storage());
        let _ = cluster.fences().forget(id, cluster.node().storage());
        info!(group = id, "stopped a dropped group");
    }
}

async fn start_group(
    cluster: &Arc<Cluster>,
    group: &GroupInfo,
    members: &BTreeMap<u64, String>,
) -> Result<Raft, String> {
    let machine = DataMachine::open(
        group.id,
        group.table,
        cluster.node().storage().clone(),
        cluster.fences().clone(),
        group.parent,
    )
    .map_err(|e| e.to_string())?;
    let raft = Raft::new(
        cluster.me().id,
        cluster.data_raft_config().clone(),
        GroupNetwork::new(group.id, cluster.transport().clone()),
        cluster.raft_db().group(group.id),
        machine,
    )
    .await
    .map_err(|e| e.to_string())?;
    // The first live replica starts the group (its first replica, unless that one is down:
    // a table made while a node is down still gets leaders). Two replicas initializing with
    // the same members is safe.
    let me = cluster.me().id;
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
    Ok(raft)
}
