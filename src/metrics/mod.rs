//! Prometheus metrics: the node's series ([`Metrics`]), counted as requests run and read from
//! the store and the cluster at each scrape (`scrape`), served in Prometheus's text format at
//! `metrics_listen` ([`serve_metrics`]).

mod endpoint;
mod latency;
mod operations;
mod request_class;
mod scrape;
mod series;
mod status_page;

pub use endpoint::serve_metrics;
pub use latency::{LatencySummary, Operation, TableLatencies};
pub use request_class::RequestClass;
pub use series::{Metrics, MetricsError};

impl Metrics {
    /// Reads what the store and the cluster of `node` report, then writes every series out in
    /// Prometheus's text format.
    pub fn scrape(&self, node: &crate::node::Node) -> String {
        scrape::read(node, &self.scraped);
        self.publish_request_units();
        self.text()
    }
}
