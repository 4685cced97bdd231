//! Committing a command to a group from any node: through the local replica when this node
//! leads the group, else forwarded to the leader (learned from the replica's refusal), retried
//! until the deadline while the group elects one.

use super::codec::{decode, encode};
use super::leader_budgets;
use super::raft_types::{Command, GroupId, NodeId, Raft, Reply};
use super::rpc::{ProposeFailure, Request, Response};
use super::Cluster;
use openraft::error::{ClientWriteError, RaftError};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Why a command was not committed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProposeError {
    /// No leader could be reached before the deadline (no majority, or every replica down).
    #[error("no leader of group {0} could be reached")]
    NoLeader(GroupId),
    /// The group failed.
    #[error("group {0} failed: {1}")]
    Failed(GroupId, String),
    /// The group's throughput budget is spent: retry after these milliseconds.
    #[error("group {0} is over its throughput budget")]
    Throttled(GroupId, u64),
}

/// Commits `command` through a local replica; `Err(NotLeader)` names the leader when known.
pub async fn propose_local(raft: &Raft, command: Command) -> Result<Reply, ProposeFailure> {
    match raft.client_write(command).await {
        Ok(r) => Ok(r.data),
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => {
            Err(ProposeFailure::NotLeader(f.leader_id))
        }
        Err(e) => Err(ProposeFailure::Failed(e.to_string())),
    }
}

impl Cluster {
    /// The internode address of node `id`, from the metadata group.
    pub fn address_of(&self, id: NodeId) -> Option<SocketAddr> {
        if id == self.me.id {
            return Some(self.me.internode);
        }
        let known = self
            .meta_shared
            .with(|s| s.members.get(&id).map(|m| m.internode));
        known.or_else(|| {
            let metrics = self.meta.metrics().borrow().clone();
            metrics
                .membership_config
                .membership()
                .get_node(&id)
                .and_then(|n| n.addr.parse().ok())
        })
    }

