//! One client connection: frames in, requests dispatched concurrently per stream id, responses
//! coalesced by a single writer task, events pushed to registered connections.

use crate::executor::Inline;
use crate::node::Node;
use crate::read_offload::ReadJob;
use crate::session::Session;
use bytes::{Bytes, BytesMut};
use cql::compression::Compression;
use cql::frame::{self, Frame, FrameError, Opcode};
use cql::request::Request;
use cql::response::{ErrorBody, Event, Response};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// Bytes of encoded responses the writer gathers before one socket write.
const COALESCE_BYTES: usize = 64 * 1024;

/// Requests answered inline before their responses are handed to the writer even if more
/// frames are buffered: bounds the wait of the first answer of a burst (its latency) while
/// still sharing one journal flush and one socket write among many. With one connection
/// thread the writer task runs only once the reader has worked through what is buffered or
/// yields (see [`FLUSH_EVERY_READS`]; before reads yielded, an strace showed one socket write
/// per drained burst either way), so for writes this mostly sets how often the journal is
/// written: 64 instead of 16 took 2.9% less CPU per write and 6.6% less at half rate (p99
/// 0.91x) in one `--baseline` A/B, throughput 1.005x (session 24).
const FLUSH_EVERY_ANSWERS: usize = 64;

/// Reads answered inline, with no write among them, before their responses go out while more
/// frames are buffered: the reader hands them to the writer and yields, so the writer sends
/// them before the rest of the burst is worked through. The client then reads the first
/// answers of a burst while the server answers the rest, instead of all of them after it. At
/// half of peak point reads (124 k/s, latte's bursts of ~60 per connection every
/// millisecond), medians of 5 alternating pairs: p99 1.30 -> 1.21 ms and p50 0.58 -> 0.56 ms;
/// every 8 did as well (1.25 -> 1.16 ms) with twice the socket writes (saturated point reads
/// then took 13% more CPU per read, at the same throughput), every 4 no better (session 28).
/// Groups with a write keep [`FLUSH_EVERY_ANSWERS`]: each early flush would also write the
/// journal, and every 16 with a yield for them too left the half-rate write p99 where it was
/// (three `--baseline` A/Bs: 0.76x, 0.99x, 1.00x; CPU per write 0.97-1.03x, session 29).
const FLUSH_EVERY_READS: usize = 16;

/// What the writer task is asked to do.
pub(crate) enum Outgoing {
    /// An encoded frame to write.
    Frame(BytesMut),
    /// Flush what was written and close the connection.
    Close,
    /// Frames answered on the reader task, with their request slots (freed once written).
    Batch(BytesMut, Vec<tokio::sync::OwnedSemaphorePermit>),
    /// A request slot, released once everything queued before it has been written: a client
    /// that stops reading its responses thereby stops the server reading its requests.
    Release(tokio::sync::OwnedSemaphorePermit),
}

/// Serves one TCP connection until the client leaves, a fatal protocol error, or shutdown.
pub async fn run(
    socket: TcpStream,
    peer: SocketAddr,
    node: Arc<Node>,
    shutdown: CancellationToken,
) {
    let _ = socket.set_nodelay(true);
    let (reader, writer) = socket.into_split();
    serve(reader, writer, peer, node, shutdown).await;
}

/// Serves one TLS connection: the handshake (bounded by `tls_handshake_timeout_seconds`;
/// a client that fails it, e.g. one speaking plain CQL, is disconnected), then as [`run`].
pub async fn run_tls(
    socket: TcpStream,
    peer: SocketAddr,
    node: Arc<Node>,
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
    serve(reader, writer, peer, node, shutdown).await;
}

