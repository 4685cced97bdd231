//! Serves what peers send: Raft RPCs to the addressed group, joins, forwarded proposals and
//! pings.

use super::codec::{decode, encode};
use super::propose::propose_local;
use super::raft_types::{Command, Member};
use super::rpc::{ProposeFailure, Request, Response};
use super::transport::Handler;
use super::Cluster;
use futures::future::BoxFuture;
use openraft::BasicNode;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The transport's handler: holds the cluster weakly (the cluster owns the server task).
pub struct ClusterHandler {
    cluster: Weak<Cluster>,
}

impl ClusterHandler {
    /// The handler of `cluster`.
    pub fn new(cluster: &Arc<Cluster>) -> ClusterHandler {
        ClusterHandler {
            cluster: Arc::downgrade(cluster),
        }
    }
}

impl Handler for ClusterHandler {
    fn handle(&self, from: u64, payload: Vec<u8>) -> BoxFuture<'static, Vec<u8>> {
        let cluster = self.cluster.upgrade();
        Box::pin(async move {
            let response = match (cluster, decode::<Request>(&payload)) {
                (None, _) => Response::BadRequest("the node is stopping".into()),
                (_, Err(e)) => {
                    tracing::warn!(from, error = %e, "undecodable internode request");
                    Response::BadRequest(e.to_string())
                }
                (Some(cluster), Ok(request)) => serve(&cluster, request).await,
            };
            encode(&response).unwrap_or_default()
        })
    }
}

/// How long a Raft message for a group this node does not run yet waits for it: a new
/// group's first election reaches replicas that are still applying the metadata entry.
const GROUP_STARTING: Duration = Duration::from_secs(1);

/// The Raft handle of `group`, waiting a little for a group that is starting here.
async fn group_soon(
    cluster: &Cluster,
    group: super::raft_types::GroupId,
) -> Option<super::raft_types::Raft> {
    let deadline = tokio::time::Instant::now() + GROUP_STARTING;
    loop {
        if let Some(raft) = cluster.group(group) {
            return Some(raft);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn serve(cluster: &Arc<Cluster>, request: Request) -> Response {
    match request {
        Request::AppendEntries(group, rpc) => match group_soon(cluster, group).await {
            Some(raft) => Response::AppendEntries(raft.append_entries(rpc).await),
            None => Response::NoGroup,
        },
        Request::Vote(group, rpc) => match group_soon(cluster, group).await {
            Some(raft) => Response::Vote(raft.vote(rpc).await),
            None => Response::NoGroup,
        },
        Request::InstallSnapshot(group, rpc) => match group_soon(cluster, group).await {
            Some(raft) => {
                let so_far = rpc.offset + rpc.data.len() as u64;
                cluster.transfers().received(group, so_far);
                Response::InstallSnapshot(raft.install_snapshot(rpc).await)
            }
            None => Response::NoGroup,
        },
        Request::Propose(group, command) => {
            Response::Proposed(cluster.propose_here(group, command).await)
        }
        Request::Read {
            group,
            table,
            partition_key,
            slice,
            linearizable,
        } => Response::Read(
            super::replica_read::read_here(
                cluster,
                group,
                table,
                super::routing::partition_token(&partition_key),
                linearizable,
                |s| s.read_partition(table, &partition_key, &slice),
            )
            .await,
        ),
        Request::Scan {
            group,
            table,
            range,
            limit,
            cursor,
            index,
            linearizable,
        } => Response::Scan(
            super::replica_read::read_here(cluster, group, table, range.end, linearizable, |s| {
                match &index {
                    Some(lookup) => s.index_scan(table, lookup, range, limit, cursor.as_ref()),
                    None => s.scan(table, range, limit, cursor.as_ref()),
                }
            })
            .await,
        ),
        Request::Nearest {
            group,
            table,
            range,
            index,
            query,
            k,
            linearizable,
        } => Response::Nearest(
            super::replica_read::read_here(cluster, group, table, range.end, linearizable, |s| {
                s.nearest(table, range, index.column, &query, k)
            })
            .await,
        ),
        Request::Move { group, .. }
        | Request::AbortMove { group, .. }
        | Request::Elect { group, .. }
        | Request::TransferLeader { group, .. } => {
            Response::Moved(super::moves::serve_here(cluster, group, request).await)
        }
        Request::Join(member) => Response::Joined(admit(cluster, member).await),
        Request::Trace(session) => {
            cluster.node().traces().record(*session);
            Response::TraceKept
        }
        Request::Ping => Response::Pong {
            schema_version: cluster.node().catalog().version,
            stats: cluster.local_stats(),
            led: super::leaders::led_here(cluster),
            sizes: super::group_sizes::local(cluster),
            transfers: cluster.transfers().local(),
        },
    }
}

/// Admits a node into the metadata group (as a voter) and records it; forwarded to the
/// leader when this node is not it.
async fn admit(cluster: &Arc<Cluster>, member: Member) -> Result<Vec<Member>, String> {
    let meta = cluster.meta();
    if meta.ensure_linearizable().await.is_err() {
        let leader = meta.current_leader().await;
        return match leader.and_then(|l| cluster.address_of(l)) {
            Some(addr) if leader != Some(cluster.me().id) => {
                let payload = encode(&Request::Join(member)).map_err(|e| e.to_string())?;
                let bytes = cluster
                    .transport()
                    .call(addr, payload, Duration::from_secs(10))
                    .await
                    .map_err(|e| e.to_string())?;
                match decode::<Response>(&bytes) {
                    Ok(Response::Joined(r)) => r,
                    Ok(other) => Err(format!("unexpected answer {other:?}")),
                    Err(e) => Err(e.to_string()),
                }
            }
            _ => Err("the metadata group has no leader".into()),
        };
    }
    tracing::info!(node = member.id, internode = %member.internode, "admitting a node");
    let node = BasicNode {
        addr: member.internode.to_string(),
    };
    meta.add_learner(member.id, node, true)
        .await
        .map_err(|e| e.to_string())?;
    let mut voters: std::collections::BTreeSet<u64> = cluster.meta_voters().into_iter().collect();
    if voters.insert(member.id) {
        meta.change_membership(voters, false)
            .await
            .map_err(|e| e.to_string())?;
    }
    match propose_local(meta, Command::Join(member)).await {
        Ok(_) => Ok(cluster
            .meta_state()
            .with(|s| s.members.values().cloned().collect())),
        Err(ProposeFailure::Failed(e)) => Err(e),
        Err(other) => Err(format!("{other:?}")),
    }
}
