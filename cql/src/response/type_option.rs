//! `<option>` type descriptions in result metadata (`native_protocol_v4.spec` §4.2.5.2).
//!
//! Natives are sent by id; `duration` has no v4 id and goes as Custom
//! `org.apache.cassandra.db.marshal.DurationType`; `frozen<>` is not on the wire. A UDT carries
//! `[string ks][string name][short n]` then n × (`[string field]`, option).

use bytes::BufMut;

use super::ResponseError;
use crate::types::{DataType, NativeType, UserType, DURATION_CLASS};
use crate::wire;

const CUSTOM: u16 = 0x0000;
const LIST: u16 = 0x0020;
const MAP: u16 = 0x0021;
const SET: u16 = 0x0022;
const UDT: u16 = 0x0030;
const TUPLE: u16 = 0x0031;
/// v5's native duration id, accepted when decoding.
const DURATION_V5: u16 = 0x0015;
/// Nesting deeper than this is refused when decoding (no stack overflow on hostile input).
const MAX_DEPTH: usize = 64;

/// Appends the `<option>` describing `ty`.
pub fn write_type_option(ty: &DataType, out: &mut impl BufMut) {
    match ty {
        DataType::Native(t) => match t.option_id() {
            Some(id) => wire::write_short(out, id),
            None => {
                wire::write_short(out, CUSTOM);
                wire::write_string(out, DURATION_CLASS);
            }
        },
        DataType::Frozen(inner) => write_type_option(inner, out),
        DataType::Custom(class) => {
            wire::write_short(out, CUSTOM);
            wire::write_string(out, class);
        }
        DataType::Vector(..) => {
            // v4 has no vector id: Cassandra sends its marshal class as a Custom type.
            wire::write_short(out, CUSTOM);
            wire::write_string(out, &crate::types::marshal::marshal_class(ty));
        }
        DataType::List(e) => {
            wire::write_short(out, LIST);
            write_type_option(e, out);
        }
        DataType::Set(e) => {
            wire::write_short(out, SET);
            write_type_option(e, out);
        }
        DataType::Map(k, v) => {
            wire::write_short(out, MAP);
            write_type_option(k, out);
            write_type_option(v, out);
        }
        DataType::Udt(u) => {
            wire::write_short(out, UDT);
            wire::write_string(out, u.keyspace.as_deref().unwrap_or(""));
            wire::write_string(out, &u.name);
            let n = u.fields.len().min(usize::from(u16::MAX));
            wire::write_short(out, n as u16);
            for (name, t) in u.fields.iter().take(n) {
                wire::write_string(out, name);
                write_type_option(t, out);
            }
        }
        DataType::Tuple(ts) => {
            wire::write_short(out, TUPLE);
            let n = ts.len().min(usize::from(u16::MAX));
            wire::write_short(out, n as u16);
            for t in ts.iter().take(n) {
                write_type_option(t, out);
            }
        }
    }
}

/// Reads an `<option>`. Frozen-ness is not on the wire, so collections come back unfrozen;
/// the duration Custom class comes back as `Native(Duration)`; an empty UDT keyspace as `None`.
///
/// # Errors
/// [`ResponseError::InvalidTypeOption`] for an unknown id or excessive nesting, or a wire error.
pub fn read_type_option(buf: &mut &[u8]) -> Result<DataType, ResponseError> {
    read_at_depth(buf, 0)
}

fn native_by_id(id: u16) -> Option<NativeType> {
    if id == 0x000A {
        // v1/v2 `varchar`.
        return Some(NativeType::Text);
    }
    if id == DURATION_V5 {
        return Some(NativeType::Duration);
    }
    NativeType::ALL
        .into_iter()
        .find(|t| t.option_id() == Some(id))
}

