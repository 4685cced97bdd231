//! EXECUTE (opcode 0x0A, `native_protocol_v4.spec` §4.1.6):
//! `[short bytes id][query_parameters]`.

use bytes::{BufMut, Bytes};

use super::QueryParameters;
use crate::wire::{self, WireError};

/// An EXECUTE request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execute {
    /// The prepared statement id returned by PREPARE.
    pub id: Bytes,
    /// Consistency, values, paging, …
    pub params: QueryParameters,
}

impl Execute {
    /// Decodes an EXECUTE body. The id and bound values share `owner` (the frame
    /// body `buf` lies in) when given, else are copied.
    ///
    /// # Errors
    /// Any [`WireError`].
    pub fn decode(buf: &mut &[u8], version: u8, owner: Option<&Bytes>) -> Result<Self, WireError> {
        let id = wire::share(owner, wire::read_short_bytes(buf)?);
        let params = QueryParameters::decode(buf, version, owner)?;
        Ok(Execute { id, params })
    }

    /// Encodes an EXECUTE body.
    pub fn encode(&self, out: &mut impl BufMut) {
        wire::write_short_bytes(out, &self.id);
        self.params.encode(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Consistency;
    use crate::wire::RawValue;

    #[test]
    fn execute_round_trip() {
        let mut params = QueryParameters::new(Consistency::Quorum);
        params.values = vec![RawValue::Bytes(Bytes::from_static(b"x"))];
        params.page_size = Some(100);
        params.flags = params.derived_flags();
        let e = Execute {
            id: Bytes::from_static(&[0xAB; 16]),
            params,
        };
        let mut out = Vec::new();
        e.encode(&mut out);
        assert_eq!(&out[..2], &[0, 16]);
        assert_eq!(Execute::decode(&mut &out[..], 4, None), Ok(e));
        assert!(Execute::decode(&mut &out[..17], 4, None).is_err());
    }
}
