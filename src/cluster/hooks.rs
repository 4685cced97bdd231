//! The node's view of the cluster ([`ClusterHooks`]): peers for `system.peers` and the schema
//! log DDL goes through.

use super::raft_types::{Command, GroupInfo, Reply, META_GROUP};
use super::Cluster;
use crate::cluster_hooks::{ClusterHooks, Peer, SchemaProposal};
use crate::error::QueryError;
use crate::schema::{self, Catalog};
use cql::response::SchemaChange;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// How long a schema change may take to commit.
const SCHEMA_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a committed schema change waits for the peers that are up to report it.
const AGREEMENT_WAIT: Duration = Duration::from_secs(3);

/// The hooks the cluster installs on its node.
pub struct NodeHooks {
    cluster: Weak<Cluster>,
}

impl NodeHooks {
    /// The hooks of `cluster`.
    pub fn new(cluster: &Arc<Cluster>) -> NodeHooks {
        NodeHooks {
            cluster: Arc::downgrade(cluster),
        }
    }
}

/// Roles and permissions replicated through the metadata group.
pub struct AuthHooks {
    cluster: Weak<Cluster>,
}

impl AuthHooks {
    /// The auth log of `cluster`.
    pub fn new(cluster: &Arc<Cluster>) -> AuthHooks {
        AuthHooks {
            cluster: Arc::downgrade(cluster),
        }
    }
}

impl crate::auth::AuthLog for AuthHooks {
    fn version(&self) -> u64 {
        self.cluster
            .upgrade()
            .map_or(0, |c| c.meta_state().with(|s| s.auth_version))
    }

    fn propose(&self, expected: u64, next: &crate::auth::AuthState) -> Result<bool, QueryError> {
        let cluster = self
            .cluster
            .upgrade()
            .ok_or_else(|| QueryError::Server("The node is stopping".into()))?;
        let state = serde_json::to_string(next)
            .map_err(|e| QueryError::Server(format!("Could not encode the roles: {e}")))?;
        let command = Command::SetAuth {
            expected,
            state: super::raft_types::Secret(state),
        };
        let reply = propose_meta(&cluster, command)?;
        if let Reply::Refused(_) = reply {
            return Ok(false);
        }
        // Committed: wait until this node applied it (the version moved past `expected`).
        wait_for(
            || cluster.meta_state().with(|s| s.auth_version > expected),
            SCHEMA_TIMEOUT,
        );
        Ok(true)
    }
}

/// A node's token from its host id (as `system.local` reports it).
pub fn token_of(host_id: uuid::Uuid) -> i64 {
    let t = super::node_id(host_id) as i64;
    if t == i64::MIN {
        0
    } else {
        t
    }
}

impl ClusterHooks for NodeHooks {
    fn peers(&self) -> Vec<Peer> {
        let Some(cluster) = self.cluster.upgrade() else {
            return Vec::new();
        };
        let me = cluster.me().id;
        let tokens = super::leaders::node_tokens(&cluster);
        let (members, version) = cluster.meta_state().with(|s| {
            (
                s.members.values().cloned().collect::<Vec<_>>(),
                s.catalog_version,
            )
        });
        members
            .into_iter()
            .filter(|m| m.id != me)
            .map(|m| Peer {
                host_id: m.host_id,
                rpc_address: m.native.ip(),
                rpc_port: m.native.port(),
                tokens: tokens
                    .get(&m.id)
                    .cloned()
                    .unwrap_or_else(|| vec![token_of(m.host_id)]),
                schema_version: cluster
                    .liveness()
                    .seen(m.id)
                    .map(|s| s.schema_version)
                    .filter(|v| !v.is_nil())
                    .or(version)
                    .unwrap_or_default(),
            })
            .collect()
    }

