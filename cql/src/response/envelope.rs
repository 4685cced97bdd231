//! The optional parts of a response frame that come before its message: the warnings (flag
//! 0x08), which cqlsh prints and drivers expose, and the custom payload (0x04; Cosmos DB's
//! `RequestCharge`), both protocol v4 and later. The tracing id (0x02) takes its place here
//! when it is sent.

use crate::frame::flags;
use crate::wire::{self, WireError};
use bytes::BufMut;

/// What a response carries besides its message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Envelope {
    /// Warnings for the client (Cassandra's `ClientWarn`), in the order they were raised.
    pub warnings: Vec<String>,
    /// The custom payload: keys and values.
    pub custom_payload: Vec<(String, Vec<u8>)>,
    /// The tracing session of a request that asked to be traced.
    pub tracing_id: Option<uuid::Uuid>,
}

impl Envelope {
    /// An envelope with these warnings.
    pub fn warned(warnings: Vec<String>) -> Envelope {
        Envelope {
            warnings,
            custom_payload: Vec::new(),
            tracing_id: None,
        }
    }

    /// The header flags this envelope sets in a frame of `version` (protocol v3 has neither
    /// warnings nor custom payloads: they are dropped there; a tracing id goes in any).
    pub fn flags(&self, version: u8) -> u8 {
        let tracing = if self.tracing_id.is_some() {
            flags::TRACING
        } else {
            0
        };
        if version < 4 {
            return tracing;
        }
        let mut f = tracing;
        if !self.warnings.is_empty() {
            f |= flags::WARNING;
        }
        if !self.custom_payload.is_empty() {
            f |= flags::CUSTOM_PAYLOAD;
        }
        f
    }

    /// Writes the parts [`Envelope::flags`] announces, in the protocol's order.
    pub fn encode(&self, version: u8, out: &mut impl BufMut) {
        let f = self.flags(version);
        if let Some(id) = self.tracing_id {
            wire::write_uuid(out, id);
        }
        if f & flags::WARNING != 0 {
            wire::write_string_list(out, &self.warnings);
        }
        if f & flags::CUSTOM_PAYLOAD != 0 {
            let count = u16::try_from(self.custom_payload.len()).unwrap_or(u16::MAX);
            out.put_u16(count);
            for (key, value) in self.custom_payload.iter().take(usize::from(count)) {
                wire::write_string(out, key);
                wire::write_bytes(out, Some(value));
            }
        }
    }

    /// Reads the parts a response frame's `frame_flags` announce from the front of `body`,
    /// leaving the message.
    ///
    /// # Errors
    /// A malformed part.
    pub fn decode(frame_flags: u8, body: &mut &[u8]) -> Result<Envelope, WireError> {
        let tracing_id = if frame_flags & flags::TRACING != 0 {
            Some(wire::read_uuid(body)?)
        } else {
            None
        };
        let warnings = if frame_flags & flags::WARNING != 0 {
            wire::read_string_list(body)?
        } else {
            Vec::new()
        };
        let custom_payload = if frame_flags & flags::CUSTOM_PAYLOAD != 0 {
            wire::read_bytes_map(body)?
                .into_iter()
                .map(|(k, v)| (k, v.map(|b| b.to_vec()).unwrap_or_default()))
                .collect()
        } else {
            Vec::new()
        };
        Ok(Envelope {
            warnings,
            custom_payload,
            tracing_id,
        })
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
    fn a_custom_payload_follows_the_warnings() {
        let e = Envelope {
            warnings: vec!["w".into()],
            custom_payload: vec![("RequestCharge".into(), 1.5f64.to_be_bytes().to_vec())],
            tracing_id: None,
        };
        assert_eq!(e.flags(4), flags::WARNING | flags::CUSTOM_PAYLOAD);
        let mut out = Vec::new();
        e.encode(4, &mut out);
        let mut body = &out[..];
        assert_eq!(Envelope::decode(e.flags(4), &mut body), Ok(e.clone()));
        assert!(body.is_empty());
        assert_eq!(e.flags(3), 0);
    }

    #[test]
    fn a_tracing_id_comes_first_in_every_version() {
        let mut out = Vec::new();
        out.extend_from_slice(&[7u8; 16]);
        wire::write_string_list(&mut out, &["w"]);
        out.extend_from_slice(&[0, 0]); // an empty [bytes map]
        let mut body = &out[..];
        let all = flags::TRACING | flags::WARNING | flags::CUSTOM_PAYLOAD;
        let mut traced = Envelope::warned(vec!["w".into()]);
        traced.tracing_id = Some(uuid::Uuid::from_bytes([7; 16]));
        assert_eq!(Envelope::decode(all, &mut body), Ok(traced.clone()));
        assert_eq!(traced.flags(3), flags::TRACING);
        let mut v3 = Vec::new();
        traced.encode(3, &mut v3);
        assert_eq!(v3, [7u8; 16]);
        assert!(body.is_empty());
        let mut short = &out[..10];
        assert!(Envelope::decode(all, &mut short).is_err());
    }
}