    /// Commits `command` to `group` within `timeout`, from whichever node this is.
    /// `replicas` are the nodes holding the group (tried when this node holds none).
    ///
    /// # Errors
    /// [`ProposeError::NoLeader`] at the deadline; [`ProposeError::Failed`] when the group
    /// refused for good.
    pub async fn propose(
        &self,
        group: GroupId,
        replicas: &[NodeId],
        command: Command,
        timeout: Duration,
    ) -> Result<Reply, ProposeError> {
        let deadline = Instant::now() + timeout;
        let me = self.me.id;
        let holds = group == super::raft_types::META_GROUP || replicas.contains(&me);
        let mut target: Option<NodeId> = holds.then_some(me);
        let mut next_replica = 0usize;
        loop {
            let to = match target {
                Some(t) => t,
                None => {
                    if replicas.is_empty() {
                        return Err(ProposeError::NoLeader(group));
                    }
                    next_replica += 1;
                    replicas[(next_replica - 1) % replicas.len()]
                }
            };
            let attempt = if to == me {
                // A leader that cannot commit (its majority just went) waits without end.
                let left = deadline.saturating_duration_since(Instant::now());
                tokio::time::timeout(left, self.propose_here(group, command.clone()))
                    .await
                    .unwrap_or_else(|_| Err(ProposeFailure::Failed("timed out".into())))
            } else {
                self.propose_remote(to, group, &command, deadline).await
            };
            match attempt {
                Ok(reply) => return Ok(reply),
                Err(ProposeFailure::NotLeader(Some(leader))) if target != Some(leader) => {
                    target = Some(leader);
                    continue;
                }
                Err(ProposeFailure::Rejected(r)) => return Ok(Reply::Rejected(r)),
                Err(ProposeFailure::Moved) => return Ok(Reply::Moved),
                Err(ProposeFailure::Throttled(ms)) => {
                    return Err(ProposeError::Throttled(group, ms))
                }
                Err(ProposeFailure::NotLeader(_)) | Err(ProposeFailure::NoGroup) => {
                    target = None;
                }
                Err(ProposeFailure::Failed(reason)) => {
                    tracing::debug!(group, %reason, "proposal failed; retrying");
                    target = None;
                }
            }
            if Instant::now() >= deadline {
                return Err(ProposeError::NoLeader(group));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Commits `command` through this node's replica of `group`: its Raft, or the store itself
    /// for a group whose only replica this node is.
    pub async fn propose_here(
        &self,
        group: GroupId,
        command: Command,
    ) -> Result<Reply, ProposeFailure> {
        if let Some(raft) = self.group(group) {
            self.groups.wait_hand_over(group).await;
            // Only the leader keeps the group's throughput budget.
            let leads = raft.metrics().borrow().current_leader == Some(self.me.id);
            let bill = if leads {
                leader_budgets::admit_command(self, group, &command)?
            } else {
                leader_budgets::Bill::default()
            };
            let reply = propose_local(&raft, command).await;
            if matches!(reply, Ok(Reply::Done)) {
                leader_budgets::pay(self, bill);
            }
            return reply;
        }
        let only_here = self.meta_shared.with(|s| {
            s.groups
                .get(&group)
                .is_some_and(|g| g.replicas == [self.me.id])
        });
        if !only_here {
            return Err(ProposeFailure::NoGroup);
        }
        // The only replica, without Raft: written in place, unless a Raft starts for it
        // (a move), which then takes the command.
        let bill = leader_budgets::admit_command(self, group, &command)?;
        let reply = match self
            .groups
            .in_place(group, || self.apply_in_place(command.clone()))
        {
            Some(reply) => reply,
            None => match self.group(group) {
                Some(raft) => propose_local(&raft, command).await,
                None => Err(ProposeFailure::NoGroup),
            },
        };
        if matches!(reply, Ok(Reply::Done)) {
            leader_budgets::pay(self, bill);
        }
        reply
    }

    /// Applies `command` to this node's store for a group whose only replica it is.
    fn apply_in_place(&self, command: Command) -> Result<Reply, ProposeFailure> {
        match command {
            Command::Write { now, writes } => {
                let refs: Vec<(storage::TableId, &storage::Mutation)> =
                    writes.iter().map(|(t, m)| (*t, m)).collect();
                let storage = self.node.storage();
                match storage.apply_replicated(&refs, now, None) {
                    Ok(()) => Ok(Reply::Done),
                    Err(e) => match crate::shard::Rejected::of(&e) {
                        Some(r) => Err(ProposeFailure::Rejected(r)),
                        None => Err(ProposeFailure::Failed(e.to_string())),
                    },
                }
            }
            Command::Cas {
                table,
                partition_key,
                reads,
                mutation,
                ..
            } => {
                // The only replica: the node's own compare-and-set holds the others off.
                let storage = self.node.storage();
                let mut decide = |_: &dyn crate::shard::Shards| {
                    super::cas::still_holds(&reads, |slice| {
                        storage.read_partition(table, &partition_key, slice)
                    })
                    .map(|holds| holds.then(|| mutation.clone()))
                    .map_err(crate::error::QueryError::from)
                };
                match self
                    .node
                    .shards()
                    .compare_and_set(table, &partition_key, &mut decide)
                {
                    Ok(true) => Ok(Reply::Done),
                    Ok(false) => Ok(Reply::CasConflict),
                    Err(e) => Err(ProposeFailure::Failed(format!("{e:?}"))),
                }
            }
            Command::Truncate { table, start, end } => {
                match self.node.storage().truncate_range(table, start, end) {
                    Ok(()) => Ok(Reply::Done),
                    Err(e) => match crate::shard::Rejected::of(&e) {
                        Some(r) => Err(ProposeFailure::Rejected(r)),
                        None => Err(ProposeFailure::Failed(e.to_string())),
                    },
                }
            }
            _ => Err(ProposeFailure::NoGroup),
        }
    }

    async fn propose_remote(
        &self,
        to: NodeId,
        group: GroupId,
        command: &Command,
        deadline: Instant,
    ) -> Result<Reply, ProposeFailure> {
        let Some(addr) = self.address_of(to) else {
            return Err(ProposeFailure::NotLeader(None));
        };
        crate::query_trace::event(|| format!("Forwarding to group {group}'s leader at {addr}"));
        let left = deadline.saturating_duration_since(Instant::now());
        let payload = encode(&Request::Propose(group, command.clone()))
            .map_err(|e| ProposeFailure::Failed(e.to_string()))?;
        let bytes = self
            .transport
            .call(addr, payload, left.max(Duration::from_millis(10)))
            .await
            .map_err(|e| ProposeFailure::Failed(e.to_string()))?;
        match decode::<Response>(&bytes) {
            Ok(Response::Proposed(r)) => r,
            Ok(Response::NoGroup) => Err(ProposeFailure::NoGroup),
            Ok(other) => Err(ProposeFailure::Failed(format!(
                "unexpected answer {other:?}"
            ))),
            Err(e) => Err(ProposeFailure::Failed(e.to_string())),
        }
    }
}
