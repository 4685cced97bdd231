//! Per-connection state: handshake (OPTIONS/STARTUP), negotiated compression, current keyspace,
//! event registration, and encoding responses onto the connection's writer queue.

use crate::connection::{encode_event, Outgoing};
use crate::node::Node;
use bytes::{Bytes, BytesMut};
use cql::compression::Compression;
use cql::frame;
use cql::request::Request;
use cql::response::{ErrorBody, Response, ResultBody};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// The CQL version advertised in SUPPORTED and `system.local` (Cassandra 4.1).
pub const CQL_VERSION: &str = "3.4.6";

/// What a request needs to know about the connection it came on.
#[derive(Debug, Clone)]
pub struct SessionContext {
    /// The keyspace set by `USE`, if any.
    pub keyspace: Option<String>,
    /// The client's address.
    pub peer: SocketAddr,
}

/// State of one client connection.
pub struct Session {
    peer: SocketAddr,
    tx: UnboundedSender<Outgoing>,
    keyspace: Mutex<Option<String>>,
    compression: OnceLock<Compression>,
    ready: AtomicBool,
    closing: AtomicBool,
    version: AtomicU8,
    closed: CancellationToken,
}

impl Session {
    /// A fresh session that writes through `tx`.
    pub(crate) fn new(peer: SocketAddr, tx: UnboundedSender<Outgoing>) -> Session {
        Session {
            peer,
            tx,
            keyspace: Mutex::new(None),
            compression: OnceLock::new(),
            ready: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            version: AtomicU8::new(0),
            closed: CancellationToken::new(),
        }
    }

    /// True once STARTUP has been answered with READY.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// True after a fatal error: the connection closes once the answer is written.
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// The protocol version of this connection's STARTUP, or `default` before it.
    pub fn version_or(&self, default: u8) -> u8 {
        match self.version.load(Ordering::Acquire) {
            0 => default,
            v => v,
        }
    }

    /// A snapshot of what a request needs.
    pub fn context(&self) -> SessionContext {
        SessionContext {
            keyspace: self.keyspace.lock().map(|k| k.clone()).unwrap_or(None),
            peer: self.peer,
        }
    }

    /// Marks the connection for closing after what is queued is written.
    pub(crate) fn close_after_flush(&self) {
        self.closing.store(true, Ordering::Release);
    }

    /// Stops event forwarding; called when the connection ends.
    pub(crate) fn close(&self) {
        self.closed.cancel();
    }

    /// Decompresses a request body with the negotiated algorithm.
    pub(crate) fn decompress(&self, body: &[u8], max_len: usize) -> Result<Bytes, String> {
        match self.compression.get() {
            Some(c) => c
                .decompress(body, max_len)
                .map(Bytes::from)
                .map_err(|e| format!("Cannot decompress frame body: {e}")),
            None => Err("Compressed frame received but no compression was negotiated".into()),
        }
    }

    /// Encodes `response` for `stream` (compressed when negotiated) and queues it.
    pub(crate) fn send(&self, version: u8, stream: i16, response: &Response) {
        let compression = if self.is_ready() {
            self.compression.get()
        } else {
            None
        };
        self.send_with(version, stream, response, compression);
    }

    /// Queues `response` without compression (errors before or during the handshake).
    pub(crate) fn send_uncompressed(&self, version: u8, stream: i16, response: &Response) {
        self.send_with(version, stream, response, None);
    }

    fn send_with(
        &self,
        version: u8,
        stream: i16,
        response: &Response,
        compression: Option<&Compression>,
    ) {
        let mut body = BytesMut::new();
        response.encode_body(version, &mut body);
        let mut out = BytesMut::with_capacity(body.len() + frame::HEADER_LEN);
        match compression {
            Some(c) => {
                let packed = c.compress(&body);
                frame::encode_frame(
                    version,
                    frame::flags::COMPRESSION,
                    stream,
                    response.opcode(),
                    &packed,
                    &mut out,
                );
            }
            None => frame::encode_frame(version, 0, stream, response.opcode(), &body, &mut out),
        }
        let _ = self.tx.send(Outgoing::Frame(out));
    }

    /// Hands a request slot to the writer, which frees it once the response is on the socket.
    pub(crate) fn release_after_write(&self, permit: tokio::sync::OwnedSemaphorePermit) {
        let _ = self.tx.send(Outgoing::Release(permit));
    }

