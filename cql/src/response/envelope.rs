//! The optional parts of a response frame that come before its message: for now the
//! warnings (flag 0x08, protocol v4 and later), which cqlsh prints and drivers expose. The
//! tracing id (0x02) and the custom payload (0x04) take their places here when they are sent.

use crate::frame::flags;
use crate::wire::{self, WireError};
use bytes::BufMut;

/// What a response carries besides its message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Envelope {
    /// Warnings for the client (Cassandra's `ClientWarn`), in the order they were raised.
    pub warnings: Vec<String>,
}

impl Envelope {
    /// An envelope with these warnings.
    pub fn warned(warnings: Vec<String>) -> Envelope {
        Envelope { warnings }
    }

    /// The header flags this envelope sets in a frame of `version` (protocol v3 has no
    /// warnings: they are dropped there).
    pub fn flags(&self, version: u8) -> u8 {
        if version >= 4 && !self.warnings.is_empty() {
            flags::WARNING
        } else {
            0
        }
    }

    /// Writes the parts [`Envelope::flags`] announces, in the protocol's order.
    pub fn encode(&self, version: u8, out: &mut impl BufMut) {
        if self.flags(version) & flags::WARNING != 0 {
            wire::write_string_list(out, &self.warnings);
        }
    }

    /// Reads the parts a response frame's `frame_flags` announce from the front of `body`,
    /// leaving the message. A tracing id and a custom payload are read past and dropped.
    ///
    /// # Errors
    /// A malformed part.
    pub fn decode(frame_flags: u8, body: &mut &[u8]) -> Result<Envelope, WireError> {
        if frame_flags & flags::TRACING != 0 {
            wire::read_uuid(body)?;
        }
        let warnings = if frame_flags & flags::WARNING != 0 {
            wire::read_string_list(body)?
        } else {
            Vec::new()
        };
        if frame_flags & flags::CUSTOM_PAYLOAD != 0 {
            wire::read_bytes_map(body)?;
        }
        Ok(Envelope { warnings })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_go_before_the_message_from_v4_on() {
        let e = Envelope::warned(vec!["first".into(), "second".into()]);
        assert_eq!(e.flags(4), flags::WARNING);
        assert_eq!(e.flags(3), 0);
        let mut out = Vec::new();
        e.encode(4, &mut out);
        out.extend_from_slice(b"message");
        let mut body = &out[..];
        assert_eq!(Envelope::decode(e.flags(4), &mut body), Ok(e.clone()));
        assert_eq!(body, b"message");
        let mut v3 = Vec::new();
        e.encode(3, &mut v3);
        assert!(v3.is_empty());
        assert_eq!(Envelope::default().flags(4), 0);
    }

    #[test]
    fn a_tracing_id_and_a_custom_payload_are_read_past() {
        let mut out = Vec::new();
        out.extend_from_slice(&[7u8; 16]);
        wire::write_string_list(&mut out, &["w"]);
        out.extend_from_slice(&[0, 0]); // an empty [bytes map]
        let mut body = &out[..];
        let all = flags::TRACING | flags::WARNING | flags::CUSTOM_PAYLOAD;
        assert_eq!(
            Envelope::decode(all, &mut body),
            Ok(Envelope::warned(vec!["w".into()]))
        );
        assert!(body.is_empty());
        let mut short = &out[..10];
        assert!(Envelope::decode(all, &mut short).is_err());
    }
}
