//! Per-connection state: handshake (OPTIONS/STARTUP, then AUTHENTICATE/AUTH_RESPONSE when a
//! password is required), negotiated compression, the logged-in role, current keyspace, event
//! registration, and encoding responses onto the connection's writer queue.

use crate::connection::writer::{encode_event, Outgoing};
use crate::error::QueryError;
use crate::node::Node;
use bytes::{Bytes, BytesMut};
use cql::compression::Compression;
use cql::request::Request;
use cql::response::{Envelope, Response, ResultBody};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use crate::context::SessionContext;
pub use crate::system::CQL_VERSION;

/// State of one client connection.
pub struct Session {
    peer: SocketAddr,
    tx: UnboundedSender<Outgoing>,
    keyspace: Mutex<Option<Arc<str>>>,
    user: OnceLock<Arc<str>>,
    compression: OnceLock<Compression>,
    /// STARTUP was accepted (compression applies from here on).
    started: AtomicBool,
    /// An AUTH_RESPONSE is being checked.
    authenticating: AtomicBool,
    /// Requests may run: STARTUP answered with READY, or AUTH_SUCCESS sent.
    ready: AtomicBool,
    closing: AtomicBool,
    version: AtomicU8,
    closed: CancellationToken,
    /// The STARTUP options, once accepted.
    options: OnceLock<Vec<(String, String)>>,
    /// Requests received.
    requests: std::sync::atomic::AtomicU64,
    /// Whether the connection is over TLS.
    tls: AtomicBool,
}

impl Session {
    /// A fresh session that writes through `tx`.
    pub(crate) fn new(peer: SocketAddr, tx: UnboundedSender<Outgoing>) -> Session {
        Session {
            peer,
            tx,
            keyspace: Mutex::new(None),
            user: OnceLock::new(),
            compression: OnceLock::new(),
            started: AtomicBool::new(false),
            authenticating: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            version: AtomicU8::new(0),
            closed: CancellationToken::new(),
            options: OnceLock::new(),
            requests: std::sync::atomic::AtomicU64::new(0),
            tls: AtomicBool::new(false),
        }
    }

    /// Marks the connection as TLS.
    pub(crate) fn set_tls(&self) {
        self.tls.store(true, Ordering::Relaxed);
    }

    /// Counts one request received.
    pub(crate) fn count_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// The connection as `system_views.clients` shows it.
    pub fn client_info(&self) -> crate::client_registry::ClientInfo {
        let stage = if self.is_ready() {
            "ready"
        } else if self.started.load(Ordering::Acquire) {
            "authenticating"
        } else {
            "established"
        };
        crate::client_registry::ClientInfo {
            peer: self.peer,
            username: self.user().map(str::to_string),
            stage,
            protocol_version: self.version.load(Ordering::Acquire),
            options: self.options.get().cloned().unwrap_or_default(),
            requests: self.requests.load(Ordering::Relaxed),
            tls: self.tls.load(Ordering::Relaxed),
        }
    }

