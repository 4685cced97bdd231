//! QUERY (opcode 0x07) and the `<query_parameters>` shared with EXECUTE
//! (`native_protocol_v4.spec` §4.1.4).
//!
//! Body: `[long string query][consistency][byte flags]` then, in flag order, the values
//! (`[short n]` + n × (`[string name]` if 0x40) `[value]`), `[int page_size]`,
//! `[bytes paging_state]`, `[consistency serial]`, `[long timestamp µs]`. v3 and v4 share this
//! layout; only v4 allows unset values.

use bytes::{BufMut, Bytes};

use super::Consistency;
use crate::wire::{self, RawValue, WireError};

/// Flag bits of `<query_parameters>` (a single byte in v3/v4).
pub mod query_flags {
    /// Values follow.
    pub const VALUES: u8 = 0x01;
    /// The client already has the result metadata.
    pub const SKIP_METADATA: u8 = 0x02;
    /// `[int page_size]` follows.
    pub const PAGE_SIZE: u8 = 0x04;
    /// `[bytes paging_state]` follows.
    pub const WITH_PAGING_STATE: u8 = 0x08;
    /// `[consistency serial]` follows.
    pub const WITH_SERIAL_CONSISTENCY: u8 = 0x10;
    /// `[long timestamp]` (microseconds) follows.
    pub const WITH_DEFAULT_TIMESTAMP: u8 = 0x20;
    /// Each value is preceded by a `[string]` name.
    pub const WITH_NAMES_FOR_VALUES: u8 = 0x40;
}

use query_flags::*;

/// `<query_parameters>` of QUERY and EXECUTE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryParameters {
    /// Consistency level of the operation.
    pub consistency: Consistency,
    /// Bound values, in marker order (or name order when `names` is set).
    pub values: Vec<RawValue>,
    /// Names of the values when flag 0x40 was set (same length as `values`).
    pub names: Option<Vec<String>>,
    /// Flag 0x02: omit column specs from the Rows result.
    pub skip_metadata: bool,
    /// Flag 0x04: requested page size (`None` means unpaged).
    pub page_size: Option<i32>,
    /// Flag 0x08: opaque paging state from a previous page.
    pub paging_state: Option<Bytes>,
    /// Flag 0x10: consistency of the Paxos phase of conditional updates.
    pub serial_consistency: Option<Consistency>,
    /// Flag 0x20: default write timestamp in microseconds.
    pub timestamp: Option<i64>,
    /// The raw flags byte as received (derived from the fields when encoding).
    pub flags: u8,
}

impl Default for QueryParameters {
    /// CL ONE, no values, unpaged.
    fn default() -> Self {
        QueryParameters::new(Consistency::One)
    }
}

impl QueryParameters {
    /// Parameters with the given consistency and nothing else.
    pub fn new(consistency: Consistency) -> Self {
        QueryParameters {
            consistency,
            values: Vec::new(),
            names: None,
            skip_metadata: false,
            page_size: None,
            paging_state: None,
            serial_consistency: None,
            timestamp: None,
            flags: 0,
        }
    }

    /// Decodes `<query_parameters>` from the front of `buf`. Bound values share `owner` (the frame
    /// body `buf` lies in) when given, else are copied.
    ///
    /// # Errors
    /// Any [`WireError`], including unset values under v3.
    pub fn decode(buf: &mut &[u8], version: u8, owner: Option<&Bytes>) -> Result<Self, WireError> {
        let consistency = wire::read_consistency(buf)?;
        let flags = wire::read_byte(buf)?;
        let mut params = QueryParameters::new(consistency);
        params.flags = flags;
        if flags & VALUES != 0 {
            let n = usize::from(wire::read_short(buf)?);
            let with_names = flags & WITH_NAMES_FOR_VALUES != 0;
            // Every value takes at least 4 bytes: cap the allocation by the input.
            let mut values = Vec::with_capacity(n.min(buf.len() / 4));
            let mut names = Vec::new();
            for _ in 0..n {
                if with_names {
                    names.push(wire::read_string(buf)?.to_owned());
                }
                values.push(wire::read_value_in(buf, version, owner)?);
            }
            params.values = values;
            params.names = with_names.then_some(names);
        }
        params.skip_metadata = flags & SKIP_METADATA != 0;
        if flags & PAGE_SIZE != 0 {
            params.page_size = Some(wire::read_int(buf)?);
        }
        if flags & WITH_PAGING_STATE != 0 {
            params.paging_state = wire::read_bytes(buf)?.map(Bytes::copy_from_slice);
        }
        if flags & WITH_SERIAL_CONSISTENCY != 0 {
            params.serial_consistency = Some(wire::read_consistency(buf)?);
        }
        if flags & WITH_DEFAULT_TIMESTAMP != 0 {
            params.timestamp = Some(wire::read_long(buf)?);
        }
        Ok(params)
    }

