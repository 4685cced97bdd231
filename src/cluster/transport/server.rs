//! The server side: [`serve`] accepts peers, checks each with the handshake and then serves its
//! requests concurrently, each in its own task.

use super::handshake;
use super::tls::ServerTls;
use super::{Codec, Handler, Identity, Payload, HELLO_TIMEOUT, MAX_PAYLOAD_BYTES};
use futures::{FutureExt, StreamExt};
use std::io;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tarpc::server::{BaseChannel, Channel};
use tarpc::ServerError;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::codec::{Framed, LengthDelimitedCodec};
use tokio_util::sync::CancellationToken;

/// Pause after a failed accept (e.g. out of file descriptors) before the next.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// What every connection of one [`serve`] shares.
struct Shared {
    identity: Identity,
    handler: Arc<dyn Handler>,
    tls: Option<ServerTls>,
    hello_timeout: Duration,
}

/// Accepts peers on `listener` until `shutdown` is cancelled; each connection is checked by the
/// handshake and then served concurrently (many requests in flight on one connection).
///
/// A peer that fails the handshake (another cluster or protocol version, not a ringdb node, no
/// hello within 5 s) is logged and dropped; the others are not disturbed. On shutdown the
/// listener and every connection are closed, and requests still running are dropped.
pub async fn serve(
    listener: TcpListener,
    identity: Identity,
    handler: Arc<dyn Handler>,
    tls: Option<ServerTls>,
    shutdown: CancellationToken,
) {
    serve_with(listener, identity, handler, tls, shutdown, HELLO_TIMEOUT).await;
}

/// [`serve`] with the time a peer gets for TLS and its hello.
pub(super) async fn serve_with(
    listener: TcpListener,
    identity: Identity,
    handler: Arc<dyn Handler>,
    tls: Option<ServerTls>,
    shutdown: CancellationToken,
    hello_timeout: Duration,
) {
    let shared = Arc::new(Shared {
        identity,
        handler,
        tls,
        hello_timeout,
    });
    // Dropping the set aborts the connections' tasks, so they end with this function.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    connections.spawn(connection(stream, peer, Arc::clone(&shared)));
                }
                Err(e) => {
                    tracing::warn!("internode listener: accept failed: {e}");
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(ACCEPT_ERROR_PAUSE) => {}
                    }
                }
            },
            Some(ended) = connections.join_next(), if !connections.is_empty() => {
                if let Err(e) = ended {
                    if e.is_panic() {
                        tracing::error!("internode connection task panicked: {e}");
                    }
                }
            }
        }
    }
    connections.shutdown().await;
}

/// One accepted connection: TLS when configured, the handshake, then its requests.
async fn connection(tcp: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!("internode connection from {peer}: cannot set TCP_NODELAY: {e}");
    }
    let deadline = Instant::now() + shared.hello_timeout;
    match &shared.tls {
        None => handshake_and_serve(tcp, peer, &shared, deadline).await,
        Some(tls) => match tokio::time::timeout_at(deadline, tls.acceptor().accept(tcp)).await {
            Ok(Ok(stream)) => handshake_and_serve(stream, peer, &shared, deadline).await,
            Ok(Err(e)) => {
                tracing::warn!(
                    "refused internode connection from {peer}: TLS handshake failed: {e}"
                );
            }
            Err(_) => tracing::warn!(
                "refused internode connection from {peer}: no TLS handshake within {:?}",
                shared.hello_timeout
            ),
        },
    }
}

async fn handshake_and_serve<S>(stream: S, peer: SocketAddr, shared: &Shared, deadline: Instant)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Some((framed, hello)) = handshake::accept(
        stream,
        &shared.identity,
        peer,
        deadline,
        shared.hello_timeout,
    )
    .await
    else {
        return;
    };
    tracing::debug!(
        "internode connection from {peer} (node {}) accepted",
        hello.node_id
    );
    requests(framed, peer, hello.node_id, Arc::clone(&shared.handler)).await;
    tracing::debug!(
        "internode connection from {peer} (node {}) closed",
        hello.node_id
    );
}

/// Serves the requests of one connection past its handshake until the peer closes it, each
/// request in its own task.
async fn requests<S>(
    framed: Framed<S, LengthDelimitedCodec>,
    peer: SocketAddr,
    from: u64,
    handler: Arc<dyn Handler>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let transport = tarpc::serde_transport::new(framed, Codec::default());
    let channel = BaseChannel::with_defaults(transport);
    let serve = tarpc::server::serve(move |_context, Payload(request)| async move {
        let answer = AssertUnwindSafe(async move { handler.handle(from, request).await })
            .catch_unwind()
            .await;
        match answer {
            Ok(answer) if answer.len() <= MAX_PAYLOAD_BYTES => Ok(Payload(answer)),
            Ok(answer) => {
                let reason = format!(
                    "answer of {} bytes is over the internode limit of {MAX_PAYLOAD_BYTES} bytes",
                    answer.len()
                );
                tracing::warn!("internode request from {peer}: {reason}");
                Err(ServerError::new(io::ErrorKind::InvalidData, reason))
            }
            Err(_) => {
                tracing::error!("internode request handler panicked on a request from {peer}");
                Err(ServerError::new(
                    io::ErrorKind::Other,
                    "the request handler panicked".into(),
                ))
            }
        }
    });
    let mut incoming = std::pin::pin!(channel.execute(serve));
    // Dropping the set (the peer left, or shutdown aborted this task) drops unfinished requests.
    let mut running = JoinSet::new();
    loop {
        tokio::select! {
            request = incoming.next() => match request {
                Some(request) => {
                    running.spawn(request);
                }
                None => break,
            },
            Some(ended) = running.join_next(), if !running.is_empty() => {
                if let Err(e) = ended {
                    if e.is_panic() {
                        tracing::error!("internode request task from {peer} panicked: {e}");
                    }
                }
            }
        }
    }
}
