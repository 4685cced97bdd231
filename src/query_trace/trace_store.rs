//! `Traces`: the node's traced requests, as `system_traces.sessions` and `system_traces.events`
//! show them. Kept in memory, most recent last, for a day (Cassandra's trace rows have a
//! one-day TTL) and at most `MAX_SESSIONS` of them. In a cluster the coordinator also sends
//! each trace to its peers (as Cassandra's `system_traces` rows are replicated), so a driver
//! reads it from whichever node it asks.

use super::recorder::TraceEvent;
use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// How long a trace is kept (Cassandra's `system_traces` TTL).
pub const TRACE_TTL: Duration = Duration::from_secs(24 * 3600);
/// Traces kept at most; the oldest go first.
const MAX_SESSIONS: usize = 10_000;

/// One traced request: a `system_traces.sessions` row and its events.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TraceSession {
    /// Its id (the tracing id the response carried).
    pub id: Uuid,
    /// The client's address.
    pub client: IpAddr,
    /// `QUERY` (Cassandra's command for CQL requests).
    #[serde(skip, default = "query_command")]
    pub command: &'static str,
    /// This node's address and CQL port.
    pub coordinator: IpAddr,
    /// This node's CQL port.
    pub coordinator_port: u16,
    /// Microseconds from start to answer.
    pub duration_us: i32,
    /// The request's query, consistency level, page size...
    pub parameters: BTreeMap<String, String>,
    /// What the request was (`Execute CQL3 query` ...).
    pub request: String,
    /// When it started.
    pub started_at: SystemTime,
    /// Its events, in order.
    pub events: Vec<(Uuid, TraceEvent)>,
}

/// Cassandra's command for CQL requests, the one every trace has.
fn query_command() -> &'static str {
    "QUERY"
}

/// The node's traces.
#[derive(Default)]
pub struct Traces {
    sessions: Mutex<VecDeque<TraceSession>>,
}

impl Traces {
    /// Keeps `session` (one with the id of a kept one replaces it); traces past their day
    /// (or past the most kept) go.
    pub fn record(&self, session: TraceSession) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|s| s.id != session.id);
        sessions.push_back(session);
        prune(&mut sessions);
    }

    /// The traces kept now, oldest first.
    pub fn all(&self) -> Vec<TraceSession> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        prune(&mut sessions);
        sessions.iter().cloned().collect()
    }
}

fn prune(sessions: &mut VecDeque<TraceSession>) {
    while sessions.len() > MAX_SESSIONS {
        sessions.pop_front();
    }
    let now = SystemTime::now();
    while sessions.front().is_some_and(|s| {
        now.duration_since(s.started_at)
            .is_ok_and(|age| age > TRACE_TTL)
    }) {
        sessions.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(started_at: SystemTime) -> TraceSession {
        TraceSession {
            id: Uuid::new_v4(),
            client: IpAddr::from([127, 0, 0, 1]),
            command: "QUERY",
            coordinator: IpAddr::from([127, 0, 0, 1]),
            coordinator_port: 9042,
            duration_us: 10,
            parameters: BTreeMap::new(),
            request: "Execute CQL3 query".into(),
            started_at,
            events: Vec::new(),
        }
    }

    #[test]
    fn traces_expire_after_a_day() {
        let traces = Traces::default();
        let old = SystemTime::now() - TRACE_TTL - Duration::from_secs(1);
        traces.record(session(old));
        let fresh = session(SystemTime::now());
        traces.record(fresh.clone());
        assert_eq!(traces.all(), vec![fresh]);
    }
}
