//! ringdb: a Cassandra-compatible (CQL native protocol v3/v4) database server.
//!
//! Module map: [`config`] settings; [`server`] the accept loop and shutdown; [`connection`]
//! one socket: frames, the dispatch step, the writer and the read threads; [`tls`] TLS for
//! client connections; [`session`] per-connection state and [`context`] what a request knows
//! of it; [`auth`] authentication, roles and permissions; [`node`] the shared state;
//! [`planner`] statements to plans; [`executor`] binding and running plans; [`shard`] the one
//! seam to table data; [`schema`] the catalog; [`system`] system tables; [`describe`]
//! server-side DESCRIBE; [`prepared`] the prepared-statement cache; [`error`] `QueryError` and
//! its mapping to protocol errors; [`admin`] the `partitions` command.

pub mod admin;
pub mod admin_leave;
pub mod admin_operations;
pub mod admin_tablestats;
pub mod auth;
pub mod client_registry;
pub mod client_warnings;
pub mod cluster;
pub mod cluster_hooks;
pub mod config;
pub mod connection;
pub mod context;
pub mod describe;
pub mod error;
pub mod executor;
pub mod host_memory;
pub mod metrics;
pub mod metrics_http;
pub mod node;
pub mod planner;
pub mod prepared;
pub mod query_trace;
pub mod schema;
pub mod server;
pub mod session;
pub mod shard;
pub mod snapshots;
pub mod system;
pub mod throughput;
pub mod tls;
pub mod udf;
