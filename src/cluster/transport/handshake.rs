//! The handshake that opens every internode connection, before tarpc takes the stream: the
//! connecting side sends one length-delimited, postcard-encoded [`Hello`]; the accepting side
//! checks it and answers [`Reply::Welcome`], or [`Reply::Refused`] and closes.

use super::{
    hello_codec, Identity, TransportError, MAX_FRAME_BYTES, MAX_HELLO_BYTES, PROTOCOL_VERSION,
};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

/// First bytes of every hello: tells a ringdb internode peer from anything else on the port.
pub(super) const MAGIC: [u8; 8] = *b"RINGDBIN";

/// Time the accepting side spends at most on sending a refusal before it closes.
const REFUSAL_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// The connecting side's first frame. The field order is part of the protocol: `magic` and
/// `protocol_version` come first in every version, so that a node can always tell a peer of
/// another version why it is refused, whatever follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Hello {
    /// Always [`MAGIC`].
    pub(super) magic: [u8; 8],
    /// The connecting node's [`PROTOCOL_VERSION`].
    pub(super) protocol_version: u32,
    /// The connecting node's cluster name.
    pub(super) cluster_name: String,
    /// The connecting node's id.
    pub(super) node_id: u64,
}

/// The accepting side's answer to a [`Hello`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Reply {
    /// Accepted: tarpc follows on the same stream.
    Welcome {
        /// The accepting node's id.
        node_id: u64,
    },
    /// Refused; the accepting side closes the connection after this frame.
    Refused {
        /// Why, for the connecting side's error and logs.
        reason: String,
    },
}

impl Hello {
    /// The hello of the node `identity`.
    pub(super) fn new(identity: &Identity) -> Hello {
        Hello {
            magic: MAGIC,
            protocol_version: PROTOCOL_VERSION,
            cluster_name: identity.cluster_name.clone(),
            node_id: identity.node_id,
        }
    }
}

/// Encodes one handshake message for a frame.
pub(super) fn encode<T: Serialize>(message: &T) -> io::Result<Bytes> {
    postcard::to_allocvec(message)
        .map(Bytes::from)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Decodes and checks a hello frame against this node's `identity`; the error is the reason
/// of the refusal.
pub(super) fn check_hello(frame: &[u8], identity: &Identity) -> Result<Hello, String> {
    // The magic and the version alone first: a peer of another version, whose hello may not
    // decode as this version's, still learns that the versions differ.
    let (magic, rest): ([u8; 8], &[u8]) = postcard::take_from_bytes(frame)
        .map_err(|_| format!("not an internode hello ({} bytes)", frame.len()))?;
    if magic != MAGIC {
        return Err(format!(
            "bad magic {:?}: not a ringdb internode peer",
            String::from_utf8_lossy(&magic)
        ));
    }
    let (version, _): (u32, &[u8]) =
        postcard::take_from_bytes(rest).map_err(|e| format!("undecodable hello: {e}"))?;
    if version != PROTOCOL_VERSION {
        return Err(format!(
            "protocol version {version} is not {PROTOCOL_VERSION}"
        ));
    }
    let hello: Hello =
        postcard::from_bytes(frame).map_err(|e| format!("undecodable hello: {e}"))?;
    if hello.cluster_name != identity.cluster_name {
        return Err(format!(
            "cluster name {:?} is not {:?}",
            hello.cluster_name, identity.cluster_name
        ));
    }
    Ok(hello)
}

/// The reason for refusing a hello frame announced too long; `buffer` starts with its length.
fn oversized_hello(buffer: &[u8], error: &io::Error) -> String {
    let Some(&[a, b, c, d]) = buffer.get(..4) else {
        return format!("bad hello frame: {error}");
    };
    let mut reason = format!(
        "hello frame of {} bytes announced, more than {MAX_HELLO_BYTES}",
        u32::from_be_bytes([a, b, c, d])
    );
    if [a, b, c, d]
        .iter()
        .all(|b| b.is_ascii_graphic() || *b == b' ')
    {
        reason.push_str(&format!(
            " (the connection starts with {:?}: not a ringdb internode peer)",
            String::from_utf8_lossy(&[a, b, c, d])
        ));
    }
    reason
}

/// Raises the frame limit of a stream past its handshake, for tarpc. The codec's buffers are
/// kept, so nothing read ahead is lost.
fn into_rpc<S>(mut framed: Framed<S, LengthDelimitedCodec>) -> Framed<S, LengthDelimitedCodec> {
    framed.codec_mut().set_max_frame_length(MAX_FRAME_BYTES);
    framed
}

/// The connecting side: sends the hello and waits for the answer. Returns the stream framed for
/// tarpc and the peer's node id. No time limit of its own: the caller bounds it.
pub(super) async fn connect<S>(
    stream: S,
    identity: &Identity,
) -> Result<(Framed<S, LengthDelimitedCodec>, u64), TransportError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut framed = Framed::new(stream, hello_codec());
    let hello = encode(&Hello::new(identity)).map_err(TransportError::Connect)?;
    framed.send(hello).await.map_err(TransportError::Connect)?;
    let frame = match framed.next().await {
        Some(Ok(frame)) => frame,
        Some(Err(e)) => return Err(TransportError::Connect(e)),
        None => {
            return Err(TransportError::Connect(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the peer closed the connection during the handshake",
            )))
        }
    };
    match postcard::from_bytes::<Reply>(&frame) {
        Ok(Reply::Welcome { node_id }) => Ok((into_rpc(framed), node_id)),
        Ok(Reply::Refused { reason }) => Err(TransportError::Refused(reason)),
        Err(e) => Err(TransportError::Connect(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("undecodable handshake answer: {e}"),
        ))),
    }
}

