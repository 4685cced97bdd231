//! AUTH_RESPONSE (opcode 0x0F, `native_protocol_v4.spec` §4.1.2): a SASL token as `[bytes]`
//! (for PLAIN: `\0user\0password`). A null token is `None`.

use bytes::BufMut;

use crate::wire::{self, WireError};

/// Decodes an AUTH_RESPONSE body.
///
/// # Errors
/// Any [`WireError`].
pub fn decode(buf: &mut &[u8]) -> Result<Option<Vec<u8>>, WireError> {
    Ok(wire::read_bytes(buf)?.map(<[u8]>::to_vec))
}

/// Encodes an AUTH_RESPONSE body.
pub fn encode(token: Option<&[u8]>, out: &mut impl BufMut) {
    wire::write_bytes(out, token);
}

/// Splits a SASL PLAIN token (`authzid \0 user \0 password`) into `(user, password)`.
pub fn parse_plain(token: &[u8]) -> Option<(&str, &str)> {
    let mut parts = token.split(|b| *b == 0);
    let _authzid = parts.next()?;
    let user = std::str::from_utf8(parts.next()?).ok()?;
    let password = std::str::from_utf8(parts.next()?).ok()?;
    parts.next().is_none().then_some((user, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_response_round_trip_and_plain() {
        let token = b"\0cassandra\0secret".to_vec();
        let mut out = Vec::new();
        encode(Some(&token), &mut out);
        let got = decode(&mut &out[..]).unwrap();
        assert_eq!(got.as_deref(), Some(&token[..]));
        assert_eq!(parse_plain(&token), Some(("cassandra", "secret")));
        assert_eq!(parse_plain(b"nouser"), None);
        let mut out = Vec::new();
        encode(None, &mut out);
        assert_eq!(decode(&mut &out[..]), Ok(None));
    }
}
