//! Gathers what the node's own `system_views` tables show ([`crate::system::NodeView`]):
//! settings, clients, the engine's counters, the worker pools, the tables' latencies.

use crate::node::Node;
use crate::system::{NodeView, ThreadPool};
use cql::response::codes;

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The node's view now.
pub(super) fn node_view(node: &Node) -> NodeView {
    let config = node.config();
    let engine = node.storage().engine_stats();
    let metrics = node.metrics();
    let pools = vec![
        ThreadPool {
            name: "Native-Transport-Requests",
            active: signed(node.requests_in_flight() as u64),
            limit: signed(config.max_concurrent_requests as u64),
            pending: 0,
            completed: signed(metrics.requests_answered()),
            blocked_all_time: signed(metrics.errors_of(codes::OVERLOADED)),
        },
        ThreadPool {
            name: "ReadThreads",
            active: 0,
            limit: signed(config.read_threads() as u64),
            pending: 0,
            completed: signed(node.reads_handed_over()),
            blocked_all_time: 0,
        },
        ThreadPool {
            name: "CompactionExecutor",
            active: signed(engine.running_compactions),
            limit: signed(config.compaction_threads as u64),
            pending: 0,
            completed: signed(engine.compactions_completed),
            blocked_all_time: 0,
        },
        ThreadPool {
            name: "MemtableFlushWriter",
            active: 0,
            limit: 1,
            pending: signed(engine.pending_flushes),
            completed: 0,
            blocked_all_time: 0,
        },
    ];
    NodeView {
        settings: config.settings(),
        clients: node.clients().all(),
        engine,
        pools,
        latencies: metrics.table_latencies(),
    }
}
