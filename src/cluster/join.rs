//! Creating or joining the cluster at startup. A node whose metadata group is empty starts a
//! new cluster when it has no seeds (or only itself), else asks the seeds to admit it, in the
//! background until one does. A node that already belongs rejoins with its data; its record
//! is refreshed when its addresses changed.

use super::codec::{decode, encode};
use super::raft_types::{Command, META_GROUP};
use super::rpc::{Request, Response};
use super::Cluster;
use openraft::BasicNode;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

/// Starts, joins or rejoins the cluster.
pub async fn start_or_join(cluster: &Arc<Cluster>, seeds: &[SocketAddr]) {
    let me = cluster.me().clone();
    let others: Vec<SocketAddr> = seeds
        .iter()
        .copied()
        .filter(|s| *s != me.internode)
        .collect();
    let initialized = cluster.meta().is_initialized().await.unwrap_or(false);
    if !initialized && others.is_empty() {
        let mut members = BTreeMap::new();
        members.insert(
            me.id,
            BasicNode {
                addr: me.internode.to_string(),
            },
        );
        if let Err(e) = cluster.meta().initialize(members).await {
            warn!(error = %e, "initializing the metadata group");
        }
        info!(node = me.id, "started a new cluster");
        let c = cluster.clone();
        tokio::spawn(async move { record_self(&c).await });
        return;
    }
    if !initialized {
        let c = cluster.clone();
        tokio::spawn(async move { ask_seeds(&c, &others).await });
        return;
    }
    let recorded = cluster
        .meta_state()
        .with(|s| s.members.get(&me.id).cloned());
    if recorded.as_ref() != Some(&me) {
        let c = cluster.clone();
        tokio::spawn(async move { record_self(&c).await });
    }
}

/// Records this node in the metadata group (retried until it commits).
async fn record_self(cluster: &Arc<Cluster>) {
    let me = cluster.me().clone();
    loop {
        let voters = cluster.meta_voters();
        match cluster
            .propose(
                META_GROUP,
                &voters,
                Command::Join(me.clone()),
                Duration::from_secs(10),
            )
            .await
        {
            Ok(_) => return,
            Err(e) => warn!(error = %e, "recording this node in the cluster; retrying"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Asks each seed in turn to admit this node until one does.
async fn ask_seeds(cluster: &Arc<Cluster>, seeds: &[SocketAddr]) {
    let me = cluster.me().clone();
    let Ok(payload) = encode(&Request::Join(me.clone())) else {
        return;
    };
    for attempt in 0u64.. {
        let seed = seeds[(attempt as usize) % seeds.len()];
        match cluster
            .transport()
            .call(seed, payload.clone(), Duration::from_secs(15))
            .await
            .map_err(|e| e.to_string())
            .and_then(|b| decode::<Response>(&b).map_err(|e| e.to_string()))
        {
            Ok(Response::Joined(Ok(members))) => {
                info!(node = me.id, %seed, members = members.len(), "joined the cluster");
                return;
            }
            Ok(Response::Joined(Err(e))) => {
                warn!(%seed, reason = %e, "the seed did not admit this node; retrying")
            }
            Ok(other) => warn!(%seed, answer = ?other, "unexpected answer to a join"),
            Err(e) => warn!(%seed, error = %e, "seed unreachable; retrying"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
