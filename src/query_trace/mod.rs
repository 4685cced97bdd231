//! Query tracing as Cassandra's: a request whose frame sets the tracing flag (or that
//! `trace_probability` picks) records its steps ([`recorder`]), and its response carries the
//! tracing session id; the trace is kept ([`Traces`]) and read from `system_traces.sessions`
//! and `system_traces.events`, as cqlsh's `TRACING ON` and the drivers' trace APIs read it.
//! A request slower than `slow_query_log_ms` is kept there too (its session row).

pub mod recorder;
mod trace_store;

pub use recorder::{active, capture, event, TraceEvent};
pub use trace_store::{TraceSession, Traces, TRACE_TTL};