/// The accepting side: waits (until `deadline`, which is `timeout` after the connection came)
/// for the hello of the peer at `peer`, checks it and answers. Returns the stream framed for
/// tarpc and the peer's hello, or `None` when the peer was refused (logged here, with its
/// address and the reason) or left.
pub(super) async fn accept<S>(
    stream: S,
    identity: &Identity,
    peer: SocketAddr,
    deadline: Instant,
    timeout: Duration,
) -> Option<(Framed<S, LengthDelimitedCodec>, Hello)>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut framed = Framed::new(stream, hello_codec());
    let checked = match tokio::time::timeout_at(deadline, framed.next()).await {
        Err(_) => Err(format!("no hello within {timeout:?}")),
        Ok(None) => {
            // A bare connect and close (a port probe): nothing to refuse.
            tracing::debug!("internode connection from {peer} closed before its hello");
            return None;
        }
        // The codec's own messages say little ("frame size too big", "bytes remaining on
        // stream"); what is left in its buffer says more.
        Ok(Some(Err(e))) if e.kind() == io::ErrorKind::InvalidData => {
            Err(oversized_hello(framed.read_buffer(), &e))
        }
        Ok(Some(Err(e)))
            if e.kind() == io::ErrorKind::Other && !framed.read_buffer().is_empty() =>
        {
            Err("connection closed in the middle of the hello".to_string())
        }
        Ok(Some(Err(e))) => Err(format!("error reading the hello: {e}")),
        Ok(Some(Ok(frame))) => check_hello(&frame, identity),
    };
    match checked {
        Ok(hello) => {
            let welcome = encode(&Reply::Welcome {
                node_id: identity.node_id,
            });
            let sent = match welcome {
                Ok(welcome) => tokio::time::timeout_at(deadline, framed.send(welcome)).await,
                Err(e) => Ok(Err(e)),
            };
            match sent {
                Ok(Ok(())) => Some((into_rpc(framed), hello)),
                Ok(Err(e)) => {
                    tracing::warn!("internode connection from {peer} failed in the handshake: {e}");
                    None
                }
                Err(_) => {
                    tracing::warn!(
                        "internode connection from {peer} failed in the handshake: \
                         the welcome could not be sent in time"
                    );
                    None
                }
            }
        }
        Err(reason) => {
            tracing::warn!("refused internode connection from {peer}: {reason}");
            // Best effort: a ringdb peer reports the reason; anything else just sees the close.
            if let Ok(refusal) = encode(&Reply::Refused { reason }) {
                let _ = tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, async {
                    framed.send(refusal).await?;
                    SinkExt::<Bytes>::close(&mut framed).await
                })
                .await;
            }
            None
        }
    }
}
