//! Server → client messages (`native_protocol_v4.spec` §4.2): [`Response`] and its encoding.
//!
//! [`Response::encode_body`] writes the message body for protocol v3 or v4 (they differ only in
//! PREPARED metadata, see [`result`]); [`Response::encode_frame`] adds compression and the frame
//! header. [`Response::decode`] is the inverse, used by tests and clients.

mod envelope;
mod error;
pub mod event;
pub mod result;
mod schema_change;
pub mod supported;
mod type_option;

use bytes::{BufMut, BytesMut};

pub use envelope::Envelope;
pub use error::{codes, ErrorBody};
pub use event::Event;
pub use result::{
    ColumnSpec, EncodedRows, Prepared, PreparedMetadata, ResultBody, ResultMetadata, Rows,
};
pub use schema_change::{SchemaChange, SchemaChangeTarget, SchemaChangeType};
pub use type_option::{read_type_option, write_type_option};

use crate::compression::Compression;
use crate::frame::{self, Opcode};
use crate::wire::{self, WireError};

/// A response body that could not be decoded.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseError {
    /// A malformed primitive.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The opcode is not one the protocol defines.
    #[error("unknown opcode 0x{0:02x}")]
    UnknownOpcode(u8),
    /// The opcode is a client → server message.
    #[error("opcode 0x{0:02x} is not a response")]
    NotAResponse(u8),
    /// An ERROR code this crate does not know.
    #[error("unknown error code 0x{0:04x}")]
    UnknownErrorCode(i32),
    /// A RESULT kind other than 1..=5.
    #[error("unknown result kind {0}")]
    UnknownResultKind(i32),
    /// An unknown type option id, or type nesting that is too deep.
    #[error("invalid type option 0x{0:04x}")]
    InvalidTypeOption(u16),
    /// An unknown schema change type or target.
    #[error("invalid schema change {0:?}")]
    InvalidSchemaChange(String),
    /// An unknown event type.
    #[error("unknown event type {0:?}")]
    UnknownEvent(String),
    /// A count beyond what this decoder accepts.
    #[error("too many {what}: {count}")]
    LimitExceeded {
        /// What was counted.
        what: &'static str,
        /// The count received.
        count: usize,
    },
}

/// A server response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// ERROR.
    Error(ErrorBody),
    /// READY (empty body).
    Ready,
    /// AUTHENTICATE with the authenticator's class name.
    Authenticate(String),
    /// SUPPORTED options (see [`supported::supported_options`]).
    Supported(Vec<(String, Vec<String>)>),
    /// RESULT.
    Result(ResultBody),
    /// EVENT (sent on stream -1).
    Event(Event),
    /// AUTH_CHALLENGE with a SASL token.
    AuthChallenge(Option<Vec<u8>>),
    /// AUTH_SUCCESS with an optional final SASL token.
    AuthSuccess(Option<Vec<u8>>),
}

impl Response {
    /// The opcode of this response.
    pub fn opcode(&self) -> Opcode {
        match self {
            Response::Error(_) => Opcode::Error,
            Response::Ready => Opcode::Ready,
            Response::Authenticate(_) => Opcode::Authenticate,
            Response::Supported(_) => Opcode::Supported,
            Response::Result(_) => Opcode::Result,
            Response::Event(_) => Opcode::Event,
            Response::AuthChallenge(_) => Opcode::AuthChallenge,
            Response::AuthSuccess(_) => Opcode::AuthSuccess,
        }
    }

    /// Appends the message body for protocol `version` (3 or 4).
    pub fn encode_body(&self, version: u8, out: &mut impl BufMut) {
        match self {
            Response::Error(e) => e.encode(version, out),
            Response::Ready => {}
            Response::Authenticate(class) => wire::write_string(out, class),
            Response::Supported(options) => supported::encode(options, out),
            Response::Result(r) => r.encode(version, out),
            Response::Event(e) => e.encode(out),
            Response::AuthChallenge(token) | Response::AuthSuccess(token) => {
                wire::write_bytes(out, token.as_deref())
            }
        }
    }

    /// Appends a whole frame: the body, compressed (and flagged) when `compression` is given,
    /// behind a response header with `version` and `stream`.
    pub fn encode_frame(
        &self,
        version: u8,
        stream: i16,
        compression: Option<Compression>,
        out: &mut BytesMut,
    ) {
        self.encode_frame_with(version, stream, compression, &Envelope::default(), out);
    }

    /// [`Response::encode_frame`], with `envelope`'s parts (warnings) before the message.
    pub fn encode_frame_with(
        &self,
        version: u8,
        stream: i16,
        compression: Option<Compression>,
        envelope: &Envelope,
        out: &mut BytesMut,
    ) {
        let flags = envelope.flags(version);
        match compression {
            Some(c) => {
                let mut body = Vec::new();
                envelope.encode(version, &mut body);
                self.encode_body(version, &mut body);
                let z = c.compress(&body);
                frame::encode_frame(
                    version,
                    flags | frame::flags::COMPRESSION,
                    stream,
                    self.opcode(),
                    &z,
                    out,
                );
            }
            None => {
                // The body is encoded in place behind a header whose length is set last.
                let start = out.len();
                frame::encode_frame(version, flags, stream, self.opcode(), &[], out);
                envelope.encode(version, out);
                self.encode_body(version, out);
                let length = u32::try_from(out.len() - start - frame::HEADER_LEN)
                    .expect("frame body must be shorter than 4 GiB");
                out[start + frame::HEADER_LEN - 4..start + frame::HEADER_LEN]
                    .copy_from_slice(&length.to_be_bytes());
            }
        }
    }

