//! REGISTER (opcode 0x0B, `native_protocol_v4.spec` §4.1.8): a `[string list]` of event types
//! (`TOPOLOGY_CHANGE`, `STATUS_CHANGE`, `SCHEMA_CHANGE`).

use bytes::BufMut;

use crate::wire::{self, WireError};

/// Decodes a REGISTER body into its event type names.
///
/// # Errors
/// Any [`WireError`].
pub fn decode(buf: &mut &[u8]) -> Result<Vec<String>, WireError> {
    wire::read_string_list(buf)
}

/// Encodes a REGISTER body.
pub fn encode(events: &[String], out: &mut impl BufMut) {
    wire::write_string_list(out, events);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_round_trip() {
        let events = vec!["TOPOLOGY_CHANGE".to_owned(), "SCHEMA_CHANGE".to_owned()];
        let mut out = Vec::new();
        encode(&events, &mut out);
        assert_eq!(decode(&mut &out[..]), Ok(events));
        assert!(decode(&mut &out[..5]).is_err());
    }
}