fn read_at_depth(buf: &mut &[u8], depth: usize) -> Result<DataType, ResponseError> {
    let id = wire::read_short(buf)?;
    if depth > MAX_DEPTH {
        return Err(ResponseError::InvalidTypeOption(id));
    }
    let next = |buf: &mut &[u8]| read_at_depth(buf, depth + 1).map(Box::new);
    Ok(match id {
        CUSTOM => {
            let class = wire::read_string(buf)?;
            if class == DURATION_CLASS {
                DataType::Native(NativeType::Duration)
            } else if let Some(v @ DataType::Vector(..)) = class
                .contains("VectorType")
                .then(|| {
                    crate::types::marshal::MarshalType::parse(class)
                        .ok()?
                        .to_cql()
                })
                .flatten()
            {
                v
            } else {
                DataType::Custom(class.to_owned())
            }
        }
        LIST => DataType::List(next(buf)?),
        SET => DataType::Set(next(buf)?),
        MAP => {
            let k = next(buf)?;
            DataType::Map(k, next(buf)?)
        }
        UDT => {
            let keyspace = wire::read_string(buf)?;
            let name = wire::read_string(buf)?.to_owned();
            let n = wire::read_short(buf)?;
            let mut fields = Vec::with_capacity(usize::from(n).min(buf.len() / 4));
            for _ in 0..n {
                let field = wire::read_string(buf)?.to_owned();
                fields.push((field, *next(buf)?));
            }
            DataType::Udt(Box::new(UserType {
                keyspace: (!keyspace.is_empty()).then(|| keyspace.to_owned()),
                name,
                fields,
            }))
        }
        TUPLE => {
            let n = wire::read_short(buf)?;
            let mut ts = Vec::with_capacity(usize::from(n).min(buf.len() / 2));
            for _ in 0..n {
                ts.push(*next(buf)?);
            }
            DataType::Tuple(ts)
        }
        other => {
            DataType::Native(native_by_id(other).ok_or(ResponseError::InvalidTypeOption(other))?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_go_as_cassandras_custom_class() {
        let v = DataType::Vector(Box::new(DataType::Native(NativeType::Float)), 3);
        let mut out = Vec::new();
        write_type_option(&v, &mut out);
        let class = "org.apache.cassandra.db.marshal.VectorType(\
                     org.apache.cassandra.db.marshal.FloatType , 3)";
        assert_eq!(&out[..2], &[0, 0]);
        assert_eq!(&out[4..], class.as_bytes());
        assert_eq!(round_trip(&v), v);
    }

    fn round_trip(ty: &DataType) -> DataType {
        let mut out = Vec::new();
        write_type_option(ty, &mut out);
        let mut buf = &out[..];
        let got = read_type_option(&mut buf).unwrap();
        assert!(buf.is_empty());
        got
    }

    #[test]
    fn natives_round_trip() {
        for t in NativeType::ALL {
            assert_eq!(round_trip(&DataType::Native(t)), DataType::Native(t));
        }
    }

    #[test]
    fn duration_is_custom_in_v4() {
        let mut out = Vec::new();
        write_type_option(&DataType::Native(NativeType::Duration), &mut out);
        assert_eq!(&out[..4], &[0, 0, 0, 44]);
        assert_eq!(&out[4..], DURATION_CLASS.as_bytes());
    }

    #[test]
    fn composites_round_trip() {
        let udt = DataType::Udt(Box::new(UserType {
            keyspace: Some("ks".into()),
            name: "addr".into(),
            fields: vec![
                ("street".into(), DataType::TEXT),
                (
                    "tags".into(),
                    DataType::Set(Box::new(DataType::Native(NativeType::Int))),
                ),
            ],
        }));
        let ty = DataType::Map(
            Box::new(DataType::TEXT),
            Box::new(DataType::Tuple(vec![
                udt.clone(),
                DataType::List(Box::new(DataType::Custom("a.B".into()))),
            ])),
        );
        assert_eq!(round_trip(&ty), ty);
        let frozen = DataType::Frozen(Box::new(DataType::List(Box::new(DataType::TEXT))));
        assert_eq!(
            round_trip(&frozen),
            DataType::List(Box::new(DataType::TEXT))
        );
        let mut out = Vec::new();
        write_type_option(&DataType::List(Box::new(DataType::TEXT)), &mut out);
        assert_eq!(out, [0, 0x20, 0, 0x0D]);
    }

    #[test]
    fn bad_options_fail() {
        assert_eq!(
            read_type_option(&mut &[0u8, 0x40][..]),
            Err(ResponseError::InvalidTypeOption(0x40))
        );
        // 1000 nested lists: refused, no stack overflow.
        let mut deep = Vec::new();
        for _ in 0..1000 {
            deep.extend_from_slice(&[0, 0x20]);
        }
        deep.extend_from_slice(&[0, 9]);
        assert!(read_type_option(&mut &deep[..]).is_err());
        assert!(read_type_option(&mut &[0u8, 0x21, 0, 9][..]).is_err());
    }
}
