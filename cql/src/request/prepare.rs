//! PREPARE (opcode 0x09, `native_protocol_v4.spec` §4.1.5): `[long string query]`.

use bytes::BufMut;

use crate::wire::{self, WireError};

/// A PREPARE request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepare {
    /// The CQL statement text to prepare.
    pub query: String,
}

impl Prepare {
    /// Decodes a PREPARE body.
    ///
    /// # Errors
    /// Any [`WireError`].
    pub fn decode(buf: &mut &[u8]) -> Result<Self, WireError> {
        Ok(Prepare {
            query: wire::read_long_string(buf)?.to_owned(),
        })
    }

    /// Encodes a PREPARE body.
    pub fn encode(&self, out: &mut impl BufMut) {
        wire::write_long_string(out, &self.query);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_round_trip() {
        let p = Prepare {
            query: "SELECT * FROM t WHERE k = ?".into(),
        };
        let mut out = Vec::new();
        p.encode(&mut out);
        assert_eq!(&out[..4], &[0, 0, 0, 27]);
        assert_eq!(Prepare::decode(&mut &out[..]), Ok(p));
        assert!(Prepare::decode(&mut &out[..10]).is_err());
    }
}
