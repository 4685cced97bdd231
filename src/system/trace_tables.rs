//! `system_traces.sessions` and `system_traces.events`: the node's traced requests
//! (`crate::query_trace`), with Cassandra's columns.

use super::ring_tables::NamedRow;
use crate::query_trace::TraceSession;
use cql::types::Value;
use std::time::UNIX_EPOCH;

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

/// `system_traces.sessions`: one row per trace.
pub(super) fn sessions(traces: &[TraceSession]) -> Vec<NamedRow> {
    traces
        .iter()
        .map(|t| {
            let started = t
                .started_at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
            let parameters = t
                .parameters
                .iter()
                .map(|(k, v)| (text(k.clone()), text(v.clone())))
                .collect();
            vec![
                ("session_id", Value::Uuid(t.id)),
                ("client", Value::Inet(t.client)),
                ("command", text(t.command)),
                ("coordinator", Value::Inet(t.coordinator)),
                (
                    "coordinator_port",
                    Value::Int(i32::from(t.coordinator_port)),
                ),
                ("duration", Value::Int(t.duration_us)),
                ("parameters", Value::Map(parameters)),
                ("request", text(t.request.clone())),
                ("started_at", Value::Timestamp(started)),
            ]
        })
        .collect()
}

/// `system_traces.events`: each trace's events, in order.
pub(super) fn events(traces: &[TraceSession]) -> Vec<NamedRow> {
    let mut out = Vec::new();
    for t in traces {
        for (id, e) in &t.events {
            out.push(vec![
                ("session_id", Value::Uuid(t.id)),
                ("event_id", Value::Timeuuid(*id)),
                ("activity", text(e.activity.clone())),
                ("source", Value::Inet(t.coordinator)),
                ("source_elapsed", Value::Int(e.elapsed_us)),
                ("source_port", Value::Int(i32::from(t.coordinator_port))),
                ("thread", text(e.thread.clone())),
            ]);
        }
    }
    out
}
