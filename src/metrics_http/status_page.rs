//! The status page served at the metrics address (`/`): the token ring drawn as a circle, a
//! ring per table with its physical partitions as arcs sized by token range and shaded by
//! bytes, each table's partitions, bytes, splits, leaders and replicas, and the request rates.
//! The page (embedded in the binary) reads `/status.json` every two seconds.

use crate::metrics::RequestClass;
use crate::node::Node;
use serde::Serialize;
use std::collections::BTreeMap;
use storage::PartitionState;

/// The page.
pub(super) const PAGE: &str = include_str!("status.html");

#[derive(Serialize)]
struct NodeFacts {
    host_id: String,
    address: String,
    cluster_name: String,
    peers: usize,
}

#[derive(Serialize)]
struct Partition {
    id: u64,
    /// Tokens as text (JavaScript's numbers cannot hold them).
    start: String,
    end: String,
    /// Where the range starts and ends, as fractions of the ring.
    from: f64,
    to: f64,
    bytes: u64,
    state: &'static str,
    leader: Option<String>,
    replicas: Vec<String>,
}

#[derive(Serialize)]
struct TableStatus {
    keyspace: String,
    table: String,
    bytes: u64,
    partitions: Vec<Partition>,
}

#[derive(Serialize)]
struct Status {
    now_ms: u128,
    node: NodeFacts,
    requests: BTreeMap<&'static str, u64>,
    tables: Vec<TableStatus>,
}

/// Where `token` lies on the ring, from 0 (the lowest token) to 1.
fn fraction(token: i64) -> f64 {
    (i128::from(token) - i128::from(i64::MIN)) as f64 / 2f64.powi(64)
}

/// The page's data, as JSON.
pub(super) fn status_json(node: &Node) -> String {
    let catalog = node.catalog();
    let placements = node.cluster().map(|c| c.placements()).unwrap_or_default();
    let peers = node.cluster().map_or(0, |c| c.peers().len());
    let mut tables = Vec::new();
    for t in catalog.user_tables() {
        {
            let id = crate::schema::table_id(t);
            let Ok(parts) = node.storage().physical_partitions(id) else {
                continue;
            };
            let partitions: Vec<Partition> = parts
                .iter()
                .map(|p| {
                    let placed = placements
                        .iter()
                        .find(|g| g.table == id && g.end >= p.end_token)
                        .filter(|_| peers > 0);
                    Partition {
                        id: p.id,
                        start: p.start_token.to_string(),
                        end: p.end_token.to_string(),
                        from: fraction(p.start_token),
                        to: fraction(p.end_token),
                        bytes: p.bytes,
                        state: match p.state {
                            PartitionState::Active => "active",
                            PartitionState::Splitting => "splitting",
                            PartitionState::Oversized => "oversized",
                        },
                        leader: placed.and_then(|g| g.leader).map(|ip| ip.to_string()),
                        replicas: placed
                            .map(|g| g.replicas.iter().map(ToString::to_string).collect())
                            .unwrap_or_default(),
                    }
                })
                .collect();
            tables.push(TableStatus {
                keyspace: t.keyspace.clone(),
                table: t.name.clone(),
                bytes: partitions.iter().map(|p| p.bytes).sum(),
                partitions,
            });
        }
    }
    let info = node.info();
    let status = Status {
        now_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis()),
        node: NodeFacts {
            host_id: info.host_id.to_string(),
            address: format!("{}:{}", info.rpc_address, info.rpc_port),
            cluster_name: info.cluster_name.clone(),
            peers,
        },
        requests: RequestClass::ALL
            .iter()
            .map(|c| (c.label(), node.metrics().requests_of(*c)))
            .collect(),
        tables,
    };
    serde_json::to_string(&status).unwrap_or_else(|_| "{}".to_string())
}
