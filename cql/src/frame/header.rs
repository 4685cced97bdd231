//! The 9-byte v3/v4 frame header (`native_protocol_v4.spec` §2):
//! `version(1) flags(1) stream(i16) opcode(1) length(u32)`, all big-endian. The top bit of the
//! version byte is the direction (set on responses).

use bytes::{BufMut, BytesMut};

/// Length of a v3/v4 frame header.
pub const HEADER_LEN: usize = 9;

/// Direction bit of the version byte: set on server → client frames.
pub const RESPONSE_BIT: u8 = 0x80;

/// Header flag bits (`native_protocol_v4.spec` §2.2).
pub mod flags {
    /// The body is compressed with the algorithm chosen at STARTUP.
    pub const COMPRESSION: u8 = 0x01;
    /// Tracing requested (request) / tracing id prepended to the body (response).
    pub const TRACING: u8 = 0x02;
    /// A `[bytes map]` custom payload precedes the body.
    pub const CUSTOM_PAYLOAD: u8 = 0x04;
    /// A `[string list]` of warnings precedes the body (responses only).
    pub const WARNING: u8 = 0x08;
    /// The client opts in to a beta protocol version (v5+).
    pub const USE_BETA: u8 = 0x10;
}

/// A message type (`native_protocol_v4.spec` §2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    /// ERROR (response).
    Error = 0x00,
    /// STARTUP (request).
    Startup = 0x01,
    /// READY (response).
    Ready = 0x02,
    /// AUTHENTICATE (response).
    Authenticate = 0x03,
    /// OPTIONS (request).
    Options = 0x05,
    /// SUPPORTED (response).
    Supported = 0x06,
    /// QUERY (request).
    Query = 0x07,
    /// RESULT (response).
    Result = 0x08,
    /// PREPARE (request).
    Prepare = 0x09,
    /// EXECUTE (request).
    Execute = 0x0A,
    /// REGISTER (request).
    Register = 0x0B,
    /// EVENT (server push, stream -1).
    Event = 0x0C,
    /// BATCH (request).
    Batch = 0x0D,
    /// AUTH_CHALLENGE (response).
    AuthChallenge = 0x0E,
    /// AUTH_RESPONSE (request).
    AuthResponse = 0x0F,
    /// AUTH_SUCCESS (response).
    AuthSuccess = 0x10,
}

impl Opcode {
    /// The opcode with code `code`, if it exists.
    pub fn from_u8(code: u8) -> Option<Opcode> {
        Some(match code {
            0x00 => Opcode::Error,
            0x01 => Opcode::Startup,
            0x02 => Opcode::Ready,
            0x03 => Opcode::Authenticate,
            0x05 => Opcode::Options,
            0x06 => Opcode::Supported,
            0x07 => Opcode::Query,
            0x08 => Opcode::Result,
            0x09 => Opcode::Prepare,
            0x0A => Opcode::Execute,
            0x0B => Opcode::Register,
            0x0C => Opcode::Event,
            0x0D => Opcode::Batch,
            0x0E => Opcode::AuthChallenge,
            0x0F => Opcode::AuthResponse,
            0x10 => Opcode::AuthSuccess,
            _ => return None,
        })
    }

    /// The spec's upper-case name (`"QUERY"`), as Cassandra prints it in error messages.
    pub fn name(self) -> &'static str {
        match self {
            Opcode::Error => "ERROR",
            Opcode::Startup => "STARTUP",
            Opcode::Ready => "READY",
            Opcode::Authenticate => "AUTHENTICATE",
            Opcode::Options => "OPTIONS",
            Opcode::Supported => "SUPPORTED",
            Opcode::Query => "QUERY",
            Opcode::Result => "RESULT",
            Opcode::Prepare => "PREPARE",
            Opcode::Execute => "EXECUTE",
            Opcode::Register => "REGISTER",
            Opcode::Event => "EVENT",
            Opcode::Batch => "BATCH",
            Opcode::AuthChallenge => "AUTH_CHALLENGE",
            Opcode::AuthResponse => "AUTH_RESPONSE",
            Opcode::AuthSuccess => "AUTH_SUCCESS",
        }
    }
}

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Protocol version (low 7 bits of the first byte).
    pub version: u8,
    /// The direction bit: true for server → client frames.
    pub is_response: bool,
    /// Header flags (see [`flags`]).
    pub flags: u8,
    /// Stream id; responses echo the request's, events use -1.
    pub stream: i16,
    /// Raw opcode byte (see [`Opcode::from_u8`]).
    pub opcode: u8,
    /// Body length in bytes.
    pub length: u32,
}

impl FrameHeader {
    /// Decodes the first [`HEADER_LEN`] bytes of `buf` as a v3/v4 header; `None` if `buf` is
    /// shorter. No validation is done here (see [`crate::frame::check`]).
    pub fn decode(buf: &[u8]) -> Option<FrameHeader> {
        let h: &[u8; HEADER_LEN] = buf.get(..HEADER_LEN)?.try_into().ok()?;
        Some(FrameHeader {
            version: h[0] & !RESPONSE_BIT,
            is_response: h[0] & RESPONSE_BIT != 0,
            flags: h[1],
            stream: i16::from_be_bytes([h[2], h[3]]),
            opcode: h[4],
            length: u32::from_be_bytes([h[5], h[6], h[7], h[8]]),
        })
    }

    /// Appends the 9 header bytes to `out`.
    pub fn encode(&self, out: &mut BytesMut) {
        let dir = if self.is_response { RESPONSE_BIT } else { 0 };
        out.put_u8((self.version & !RESPONSE_BIT) | dir);
        out.put_u8(self.flags);
        out.put_i16(self.stream);
        out.put_u8(self.opcode);
        out.put_u32(self.length);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let h = FrameHeader {
            version: 4,
            is_response: true,
            flags: flags::WARNING | flags::COMPRESSION,
            stream: -1,
            opcode: Opcode::Event as u8,
            length: 0x0102_0304,
        };
        let mut out = BytesMut::new();
        h.encode(&mut out);
        assert_eq!(&out[..], &[0x84, 0x09, 0xFF, 0xFF, 0x0C, 1, 2, 3, 4]);
        assert_eq!(FrameHeader::decode(&out), Some(h));
        assert_eq!(FrameHeader::decode(&out[..8]), None);
    }

    #[test]
    fn opcodes_round_trip() {
        for code in 0..=u8::MAX {
            if let Some(op) = Opcode::from_u8(code) {
                assert_eq!(op as u8, code);
                assert!(!op.name().is_empty());
            }
        }
        assert_eq!(Opcode::from_u8(4), None);
        assert_eq!(Opcode::from_u8(0x11), None);
    }
}