/// The connection loop over any byte stream (plain TCP halves or a split TLS stream).
async fn serve<R, W>(
    mut reader: R,
    writer: W,
    peer: SocketAddr,
    node: Arc<Node>,
    shutdown: CancellationToken,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel::<Outgoing>();
    let writer_task = tokio::spawn(write_loop(writer, rx));
    let session = Arc::new(Session::new(peer, tx.clone()));
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
                    if !dispatch(frame, &session, &node, permit, &mut answered, backlog) {
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

/// Responses answered on the reader task, not yet handed to the writer.
/// Their writes share one journal flush (group commit), made before any is acknowledged.
#[derive(Default)]
struct Answered {
    frames: BytesMut,
    permits: Vec<tokio::sync::OwnedSemaphorePermit>,
    /// Writes among them whose journal entries still sit in fjall's buffer.
    journal_flush_owed: bool,
    /// How long inline requests take to run.
    run_times: RunTimes,
    /// Bytes the next batch's buffer starts with: the last batch's size (bounded) plus room
    /// for the answer that passes the bound. Grown answer by answer from nothing, each batch's
    /// buffer was reallocated and copied ~10 times (a tenth of a 10-row slice's CPU). It is
    /// taken only when the next answer comes, so an idle connection holds no buffer (nor room
    /// for the batch's request slots, whose count the hand-over bounds).
    room: usize,
}

/// Moving averages of how long a connection's inline requests take to run, in nanoseconds.
#[derive(Default, Debug, Clone, Copy)]
struct RunTimes {
    /// Over every inline request: what the connection's buffered work costs.
    all_ns: u64,
    /// Over inline reads alone: whether a read repays a hand-over to a read thread. It
    /// depends on what a read costs, not on the writes beside it: a 50/50 mix of ~2 us
    /// item-cache reads and ~7 us writes averages above `read_offload_min_request_us`, yet
    /// its reads cost less than the hop (the mix ran 1.15x faster with its reads kept inline,
    /// session 25).
    read_ns: u64,
}

impl RunTimes {
    /// Adds one inline request of `kind` that ran for `took_ns` (weight 1/16).
    fn record(&mut self, kind: Inline, took_ns: u64) {
        let avg = |a: u64| a - a / 16 + took_ns / 16;
        self.all_ns = avg(self.all_ns);
        if kind == Inline::Read {
            self.read_ns = avg(self.read_ns);
        }
    }
}

impl Answered {
    /// Flushes the journal if a write needs it, then hands what was answered to the writer.
    /// When the flush fails nothing is acknowledged: the connection closes, so the client
    /// treats those writes as failed, never as done.
    #[must_use]
    fn flush(&mut self, session: &Session, node: &Node) -> bool {
        if std::mem::take(&mut self.journal_flush_owed) {
            if let Err(e) = node.storage().flush_journal() {
                warn!(error = %e, "journal flush failed; closing the connection unacknowledged");
                self.frames.clear();
                self.permits.clear();
                return false;
            }
        }
        if !self.permits.is_empty() || !self.frames.is_empty() {
            self.room = self.frames.len().min(COALESCE_BYTES) + 4096;
            session.send_batch(
                std::mem::take(&mut self.frames),
                std::mem::take(&mut self.permits),
            );
        }
        true
    }
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
        &Response::Error(ErrorBody::ProtocolError(message)),
    );
    session.close_after_flush();
}

/// Routes one request frame, `backlog` more being buffered behind it. Returns false when the
/// connection must close.
fn dispatch(
    frame: Frame,
    session: &Arc<Session>,
    node: &Arc<Node>,
    permit: tokio::sync::OwnedSemaphorePermit,
    answered: &mut Answered,
    backlog: usize,
) -> bool {
    let header = frame.header;
    let version = header.version;
    let stream = header.stream;
    let established = session.version_or(version);
    if established != version {
        session.send_uncompressed(
            established,
            stream,
            &Response::Error(ErrorBody::ProtocolError(format!(
                "Invalid message version. Got {version} but previous messages on this connection had version {established}"
            ))),
        );
        return true;
    }
    let body: Bytes = if header.flags & frame::flags::COMPRESSION != 0 {
        match session.decompress(&frame.body, node.config().max_frame_bytes as usize) {
            Ok(b) => b,
            Err(message) => {
                session.send(
                    version,
                    stream,
                    &Response::Error(ErrorBody::ProtocolError(message)),
                );
                return true;
            }
        }
    } else {
        frame.body
    };
    let request = match Request::decode_shared(header.flags, header.opcode, version, &body) {
        Ok((r, _custom_payload)) => r,
        Err(e) => {
            session.send(
                version,
                stream,
                &Response::Error(ErrorBody::ProtocolError(e.to_string())),
            );
            return true;
        }
    };
    if matches!(
        request,
        Request::Startup(_) | Request::Options | Request::Register(_) | Request::AuthResponse(_)
    ) {
        // Connection-state requests are answered in order, on the reader.
        session.handle_control(request, version, stream, node);
        drop(permit);
        return !session.is_closing();
    }
    if !session.is_ready() {
        let name = Opcode::from_u8(header.opcode)
            .map(|o| format!("{o:?}").to_uppercase())
            .unwrap_or_else(|| format!("0x{:02x}", header.opcode));
        session.send(
            version,
            stream,
            &Response::Error(ErrorBody::ProtocolError(format!(
                "Unexpected message {name}, expecting {}",
                session.expecting()
            ))),
        );
        return true;
    }
    // Bounded work: past the node-wide limit a request is refused, not queued.
    let Some(slot) = node.try_start_request() else {
        session.send(
            version,
            stream,
            &Response::Error(ErrorBody::Overloaded(
                "Too many requests in flight on this node; retry later".into(),
            )),
        );
        session.release_after_write(permit);
        return true;
    };
    let ctx = session.context();
    let (inline, prepared) = match node.runs_inline(&ctx, &request) {
        Some((kind, prepared)) => (Some(kind), Some(prepared)),
        None => (None, None),
    };
    // A read may go to a read thread when this connection has enough work buffered.
    let times = answered.run_times;
    let buffered_ns = (backlog as u64).saturating_mul(times.all_ns);
    let offload =
        inline == Some(Inline::Read) && node.read_offload().wants(times.read_ns, buffered_ns);
    let (ctx, request, permit, slot) = if offload {
        let job = Box::new(ReadJob {
            node: node.clone(),
            session: session.clone(),
            ctx,
            request,
            version,
            stream,
            permit,
            slot,
        });
        match node.read_offload().offer(job) {
            Ok(()) => return true,
            Err(job) => (job.ctx, job.request, job.permit, job.slot),
        }
    } else {
        (ctx, request, permit, slot)
    };
    if inline.is_some() {
        // Cheap and bounded: a hop to the blocking pool would cost more than the work.
        let started = std::time::Instant::now();
        let run = std::panic::AssertUnwindSafe(|| {
            node.storage()
                .deferring_journal_flush(|| node.execute_known(&ctx, request, version, prepared))
        });
        let (response, owed) = std::panic::catch_unwind(run).unwrap_or_else(|_| {
            warn!("request panicked");
            (internal_error(), true)
        });
        answered.journal_flush_owed |= owed;
        let took = started.elapsed().as_nanos().min(u128::from(u32::MAX)) as u64;
        if let Some(kind) = inline {
            answered.run_times.record(kind, took);
        }
        drop(slot);
        if answered.frames.capacity() == 0 {
            answered.frames.reserve(answered.room);
            answered.permits.reserve(FLUSH_EVERY_ANSWERS);
        }
        session.encode_into(version, stream, &response, &mut answered.frames);
        answered.permits.push(permit);
        return true;
    }
    let kind = RequestKind::of(&request, node);
    tracing::trace!(?kind, stream, "request runs on the blocking pool");
    let timeout = kind.timeout(node.config());
    let session = session.clone();
    let node = node.clone();
    tokio::spawn(async move {
        let work = tokio::task::spawn_blocking(move || {
            let response = node.execute(&ctx, request, version);
            drop(slot);
            response
        });
        let response = match tokio::time::timeout(timeout, work).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                warn!(error = %e, "request task failed");
                internal_error()
            }
            Err(_) => Response::Error(kind.timeout_error()),
        };
        session.apply_effects(&response);
        session.send(version, stream, &response);
        session.release_after_write(permit);
    });
    true
}