    fn nodes(&self) -> Vec<crate::cluster_hooks::NodeStatus> {
        let Some(cluster) = self.cluster.upgrade() else {
            return Vec::new();
        };
        let me = cluster.me().id;
        let (members, leaving, held) = cluster.meta_state().with(|s| {
            let mut held: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
            for g in s.groups.values() {
                for r in &g.replicas {
                    *held.entry(*r).or_default() += 1;
                }
            }
            (
                s.members.values().cloned().collect::<Vec<_>>(),
                s.leaving.clone(),
                held,
            )
        });
        members
            .into_iter()
            .map(|m| {
                let state = match leaving.get(&m.id) {
                    None => "NORMAL",
                    Some(false) => "LEAVING",
                    Some(true) => "REMOVING",
                };
                let (up, stats) = if m.id == me {
                    (true, cluster.local_stats())
                } else {
                    let seen = cluster.liveness().seen(m.id);
                    (
                        seen.is_some_and(|s| s.up),
                        seen.map(|s| s.stats).unwrap_or_default(),
                    )
                };
                crate::cluster_hooks::NodeStatus {
                    host_id: m.host_id,
                    native: m.native,
                    internode: m.internode,
                    up,
                    state,
                    groups_led: stats.groups_led,
                    // From the metadata: a node down holds what it held.
                    groups_held: held.get(&m.id).copied().unwrap_or(0),
                    bytes: stats.bytes,
                }
            })
            .collect()
    }

    fn local_tokens(&self) -> Vec<i64> {
        self.cluster
            .upgrade()
            .and_then(|c| {
                let me = c.me().id;
                super::leaders::node_tokens(&c).remove(&me)
            })
            .unwrap_or_default()
    }

    fn has_peers(&self) -> bool {
        self.cluster.upgrade().is_some_and(|c| c.has_peers())
    }

    fn raft_groups(&self) -> Vec<crate::cluster_hooks::RaftGroupStatus> {
        let Some(cluster) = self.cluster.upgrade() else {
            return Vec::new();
        };
        let me = cluster.me().id;
        let mut rafts = cluster.groups.all();
        rafts.push((super::raft_types::META_GROUP, cluster.meta().clone()));
        rafts
            .into_iter()
            .map(|(group, raft)| {
                let m = raft.metrics().borrow().clone();
                let logged = m.last_log_index.unwrap_or(0);
                let applied = m.last_applied.map_or(0, |l| l.index);
                crate::cluster_hooks::RaftGroupStatus {
                    group,
                    term: m.current_term,
                    leader: m.current_leader,
                    leads: m.current_leader == Some(me),
                    lag: logged.saturating_sub(applied),
                }
            })
            .collect()
    }

    fn moves(&self) -> Vec<crate::cluster_hooks::MoveStatus> {
        let Some(cluster) = self.cluster.upgrade() else {
            return Vec::new();
        };
        let (moves, hosts) = cluster.meta_state().with(|s| {
            let moves: Vec<(u64, storage::TableId, super::raft_types::Move)> = s
                .moves
                .iter()
                .filter_map(|(g, m)| s.groups.get(g).map(|info| (*g, info.table, m.clone())))
                .collect();
            let hosts: std::collections::HashMap<u64, uuid::Uuid> =
                s.members.values().map(|m| (m.id, m.host_id)).collect();
            (moves, hosts)
        });
        let in_flight: Vec<u64> = moves.iter().map(|(g, _, _)| *g).collect();
        moves
            .into_iter()
            .map(|(group, table, mv)| {
                let (bytes_total, bytes_received, elapsed_ms) =
                    cluster.transfers().progress(group, &in_flight);
                crate::cluster_hooks::MoveStatus {
                    group,
                    table,
                    from: mv.from.and_then(|n| hosts.get(&n).copied()),
                    to: mv.to.and_then(|n| hosts.get(&n).copied()),
                    bytes_received,
                    bytes_total,
                    elapsed_ms,
                }
            })
            .collect()
    }

    fn share_trace(&self, session: &crate::query_trace::TraceSession) {
        let Some(cluster) = self.cluster.upgrade() else {
            return;
        };
        let Ok(payload) =
            super::codec::encode(&super::rpc::Request::Trace(Box::new(session.clone())))
        else {
            return;
        };
        let me = cluster.me().id;
        let peers: Vec<std::net::SocketAddr> = cluster.meta_state().with(|s| {
            s.members
                .values()
                .filter(|m| m.id != me)
                .map(|m| m.internode)
                .collect()
        });
        for peer in peers {
            let (cluster, payload) = (cluster.clone(), payload.clone());
            cluster.runtime().clone().spawn(async move {
                let sent = cluster
                    .transport()
                    .call(peer, payload, std::time::Duration::from_secs(5))
                    .await;
                if let Err(e) = sent {
                    tracing::debug!(%peer, error = %e, "a trace was not sent to a peer");
                }
            });
        }
    }

