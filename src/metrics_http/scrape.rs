//! What a scrape reads before the series are written out: the store's engine counters, each
//! table's physical partitions and bytes, the disk, and (in a cluster) the local Raft
//! replicas and the moves in flight.

use crate::metrics::ScrapedSeries;
use crate::node::Node;
use prometheus::{Counter, IntCounter};

/// Raises `counter` to `value` (a total the store keeps itself).
fn raise(counter: &IntCounter, value: u64) {
    let now = counter.get();
    if value > now {
        counter.inc_by(value - now);
    }
}

fn raise_float(counter: &Counter, value: f64) {
    let now = counter.get();
    if value > now {
        counter.inc_by(value - now);
    }
}

/// Reads what the store and the cluster of `node` report, then writes every series out in
/// Prometheus's text format.
pub(super) fn render(node: &Node) -> String {
    let metrics = node.metrics();
    read(node, metrics.scraped());
    metrics.publish_request_units();
    metrics.text()
}

/// Sets the scraped series from `node`.
fn read(node: &Node, s: &ScrapedSeries) {
    s.in_flight.set(node.requests_in_flight() as i64);
    let storage = node.storage();
    let e = storage.engine_stats();
    s.memtable_bytes.set(e.memtable_bytes as i64);
    s.pending_flushes.set(e.pending_flushes as i64);
    s.running_compactions.set(e.running_compactions as i64);
    raise(&s.compactions, e.compactions_completed);
    raise_float(&s.compaction_seconds, e.compaction_seconds);
    raise(&s.compaction_bytes, e.bytes_compacted);
    s.disk_used.set(e.disk_bytes as i64);
    s.journal_bytes.set(e.journal_bytes as i64);
    s.block_cache_bytes.set(e.block_cache_bytes as i64);
    raise(&s.item_cache_hits, e.item_cache_hits);
    raise(&s.item_cache_misses, e.item_cache_misses);
    raise(&s.items_read, e.items_read);
    s.vector_index_backlog
        .set(i64::try_from(e.vector_index_backlog).unwrap_or(i64::MAX));
    s.index_builds_pending
        .set(i64::try_from(e.index_builds_pending).unwrap_or(i64::MAX));
    if let Ok(free) = fs4::available_space(&node.config().data_dir) {
        s.disk_free.set(i64::try_from(free).unwrap_or(i64::MAX));
    }
    tables(node, s);
    if let Some(cluster) = node.cluster().filter(|_| node.has_peers()) {
        raft(cluster.as_ref(), s);
    }
}

fn tables(node: &Node, s: &ScrapedSeries) {
    s.table_bytes.reset();
    s.partition_bytes.reset();
    s.physical_partitions.reset();
    s.largest_partition.reset();
    let (mut splitting, mut copied, mut expected) = (0i64, 0u64, 0u64);
    let catalog = node.catalog();
    for ks in catalog
        .keyspaces
        .values()
        .filter(|k| !crate::schema::is_system_keyspace(&k.name))
    {
        for t in ks.tables.values() {
            let Ok(parts) = node
                .storage()
                .physical_partitions(crate::schema::table_id(t))
            else {
                continue;
            };
            let labels = [ks.name.as_str(), t.name.as_str()];
            let bytes: u64 = parts.iter().map(|p| p.bytes).sum();
            s.table_bytes
                .with_label_values(&labels)
                .set(i64::try_from(bytes).unwrap_or(i64::MAX));
            s.physical_partitions
                .with_label_values(&labels)
                .set(parts.len() as i64);
            for p in &parts {
                let id = p.id.to_string();
                s.partition_bytes
                    .with_label_values(&[labels[0], labels[1], id.as_str()])
                    .set(i64::try_from(p.bytes).unwrap_or(i64::MAX));
                if let Some((done, of)) = p.split_progress {
                    splitting += 1;
                    copied += done;
                    expected += of.max(done);
                }
            }
            let largest = parts.iter().map(|p| p.largest_partition_bytes).max();
            s.largest_partition
                .with_label_values(&labels)
                .set(i64::try_from(largest.unwrap_or(0)).unwrap_or(i64::MAX));
        }
    }
    s.splits_running.set(splitting);
    s.split_bytes_copied
        .set(i64::try_from(copied).unwrap_or(i64::MAX));
    s.split_bytes_expected
        .set(i64::try_from(expected).unwrap_or(i64::MAX));
}

fn raft(cluster: &dyn crate::cluster_hooks::ClusterHooks, s: &ScrapedSeries) {
    let groups = cluster.raft_groups();
    s.raft_term.reset();
    s.raft_log_lag.reset();
    s.groups_led
        .set(groups.iter().filter(|g| g.leads).count() as i64);
    s.groups_held
        .set(groups.iter().filter(|g| g.group != 0).count() as i64);
    for g in &groups {
        let id = g.group.to_string();
        s.raft_term
            .with_label_values(&[id.as_str()])
            .set(i64::try_from(g.term).unwrap_or(i64::MAX));
        s.raft_log_lag
            .with_label_values(&[id.as_str()])
            .set(i64::try_from(g.lag).unwrap_or(i64::MAX));
    }
    let moves = cluster.moves();
    s.moves_running.set(moves.len() as i64);
    s.move_bytes.reset();
    for m in &moves {
        s.move_bytes
            .with_label_values(&[m.group.to_string().as_str()])
            .set(i64::try_from(m.bytes_received).unwrap_or(i64::MAX));
    }
}