/// The answer to a request whose execution panicked: the details are in the server log.
pub(crate) fn internal_error() -> Response {
    Response::Error(ErrorBody::ServerError(
        "Internal error while processing the request; see the server log".into(),
    ))
}

/// What a request does, for its timeout and its timeout error.
#[derive(Debug, Clone, Copy)]
enum RequestKind {
    Read,
    Write { batch: bool },
    Other,
}

impl RequestKind {
    fn of(request: &Request, node: &Node) -> RequestKind {
        let first_word = |text: &str| {
            text.trim_start()
                .split(|c: char| !c.is_ascii_alphabetic())
                .next()
                .unwrap_or("")
                .to_ascii_lowercase()
        };
        let of_text = |text: &str| match first_word(text).as_str() {
            "select" => RequestKind::Read,
            "insert" | "update" | "delete" => RequestKind::Write { batch: false },
            "begin" => RequestKind::Write { batch: true },
            _ => RequestKind::Other,
        };
        match request {
            Request::Query(q) => of_text(&q.query),
            Request::Execute(e) => node
                .prepared()
                .get(&e.id)
                .map(|p| of_text(&p.query))
                .unwrap_or(RequestKind::Other),
            Request::Batch(_) => RequestKind::Write { batch: true },
            _ => RequestKind::Other,
        }
    }

