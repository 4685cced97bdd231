//! Raft's network for one group: its RPCs travel over the shared internode transport (one
//! connection per peer for every group), addressed to the group by id.

use super::codec::{decode, encode};
use super::raft_types::{GroupId, NodeId, TypeConfig};
use super::rpc::{Request, Response};
use super::transport::Transport;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use std::net::SocketAddr;

/// Makes a [`GroupLink`] per peer for one group.
pub struct GroupNetwork {
    group: GroupId,
    transport: Transport,
}

impl GroupNetwork {
    /// The network of `group`.
    pub fn new(group: GroupId, transport: Transport) -> GroupNetwork {
        GroupNetwork { group, transport }
    }
}

impl RaftNetworkFactory<TypeConfig> for GroupNetwork {
    type Network = GroupLink;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> GroupLink {
        GroupLink {
            group: self.group,
            target,
            addr: node.addr.parse().ok(),
            transport: self.transport.clone(),
        }
    }
}

/// One group's link to one peer.
pub struct GroupLink {
    group: GroupId,
    target: NodeId,
    addr: Option<SocketAddr>,
    transport: Transport,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct LinkError(String);

impl GroupLink {
    async fn call<E: std::error::Error>(
        &self,
        request: &Request,
        option: &RPCOption,
    ) -> Result<Response, RPCError<NodeId, BasicNode, E>> {
        let addr = self
            .addr
            .ok_or_else(|| Unreachable::new(&LinkError("bad peer address".into())))?;
        let payload = encode(request).map_err(|e| NetworkError::new(&e))?;
        let bytes = self
            .transport
            .call(addr, payload, option.hard_ttl())
            .await
            .map_err(|e| Unreachable::new(&LinkError(e.to_string())))?;
        let response: Response = decode(&bytes).map_err(|e| NetworkError::new(&e))?;
        match response {
            // Unreachable, so openraft backs off before it tries again.
            Response::NoGroup => Err(Unreachable::new(&LinkError(format!(
                "node {} holds no replica of group {} (yet)",
                self.target, self.group
            )))
            .into()),
            Response::BadRequest(m) => Err(NetworkError::new(&LinkError(m)).into()),
            other => Ok(other),
        }
    }

    fn unexpected<E: std::error::Error>() -> RPCError<NodeId, BasicNode, E> {
        NetworkError::new(&LinkError("unexpected response".into())).into()
    }
}

impl RaftNetwork<TypeConfig> for GroupLink {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        match self
            .call(&Request::AppendEntries(self.group, rpc), &option)
            .await?
        {
            Response::AppendEntries(r) => r.map_err(|e| RemoteError::new(self.target, e).into()),
            _ => Err(Self::unexpected()),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>,
    > {
        match self
            .call(&Request::InstallSnapshot(self.group, rpc), &option)
            .await?
        {
            Response::InstallSnapshot(r) => r.map_err(|e| RemoteError::new(self.target, e).into()),
            _ => Err(Self::unexpected()),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        match self.call(&Request::Vote(self.group, rpc), &option).await? {
            Response::Vote(r) => r.map_err(|e| RemoteError::new(self.target, e).into()),
            _ => Err(Self::unexpected()),
        }
    }
}