    /// True once STARTUP has been answered with READY, or authentication succeeded.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// What the connection waits for before it takes requests, for "Unexpected message"
    /// errors: `SASL_RESPONSE` between AUTHENTICATE and AUTH_SUCCESS, as Cassandra says.
    pub fn expecting(&self) -> &'static str {
        if self.started.load(Ordering::Acquire) && !self.is_ready() {
            "SASL_RESPONSE"
        } else {
            "STARTUP or OPTIONS"
        }
    }

    /// The role that logged in, if any.
    pub fn user(&self) -> Option<&str> {
        self.user.get().map(|u| &**u)
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
            user: self.user.get().cloned(),
            traced: false,
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
        self.send_answer(version, stream, response, &Envelope::default());
    }

    /// [`Session::send`], with the envelope's parts (warnings) before the message.
    pub(crate) fn send_answer(
        &self,
        version: u8,
        stream: i16,
        response: &Response,
        envelope: &Envelope,
    ) {
        let compression = if self.started.load(Ordering::Acquire) {
            self.compression.get()
        } else {
            None
        };
        self.send_with(version, stream, response, envelope, compression);
    }

    /// Queues `response` without compression (errors before or during the handshake).
    pub(crate) fn send_uncompressed(&self, version: u8, stream: i16, response: &Response) {
        self.send_with(version, stream, response, &Envelope::default(), None);
    }

    /// Encodes `response` for `stream` (compressed when negotiated) onto the end of `out`,
    /// for responses the caller queues itself in one batch.
    pub(crate) fn encode_into(
        &self,
        version: u8,
        stream: i16,
        response: &Response,
        envelope: &Envelope,
        out: &mut BytesMut,
    ) {
        let compression = if self.started.load(Ordering::Acquire) {
            self.compression.get()
        } else {
            None
        };
        response.encode_frame_with(version, stream, compression.copied(), envelope, out);
    }

    /// Queues frames already encoded, and the request slots to free once they are written.
    pub(crate) fn send_batch(
        &self,
        frames: BytesMut,
        permits: Vec<tokio::sync::OwnedSemaphorePermit>,
    ) {
        let _ = self.tx.send(Outgoing::Batch(frames, permits));
    }

    fn send_with(
        &self,
        version: u8,
        stream: i16,
        response: &Response,
        envelope: &Envelope,
        compression: Option<&Compression>,
    ) {
        let mut out = BytesMut::new();
        response.encode_frame_with(version, stream, compression.copied(), envelope, &mut out);
        // A queued frame may wait for a slow reader: keep no more memory than its bytes (the
        // buffer grew by doubling while the body was encoded).
        if out.capacity() - out.len() > out.len() / 8 {
            out = BytesMut::from(&out[..]);
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
                *k = Some(Arc::from(ks.as_str()));
            }
        }
    }

    /// Answers OPTIONS, STARTUP, REGISTER and AUTH_RESPONSE, in order, and queues the reply.
    pub(crate) fn handle_control(
        self: &Arc<Self>,
        request: Request,
        version: u8,
        stream: i16,
        node: &Arc<Node>,
    ) {
        match request {
            Request::Options => self.send(version, stream, &supported()),
            Request::Startup(options) => match self.startup(&options, version) {
                Ok(()) => {
                    match node.auth().authenticator_class() {
                        Some(class) => self.send_uncompressed(
                            version,
                            stream,
                            &Response::Authenticate(class.into()),
                        ),
                        None => {
                            self.send_uncompressed(version, stream, &Response::Ready);
                            self.ready.store(true, Ordering::Release);
                        }
                    }
                    self.started.store(true, Ordering::Release);
                }
                Err(message) => self.send_uncompressed(
                    version,
                    stream,
                    &QueryError::Protocol(message).to_response(),
                ),
            },
            Request::Register(events) => {
                if !self.is_ready() {
                    self.send(version, stream, &self.unexpected("REGISTER"));
                    return;
                }
                if let Some(bad) = events.iter().find(|e| {
                    !["TOPOLOGY_CHANGE", "STATUS_CHANGE", "SCHEMA_CHANGE"].contains(&e.as_str())
                }) {
                    self.send(
                        version,
                        stream,
                        &QueryError::Protocol(format!("Invalid value '{bad}' for Type"))
                            .to_response(),
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
            Request::AuthResponse(token) => self.auth_response(token, version, stream, node),
            _ => self.send(version, stream, &self.unexpected("request")),
        }
    }

    /// Checks the credentials on the blocking pool (bcrypt is slow by design) and answers
    /// AUTH_SUCCESS or BadCredentials; requests keep being refused until AUTH_SUCCESS.
    fn auth_response(
        self: &Arc<Self>,
        token: Option<Vec<u8>>,
        version: u8,
        stream: i16,
        node: &Arc<Node>,
    ) {
        let protocol_error = |message: &str| {
            self.send(
                version,
                stream,
                &QueryError::Protocol(message.into()).to_response(),
            )
        };
        if node.auth().authenticator_class().is_none() {
            return protocol_error(
                "Unexpected message AUTH_RESPONSE: authentication is not enabled",
            );
        }
        if !self.started.load(Ordering::Acquire) {
            return protocol_error(
                "Unexpected message AUTH_RESPONSE, expecting STARTUP or OPTIONS",
            );
        }
        if self.is_ready() {
            return protocol_error("Unexpected message AUTH_RESPONSE: already authenticated");
        }
        if self.authenticating.swap(true, Ordering::AcqRel) {
            return protocol_error("Unexpected message AUTH_RESPONSE: authentication in progress");
        }
        let session = self.clone();
        let node = node.clone();
        tokio::spawn(async move {
            let check = node.clone();
            let outcome =
                tokio::task::spawn_blocking(move || check.auth().authenticate(token.as_deref()))
                    .await;
            let response = match outcome {
                Ok(Ok(user)) => {
                    tracing::debug!(peer = %session.peer, %user, "authenticated");
                    let _ = session.user.set(Arc::from(user));
                    session.ready.store(true, Ordering::Release);
                    Response::AuthSuccess(None)
                }
                Ok(Err(e)) => {
                    tracing::debug!(peer = %session.peer, "authentication failed");
                    e.to_response()
                }
                Err(e) => {
                    tracing::warn!(error = %e, "authentication task failed");
                    QueryError::Server(
                        "Internal error during authentication; see the server log".into(),
                    )
                    .to_response()
                }
            };
            session.authenticating.store(false, Ordering::Release);
            session.send(version, stream, &response);
        });
    }

    fn startup(&self, options: &[(String, String)], version: u8) -> Result<(), String> {
        if self.started.load(Ordering::Acquire) {
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
        let _ = self.options.set(options.to_vec());
        self.version.store(version, Ordering::Release);
        Ok(())
    }

    fn unexpected(&self, what: &str) -> Response {
        QueryError::Protocol(format!(
            "Unexpected message {what}, expecting {}",
            self.expecting()
        ))
        .to_response()
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

impl crate::client_registry::Client for Session {
    fn client_info(&self) -> crate::client_registry::ClientInfo {
        Session::client_info(self)
    }
}