    fn cleanup(
        &self,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<crate::cluster_hooks::Cleaned, String> {
        let Some(cluster) = self.cluster.upgrade() else {
            return Ok(crate::cluster_hooks::Cleaned::default());
        };
        super::cleanup::run(&cluster, progress).map_err(|e| e.to_string())
    }

    fn set_node_state(
        &self,
        host_id: uuid::Uuid,
        state: crate::cluster_hooks::NodeState,
    ) -> Result<(), QueryError> {
        let Some(cluster) = self.cluster.upgrade() else {
            return Err(QueryError::invalid("this node is not in a cluster"));
        };
        let node = super::node_id(host_id);
        let known = cluster
            .meta_state()
            .with(|s| s.members.get(&node).is_some_and(|m| m.host_id == host_id));
        if !known {
            return Err(QueryError::invalid(format!(
                "Host ID {host_id} is not a member of the cluster"
            )));
        }
        let up = node == cluster.me().id || cluster.liveness().is_up(node);
        let dead = match state {
            crate::cluster_hooks::NodeState::Leaving if !up => {
                return Err(QueryError::invalid(format!(
                    "Node {host_id} is down: remove it with removenode"
                )))
            }
            crate::cluster_hooks::NodeState::Removing if up => {
                return Err(QueryError::invalid(format!(
                    "Node {host_id} is alive and owns data: decommission it instead"
                )))
            }
            crate::cluster_hooks::NodeState::Leaving => false,
            crate::cluster_hooks::NodeState::Removing => true,
        };
        match propose_meta(&cluster, Command::Leave { node, dead })? {
            Reply::Done => Ok(()),
            Reply::Refused(m) => Err(QueryError::invalid(m)),
            other => Err(QueryError::invalid(format!("{other:?}"))),
        }
    }

    fn placements(&self) -> Vec<crate::cluster_hooks::Placement> {
        let Some(cluster) = self.cluster.upgrade() else {
            return Vec::new();
        };
        let me = cluster.me().id;
        let (groups, natives) = cluster.meta_state().with(|s| {
            let natives: std::collections::BTreeMap<u64, std::net::IpAddr> = s
                .members
                .iter()
                .map(|(id, m)| (*id, m.native.ip()))
                .collect();
            let mut groups: Vec<GroupInfo> = s.groups.values().cloned().collect();
            groups.sort_by_key(|g| (g.table, g.end));
            (groups, natives)
        });
        // Groups held elsewhere: the leaders the peers say they are.
        let mut claims: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
        for (node, led) in cluster.liveness().led_by_peers() {
            for g in led {
                claims.insert(g, node);
            }
        }
        groups
            .into_iter()
            .map(|g| {
                let leader = if g.replicas == [me] {
                    Some(me)
                } else {
                    match cluster.group(g.id) {
                        Some(raft) => raft.metrics().borrow().current_leader,
                        None => claims.get(&g.id).copied(),
                    }
                };
                crate::cluster_hooks::Placement {
                    table: g.table,
                    end: g.end,
                    replicas: g
                        .replicas
                        .iter()
                        .filter_map(|r| natives.get(r).copied())
                        .collect(),
                    leader: leader.and_then(|l| natives.get(&l).copied()),
                }
            })
            .collect()
    }

    fn shards_at(&self, level: cql::request::Consistency) -> Option<Box<dyn crate::shard::Shards>> {
        let cluster = self.cluster.upgrade()?;
        cluster.has_peers().then(|| {
            Box::new(super::shards::ClusterShards::new(cluster, level))
                as Box<dyn crate::shard::Shards>
        })
    }

    fn propose_schema(
        &self,
        expected: uuid::Uuid,
        next: &Catalog,
        change: &SchemaChange,
    ) -> Result<SchemaProposal, QueryError> {
        let cluster = self
            .cluster
            .upgrade()
            .ok_or_else(|| QueryError::Server("The node is stopping".into()))?;
        let mut persisted = next.clone();
        persisted
            .keyspaces
            .retain(|name, _| !schema::is_system_keyspace(name));
        let catalog = serde_json::to_string(&persisted)
            .map_err(|e| QueryError::Server(format!("Could not encode the schema: {e}")))?;
        let groups = new_groups(&cluster, &cluster.node().catalog(), next);
        let new_group_ids: Vec<u64> = groups
            .iter()
            .filter(|g| g.replicas.len() > 1 && g.replicas.contains(&cluster.me().id))
            .map(|g| g.id)
            .collect();
        let mut event = Vec::new();
        change.encode(&mut event);
        let command = Command::SetCatalog {
            expected,
            catalog,
            groups,
            change: Some(event),
        };
        let reply = propose_meta(&cluster, command)?;
        match reply {
            Reply::Refused(reason) if reason == super::meta_machine::STALE_SCHEMA => {
                tracing::debug!(%reason, "schema change refused; planning again");
                return Ok(SchemaProposal::Stale);
            }
            // Refused for good (every node would refuse it alike): no point planning again.
            Reply::Refused(reason) => return Err(QueryError::Server(reason)),
            _ => {}
        }
        wait_for(
            || cluster.node().catalog().version == next.version,
            SCHEMA_TIMEOUT,
        );
        let me = cluster.me().id;
        let peers: Vec<u64> = cluster
            .meta_voters()
            .into_iter()
            .filter(|v| *v != me)
            .collect();
        wait_for(
            || {
                peers.iter().all(|p| {
                    cluster
                        .liveness()
                        .seen(*p)
                        .is_none_or(|s| !s.up || s.schema_version == next.version)
                })
            },
            AGREEMENT_WAIT,
        );
        // A new table's groups elect their first leaders before the DDL answers, so the
        // first writes do not wait for an election (bounded: writes wait for one anyway).
        wait_for(
            || {
                new_group_ids.iter().all(|g| {
                    cluster
                        .group(*g)
                        .is_some_and(|r| r.metrics().borrow().current_leader.is_some())
                })
            },
            AGREEMENT_WAIT + AGREEMENT_WAIT,
        );
        Ok(SchemaProposal::Installed)
    }
}

/// Commits a metadata command from a blocking thread (schema and role changes); Unavailable
/// when the metadata group has no majority within [`SCHEMA_TIMEOUT`].
fn propose_meta(cluster: &Cluster, command: Command) -> Result<Reply, QueryError> {
    let voters = cluster.meta_voters();
    let runtime = cluster.runtime().clone();
    tokio::task::block_in_place(|| {
        runtime.block_on(cluster.propose(META_GROUP, &voters, command, SCHEMA_TIMEOUT))
    })
    .map_err(|e| {
        tracing::warn!(error = %e, "metadata change not committed");
        QueryError::Unavailable {
            consistency: cql::request::Consistency::Quorum,
            required: voters.len() as i32 / 2 + 1,
            alive: alive(cluster, &voters),
            dc: None,
        }
    })
}

fn alive(cluster: &Cluster, voters: &[u64]) -> i32 {
    voters
        .iter()
        .filter(|v| **v == cluster.me().id || cluster.liveness().is_up(**v))
        .count() as i32
}

fn wait_for(mut done: impl FnMut() -> bool, at_most: Duration) {
    let deadline = Instant::now() + at_most;
    while !done() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The groups of the tables `next` creates: `initial_physical_partitions` token ranges of
/// equal width, each replicated on `min(RF, members)` nodes, rotated so every node leads some.
fn new_groups(cluster: &Cluster, current: &Catalog, next: &Catalog) -> Vec<GroupInfo> {
    let existing: std::collections::HashSet<uuid::Uuid> = current
        .keyspaces
        .values()
        .flat_map(|k| k.tables.values())
        .map(|t| t.id)
        .collect();
    let (members, mut id) = cluster.meta_state().with(|s| {
        (
            s.members.keys().copied().collect::<Vec<_>>(),
            s.next_group_id(),
        )
    });
    if members.is_empty() {
        return Vec::new();
    }
    let per_table = match cluster.node().config().initial_physical_partitions {
        0 => members.len() * 4,
        n => n,
    };
    let mut groups = Vec::new();
    for ks in next.keyspaces.values() {
        if schema::is_system_keyspace(&ks.name) {
            continue;
        }
        let rf = ks.params.replicas().in_dc(schema::DATA_CENTER).max(1) as usize;
        let copies = rf.min(members.len());
        for t in ks.tables.values().filter(|t| !existing.contains(&t.id)) {
            for i in 0..per_table {
                let replicas = (0..copies)
                    .map(|k| members[(i + k) % members.len()])
                    .collect();
                groups.push(GroupInfo {
                    id,
                    table: schema::table_id(t),
                    end: range_end(i, per_table),
                    replicas,
                    parent: None,
                });
                id += 1;
            }
        }
    }
    groups
}

/// The last token of range `i` of `n` equal ranges of the ring.
pub fn range_end(i: usize, n: usize) -> i64 {
    if i + 1 >= n {
        return i64::MAX;
    }
    let width = u64::MAX / n as u64;
    let end = (i as u64 + 1) * width;
    (end as i64).wrapping_add(i64::MIN)
}
