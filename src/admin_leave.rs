//! Admin subcommands that take a node out of the cluster over CQL: `ringdb decommission`
//! (a live node's replicas move to the others, then it leaves) and `ringdb removenode` (a
//! dead node's replicas are made again from the others'). Both follow the node's physical
//! partitions down to none with a progress bar, then wait until the cluster has forgotten it.

use crate::admin::{cell, query_rows, AdminError};
use cql::types::{NativeType, Value};
use indicatif::{ProgressBar, ProgressStyle};
use std::net::SocketAddr;
use std::time::Duration;

/// How often the progress is read.
const POLL: Duration = Duration::from_millis(500);

/// Decommissions the node serving CQL at `addr`.
///
/// # Errors
/// Connection failures, or the server's refusal (an error answer).
pub fn decommission(addr: SocketAddr) -> Result<(), AdminError> {
    let rows = query_rows(addr, "SELECT host_id FROM system.local")?;
    let host = rows
        .first()
        .and_then(|r| r.first())
        .and_then(|c| match cell(c, NativeType::Uuid) {
            Some(Value::Uuid(u)) => Some(u),
            _ => None,
        })
        .ok_or_else(|| AdminError::Protocol("system.local has no host id".into()))?;
    leave(addr, host, "LEAVING")
}

/// Removes the dead node `host`, asking the live node serving CQL at `addr`.
///
/// # Errors
/// As [`decommission`].
pub fn removenode(addr: SocketAddr, host: uuid::Uuid) -> Result<(), AdminError> {
    leave(addr, host, "REMOVING")
}

/// Sets `host`'s state at `addr` and follows it until the cluster has forgotten the node.
fn leave(addr: SocketAddr, host: uuid::Uuid, state: &str) -> Result<(), AdminError> {
    query_rows(
        addr,
        &format!("UPDATE system_views.cluster_nodes SET state = '{state}' WHERE host_id = {host}"),
    )?;
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} partitions moved off {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(host.to_string());
    let mut total = 0u64;
    // Without a terminal (a script, a test) the bar is hidden: each change is a line instead.
    let mut last_line = String::new();
    let mut line = |text: String| {
        if bar.is_hidden() && text != last_line {
            eprintln!("{text}");
            last_line = text;
        }
    };
    loop {
        let held = held_by(addr, host)?;
        let Some(held) = held else {
            line(format!("{host}: left the cluster"));
            bar.set_position(total);
            bar.finish_with_message(format!("{host}: left the cluster"));
            return Ok(());
        };
        total = total.max(held);
        bar.set_length(total);
        bar.set_position(total - held);
        let (received, size) = moves_progress(addr)?;
        line(format!(
            "{host}: {held} partitions held; moving {} of {} MB",
            received / 1_000_000,
            size / 1_000_000
        ));
        if size > 0 {
            bar.set_message(format!(
                "{host} (moving: {} of {} MB)",
                received / 1_000_000,
                size / 1_000_000
            ));
        }
        std::thread::sleep(POLL);
    }
}

/// The physical partitions `host` still holds as `addr` sees them; `None` once it is no
/// longer a member.
fn held_by(addr: SocketAddr, host: uuid::Uuid) -> Result<Option<u64>, AdminError> {
    let rows = query_rows(
        addr,
        "SELECT host_id, groups_held FROM system_views.cluster_nodes",
    )?;
    Ok(rows.iter().find_map(|r| {
        let id = match cell(r.first()?, NativeType::Uuid) {
            Some(Value::Uuid(u)) => u,
            _ => return None,
        };
        let held = match cell(r.get(1)?, NativeType::Int) {
            Some(Value::Int(n)) => u64::try_from(n).unwrap_or(0),
            _ => 0,
        };
        (id == host).then_some(held)
    }))
}

/// Bytes received and bytes in all of the snapshots of the moves in flight.
fn moves_progress(addr: SocketAddr) -> Result<(u64, u64), AdminError> {
    let rows = query_rows(
        addr,
        "SELECT bytes_received, bytes_total FROM system_views.moves",
    )?;
    let big = |c: Option<&Option<bytes::Bytes>>| match c.and_then(|c| cell(c, NativeType::Bigint)) {
        Some(Value::Bigint(n)) => u64::try_from(n).unwrap_or(0),
        _ => 0,
    };
    Ok(rows.iter().fold((0, 0), |(r, t), row| {
        (r + big(row.first()), t + big(row.get(1)))
    }))
}
