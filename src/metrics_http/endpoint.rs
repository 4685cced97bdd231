//! The metrics address (`metrics_listen`, ScyllaDB's port 9180 by default): `/metrics` in
//! Prometheus's text format, read fresh at each scrape, and the status page (`/`).

use super::operations::{Operation, Told};
use crate::node::Node;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// Prometheus's text format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

async fn metrics(State(node): State<Arc<Node>>) -> impl IntoResponse {
    let text = tokio::task::spawn_blocking(move || super::scrape::render(&node))
        .await
        .unwrap_or_default();
    ([(header::CONTENT_TYPE, TEXT_FORMAT)], text)
}

async fn status_page() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        super::status_page::PAGE,
    )
}

async fn status_json(State(node): State<Arc<Node>>) -> impl IntoResponse {
    let json = tokio::task::spawn_blocking(move || super::status_page::status_json(&node))
        .await
        .unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], json)
}

/// `?table=KS` or `?table=KS.TABLE`.
#[derive(serde::Deserialize)]
struct Target {
    table: Option<String>,
}

/// Runs `op` on a blocking thread and streams what it tells, a line at a time (see
/// [`Told::wire`]), ending with `failed WHY` if it fails part-way. An operation that cannot
/// start is refused with 400 and the reason.
async fn operate(node: Arc<Node>, op: Operation) -> Response {
    if let Some(why) = super::operations::refusal(&node, &op) {
        return (StatusCode::BAD_REQUEST, why).into_response();
    }
    let (lines, receiver) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::task::spawn_blocking(move || {
        let failed = lines.clone();
        let done = super::operations::run(&node, &op, &mut |told: Told| {
            let _ = lines.send(told.wire());
        });
        if let Err(why) = done {
            let _ = failed.send(format!("failed {}\n", why.replace('\n', " ")));
        }
    });
    let body = futures::stream::unfold(receiver, |mut receiver| async move {
        let line = receiver.recv().await?;
        Some((Ok::<_, std::convert::Infallible>(line), receiver))
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        axum::body::Body::from_stream(body),
    )
        .into_response()
}

async fn flush(State(node): State<Arc<Node>>, Query(target): Query<Target>) -> Response {
    operate(node, Operation::Flush(target.table)).await
}

async fn compact(State(node): State<Arc<Node>>, Query(target): Query<Target>) -> Response {
    operate(node, Operation::Compact(target.table)).await
}

/// `?name=NAME`.
#[derive(serde::Deserialize)]
struct Named {
    name: String,
}

async fn snapshot(State(node): State<Arc<Node>>, Query(named): Query<Named>) -> Response {
    operate(node, Operation::Snapshot(named.name)).await
}

async fn cleanup(State(node): State<Arc<Node>>) -> Response {
    operate(node, Operation::Cleanup).await
}

/// The routes of the metrics address: the series, the status page and its data, and the
/// administrator's operations.
fn routes(node: Arc<Node>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/", get(status_page))
        .route("/status.json", get(status_json))
        .route("/admin/flush", post(flush))
        .route("/admin/compact", post(compact))
        .route("/admin/snapshot", post(snapshot))
        .route("/admin/cleanup", post(cleanup))
        .with_state(node)
}

/// Serves the metrics address `addr` until `shutdown`. An address that cannot be bound (another
/// ringdb on this host has it) is reported and left: the node serves CQL without it.
pub async fn serve_metrics(node: Arc<Node>, addr: SocketAddr, shutdown: CancellationToken) {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            warn!(%addr, error = %e, "the metrics address cannot be bound; serving no metrics");
            return;
        }
    };
    info!(local = %listener.local_addr().unwrap_or(addr), "serving Prometheus metrics");
    let served = axum::serve(listener, routes(node))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await;
    if let Err(e) = served {
        warn!(error = %e, "the metrics address stopped");
    }
}
