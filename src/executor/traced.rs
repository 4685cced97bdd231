//! How a request is traced (`crate::query_trace`): what its `system_traces.sessions` row says
//! of it (the request, its query and parameters), and the row once it has run.

use super::Known;
use crate::node::Node;
use crate::query_trace::{TraceEvent, TraceSession};
use cql::request::{QueryParameters, Request};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use uuid::Uuid;

/// Whether a request is traced: its frame asked for it, or `trace_probability` picks it.
pub(super) fn traced(asked: bool, probability: f64) -> bool {
    asked || (probability > 0.0 && fastrand::f64() < probability)
}

/// What the sessions row says of a request, taken before it runs.
pub(super) struct Described {
    request: &'static str,
    parameters: BTreeMap<String, String>,
    first_event: String,
}

fn parameters_of(query: &str, params: &QueryParameters) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    p.insert("query".to_string(), query.to_string());
    p.insert(
        "consistency_level".to_string(),
        params.consistency.to_string(),
    );
    if let Some(size) = params.page_size {
        p.insert("page_size".to_string(), size.to_string());
    }
    if let Some(serial) = params.serial_consistency {
        p.insert("serial_consistency_level".to_string(), serial.to_string());
    }
    p
}

/// Describes `request` (with what dispatch already `known`).
pub(super) fn describe(request: &Request, known: &Known) -> Described {
    match request {
        Request::Query(q) => Described {
            request: "Execute CQL3 query",
            parameters: parameters_of(&q.query, &q.params),
            first_event: format!("Parsing {}", q.query),
        },
        Request::Execute(e) => {
            let query = match known {
                Known::Prepared(p) => p.query.clone(),
                _ => String::new(),
            };
            Described {
                request: "Execute CQL3 prepared query",
                first_event: format!("Executing prepared statement {query}"),
                parameters: parameters_of(&query, &e.params),
            }
        }
        Request::Batch(b) => {
            let mut parameters = BTreeMap::new();
            parameters.insert("consistency_level".to_string(), b.consistency.to_string());
            Described {
                request: "Execute batch of CQL3 queries",
                first_event: format!("Executing a batch of {} statements", b.statements.len()),
                parameters,
            }
        }
        Request::Prepare(p) => {
            let mut parameters = BTreeMap::new();
            parameters.insert("query".to_string(), p.query.clone());
            Described {
                request: "Preparing CQL3 query",
                first_event: format!("Preparing {}", p.query),
                parameters,
            }
        }
        _ => Described {
            request: "Execute CQL3 request",
            first_event: "Executing a request".to_string(),
            parameters: BTreeMap::new(),
        },
    }
}

impl Described {
    /// The trace's first event.
    pub(super) fn first_event(&self) -> String {
        self.first_event.clone()
    }
}

/// A time-based (version 1) id at `at`, made unique within a trace by `n`.
fn timeuuid(at: SystemTime, n: u32, node: &[u8; 6]) -> Uuid {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default()
        + Duration::from_nanos(u64::from(n) * 100);
    let ts = uuid::Timestamp::from_unix(uuid::NoContext, since.as_secs(), since.subsec_nanos());
    Uuid::new_v1(ts, node)
}

/// Keeps the trace of a request `described`, started at `started_at`, that took `took`, with
/// its `events` (none for a slow request that was not traced); returns the session id.
pub(super) fn keep(
    node: &Node,
    client: std::net::IpAddr,
    described: Described,
    started_at: SystemTime,
    took: Duration,
    events: Vec<TraceEvent>,
) -> Uuid {
    let host = node.info().host_id.as_bytes();
    let node_id = [host[10], host[11], host[12], host[13], host[14], host[15]];
    let id = timeuuid(started_at, 0, &node_id);
    let events = events
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            (
                timeuuid(e.at, u32::try_from(i).unwrap_or(u32::MAX), &node_id),
                e,
            )
        })
        .collect();
    let session = TraceSession {
        id,
        client,
        command: "QUERY",
        coordinator: node.info().rpc_address,
        coordinator_port: node.info().rpc_port,
        duration_us: i32::try_from(took.as_micros()).unwrap_or(i32::MAX),
        parameters: described.parameters,
        request: described.request.to_string(),
        started_at,
        events,
    };
    if let Some(cluster) = node.cluster().filter(|_| node.has_peers()) {
        cluster.share_trace(&session);
    }
    node.traces().record(session);
    id
}
