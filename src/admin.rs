//! Admin subcommands: print the physical partitions of every table, from a data directory
//! (server stopped) or from a running server over CQL.

use crate::config::Config;
use crate::node::Node;
use bytes::BytesMut;
use cql::frame;
use cql::request::{Query, QueryParameters, Request};
use cql::response::{Response, ResultBody};
use cql::types::{DataType, NativeType, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Why an admin command failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Opening the data directory failed (is a server running on it?).
    #[error("cannot open the data directory: {0}")]
    Open(#[from] crate::node::NodeError),
    /// The network failed.
    #[error("connection to {addr}: {source}")]
    Io {
        /// Server address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The server answered something unexpected.
    #[error("{0}")]
    Protocol(String),
}

/// One physical partition, as printed.
struct Line {
    keyspace: String,
    table: String,
    id: i64,
    start: i64,
    end: i64,
    bytes: i64,
    partitions: i64,
    state: String,
    /// Provisioned throughput: the RU/s budget, and RU used in the last second and minute.
    ru: Option<(f64, f64, f64)>,
}

fn print(lines: &[Line]) {
    println!(
        "{:<20} {:<20} {:>5} {:>21} {:>21} {:>14} {:>12}  {:<10} {:>10} {:>10} {:>12}",
        "keyspace",
        "table",
        "id",
        "start (excl)",
        "end (incl)",
        "bytes",
        "partitions",
        "state",
        "RU/s",
        "RU last s",
        "RU last min"
    );
    for l in lines {
        let (budget, second, minute) = match l.ru {
            Some((b, s, m)) => (format!("{b:.0}"), format!("{s:.1}"), format!("{m:.1}")),
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "{:<20} {:<20} {:>5} {:>21} {:>21} {:>14} {:>12}  {:<10} {:>10} {:>10} {:>12}",
            l.keyspace,
            l.table,
            l.id,
            l.start,
            l.end,
            l.bytes,
            l.partitions,
            l.state,
            budget,
            second,
            minute
        );
    }
    println!("{} physical partitions", lines.len());
}

/// Prints the physical partitions stored in `config.data_dir` (the server must be stopped).
///
/// # Errors
/// When the directory cannot be opened.
pub fn partitions_from_dir(config: Config) -> Result<(), AdminError> {
    let node = Node::open(config)?;
    let catalog = node.catalog();
    let mut lines = Vec::new();
    for ks in catalog
        .keyspaces
        .values()
        .filter(|k| !crate::schema::is_system_keyspace(&k.name))
    {
        for t in ks.tables.values() {
            let id = crate::schema::table_id(t);
            let Ok(parts) = node.storage().physical_partitions(id) else {
                continue;
            };
            for p in parts {
                let ru = node
                    .budgets()
                    .partition_use(node.storage(), id, p.end_token)
                    .map(|u| (u.budget, u.last_second, u.last_minute));
                lines.push(Line {
                    keyspace: ks.name.clone(),
                    table: t.name.clone(),
                    id: i64::try_from(p.id).unwrap_or(i64::MAX),
                    start: p.start_token,
                    end: p.end_token,
                    bytes: i64::try_from(p.bytes).unwrap_or(i64::MAX),
                    partitions: i64::try_from(p.partitions_estimate).unwrap_or(i64::MAX),
                    state: p.state.as_str().to_string(),
                    ru,
                });
            }
        }
    }
    print(&lines);
    let _ = node.shutdown();
    Ok(())
}

fn request(
    stream: &mut TcpStream,
    addr: SocketAddr,
    stream_id: i16,
    req: &Request,
) -> Result<Response, AdminError> {
    let io = |source| AdminError::Io { addr, source };
    let mut body = BytesMut::new();
    req.encode_body(4, &mut body);
    let mut out = BytesMut::new();
    frame::FrameHeader {
        version: 4,
        is_response: false,
        flags: 0,
        stream: stream_id,
        opcode: req.opcode() as u8,
        length: body.len() as u32,
    }
    .encode(&mut out);
    out.extend_from_slice(&body);
    stream.write_all(&out).map_err(io)?;
    let mut header = [0u8; frame::HEADER_LEN];
    stream.read_exact(&mut header).map_err(io)?;
    let h = frame::FrameHeader::decode(&header)
        .ok_or_else(|| AdminError::Protocol("short header".into()))?;
    let mut body = vec![0u8; h.length as usize];
    stream.read_exact(&mut body).map_err(io)?;
    let mut message = &body[..];
    cql::response::Envelope::decode(h.flags, &mut message)
        .map_err(|e| AdminError::Protocol(e.to_string()))?;
    Response::decode(h.opcode, 4, message).map_err(|e| AdminError::Protocol(e.to_string()))
}

/// The rows a running server answers to `cql`, over a plain connection.
pub(crate) fn query_rows(
    addr: SocketAddr,
    cql: &str,
) -> Result<Vec<Vec<Option<bytes::Bytes>>>, AdminError> {
    let io = |source| AdminError::Io { addr, source };
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(io)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(io)?;
    let startup = Request::Startup(vec![("CQL_VERSION".into(), "3.4.6".into())]);
    match request(&mut stream, addr, 1, &startup)? {
        Response::Ready => {}
        other => {
            return Err(AdminError::Protocol(format!(
                "STARTUP answered {:?}",
                other.opcode()
            )))
        }
    }
    let query = Request::Query(Query {
        query: cql.into(),
        params: QueryParameters::default(),
    });
    match request(&mut stream, addr, 2, &query)? {
        Response::Result(ResultBody::Rows(rows)) => Ok(rows.rows),
        Response::Result(ResultBody::Void) => Ok(Vec::new()),
        Response::Error(e) => Err(AdminError::Protocol(e.message().to_string())),
        other => Err(AdminError::Protocol(format!(
            "unexpected {:?}",
            other.opcode()
        ))),
    }
}

pub(crate) fn cell(c: &Option<bytes::Bytes>, ty: NativeType) -> Option<Value> {
    c.as_ref()
        .and_then(|b| Value::decode(&DataType::Native(ty), b).ok())
}

/// Prints the cluster's nodes as a running server sees them
/// (`system_views.cluster_nodes`): up or down, addresses, physical partitions led and held,
/// bytes.
///
/// # Errors
/// Connection failures or an error answer.
pub fn status_from_server(addr: SocketAddr) -> Result<(), AdminError> {
    let rows = query_rows(
        addr,
        "SELECT host_id, native_address, internode_address, status, groups_led, groups_held, bytes, state FROM system_views.cluster_nodes",
    )?;
    println!(
        "{:<6} {:<8} {:<36} {:<22} {:<22} {:>5} {:>5} {:>14}",
        "status", "state", "host id", "native address", "internode address", "led", "held", "bytes"
    );
    let mut lines: Vec<(String, String)> = rows
        .iter()
        .filter(|r| r.len() == 8)
        .map(|r| {
            let text = |i: usize| match cell(&r[i], NativeType::Text) {
                Some(Value::Text(s)) => s,
                _ => String::new(),
            };
            let int = |i: usize| match cell(&r[i], NativeType::Int) {
                Some(Value::Int(n)) => n,
                _ => 0,
            };
            let host = match cell(&r[0], NativeType::Uuid) {
                Some(Value::Uuid(u)) => u.to_string(),
                _ => String::new(),
            };
            let bytes = match cell(&r[6], NativeType::Bigint) {
                Some(Value::Bigint(n)) => n,
                _ => 0,
            };
            (
                text(1),
                format!(
                    "{:<6} {:<8} {:<36} {:<22} {:<22} {:>5} {:>5} {:>14}",
                    text(3),
                    text(7),
                    host,
                    text(1),
                    text(2),
                    int(4),
                    int(5),
                    bytes
                ),
            )
        })
        .collect();
    lines.sort();
    for (_, line) in &lines {
        println!("{line}");
    }
    println!("{} nodes", lines.len());
    print_moves(addr)
}

/// Prints the replica moves in flight (`system_views.moves`): bytes moved out of the total
/// and the rate.
fn print_moves(addr: SocketAddr) -> Result<(), AdminError> {
    let rows = query_rows(
        addr,
        "SELECT group_id, keyspace_name, table_name, from_node, to_node, bytes_received, bytes_total, elapsed_ms FROM system_views.moves",
    )?;
    if rows.is_empty() {
        return Ok(());
    }
    println!(
        "{:>6} {:<24} {:<36} {:<36} {:>16} {:>10}",
        "group", "table", "from", "to", "MB moved/total", "MB/s"
    );
    for r in rows.iter().filter(|r| r.len() == 8) {
        let big = |i: usize| match cell(&r[i], NativeType::Bigint) {
            Some(Value::Bigint(n)) => n,
            _ => 0,
        };
        let text = |i: usize| match cell(&r[i], NativeType::Text) {
            Some(Value::Text(s)) => s,
            _ => String::new(),
        };
        let node = |i: usize| match cell(&r[i], NativeType::Uuid) {
            Some(Value::Uuid(u)) => u.to_string(),
            _ => "-".to_string(),
        };
        let (received, total, ms) = (big(5), big(6), big(7).max(1));
        println!(
            "{:>6} {:<24} {:<36} {:<36} {:>16} {:>10.1}",
            big(0),
            format!("{}.{}", text(1), text(2)),
            node(3),
            node(4),
            format!("{:.1}/{:.1}", received as f64 / 1e6, total as f64 / 1e6),
            received as f64 / 1e6 / (ms as f64 / 1000.0)
        );
    }
    println!("{} moves in flight", rows.len());
    Ok(())
}

/// Prints the physical partitions reported by a running server's
/// `system_views.physical_partitions`.
///
/// # Errors
/// Connection failures or an error answer.
pub fn partitions_from_server(addr: SocketAddr) -> Result<(), AdminError> {
    let rows = query_rows(
        addr,
        "SELECT keyspace_name, table_name, id, start_token, end_token, bytes, partitions_estimate, state, ru_budget, ru_last_second, ru_last_minute FROM system_views.physical_partitions",
    )?;
    let double = DataType::Native(NativeType::Double);
    let get_f64 = |c: &Option<bytes::Bytes>| match c.as_ref().map(|b| Value::decode(&double, b)) {
        Some(Ok(Value::Double(n))) => Some(n),
        _ => None,
    };
    let text = DataType::Native(NativeType::Text);
    let bigint = DataType::Native(NativeType::Bigint);
    let get_text = |c: &Option<bytes::Bytes>| match c.as_ref().map(|b| Value::decode(&text, b)) {
        Some(Ok(Value::Text(s))) => s,
        _ => String::new(),
    };
    let get_i64 = |c: &Option<bytes::Bytes>| match c.as_ref().map(|b| Value::decode(&bigint, b)) {
        Some(Ok(Value::Bigint(n))) => n,
        _ => 0,
    };
    let mut lines: Vec<Line> = rows
        .iter()
        .filter(|r| r.len() == 11)
        .map(|r| Line {
            keyspace: get_text(&r[0]),
            table: get_text(&r[1]),
            id: get_i64(&r[2]),
            start: get_i64(&r[3]),
            end: get_i64(&r[4]),
            bytes: get_i64(&r[5]),
            partitions: get_i64(&r[6]),
            state: get_text(&r[7]),
            ru: get_f64(&r[8]).map(|b| {
                (
                    b,
                    get_f64(&r[9]).unwrap_or(0.0),
                    get_f64(&r[10]).unwrap_or(0.0),
                )
            }),
        })
        .collect();
    lines.sort_by(|a, b| (&a.keyspace, &a.table, a.start).cmp(&(&b.keyspace, &b.table, b.start)));
    print(&lines);
    Ok(())
}
