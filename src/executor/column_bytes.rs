//! A stored column's value as the protocol serializes it: simple cells as stored (borrowed, not
//! copied), collections and UDTs rebuilt from their element cells.

use bytes::{BufMut, Bytes};
use cql::types::DataType;
use std::borrow::Cow;
use storage::ColumnValue;

/// Serializes a stored column for a result: simple cells as stored, collections rebuilt.
pub(crate) fn serialize_column(v: &ColumnValue, ty: &DataType) -> Option<Bytes> {
    column_bytes(v, ty).map(cow_to_bytes)
}

/// A cell's bytes as one buffer (copied when borrowed, moved when built).
pub(crate) fn cow_to_bytes(cell: Cow<'_, [u8]>) -> Bytes {
    match cell {
        Cow::Borrowed(b) => Bytes::copy_from_slice(b),
        Cow::Owned(v) => Bytes::from(v),
    }
}

/// [`serialize_column`] without a copy of simple cells: they are borrowed as stored,
/// collections are built.
pub(crate) fn column_bytes<'v>(v: &'v ColumnValue, ty: &DataType) -> Option<Cow<'v, [u8]>> {
    match v {
        ColumnValue::Simple(c) => Some(Cow::Borrowed(&c.value)),
        ColumnValue::Collection(items) => {
            if items.is_empty() {
                return None;
            }
            let mut out = Vec::new();
            match ty.unfrozen() {
                DataType::List(_) => {
                    out.put_i32(items.len() as i32);
                    for (_, c) in items {
                        out.put_i32(c.value.len() as i32);
                        out.put_slice(&c.value);
                    }
                }
                DataType::Set(_) => {
                    out.put_i32(items.len() as i32);
                    for (k, _) in items {
                        out.put_i32(k.len() as i32);
                        out.put_slice(k);
                    }
                }
                DataType::Map(_, _) => {
                    out.put_i32(items.len() as i32);
                    for (k, c) in items {
                        out.put_i32(k.len() as i32);
                        out.put_slice(k);
                        out.put_i32(c.value.len() as i32);
                        out.put_slice(&c.value);
                    }
                }
                DataType::Udt(u) => {
                    for i in 0..u.fields.len() {
                        let key = (i as i16).to_be_bytes();
                        match items.iter().find(|(k, _)| k.as_slice() == key) {
                            Some((_, c)) => {
                                out.put_i32(c.value.len() as i32);
                                out.put_slice(&c.value);
                            }
                            None => out.put_i32(-1),
                        }
                    }
                }
                _ => return None,
            }
            Some(Cow::Owned(out))
        }
    }
}