    fn timeout(self, config: &crate::config::Config) -> std::time::Duration {
        std::time::Duration::from_millis(match self {
            RequestKind::Read => config.read_request_timeout_ms,
            RequestKind::Write { .. } => config.write_request_timeout_ms,
            RequestKind::Other => config.request_timeout_ms,
        })
    }

    fn timeout_error(self) -> ErrorBody {
        let message = "Operation timed out - received only 0 responses.".to_string();
        match self {
            RequestKind::Read | RequestKind::Other => ErrorBody::ReadTimeout {
                message,
                consistency: cql::request::Consistency::One,
                received: 0,
                block_for: 1,
                data_present: false,
            },
            RequestKind::Write { batch } => ErrorBody::WriteTimeout {
                message,
                consistency: cql::request::Consistency::One,
                received: 0,
                block_for: 1,
                write_type: if batch { "BATCH" } else { "SIMPLE" }.to_string(),
            },
        }
    }
}

/// Writes queued frames, gathering whatever is already queued into one write.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
) {
    let mut out = BytesMut::with_capacity(COALESCE_BYTES);
    let mut written_then_release = Vec::new();
    let mut closing = false;
    while let Some(first) = rx.recv().await {
        match first {
            // A big frame goes out as it is, not copied into the coalescing buffer.
            Outgoing::Frame(f) if f.len() >= COALESCE_BYTES => {
                if writer.write_all(&f).await.is_err() || writer.flush().await.is_err() {
                    break;
                }
            }
            Outgoing::Frame(f) => out.extend_from_slice(&f),
            Outgoing::Batch(f, p) => {
                out.extend_from_slice(&f);
                written_then_release.extend(p);
            }
            Outgoing::Close => closing = true,
            Outgoing::Release(p) => written_then_release.push(p),
        }
        while !closing && out.len() < COALESCE_BYTES {
            match rx.try_recv() {
                Ok(Outgoing::Frame(f)) => out.extend_from_slice(&f),
                Ok(Outgoing::Batch(f, p)) => {
                    out.extend_from_slice(&f);
                    written_then_release.extend(p);
                }
                Ok(Outgoing::Close) => closing = true,
                Ok(Outgoing::Release(p)) => written_then_release.push(p),
                Err(_) => break,
            }
        }
        if !out.is_empty() {
            // (flush matters for TLS, whose writer buffers records; TCP's is a no-op)
            if writer.write_all(&out).await.is_err() || writer.flush().await.is_err() {
                break;
            }
            out.clear();
        }
        written_then_release.clear();
        if closing {
            break;
        }
    }
    let _ = writer.shutdown().await;
}

/// Encodes an EVENT frame for stream -1.
pub(crate) fn encode_event(
    version: u8,
    event: &Event,
    compression: Option<&Compression>,
) -> BytesMut {
    let mut out = BytesMut::new();
    Response::Event(event.clone()).encode_frame(version, -1, compression.copied(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_count_in_the_buffered_work_but_not_in_what_a_read_costs() {
        let mut times = RunTimes::default();
        for _ in 0..200 {
            times.record(Inline::Read, 2_000);
            times.record(Inline::Write, 7_000);
        }
        // Both averages converge (within the 1/16 weighting's rounding).
        assert!(
            (1_800..=2_000).contains(&times.read_ns),
            "reads alone: {}",
            times.read_ns
        );
        assert!(
            (4_000..=4_800).contains(&times.all_ns),
            "every request: {}",
            times.all_ns
        );
        let before = times.read_ns;
        times.record(Inline::Write, 1_000_000);
        assert_eq!(times.read_ns, before, "a write leaves the read average");
        assert!(times.all_ns > 60_000, "but not the buffered work's");
    }
}
