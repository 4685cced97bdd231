//! The client side: [`Transport`] keeps one multiplexed tarpc connection per peer address,
//! made on first use (concurrent first calls wait for the same connection) and made again on
//! the first call after it broke.

use super::handshake;
use super::tls::ClientTls;
use super::{Codec, Identity, Payload, TransportError, MAX_PAYLOAD_BYTES};
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tarpc::client::{NewClient, RpcError};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Requests one connection carries at once; more wait in tarpc's queue.
const MAX_IN_FLIGHT_REQUESTS: usize = 4096;

/// Client side: one shared, multiplexed connection per peer address, made on first use,
/// re-made after it breaks. Cheap to clone (Arc inside).
#[derive(Clone)]
pub struct Transport {
    inner: Arc<Inner>,
}

struct Inner {
    identity: Identity,
    tls: Option<ClientTls>,
    /// One slot per peer address ever called; the slot's lock is held while connecting, so
    /// concurrent first calls share one connection.
    peers: Mutex<HashMap<SocketAddr, Arc<Slot>>>,
    /// Connections made so far (each connection's serial number, for the logs and tests).
    connects: AtomicU64,
}

type Slot = tokio::sync::Mutex<Option<Connection>>;

/// One established connection: a handle on tarpc's dispatch task, which owns the stream.
#[derive(Clone)]
struct Connection {
    channel: tarpc::client::Channel<Payload, Payload>,
    /// Set when the dispatch task ended (the stream broke or closed) or a call saw it broken.
    broken: Arc<AtomicBool>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("identity", &self.inner.identity)
            .field("tls", &self.inner.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// A transport for the node `identity` (told to every peer in the handshake), over TLS
    /// when `tls` is given. Connects to nothing until the first [`call`](Self::call).
    pub fn new(identity: Identity, tls: Option<ClientTls>) -> Transport {
        Transport {
            inner: Arc::new(Inner {
                identity,
                tls,
                peers: Mutex::new(HashMap::new()),
                connects: AtomicU64::new(0),
            }),
        }
    }

    /// Sends one request and waits for its answer, at most `timeout` (connecting included).
    ///
    /// # Errors
    /// See [`TransportError`]: whether the peer could be reached, and if so, whether the
    /// request may have been acted on.
    pub async fn call(
        &self,
        peer: SocketAddr,
        payload: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, TransportError> {
        if payload.len() > MAX_PAYLOAD_BYTES {
            return Err(TransportError::TooLarge(payload.len()));
        }
        let deadline = Instant::now() + timeout;
        let connection = match tokio::time::timeout_at(deadline, self.connection(peer)).await {
            Ok(connection) => connection?,
            Err(_) => {
                return Err(TransportError::Connect(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no connection to {peer} within {timeout:?}"),
                )))
            }
        };
        let mut context = tarpc::context::current();
        // The server drops the request at this deadline too.
        context.deadline = deadline.into_std();
        let answer =
            tokio::time::timeout_at(deadline, connection.channel.call(context, Payload(payload)))
                .await;
        match answer {
            Ok(Ok(Payload(answer))) => Ok(answer),
            Err(_) | Ok(Err(RpcError::DeadlineExceeded)) => Err(TransportError::Timeout),
            Ok(Err(RpcError::Server(e))) => Err(TransportError::Remote(e.detail)),
            Ok(Err(e @ (RpcError::Shutdown | RpcError::Send(_) | RpcError::Channel(_)))) => {
                tracing::debug!("internode call to {peer} lost its connection: {e}");
                connection.broken.store(true, Ordering::Release);
                Err(TransportError::Closed)
            }
        }
    }

    /// The connection to `peer`: the cached one while it works, else a new one.
    async fn connection(&self, peer: SocketAddr) -> Result<Connection, TransportError> {
        let slot = {
            let mut peers = self
                .inner
                .peers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(peers.entry(peer).or_default())
        };
        let mut slot = slot.lock().await;
        if let Some(connection) = slot.as_ref() {
            if !connection.broken.load(Ordering::Acquire) {
                return Ok(connection.clone());
            }
        }
        *slot = None;
        let connection = self.connect(peer).await?;
        *slot = Some(connection.clone());
        Ok(connection)
    }

    /// Connects to `peer`: TCP, TLS when configured, the handshake, then tarpc's dispatch task.
    async fn connect(&self, peer: SocketAddr) -> Result<Connection, TransportError> {
        let tcp = TcpStream::connect(peer)
            .await
            .map_err(TransportError::Connect)?;
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("internode connection to {peer}: cannot set TCP_NODELAY: {e}");
        }
        match &self.inner.tls {
            None => self.start(peer, tcp).await,
            Some(tls) => {
                let stream = tls
                    .connect(peer, tcp)
                    .await
                    .map_err(TransportError::Connect)?;
                self.start(peer, stream).await
            }
        }
    }

    /// The handshake on a connected `stream`, then tarpc on it.
    async fn start<S>(&self, peer: SocketAddr, stream: S) -> Result<Connection, TransportError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (framed, peer_id) = match handshake::connect(stream, &self.inner.identity).await {
            Ok(done) => done,
            Err(e) => {
                tracing::debug!("internode connection to {peer} failed: {e}");
                return Err(e);
            }
        };
        let transport = tarpc::serde_transport::new(framed, Codec::default());
        let mut config = tarpc::client::Config::default();
        config.max_in_flight_requests = MAX_IN_FLIGHT_REQUESTS;
        let NewClient { client, dispatch } = tarpc::client::new(config, transport);
        let broken = Arc::new(AtomicBool::new(false));
        let serial = self.inner.connects.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::debug!("internode connection #{serial} to {peer} (node {peer_id}) established");
        let flag = Arc::clone(&broken);
        tokio::spawn(async move {
            // Ends when the stream breaks or closes, or when every handle is dropped.
            match dispatch.await {
                Ok(()) => tracing::debug!("internode connection #{serial} to {peer} closed"),
                Err(e) => tracing::debug!("internode connection #{serial} to {peer} lost: {e}"),
            }
            flag.store(true, Ordering::Release);
        });
        Ok(Connection {
            channel: client,
            broken,
        })
    }

    /// Connections made so far, to any peer.
    #[cfg(test)]
    pub(super) fn connections_made(&self) -> u64 {
        self.inner.connects.load(Ordering::Relaxed)
    }
}
