//! SUPPORTED (opcode 0x06, `native_protocol_v4.spec` §4.2.4): a `[string multimap]` of options.
//!
//! Python indexes `COMPRESSION` and pops `CQL_VERSION` unconditionally, so both keys must always
//! be present (reference §1.1); [`supported_options`] builds a map that satisfies every driver.

use bytes::BufMut;

use crate::compression::Compression;
use crate::wire::{self, WireError};

/// Key listing the CQL versions.
pub const CQL_VERSION: &str = "CQL_VERSION";
/// Key listing the compression algorithms (may be empty, never absent).
pub const COMPRESSION: &str = "COMPRESSION";
/// Key listing the protocol versions.
pub const PROTOCOL_VERSIONS: &str = "PROTOCOL_VERSIONS";

/// The options a v3/v4 server advertises: `CQL_VERSION: [cql_version]`,
/// `COMPRESSION: [...]`, `PROTOCOL_VERSIONS: ["3/v3", "4/v4"]`.
pub fn supported_options(
    cql_version: &str,
    compression: &[Compression],
) -> Vec<(String, Vec<String>)> {
    vec![
        (CQL_VERSION.to_owned(), vec![cql_version.to_owned()]),
        (
            COMPRESSION.to_owned(),
            compression.iter().map(|c| c.name().to_owned()).collect(),
        ),
        (
            PROTOCOL_VERSIONS.to_owned(),
            vec!["3/v3".to_owned(), "4/v4".to_owned()],
        ),
    ]
}

/// Appends a SUPPORTED body.
pub fn encode(options: &[(String, Vec<String>)], out: &mut impl BufMut) {
    wire::write_string_multimap(out, options);
}

/// Decodes a SUPPORTED body.
///
/// # Errors
/// Any [`WireError`].
pub fn decode(buf: &mut &[u8]) -> Result<Vec<(String, Vec<String>)>, WireError> {
    wire::read_string_multimap(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_always_has_compression_key() {
        let opts = supported_options("3.4.6", &[]);
        assert!(opts.iter().any(|(k, v)| k == COMPRESSION && v.is_empty()));
        let opts = supported_options("3.4.6", &[Compression::Snappy, Compression::Lz4]);
        let mut out = Vec::new();
        encode(&opts, &mut out);
        assert_eq!(decode(&mut &out[..]), Ok(opts));
    }
}
