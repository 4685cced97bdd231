//! The snapshot transfers of replica moves, for `system_views.moves` and `ringdb status`:
//! this node's (bytes of each range snapshot it sends, bytes received of each it receives)
//! and its peers' (reported with their pings).

use super::raft_types::{GroupId, NodeId};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// One group's transfer as a node sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    /// The group.
    pub group: GroupId,
    /// Bytes of the snapshot this node sends (0: it sends none).
    pub sending: u64,
    /// Bytes of a snapshot this node received so far (0: it receives none).
    pub received: u64,
}

/// This node's transfers and those its peers reported.
#[derive(Default)]
pub struct Transfers {
    local: Mutex<HashMap<GroupId, Transfer>>,
    peers: Mutex<HashMap<NodeId, Vec<Transfer>>>,
    /// When this node first saw each move in flight.
    started: Mutex<HashMap<GroupId, Instant>>,
}

impl Transfers {
    /// This node sends `group`'s snapshot of `bytes`.
    pub fn sending(&self, group: GroupId, bytes: u64) {
        let mut local = self.local.lock().unwrap_or_else(|p| p.into_inner());
        let t = local.entry(group).or_insert(Transfer {
            group,
            ..Transfer::default()
        });
        t.sending = bytes;
    }

    /// This node has received `bytes` of `group`'s snapshot so far.
    pub fn received(&self, group: GroupId, bytes: u64) {
        let mut local = self.local.lock().unwrap_or_else(|p| p.into_inner());
        let t = local.entry(group).or_insert(Transfer {
            group,
            ..Transfer::default()
        });
        t.received = bytes;
    }

    /// Forgets this node's transfers of groups no longer moving (after every metadata change:
    /// a group that moves again starts from nothing).
    pub fn retain(&self, in_flight: &[GroupId]) {
        self.local
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|g, _| in_flight.contains(g));
        self.started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|g, _| in_flight.contains(g));
    }

    /// This node's transfers (for its pings' answers).
    pub fn local(&self) -> Vec<Transfer> {
        let local = self.local.lock().unwrap_or_else(|p| p.into_inner());
        local.values().copied().collect()
    }

    /// Records what `peer` reported.
    pub fn reported(&self, peer: NodeId, transfers: Vec<Transfer>) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.insert(peer, transfers);
    }

    /// The largest snapshot size and bytes received anyone reported for `group`, and how
    /// long ago this node first saw its move (`in_flight` lists the moves in flight: the
    /// others' records are dropped).
    pub fn progress(&self, group: GroupId, in_flight: &[GroupId]) -> (u64, u64, u64) {
        let mut started = self.started.lock().unwrap_or_else(|p| p.into_inner());
        started.retain(|g, _| in_flight.contains(g));
        let since = *started.entry(group).or_insert_with(Instant::now);
        self.local
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|g, _| in_flight.contains(g));
        let peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        let local = self.local();
        let all = local.iter().chain(peers.values().flatten());
        let (mut total, mut received) = (0, 0);
        for t in all.filter(|t| t.group == group) {
            total = total.max(t.sending);
            received = received.max(t.received);
        }
        let elapsed = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
        (total, received.min(total.max(received)), elapsed)
    }
}
