//! Provisioned throughput in a cluster: each physical partition is a group, and its budget
//! (`crate::throughput::Budgets`) is kept by the group's leader. Every write of a table with
//! a throughput commits through the leader, and every read of one is served there (a
//! follower refuses it with the leader's name, at ONE too: `super::replica_read`). The leader
//! admits each request and then charges it by the same model the coordinator tallies the
//! request's `RequestCharge` with (`crate::throughput::request_units`). A table's budget is
//! divided among its groups.

use super::raft_types::{Command, GroupId};
use super::routing::ranges_of;
use super::rpc::ProposeFailure;
use super::Cluster;
use crate::throughput::request_units::{self as ru, ReadCost};
use storage::TableId;

/// What a command admitted at the leader costs once committed: the table, the end of its
/// group's range, and the request units.
#[derive(Debug, Default)]
pub struct Bill(Vec<(TableId, i64, f64)>);

/// How many groups `table` has.
fn group_count(cluster: &Cluster, table: TableId) -> Option<usize> {
    let n = cluster.meta_state().with(|s| ranges_of(s, table).len());
    (n > 0).then_some(n)
}

/// The table of `group` and the last token it owns.
fn group_range(cluster: &Cluster, group: GroupId) -> Option<(TableId, i64)> {
    cluster
        .meta_state()
        .with(|s| s.groups.get(&group).map(|g| (g.table, g.end)))
}

/// Admits a request to `table`'s budget in `group`, on the group's leader.
fn admit(cluster: &Cluster, table: TableId, end: i64) -> Result<(), ProposeFailure> {
    let counts = |t: TableId| group_count(cluster, t);
    cluster
        .node()
        .budgets()
        .admit(&counts, table, end)
        .map_err(ProposeFailure::Throttled)
}

/// Admits `command` to its group's budget, on the leader of `group`; what it costs once
/// committed (nothing for a table without throughput, or a command that is no write).
///
/// # Errors
/// `Throttled` with the milliseconds until the budget refills.
pub fn admit_command(
    cluster: &Cluster,
    group: GroupId,
    command: &Command,
) -> Result<Bill, ProposeFailure> {
    let budgets = cluster.node().budgets();
    let mut costs: Vec<(TableId, f64)> = Vec::new();
    match command {
        Command::Write { writes, .. } => {
            for (table, m) in writes {
                if budgets.limits(*table) {
                    costs.push((*table, ru::write(m.data_size() as u64)));
                }
            }
        }
        Command::Cas {
            table, mutation, ..
        } if budgets.limits(*table) => {
            // The conditions' reads were charged as the reads they were.
            costs.push((*table, ru::conditional_write(mutation.data_size() as u64)));
        }
        _ => {}
    }
    if costs.is_empty() {
        return Ok(Bill::default());
    }
    let Some((_, end)) = group_range(cluster, group) else {
        return Ok(Bill::default());
    };
    let mut bill = Bill::default();
    for (table, cost) in costs {
        if !bill.0.iter().any(|(t, _, _)| *t == table) {
            admit(cluster, table, end)?;
        }
        bill.0.push((table, end, cost));
    }
    Ok(bill)
}

/// Charges a committed command's `bill`.
pub fn pay(cluster: &Cluster, bill: Bill) {
    if bill.0.is_empty() {
        return;
    }
    let counts = |t: TableId| group_count(cluster, t);
    for (table, end, cost) in bill.0 {
        cluster.node().budgets().charge(&counts, table, end, cost);
    }
}

/// Charges a lightweight transaction's write of `bytes` to `table` in `group` (made in
/// place on the group's only replica).
pub fn pay_write(cluster: &Cluster, group: GroupId, table: TableId, bytes: u64) {
    if let Some((_, end)) = group_range(cluster, group) {
        let bill = Bill(vec![(table, end, ru::conditional_write(bytes))]);
        pay(cluster, bill);
    }
}

/// Whether reads of `table` are metered (then only the group's leader serves them).
pub fn metered(cluster: &Cluster, table: TableId) -> bool {
    cluster.node().budgets().limits(table)
}

/// Admits a read of `table` to the budget of `group`, on its leader.
///
/// # Errors
/// `Throttled` with the milliseconds until the budget refills.
pub fn admit_read(cluster: &Cluster, group: GroupId, table: TableId) -> Result<(), ProposeFailure> {
    match group_range(cluster, group) {
        Some((_, end)) => admit(cluster, table, end),
        None => Ok(()),
    }
}

/// Charges what a read of `table` in `group` returned (twice for a linearizable read).
pub fn pay_read(
    cluster: &Cluster,
    group: GroupId,
    table: TableId,
    linearizable: bool,
    read: &impl ReadCost,
) {
    let Some((_, end)) = group_range(cluster, group) else {
        return;
    };
    let factor = if linearizable { 2.0 } else { 1.0 };
    let counts = |t: TableId| group_count(cluster, t);
    cluster
        .node()
        .budgets()
        .charge(&counts, table, end, factor * read.read_cost());
}
