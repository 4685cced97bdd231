//! Internode transport: one multiplexed RPC connection per peer, checked by a handshake.
//!
//! A connection starts with a handshake (`handshake.rs`): the connecting node sends one
//! length-delimited `Hello` frame (magic, [`PROTOCOL_VERSION`], cluster name, node id) and the
//! accepting node answers `Welcome` or `Refused`. After a welcome, tarpc takes the stream over
//! (same length-delimited framing, bincode bodies): request ids, many requests in flight at
//! once on the one connection, and a deadline on each request that the server honours too.
//! Requests and answers are opaque byte strings; what they mean is the caller's business.
//!
//! [`Transport`] is the client side (`client.rs`), [`serve`] the server side (`server.rs`);
//! optional TLS ([`ClientTls`], [`ServerTls`]) wraps the TCP stream before the handshake.

mod client;
mod handshake;
mod server;
mod tls;

#[cfg(test)]
mod tests;

pub use client::Transport;
pub use server::serve;
pub use tls::{ClientTls, ServerTls};

use futures::future::BoxFuture;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::time::Duration;
use tokio_util::codec::LengthDelimitedCodec;

/// Internode protocol version, checked in the handshake.
pub const PROTOCOL_VERSION: u32 = 1;

/// Largest frame on an established connection (64 MiB): one request or answer with its
/// envelope. A longer frame announced by the other side breaks the connection.
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// Largest request or answer payload: [`MAX_FRAME_BYTES`] less room for tarpc's envelope
/// (request id, deadline, trace ids). A larger request fails with [`TransportError::TooLarge`]
/// without being sent; a larger answer reaches the caller as [`TransportError::Remote`].
pub const MAX_PAYLOAD_BYTES: usize = MAX_FRAME_BYTES - 4096;

/// Largest handshake frame (64 KiB); the hello holds little more than the cluster name.
const MAX_HELLO_BYTES: usize = 64 << 10;

/// Time a connecting peer gets to complete TLS (when on) and send its hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// Who this node is on the internode port.
#[derive(Clone, Debug)]
pub struct Identity {
    /// The cluster this node belongs to; peers of another cluster are refused.
    pub cluster_name: String,
    /// This node's id, told to every peer in the handshake.
    pub node_id: u64,
}

/// Serves requests arriving from peers. `from` is the peer's node id from its handshake.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request. Runs concurrently with the other requests of the same connection;
    /// dropped unfinished when the caller's deadline passes or the caller gives up.
    fn handle(&self, from: u64, payload: Vec<u8>) -> BoxFuture<'static, Vec<u8>>;
}

/// Why a [`Transport::call`] got no answer.
///
/// [`Connect`](Self::Connect) and [`Refused`](Self::Refused) mean the request was not sent;
/// after [`Timeout`](Self::Timeout), [`Closed`](Self::Closed) or [`Remote`](Self::Remote) the
/// peer may or may not have acted on it.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// No connection to the peer: refused, unreachable, TLS failed, the handshake broke off, or
    /// the call's timeout ran out before a connection was made (`ErrorKind::TimedOut`).
    #[error("cannot connect: {0}")]
    Connect(std::io::Error),
    /// The peer refused the handshake (another cluster, another protocol version, ...).
    #[error("handshake refused by the peer: {0}")]
    Refused(String),
    /// The request was sent but no answer came within the call's timeout.
    #[error("no answer within the timeout")]
    Timeout,
    /// The connection was lost before the answer arrived.
    #[error("connection lost before the answer arrived")]
    Closed,
    /// The peer could not answer: its handler panicked, or its answer was too large.
    #[error("the peer failed to answer: {0}")]
    Remote(String),
    /// The request payload (this many bytes) is over [`MAX_PAYLOAD_BYTES`]; it was not sent.
    #[error("request of {0} bytes is over the internode limit of {MAX_PAYLOAD_BYTES} bytes")]
    TooLarge(usize),
}

/// The framing of the handshake frames: 4-byte big-endian length, at most [`MAX_HELLO_BYTES`].
/// The same codec (with its limit raised to [`MAX_FRAME_BYTES`]) frames tarpc's messages after.
fn hello_codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(MAX_HELLO_BYTES)
        .new_codec()
}

/// A request or answer body on the wire: one byte string (not a sequence of single bytes, which
/// bincode would encode and decode byte by byte).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Payload(Vec<u8>);

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Payload, D::Error> {
        deserializer.deserialize_byte_buf(PayloadVisitor)
    }
}

struct PayloadVisitor;

impl<'de> serde::de::Visitor<'de> for PayloadVisitor {
    type Value = Payload;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a byte string")
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Payload, E> {
        Ok(Payload(v.to_vec()))
    }

    fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Payload, E> {
        Ok(Payload(v))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Payload, A::Error> {
        // Formats without byte strings; the size hint comes off the wire, so it is capped.
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(b) = seq.next_element()? {
            bytes.push(b);
        }
        Ok(Payload(bytes))
    }
}

impl tarpc::RequestName for Payload {
    fn name(&self) -> &str {
        "internode"
    }
}

/// tarpc's serialization of both sides' messages.
type Codec<Item, SinkItem> = tarpc::tokio_serde::formats::Bincode<Item, SinkItem>;
