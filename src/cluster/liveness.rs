//! Liveness: every node pings every member twice a second; a member that answers is up (and
//! reports its schema version), one that misses two seconds of pings is down. Changes go to
//! registered connections as STATUS_CHANGE, new members as TOPOLOGY_CHANGE NEW_NODE and
//! members gone as REMOVED_NODE.

use super::codec::{decode, encode};
use super::raft_types::NodeId;
use super::rpc::{Request, Response};
use super::Cluster;
use cql::response::Event;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long a member may go unanswered before it counts as down.
const DOWN_AFTER: Duration = Duration::from_secs(2);

/// What this node last saw of a peer.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    /// When it last answered.
    pub at: Instant,
    /// The schema version it reported.
    pub schema_version: uuid::Uuid,
    /// Whether it counts as up.
    pub up: bool,
    /// What it reported holding.
    pub stats: super::rpc::NodeStats,
}

/// The peers' liveness.
#[derive(Default)]
pub struct Liveness {
    seen: Mutex<HashMap<NodeId, Seen>>,
    /// The groups each peer said it leads, at its last answer.
    led: Mutex<HashMap<NodeId, Vec<super::raft_types::GroupId>>>,
    /// The bytes of each group each peer said it holds, at its last answer.
    sizes: Mutex<HashMap<NodeId, Vec<(super::raft_types::GroupId, u64)>>>,
}

impl Liveness {
    /// What was last seen of `id`.
    pub fn seen(&self, id: NodeId) -> Option<Seen> {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .copied()
    }

    /// Whether `id` counts as up: a member not pinged yet does (it just joined or this node
    /// just started), so requests are not refused before the first round of pings.
    pub fn is_up(&self, id: NodeId) -> bool {
        self.seen(id).is_none_or(|s| s.up)
    }

    /// The bytes of the groups each peer that is up said it holds.
    pub fn sizes_by_peers(&self) -> Vec<Vec<(super::raft_types::GroupId, u64)>> {
        self.of_peers_up(&self.sizes)
            .into_iter()
            .map(|(_, groups)| groups)
            .collect()
    }

    /// The groups each peer that is up said it leads.
    pub fn led_by_peers(&self) -> Vec<(NodeId, Vec<super::raft_types::GroupId>)> {
        self.of_peers_up(&self.led)
    }

    /// What `reports` holds of each peer that is up. One lock at a time: the watcher takes
    /// `seen` before the reports, so holding a report while asking `seen` could deadlock.
    fn of_peers_up<T: Clone>(&self, reports: &Mutex<HashMap<NodeId, T>>) -> Vec<(NodeId, T)> {
        let all: Vec<(NodeId, T)> = reports
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(id, r)| (*id, r.clone()))
            .collect();
        all.into_iter().filter(|(id, _)| self.is_up(*id)).collect()
    }
}

/// Pings the members until `shutdown`.
pub async fn watch(cluster: Arc<Cluster>, shutdown: CancellationToken) {
    let mut known: Vec<NodeId> = Vec::new();
    let mut addresses: HashMap<NodeId, std::net::SocketAddr> = HashMap::new();
    let mut tokens = HashMap::new();
    loop {
        let members: Vec<_> = cluster
            .meta_state()
            .with(|s| s.members.values().cloned().collect());
        for m in &members {
            if m.id != cluster.me().id && !known.contains(&m.id) && !known.is_empty() {
                cluster.node().publish(Event::TopologyChange {
                    change: "NEW_NODE".into(),
                    address: m.native,
                });
            }
        }
        for gone in known
            .iter()
            .filter(|id| !members.iter().any(|m| m.id == **id))
        {
            if let Some(address) = addresses.get(gone) {
                cluster.node().publish(Event::TopologyChange {
                    change: "REMOVED_NODE".into(),
                    address: *address,
                });
            }
        }
        addresses = members.iter().map(|m| (m.id, m.native)).collect();
        known = members.iter().map(|m| m.id).collect();
        let pings = members.iter().filter(|m| m.id != cluster.me().id).map(|m| {
            let cluster = cluster.clone();
            let m = m.clone();
            async move {
                let answer = ping(&cluster, m.id, m.internode).await;
                (m, answer)
            }
        });
        for (m, answer) in futures::future::join_all(pings).await {
            let now = Instant::now();
            // The reports first, each lock alone (see `Liveness::of_peers_up`).
            if let Some(pong) = &answer {
                cluster
                    .liveness()
                    .led
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(m.id, pong.led.clone());
                cluster
                    .liveness()
                    .sizes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(m.id, pong.sizes.clone());
            }
            let mut seen = cluster
                .liveness()
                .seen
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let before = seen.get(&m.id).copied();
            let after = match (answer, before) {
                (
                    Some(Pong {
                        schema_version: v,
                        stats,
                        ..
                    }),
                    _,
                ) => Seen {
                    at: now,
                    schema_version: v,
                    up: true,
                    stats,
                },
                (None, Some(b)) => Seen {
                    up: b.up && now.duration_since(b.at) < DOWN_AFTER,
                    ..b
                },
                (None, None) => Seen {
                    // Never answered: down from the first miss.
                    at: now.checked_sub(DOWN_AFTER).unwrap_or(now),
                    schema_version: uuid::Uuid::nil(),
                    up: false,
                    stats: super::rpc::NodeStats::default(),
                },
            };
            seen.insert(m.id, after);
            drop(seen);
            if before.map(|b| b.up) != Some(after.up) && (before.is_some() || after.up) {
                tracing::info!(node = m.id, up = after.up, "peer status changed");
                cluster.node().publish(Event::StatusChange {
                    status: if after.up { "UP" } else { "DOWN" }.into(),
                    address: m.native,
                });
            }
        }
        super::leaders::announce_moves(&cluster, &mut tokens);
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
}

/// What a peer answered to a ping.
struct Pong {
    schema_version: uuid::Uuid,
    stats: super::rpc::NodeStats,
    led: Vec<super::raft_types::GroupId>,
    sizes: Vec<(super::raft_types::GroupId, u64)>,
}

async fn ping(cluster: &Cluster, id: NodeId, addr: std::net::SocketAddr) -> Option<Pong> {
    let payload = encode(&Request::Ping).ok()?;
    let bytes = cluster
        .transport()
        .call(addr, payload, Duration::from_millis(800))
        .await
        .ok()?;
    match decode::<Response>(&bytes) {
        Ok(Response::Pong {
            schema_version,
            stats,
            led,
            sizes,
            transfers,
        }) => {
            cluster.transfers().reported(id, transfers);
            Some(Pong {
                schema_version,
                stats,
                led,
                sizes,
            })
        }
        _ => None,
    }
}
