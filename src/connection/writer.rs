//! The connection's writer task: encoded frames queued by the reader, the read threads and
//! spawned requests go out in as few socket writes as possible, and request slots are freed
//! only once their answers are written.

use bytes::BytesMut;
use cql::compression::Compression;
use cql::response::{Event, Response};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Bytes of encoded responses the writer gathers before one socket write.
pub(crate) const COALESCE_BYTES: usize = 64 * 1024;

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

/// Writes queued frames, gathering whatever is already queued into one write.
pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(
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
