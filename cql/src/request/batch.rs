//! BATCH (opcode 0x0D, `native_protocol_v4.spec` §4.1.7).
//!
//! Body: `[byte type][short n]` + n × (`[byte kind]` 0 = `[long string query]` |
//! 1 = `[short bytes id]`, `[short n][value]*`), then `[consistency][byte flags]`,
//! `[consistency serial]` if 0x10 and `[long timestamp]` if 0x20. Flag 0x40 (names for values)
//! cannot apply since the flags come after the values; Cassandra ignores it and so do we.

use bytes::{BufMut, Bytes};

use super::query_flags::{WITH_DEFAULT_TIMESTAMP, WITH_SERIAL_CONSISTENCY};
use super::{Consistency, RequestError};
use crate::wire::{self, RawValue};

/// The kind of batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BatchType {
    /// Atomic, through the batch log.
    Logged = 0,
    /// Not atomic.
    Unlogged = 1,
    /// Counter updates only.
    Counter = 2,
}

impl BatchType {
    /// The type with wire code `code`.
    pub fn from_u8(code: u8) -> Option<BatchType> {
        match code {
            0 => Some(BatchType::Logged),
            1 => Some(BatchType::Unlogged),
            2 => Some(BatchType::Counter),
            _ => None,
        }
    }
}

/// Either CQL text or a prepared statement id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchStatementKind {
    /// Kind 0: a query string.
    Query(String),
    /// Kind 1: a prepared statement id.
    Prepared(Bytes),
}

/// One statement of a batch with its bound values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchStatement {
    /// The statement.
    pub kind: BatchStatementKind,
    /// Its bound values, in marker order.
    pub values: Vec<RawValue>,
}

/// A BATCH request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// Logged, unlogged or counter.
    pub batch_type: BatchType,
    /// The statements, in order.
    pub statements: Vec<BatchStatement>,
    /// Consistency level.
    pub consistency: Consistency,
    /// Serial consistency for conditional batches (flag 0x10).
    pub serial_consistency: Option<Consistency>,
    /// Default write timestamp in microseconds (flag 0x20).
    pub timestamp: Option<i64>,
}

impl Batch {
    /// Decodes a BATCH body. Bound values and statement ids share `owner` (the frame
    /// body `buf` lies in) when given, else are copied.
    ///
    /// # Errors
    /// [`RequestError::InvalidBatchType`], [`RequestError::InvalidBatchStatementKind`], or a
    /// wire error.
    pub fn decode(
        buf: &mut &[u8],
        version: u8,
        owner: Option<&Bytes>,
    ) -> Result<Self, RequestError> {
        let code = wire::read_byte(buf)?;
        let batch_type = BatchType::from_u8(code).ok_or(RequestError::InvalidBatchType(code))?;
        let n = usize::from(wire::read_short(buf)?);
        // Each statement takes at least 5 bytes: cap the allocation by the input.
        let mut statements = Vec::with_capacity(n.min(buf.len() / 5));
        for _ in 0..n {
            let kind = match wire::read_byte(buf)? {
                0 => BatchStatementKind::Query(wire::read_long_string(buf)?.to_owned()),
                1 => BatchStatementKind::Prepared(wire::share(owner, wire::read_short_bytes(buf)?)),
                other => return Err(RequestError::InvalidBatchStatementKind(other)),
            };
            let count = usize::from(wire::read_short(buf)?);
            let mut values = Vec::with_capacity(count.min(buf.len() / 4));
            for _ in 0..count {
                values.push(wire::read_value_in(buf, version, owner)?);
            }
            statements.push(BatchStatement { kind, values });
        }
        let consistency = wire::read_consistency(buf)?;
        let flags = wire::read_byte(buf)?;
        let serial_consistency = if flags & WITH_SERIAL_CONSISTENCY != 0 {
            Some(wire::read_consistency(buf)?)
        } else {
            None
        };
        let timestamp = if flags & WITH_DEFAULT_TIMESTAMP != 0 {
            Some(wire::read_long(buf)?)
        } else {
            None
        };
        Ok(Batch {
            batch_type,
            statements,
            consistency,
            serial_consistency,
            timestamp,
        })
    }

    /// Encodes a BATCH body (at most 65 535 statements and values per statement).
    pub fn encode(&self, out: &mut impl BufMut) {
        wire::write_byte(out, self.batch_type as u8);
        let n = self.statements.len().min(usize::from(u16::MAX));
        wire::write_short(out, n as u16);
        for s in self.statements.iter().take(n) {
            match &s.kind {
                BatchStatementKind::Query(q) => {
                    wire::write_byte(out, 0);
                    wire::write_long_string(out, q);
                }
                BatchStatementKind::Prepared(id) => {
                    wire::write_byte(out, 1);
                    wire::write_short_bytes(out, id);
                }
            }
            let count = s.values.len().min(usize::from(u16::MAX));
            wire::write_short(out, count as u16);
            for v in s.values.iter().take(count) {
                wire::write_value(out, v);
            }
        }
        wire::write_consistency(out, self.consistency);
        let mut flags = 0;
        if self.serial_consistency.is_some() {
            flags |= WITH_SERIAL_CONSISTENCY;
        }
        if self.timestamp.is_some() {
            flags |= WITH_DEFAULT_TIMESTAMP;
        }
        wire::write_byte(out, flags);
        if let Some(c) = self.serial_consistency {
            wire::write_consistency(out, c);
        }
        if let Some(t) = self.timestamp {
            wire::write_long(out, t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::WireError;

    fn sample() -> Batch {
        Batch {
            batch_type: BatchType::Unlogged,
            statements: vec![
                BatchStatement {
                    kind: BatchStatementKind::Query("INSERT INTO t (k) VALUES (?)".into()),
                    values: vec![RawValue::Bytes(Bytes::from_static(&[0, 0, 0, 7]))],
                },
                BatchStatement {
                    kind: BatchStatementKind::Prepared(Bytes::from_static(&[1; 16])),
                    values: vec![RawValue::Null, RawValue::Unset],
                },
            ],
            consistency: Consistency::Quorum,
            serial_consistency: Some(Consistency::Serial),
            timestamp: Some(42),
        }
    }

    #[test]
    fn batch_round_trip() {
        let b = sample();
        let mut out = Vec::new();
        b.encode(&mut out);
        let mut buf = &out[..];
        assert_eq!(Batch::decode(&mut buf, 4, None), Ok(b));
        assert!(buf.is_empty());
    }

    #[test]
    fn batch_malformed_inputs_fail() {
        let mut out = Vec::new();
        sample().encode(&mut out);
        for cut in 0..out.len() {
            assert!(
                Batch::decode(&mut &out[..cut], 4, None).is_err(),
                "cut {cut}"
            );
        }
        assert_eq!(
            Batch::decode(&mut &[3u8, 0, 0][..], 4, None),
            Err(RequestError::InvalidBatchType(3))
        );
        assert_eq!(
            Batch::decode(&mut &[0u8, 0, 1, 2][..], 4, None),
            Err(RequestError::InvalidBatchStatementKind(2))
        );
        assert_eq!(
            Batch::decode(&mut &out[..], 3, None),
            Err(RequestError::Wire(WireError::UnsetNotAllowed))
        );
    }
}
