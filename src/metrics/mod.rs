//! Prometheus metrics: the node's series ([`Metrics`]), counted as requests run
//! ([`RequestClass`], per-table [`latency`] histograms). The metrics address that serves them
//! is `crate::metrics_http`.

pub mod clock;
pub mod coordinated;
pub mod latency;
mod request_class;
mod request_latency;
mod series;

pub use latency::{LatencySummary, Operation, TableLatencies};
pub use request_class::RequestClass;
pub use series::{Metrics, MetricsError, ScrapedSeries};
