//! Frames (`native_protocol_v4.spec` §2): the 9-byte header and splitting a byte stream into
//! frames. Bodies are opaque here; see [`crate::request`] and [`crate::response`].

mod codec;
mod header;

pub use codec::{check, decode, encode_frame, Frame, FrameError, DEFAULT_MAX_BODY};
pub use header::{flags, FrameHeader, Opcode, HEADER_LEN, RESPONSE_BIT};
