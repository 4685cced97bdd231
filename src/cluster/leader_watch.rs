//! Counts each Raft group's leader changes as they happen (`ringdb_raft_leader_changes_total`):
//! a task per group follows the group's metrics channel until the group stops, so a leader
//! that changes twice between two scrapes counts twice.

use super::raft_types::{GroupId, Raft};
use prometheus::IntCounter;

/// Follows `raft` (group `group`) and counts every new leader it learns of, its first
/// included, in `changes`.
pub(super) fn watch(raft: &Raft, group: GroupId, changes: IntCounter) {
    let mut metrics = raft.metrics();
    tokio::spawn(async move {
        let mut last = None;
        loop {
            let leader = metrics.borrow_and_update().current_leader;
            if leader.is_some() && leader != last {
                changes.inc();
                last = leader;
            }
            if metrics.changed().await.is_err() {
                tracing::debug!(group, "the group stopped: its leader is no longer followed");
                return;
            }
        }
    });
}

/// The counter of `group`'s leader changes in `metrics`.
pub(super) fn counter(metrics: &crate::metrics::Metrics, group: GroupId) -> IntCounter {
    metrics
        .scraped()
        .raft_leader_changes
        .with_label_values(&[group.to_string().as_str()])
}
