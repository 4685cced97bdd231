//! Client → server messages (`native_protocol_v4.spec` §4.1) and their decoding.
//!
//! [`Request::decode`] turns an opcode and a (decompressed) body into a [`Request`]. It never
//! panics, rejects invalid UTF-8 and ignores trailing bytes, as Cassandra does. v3 and v4 differ
//! only in that v3 has no unset `[value]`.

pub mod auth_response;
pub mod batch;
pub mod execute;
pub mod prepare;
pub mod query;
pub mod register;
pub mod startup;

use bytes::{BufMut, Bytes};

pub use batch::{Batch, BatchStatement, BatchStatementKind, BatchType};
pub use execute::Execute;
pub use prepare::Prepare;
pub use query::{query_flags, Query, QueryParameters};

pub use crate::consistency::Consistency;
use crate::frame::{flags, Opcode};
pub use crate::wire::RawValue;
use crate::wire::{self, WireError};

/// A frame's custom payload (`[bytes map]`, header flag 0x04), in wire order.
pub type CustomPayload = Vec<(String, Option<bytes::Bytes>)>;

/// A request body that could not be decoded.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// The opcode is not one the protocol defines.
    #[error("unknown opcode 0x{0:02x}")]
    UnknownOpcode(u8),
    /// The opcode is a server → client message (READY, RESULT, …).
    #[error("opcode 0x{0:02x} is not a request")]
    NotARequest(u8),
    /// A malformed primitive.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// A BATCH type other than 0, 1, 2.
    #[error("invalid batch type {0}")]
    InvalidBatchType(u8),
    /// A BATCH statement kind other than 0 (query) or 1 (prepared).
    #[error("invalid batch statement kind {0}")]
    InvalidBatchStatementKind(u8),
}

/// A decoded client request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// STARTUP options in wire order.
    Startup(Vec<(String, String)>),
    /// OPTIONS (empty body).
    Options,
    /// QUERY.
    Query(Query),
    /// PREPARE.
    Prepare(Prepare),
    /// EXECUTE.
    Execute(Execute),
    /// BATCH.
    Batch(Batch),
    /// REGISTER with its event type names.
    Register(Vec<String>),
    /// AUTH_RESPONSE with its SASL token (`None` if null).
    AuthResponse(Option<Vec<u8>>),
}

impl Request {
    /// Decodes a request body of the given opcode under protocol `version` (3 or 4).
    ///
    /// # Errors
    /// [`RequestError::UnknownOpcode`], [`RequestError::NotARequest`] for a response opcode, or
    /// a decoding error of the body.
    pub fn decode(opcode: u8, version: u8, body: &[u8]) -> Result<Request, RequestError> {
        Request::decode_in(opcode, version, body, None)
    }

    /// Like [`Request::decode`], with bound values and statement ids sharing `owner` (the
    /// frame body `body` lies in) instead of copied.
    fn decode_in(
        opcode: u8,
        version: u8,
        body: &[u8],
        owner: Option<&Bytes>,
    ) -> Result<Request, RequestError> {
        let op = Opcode::from_u8(opcode).ok_or(RequestError::UnknownOpcode(opcode))?;
        let buf = &mut &body[..];
        Ok(match op {
            Opcode::Startup => Request::Startup(startup::decode(buf)?),
            Opcode::Options => Request::Options,
            Opcode::Query => Request::Query(Query::decode(buf, version, owner)?),
            Opcode::Prepare => Request::Prepare(Prepare::decode(buf)?),
            Opcode::Execute => Request::Execute(Execute::decode(buf, version, owner)?),
            Opcode::Batch => Request::Batch(Batch::decode(buf, version, owner)?),
            Opcode::Register => Request::Register(register::decode(buf)?),
            Opcode::AuthResponse => Request::AuthResponse(auth_response::decode(buf)?),
            Opcode::Error
            | Opcode::Ready
            | Opcode::Authenticate
            | Opcode::Supported
            | Opcode::Result
            | Opcode::Event
            | Opcode::AuthChallenge
            | Opcode::AuthSuccess => return Err(RequestError::NotARequest(opcode)),
        })
    }

    /// Like [`Request::decode`], but first honours the frame's header flags: with
    /// [`flags::CUSTOM_PAYLOAD`] the body starts with a `[bytes map]`, which is skipped (and
    /// returned). Tracing needs no body change in requests.
    ///
    /// # Errors
    /// As [`Request::decode`].
    pub fn decode_with_flags(
        header_flags: u8,
        opcode: u8,
        version: u8,
        body: &[u8],
    ) -> Result<(Request, Option<CustomPayload>), RequestError> {
        Request::decode_flags_in(header_flags, opcode, version, body, None)
    }

    /// Like [`Request::decode_with_flags`], but bound values and statement ids are
    /// zero-copy slices of `body`, which they keep alive while the request lives.
    ///
    /// # Errors
    /// As [`Request::decode_with_flags`].
    pub fn decode_shared(
        header_flags: u8,
        opcode: u8,
        version: u8,
        body: &Bytes,
    ) -> Result<(Request, Option<CustomPayload>), RequestError> {
        Request::decode_flags_in(header_flags, opcode, version, body, Some(body))
    }

