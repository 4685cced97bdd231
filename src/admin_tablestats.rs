//! `ringdb tablestats [KS[.TABLE]]`: each table's physical partitions, bytes, logical
//! partitions and local latencies, as `nodetool tablestats` prints them, read from a running
//! server's `system_views` over CQL.

use crate::admin::{query_rows, AdminError};
use bytes::Bytes;
use cql::types::{DataType, NativeType, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;

fn decoded(c: &Option<Bytes>, ty: NativeType) -> Option<Value> {
    c.as_ref()
        .and_then(|b| Value::decode(&DataType::Native(ty), b).ok())
}

fn text(c: &Option<Bytes>) -> String {
    match decoded(c, NativeType::Text) {
        Some(Value::Text(s)) => s,
        _ => String::new(),
    }
}

fn bigint(c: &Option<Bytes>) -> i64 {
    match decoded(c, NativeType::Bigint) {
        Some(Value::Bigint(n)) => n,
        _ => 0,
    }
}

fn double(c: &Option<Bytes>) -> f64 {
    match decoded(c, NativeType::Double) {
        Some(Value::Double(n)) => n,
        _ => 0.0,
    }
}

/// One table's figures.
#[derive(Default)]
struct Stats {
    partitions: i64,
    splitting: i64,
    bytes: i64,
    logical: i64,
    /// (count, p50 ms, p99 ms, max ms) of local reads, writes, scans.
    latencies: BTreeMap<&'static str, (i64, f64, f64, f64)>,
}

/// Whether `keyspace.table` is selected by `filter` (`KS` or `KS.TABLE`; none: every table).
fn selected(filter: Option<&str>, keyspace: &str, table: &str) -> bool {
    match filter.map(|f| f.split_once('.').unwrap_or((f, ""))) {
        None => true,
        Some((ks, "")) => ks == keyspace,
        Some((ks, t)) => ks == keyspace && t == table,
    }
}

/// Prints the tables of a running server at `addr` selected by `filter`.
///
/// # Errors
/// Connection failures or an error answer.
pub fn tablestats(addr: SocketAddr, filter: Option<&str>) -> Result<(), AdminError> {
    let mut tables: BTreeMap<(String, String), Stats> = BTreeMap::new();
    let parts = query_rows(
        addr,
        "SELECT keyspace_name, table_name, bytes, partitions_estimate, state FROM system_views.physical_partitions",
    )?;
    for r in parts.iter().filter(|r| r.len() == 5) {
        let key = (text(&r[0]), text(&r[1]));
        if !selected(filter, &key.0, &key.1) {
            continue;
        }
        let s = tables.entry(key).or_default();
        s.partitions += 1;
        s.bytes += bigint(&r[2]);
        s.logical += bigint(&r[3]);
        if text(&r[4]) != "active" {
            s.splitting += 1;
        }
    }
    for (view, name) in [
        ("local_read_latency", "read"),
        ("local_write_latency", "write"),
        ("local_scan_latency", "scan"),
    ] {
        let rows = query_rows(
            addr,
            &format!(
                "SELECT keyspace_name, table_name, count, p50th_ms, p99th_ms, max_ms FROM system_views.{view}"
            ),
        )?;
        for r in rows.iter().filter(|r| r.len() == 6) {
            if let Some(s) = tables.get_mut(&(text(&r[0]), text(&r[1]))) {
                let figures = (bigint(&r[2]), double(&r[3]), double(&r[4]), double(&r[5]));
                s.latencies.insert(name, figures);
            }
        }
    }
    let mut keyspace = None;
    for ((ks, table), s) in &tables {
        if keyspace != Some(ks) {
            println!("Keyspace: {ks}");
            keyspace = Some(ks);
        }
        println!("\tTable: {table}");
        println!(
            "\tPhysical partitions: {} ({} splitting)",
            s.partitions, s.splitting
        );
        println!("\tSpace used (bytes): {}", s.bytes);
        println!("\tNumber of partitions (estimate): {}", s.logical);
        for name in ["read", "write", "scan"] {
            let (count, p50, p99, max) = s.latencies.get(name).copied().unwrap_or_default();
            println!("\tLocal {name} count: {count}");
            println!("\tLocal {name} latency: p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms");
        }
        println!();
    }
    println!("{} tables", tables.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_selects_a_keyspace_or_a_table() {
        assert!(selected(None, "ks", "t"));
        assert!(selected(Some("ks"), "ks", "t"));
        assert!(!selected(Some("ks"), "other", "t"));
        assert!(selected(Some("ks.t"), "ks", "t"));
        assert!(!selected(Some("ks.t"), "ks", "u"));
    }
}