    /// Applies what a result changes in the session (USE sets the keyspace).
    pub(crate) fn apply_effects(&self, response: &Response) {
        if let Response::Result(ResultBody::SetKeyspace(ks)) = response {
            if let Ok(mut k) = self.keyspace.lock() {
                *k = Some(ks.clone());
            }
        }
    }

    /// Answers OPTIONS, STARTUP, REGISTER and AUTH_RESPONSE, in order, and queues the reply.
    pub(crate) fn handle_control(&self, request: Request, version: u8, stream: i16, node: &Node) {
        match request {
            Request::Options => self.send(version, stream, &supported()),
            Request::Startup(options) => match self.startup(&options, version) {
                Ok(()) => {
                    self.send_uncompressed(version, stream, &Response::Ready);
                    self.ready.store(true, Ordering::Release);
                }
                Err(message) => self.send_uncompressed(
                    version,
                    stream,
                    &Response::Error(ErrorBody::ProtocolError(message)),
                ),
            },
            Request::Register(events) => {
                if !self.is_ready() {
                    self.send(version, stream, &unexpected("REGISTER"));
                    return;
                }
                if let Some(bad) = events.iter().find(|e| {
                    !["TOPOLOGY_CHANGE", "STATUS_CHANGE", "SCHEMA_CHANGE"].contains(&e.as_str())
                }) {
                    self.send(
                        version,
                        stream,
                        &Response::Error(ErrorBody::ProtocolError(format!(
                            "Invalid value '{bad}' for Type"
                        ))),
                    );
                    return;
                }
                if events
                    .iter()
                    .any(|e| e.eq_ignore_ascii_case("SCHEMA_CHANGE"))
                {
                    self.forward_events(version, node);
                }
                self.send(version, stream, &Response::Ready);
            }
            Request::AuthResponse(_) => self.send(
                version,
                stream,
                &Response::Error(ErrorBody::ProtocolError(
                    "Unexpected message AUTH_RESPONSE: authentication is not enabled".into(),
                )),
            ),
            _ => self.send(version, stream, &unexpected("request")),
        }
    }

    fn startup(&self, options: &[(String, String)], version: u8) -> Result<(), String> {
        if self.is_ready() {
            return Err("Unexpected message STARTUP: the connection is already started".into());
        }
        let get = |key: &str| {
            options
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v.as_str())
        };
        let cql_version =
            get("CQL_VERSION").ok_or("Missing value CQL_VERSION in STARTUP message")?;
        let major = cql_version
            .split('.')
            .next()
            .and_then(|m| m.trim().parse::<u32>().ok());
        if major.is_none_or(|m| m < 3) {
            return Err(format!(
                "CQL version {cql_version} is not supported by the binary protocol (supported version are >= 3.0.0)"
            ));
        }
        if let Some(name) = get("COMPRESSION") {
            let c = Compression::from_name(name)
                .ok_or_else(|| format!("Unknown compression algorithm: {name}"))?;
            let _ = self.compression.set(c);
        }
        self.version.store(version, Ordering::Release);
        Ok(())
    }

    /// Forwards schema events from the node to this connection until it closes.
    fn forward_events(&self, version: u8, node: &Node) {
        let mut events = node.subscribe_events();
        let tx = self.tx.clone();
        let closed = self.closed.clone();
        let compression = self.compression.get().cloned();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = closed.cancelled() => break,
                    event = events.recv() => match event {
                        Ok(event) => {
                            let frame = encode_event(version, &event, compression.as_ref());
                            if tx.send(Outgoing::Frame(frame)).is_err() {
                                break;
                            }
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    },
                }
            }
        });
    }
}

fn unexpected(what: &str) -> Response {
    Response::Error(ErrorBody::ProtocolError(format!(
        "Unexpected message {what}, expecting STARTUP or OPTIONS"
    )))
}

/// The SUPPORTED answer to OPTIONS: python indexes COMPRESSION and pops CQL_VERSION, so both
/// are always present.
fn supported() -> Response {
    Response::Supported(vec![
        ("CQL_VERSION".into(), vec![CQL_VERSION.into()]),
        ("COMPRESSION".into(), vec!["lz4".into(), "snappy".into()]),
        (
            "PROTOCOL_VERSIONS".into(),
            vec!["3/v3".into(), "4/v4".into()],
        ),
    ])
}
