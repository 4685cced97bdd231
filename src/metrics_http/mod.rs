//! The metrics address (`metrics_listen`): the Prometheus text of the node's series
//! (`crate::metrics`), read fresh from the store and the cluster at each scrape (`scrape`),
//! the status page (`status_page`) and the administrator's operations (`operations`), served
//! by axum ([`serve_metrics`]).

mod endpoint;
mod operations;
mod scrape;
mod status_page;

pub use endpoint::serve_metrics;