    fn decode_flags_in(
        header_flags: u8,
        opcode: u8,
        version: u8,
        body: &[u8],
        owner: Option<&Bytes>,
    ) -> Result<(Request, Option<CustomPayload>), RequestError> {
        let mut buf = body;
        let payload = if header_flags & flags::CUSTOM_PAYLOAD != 0 {
            Some(wire::read_bytes_map(&mut buf)?)
        } else {
            None
        };
        Ok((Request::decode_in(opcode, version, buf, owner)?, payload))
    }

    /// The opcode of this request.
    pub fn opcode(&self) -> Opcode {
        match self {
            Request::Startup(_) => Opcode::Startup,
            Request::Options => Opcode::Options,
            Request::Query(_) => Opcode::Query,
            Request::Prepare(_) => Opcode::Prepare,
            Request::Execute(_) => Opcode::Execute,
            Request::Batch(_) => Opcode::Batch,
            Request::Register(_) => Opcode::Register,
            Request::AuthResponse(_) => Opcode::AuthResponse,
        }
    }

    /// Encodes the body of this request (for clients and tests). The layout is the same in v3
    /// and v4; `version` is accepted for symmetry with [`Request::decode`].
    pub fn encode_body(&self, _version: u8, out: &mut impl BufMut) {
        match self {
            Request::Startup(opts) => startup::encode(opts, out),
            Request::Options => {}
            Request::Query(q) => q.encode(out),
            Request::Prepare(p) => p.encode(out),
            Request::Execute(e) => e.encode(out),
            Request::Batch(b) => b.encode(out),
            Request::Register(events) => register::encode(events, out),
            Request::AuthResponse(token) => auth_response::encode(token.as_deref(), out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use proptest::prelude::*;

    fn samples() -> Vec<Request> {
        let mut params = QueryParameters::new(Consistency::One);
        params.values = vec![RawValue::Bytes(Bytes::from_static(b"v"))];
        params.timestamp = Some(7);
        params.flags = params.derived_flags();
        vec![
            Request::Startup(vec![("CQL_VERSION".into(), "3.0.0".into())]),
            Request::Options,
            Request::Query(Query {
                query: "SELECT now() FROM system.local".into(),
                params: params.clone(),
            }),
            Request::Prepare(Prepare {
                query: "SELECT * FROM t WHERE k = ?".into(),
            }),
            Request::Execute(Execute {
                id: Bytes::from_static(&[9; 16]),
                params,
            }),
            Request::Batch(Batch {
                batch_type: BatchType::Logged,
                statements: vec![],
                consistency: Consistency::All,
                serial_consistency: None,
                timestamp: None,
            }),
            Request::Register(vec!["SCHEMA_CHANGE".into()]),
            Request::AuthResponse(Some(b"\0u\0p".to_vec())),
        ]
    }

    #[test]
    fn every_request_round_trips() {
        for req in samples() {
            let mut out = Vec::new();
            req.encode_body(4, &mut out);
            let got = Request::decode(req.opcode() as u8, 4, &out);
            assert_eq!(got, Ok(req));
        }
    }

    #[test]
    fn response_opcodes_are_not_requests() {
        assert_eq!(
            Request::decode(Opcode::Ready as u8, 4, &[]),
            Err(RequestError::NotARequest(2))
        );
        assert_eq!(
            Request::decode(0x04, 4, &[]),
            Err(RequestError::UnknownOpcode(4))
        );
        assert_eq!(
            Request::decode(0xFF, 4, &[]),
            Err(RequestError::UnknownOpcode(0xFF))
        );
    }

    #[test]
    fn trailing_bytes_are_ignored() {
        assert_eq!(
            Request::decode(Opcode::Options as u8, 4, &[1, 2, 3]),
            Ok(Request::Options)
        );
    }

    #[test]
    fn invalid_utf8_query_is_an_error() {
        let body = [0, 0, 0, 2, 0xC3, 0x28, 0, 1, 0];
        assert_eq!(
            Request::decode(Opcode::Query as u8, 4, &body),
            Err(RequestError::Wire(WireError::InvalidUtf8))
        );
    }

    #[test]
    fn custom_payload_is_skipped() {
        let mut body = Vec::new();
        wire::write_bytes_map(&mut body, &[("k", Some(Bytes::from_static(b"v")))]);
        Prepare { query: "q".into() }.encode(&mut body);
        let (req, payload) =
            Request::decode_with_flags(flags::CUSTOM_PAYLOAD, Opcode::Prepare as u8, 4, &body)
                .unwrap();
        assert_eq!(req, Request::Prepare(Prepare { query: "q".into() }));
        assert_eq!(payload.map(|p| p.len()), Some(1));
    }

    proptest! {
        #[test]
        fn decode_never_panics(opcode in 0u8..0x12, version in 3u8..5,
                               body in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = Request::decode(opcode, version, &body);
            let _ = Request::decode_with_flags(0xFF, opcode, version, &body);
        }
    }
}
