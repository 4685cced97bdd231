//! STARTUP (opcode 0x01, `native_protocol_v4.spec` §4.1.1): a `[string map]` of options
//! (`CQL_VERSION`, `COMPRESSION`, `DRIVER_NAME`, …), kept in wire order.

use bytes::BufMut;

use crate::wire::{self, WireError};

/// The mandatory STARTUP key.
pub const CQL_VERSION: &str = "CQL_VERSION";
/// The optional compression key (`lz4` or `snappy`).
pub const COMPRESSION: &str = "COMPRESSION";

/// Decodes a STARTUP body.
///
/// # Errors
/// Any [`WireError`].
pub fn decode(buf: &mut &[u8]) -> Result<Vec<(String, String)>, WireError> {
    wire::read_string_map(buf)
}

/// Encodes a STARTUP body.
pub fn encode(options: &[(String, String)], out: &mut impl BufMut) {
    wire::write_string_map(out, options);
}

/// The value of `key` in STARTUP options, matching the key case-insensitively as Cassandra does.
pub fn option<'a>(options: &'a [(String, String)], key: &str) -> Option<&'a str> {
    options
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_round_trip_and_lookup() {
        let opts = vec![
            ("CQL_VERSION".to_owned(), "3.4.6".to_owned()),
            ("compression".to_owned(), "lz4".to_owned()),
        ];
        let mut out = Vec::new();
        encode(&opts, &mut out);
        let got = decode(&mut &out[..]).unwrap();
        assert_eq!(got, opts);
        assert_eq!(option(&got, CQL_VERSION), Some("3.4.6"));
        assert_eq!(option(&got, COMPRESSION), Some("lz4"));
        assert_eq!(option(&got, "DRIVER_NAME"), None);
    }
}