    /// Decodes a response body (already decompressed, without tracing/warning prefixes).
    ///
    /// # Errors
    /// Any [`ResponseError`].
    pub fn decode(opcode: u8, version: u8, body: &[u8]) -> Result<Response, ResponseError> {
        let op = Opcode::from_u8(opcode).ok_or(ResponseError::UnknownOpcode(opcode))?;
        let buf = &mut &body[..];
        Ok(match op {
            Opcode::Error => Response::Error(ErrorBody::decode(buf, version)?),
            Opcode::Ready => Response::Ready,
            Opcode::Authenticate => Response::Authenticate(wire::read_string(buf)?.to_owned()),
            Opcode::Supported => Response::Supported(supported::decode(buf)?),
            Opcode::Result => Response::Result(ResultBody::decode(buf, version)?),
            Opcode::Event => Response::Event(Event::decode(buf)?),
            Opcode::AuthChallenge => {
                Response::AuthChallenge(wire::read_bytes(buf)?.map(<[u8]>::to_vec))
            }
            Opcode::AuthSuccess => {
                Response::AuthSuccess(wire::read_bytes(buf)?.map(<[u8]>::to_vec))
            }
            Opcode::Startup
            | Opcode::Options
            | Opcode::Query
            | Opcode::Prepare
            | Opcode::Execute
            | Opcode::Register
            | Opcode::Batch
            | Opcode::AuthResponse => return Err(ResponseError::NotAResponse(opcode)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::FrameHeader;
    use proptest::prelude::*;

    fn samples() -> Vec<Response> {
        vec![
            Response::Error(ErrorBody::Invalid("unconfigured table x".into())),
            Response::Ready,
            Response::Authenticate("org.apache.cassandra.auth.PasswordAuthenticator".into()),
            Response::Supported(supported::supported_options("3.4.6", &[Compression::Lz4])),
            Response::Result(ResultBody::Void),
            Response::Event(Event::StatusChange {
                status: "UP".into(),
                address: "127.0.0.1:9042".parse().unwrap(),
            }),
            Response::AuthChallenge(Some(vec![1, 2])),
            Response::AuthSuccess(None),
        ]
    }

    #[test]
    fn every_response_round_trips() {
        for version in [3, 4] {
            for r in samples() {
                let mut out = BytesMut::new();
                r.encode_body(version, &mut out);
                assert_eq!(Response::decode(r.opcode() as u8, version, &out), Ok(r));
            }
        }
    }

    #[test]
    fn frames_compressed_and_not() {
        let r = Response::Result(ResultBody::SetKeyspace("ks".into()));
        let mut out = BytesMut::new();
        r.encode_frame(4, 3, None, &mut out);
        let h = FrameHeader::decode(&out).unwrap();
        assert!(h.is_response);
        assert_eq!((h.version, h.stream, h.flags, h.opcode), (4, 3, 0, 8));
        assert_eq!(h.length as usize, out.len() - frame::HEADER_LEN);

        let mut out = BytesMut::new();
        r.encode_frame(4, 3, Some(Compression::Lz4), &mut out);
        let h = FrameHeader::decode(&out).unwrap();
        assert_eq!(h.flags, frame::flags::COMPRESSION);
        let body = Compression::Lz4
            .decompress(&out[frame::HEADER_LEN..], 1024)
            .unwrap();
        assert_eq!(Response::decode(h.opcode, 4, &body), Ok(r));
    }

    #[test]
    fn warnings_precede_the_message_compressed_and_not() {
        let r = Response::Result(ResultBody::Void);
        let envelope =
            Envelope::warned(vec!["Aggregation query used without partition key".into()]);
        for compression in [None, Some(Compression::Lz4)] {
            let mut out = BytesMut::new();
            r.encode_frame_with(4, 9, compression, &envelope, &mut out);
            let h = FrameHeader::decode(&out).unwrap();
            assert_eq!(h.length as usize, out.len() - frame::HEADER_LEN);
            assert_ne!(h.flags & frame::flags::WARNING, 0);
            let body = match compression {
                Some(c) => c.decompress(&out[frame::HEADER_LEN..], 1024).unwrap(),
                None => out[frame::HEADER_LEN..].to_vec(),
            };
            let mut rest = &body[..];
            assert_eq!(Envelope::decode(h.flags, &mut rest), Ok(envelope.clone()));
            assert_eq!(Response::decode(h.opcode, 4, rest), Ok(r.clone()));
        }
        // Protocol v3 has no warnings: the frame is the plain one.
        let (mut warned, mut plain) = (BytesMut::new(), BytesMut::new());
        r.encode_frame_with(3, 9, None, &envelope, &mut warned);
        r.encode_frame(3, 9, None, &mut plain);
        assert_eq!(warned, plain);
    }

    #[test]
    fn request_opcodes_are_not_responses() {
        assert_eq!(
            Response::decode(Opcode::Query as u8, 4, &[]),
            Err(ResponseError::NotAResponse(7))
        );
    }

    proptest! {
        #[test]
        fn decode_never_panics(opcode in 0u8..0x12, version in 3u8..5,
                               body in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = Response::decode(opcode, version, &body);
        }
    }
}
