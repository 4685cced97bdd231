//! One client connection: it owns the socket (plain or TLS), reads frames, hands each to the
//! dispatch step, batches the answers made on its own task, and writes through one writer task.

mod answered;
mod dispatch;
mod read_threads;
pub(crate) mod writer;

pub use read_threads::ReadOffload;

use crate::error::QueryError;
use crate::node::Node;
use crate::session::Session;
use answered::{Answered, FLUSH_EVERY_ANSWERS, FLUSH_EVERY_READS};
use bytes::BytesMut;
use cql::frame::{self, FrameError};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::debug;
use writer::{write_loop, Outgoing, COALESCE_BYTES};

/// Serves one TCP connection until the client leaves, a fatal protocol error, or shutdown.
pub async fn run(
    socket: TcpStream,
    peer: SocketAddr,
    node: Arc<Node>,
    reads: Arc<ReadOffload>,
    shutdown: CancellationToken,
) {
    let _ = socket.set_nodelay(true);
    let (reader, writer) = socket.into_split();
    serve(reader, writer, peer, node, reads, shutdown, false).await;
}

/// Serves one TLS connection: the handshake (bounded by `tls_handshake_timeout_seconds`;
/// a client that fails it, e.g. one speaking plain CQL, is disconnected), then as [`run`].
pub async fn run_tls(
    socket: TcpStream,
    peer: SocketAddr,
    node: Arc<Node>,
    reads: Arc<ReadOffload>,
    acceptor: tokio_rustls::TlsAcceptor,
    shutdown: CancellationToken,
) {
    let _ = socket.set_nodelay(true);
    let limit = Duration::from_secs(node.config().tls_handshake_timeout_seconds);
    let handshake = tokio::select! {
        r = tokio::time::timeout(limit, acceptor.accept(socket)) => r,
        _ = shutdown.cancelled() => return,
    };
    let stream = match handshake {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            debug!(%peer, error = %e, "TLS handshake failed; closing");
            return;
        }
        Err(_) => {
            debug!(%peer, "TLS handshake timed out; closing");
            return;
        }
    };
    let (reader, writer) = tokio::io::split(stream);
    serve(reader, writer, peer, node, reads, shutdown, true).await;
}

/// The connection loop over any byte stream (plain TCP halves or a split TLS stream).
async fn serve<R, W>(
    mut reader: R,
    writer: W,
    peer: SocketAddr,
    node: Arc<Node>,
    reads: Arc<ReadOffload>,
    shutdown: CancellationToken,
    tls: bool,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel::<Outgoing>();
    let writer_task = tokio::spawn(write_loop(writer, rx));
    let session = Arc::new(Session::new(peer, tx.clone()));
    if tls {
        session.set_tls();
    }
    let _registered = node.clients().register(session.clone());
    let in_flight = Arc::new(Semaphore::new(node.config().max_requests_per_connection));
    let max_body = node.config().max_frame_bytes;
    let mut buf = BytesMut::with_capacity(16 * 1024);
    debug!(%peer, "connection opened");

    let mut answered = Answered::default();
    'conn: loop {
        // Decode every whole frame already buffered; cheap requests are answered right here
        // and their responses leave in one batch before the next read.
        loop {
            match frame::decode(&mut buf, max_body) {
                Ok(Some(frame)) => {
                    let permit = match in_flight.clone().try_acquire_owned() {
                        Ok(p) => p,
                        Err(_) => {
                            // Slots held by answered requests come back once they are written.
                            if !answered.flush(&session, &node) {
                                break 'conn;
                            }
                            tokio::select! {
                                p = in_flight.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break 'conn },
                                _ = shutdown.cancelled() => break 'conn,
                            }
                        }
                    };
                    // Requests still buffered behind this one, counted in frames of its size.
                    let backlog = buf.len() / (frame.body.len() + frame::HEADER_LEN);
                    if !dispatch::dispatch(
                        frame,
                        &session,
                        &node,
                        &reads,
                        permit,
                        &mut answered,
                        backlog,
                    ) {
                        break 'conn;
                    }
                    let reads_out = !answered.journal_flush_owed
                        && answered.permits.len() >= FLUSH_EVERY_READS
                        && !buf.is_empty();
                    if reads_out
                        || answered.frames.len() >= COALESCE_BYTES
                        || answered.permits.len() >= FLUSH_EVERY_ANSWERS
                    {
                        if !answered.flush(&session, &node) {
                            break 'conn;
                        }
                        if reads_out {
                            // The writer runs on this thread: let it send them now.
                            tokio::task::yield_now().await;
                        }
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    if answered.flush(&session, &node) {
                        fatal_frame_error(&session, e);
                    }
                    break 'conn;
                }
            }
        }
        if !answered.flush(&session, &node) {
            break 'conn;
        }
        let read = tokio::select! {
            r = reader.read_buf(&mut buf) => r,
            _ = shutdown.cancelled() => break 'conn,
        };
        match read {
            Ok(0) => {
                if !buf.is_empty() {
                    debug!(%peer, pending = buf.len(), "client closed mid-frame");
                }
                break;
            }
            Ok(_) => {}
            Err(e) => {
                debug!(%peer, error = %e, "read failed");
                break;
            }
        }
    }
    // Let in-flight requests finish (bounded by the server's shutdown grace), then close.
    let _ = in_flight
        .acquire_many(node.config().max_requests_per_connection as u32)
        .await;
    let _ = tx.send(Outgoing::Close);
    drop(tx);
    session.close();
    let _ = writer_task.await;
    debug!(%peer, "connection closed");
}

/// Answers a frame that cannot be parsed, as Cassandra does, and asks the writer to close.
fn fatal_frame_error(session: &Session, e: FrameError) {
    let (version, stream, message) = match &e {
        FrameError::UnsupportedVersion { version, stream } => (
            4,
            *stream,
            format!(
                "Invalid or unsupported protocol version ({version}); supported versions are (3/v3, 4/v4)"
            ),
        ),
        FrameError::BodyTooLarge { stream, .. } | FrameError::NotARequest { stream } => {
            (session.version_or(4), *stream, e.to_string())
        }
        other => (session.version_or(4), 0, other.to_string()),
    };
    debug!(error = %e, "fatal frame error");
    session.send_uncompressed(
        version,
        stream,
        &QueryError::Protocol(message).to_response(),
    );
    session.close_after_flush();
}