    /// The flags byte implied by the fields (what [`QueryParameters::encode`] writes).
    pub fn derived_flags(&self) -> u8 {
        let mut flags = 0;
        if !self.values.is_empty() {
            flags |= VALUES;
            if self.names.is_some() {
                flags |= WITH_NAMES_FOR_VALUES;
            }
        }
        if self.skip_metadata {
            flags |= SKIP_METADATA;
        }
        if self.page_size.is_some() {
            flags |= PAGE_SIZE;
        }
        if self.paging_state.is_some() {
            flags |= WITH_PAGING_STATE;
        }
        if self.serial_consistency.is_some() {
            flags |= WITH_SERIAL_CONSISTENCY;
        }
        if self.timestamp.is_some() {
            flags |= WITH_DEFAULT_TIMESTAMP;
        }
        flags
    }

    /// Encodes `<query_parameters>`; the flags byte comes from [`QueryParameters::derived_flags`].
    pub fn encode(&self, out: &mut impl BufMut) {
        let flags = self.derived_flags();
        wire::write_consistency(out, self.consistency);
        wire::write_byte(out, flags);
        if flags & VALUES != 0 {
            let n = self.values.len().min(usize::from(u16::MAX));
            wire::write_short(out, n as u16);
            for (i, v) in self.values.iter().take(n).enumerate() {
                if let Some(names) = &self.names {
                    wire::write_string(out, names.get(i).map_or("", String::as_str));
                }
                wire::write_value(out, v);
            }
        }
        if let Some(p) = self.page_size {
            wire::write_int(out, p);
        }
        if let Some(s) = &self.paging_state {
            wire::write_bytes(out, Some(s));
        }
        if let Some(c) = self.serial_consistency {
            wire::write_consistency(out, c);
        }
        if let Some(t) = self.timestamp {
            wire::write_long(out, t);
        }
    }
}

/// A QUERY request: CQL text plus parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The CQL statement text.
    pub query: String,
    /// Consistency, values, paging, …
    pub params: QueryParameters,
}

impl Query {
    /// Decodes a QUERY body. Bound values share `owner` (the frame
    /// body `buf` lies in) when given, else are copied.
    ///
    /// # Errors
    /// Any [`WireError`].
    pub fn decode(buf: &mut &[u8], version: u8, owner: Option<&Bytes>) -> Result<Self, WireError> {
        let query = wire::read_long_string(buf)?.to_owned();
        let params = QueryParameters::decode(buf, version, owner)?;
        Ok(Query { query, params })
    }

    /// Encodes a QUERY body.
    pub fn encode(&self, out: &mut impl BufMut) {
        wire::write_long_string(out, &self.query);
        self.params.encode(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_params() -> QueryParameters {
        QueryParameters {
            consistency: Consistency::LocalQuorum,
            values: vec![
                RawValue::Bytes(Bytes::from_static(&[0, 0, 0, 1])),
                RawValue::Null,
                RawValue::Unset,
            ],
            names: Some(vec!["a".into(), "b".into(), "c".into()]),
            skip_metadata: true,
            page_size: Some(5000),
            paging_state: Some(Bytes::from_static(b"state")),
            serial_consistency: Some(Consistency::LocalSerial),
            timestamp: Some(1_700_000_000_000_000),
            flags: 0x7F,
        }
    }

    #[test]
    fn query_round_trip_with_every_flag() {
        let q = Query {
            query: "SELECT * FROM ks.t WHERE k = :a".into(),
            params: full_params(),
        };
        let mut out = Vec::new();
        q.encode(&mut out);
        let mut buf = &out[..];
        assert_eq!(Query::decode(&mut buf, 4, None), Ok(q));
        assert!(buf.is_empty());
    }

    #[test]
    fn python_control_query_bytes() {
        // SELECT, CL ONE, flags 0: what python sends for its topology queries.
        let mut body = vec![0, 0, 0, 3];
        body.extend_from_slice(b"abc");
        body.extend_from_slice(&[0, 1, 0]);
        let q = Query::decode(&mut &body[..], 4, None).unwrap();
        assert_eq!(q.query, "abc");
        assert_eq!(q.params, QueryParameters::default());
    }

    #[test]
    fn unset_is_rejected_in_v3() {
        let mut p = QueryParameters::new(Consistency::One);
        p.values = vec![RawValue::Unset];
        let mut out = Vec::new();
        p.encode(&mut out);
        assert!(QueryParameters::decode(&mut &out[..], 4, None).is_ok());
        assert_eq!(
            QueryParameters::decode(&mut &out[..], 3, None),
            Err(WireError::UnsetNotAllowed)
        );
    }

    #[test]
    fn truncated_parameters_fail() {
        let mut p = full_params();
        p.flags = p.derived_flags();
        let mut out = Vec::new();
        p.encode(&mut out);
        for cut in 0..out.len() {
            assert!(
                QueryParameters::decode(&mut &out[..cut], 4, None).is_err(),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn huge_value_count_does_not_allocate() {
        // flags VALUES, n = 65535, no values present.
        let body = [0, 1, VALUES, 0xFF, 0xFF];
        assert!(QueryParameters::decode(&mut &body[..], 4, None).is_err());
    }
}
