//! Cassandra's comparators on decoded values: set and map element order, and in-memory sorts.

use cql::types::{DataType, Value};
use num_bigint::BigInt;
use std::cmp::Ordering;
use uuid::Uuid;

/// Whether a comparison result satisfies a relation operator (`=`, `!=`, `<`, `<=`, `>`, `>=`).
pub fn satisfies(o: Ordering, op: cql::ast::Operator) -> bool {
    use cql::ast::Operator as Op;
    match op {
        Op::Eq => o == Ordering::Equal,
        Op::Ne => o != Ordering::Equal,
        Op::Lt => o == Ordering::Less,
        Op::Le => o != Ordering::Greater,
        Op::Gt => o == Ordering::Greater,
        Op::Ge => o != Ordering::Less,
        _ => false,
    }
}

/// Orders two values of type `ty` as Cassandra's comparator does (reference §6).
pub fn compare_values(a: &Value, b: &Value, ty: &DataType) -> Ordering {
    use Value as V;
    match (a, b) {
        (V::Empty, V::Empty) => Ordering::Equal,
        (V::Empty, _) => Ordering::Less,
        (_, V::Empty) => Ordering::Greater,
        (V::Ascii(x), V::Ascii(y)) | (V::Text(x), V::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (V::Blob(x), V::Blob(y)) => x.cmp(y),
        (V::Bigint(x), V::Bigint(y)) | (V::Counter(x), V::Counter(y)) => x.cmp(y),
        (V::Timestamp(x), V::Timestamp(y)) | (V::Time(x), V::Time(y)) => x.cmp(y),
        (V::Int(x), V::Int(y)) => x.cmp(y),
        (V::Smallint(x), V::Smallint(y)) => x.cmp(y),
        (V::Tinyint(x), V::Tinyint(y)) => x.cmp(y),
        (V::Date(x), V::Date(y)) => x.cmp(y),
        (V::Boolean(x), V::Boolean(y)) => x.cmp(y),
        (V::Double(x), V::Double(y)) => x.total_cmp(y),
        (V::Float(x), V::Float(y)) => x.total_cmp(y),
        (V::Varint(x), V::Varint(y)) => {
            BigInt::from_signed_bytes_be(x).cmp(&BigInt::from_signed_bytes_be(y))
        }
        (
            V::Decimal {
                scale: sx,
                unscaled: ux,
            },
            V::Decimal {
                scale: sy,
                unscaled: uy,
            },
        ) => compare_decimal(*sx, ux, *sy, uy),
        (V::Inet(x), V::Inet(y)) => inet_bytes(x).cmp(&inet_bytes(y)),
        (V::Timeuuid(x), V::Timeuuid(y)) => compare_timeuuid(x, y),
        (V::Uuid(x), V::Uuid(y)) => compare_uuid(x, y),
        (V::List(x), V::List(y)) | (V::Set(x), V::Set(y)) => {
            let elem = match ty.unfrozen() {
                DataType::List(e) | DataType::Set(e) => e.as_ref(),
                other => other,
            };
            compare_seq(x.iter().map(Some), y.iter().map(Some), |_| elem)
        }
        (V::Map(x), V::Map(y)) => {
            let (kt, vt) = match ty.unfrozen() {
                DataType::Map(k, v) => (k.as_ref(), v.as_ref()),
                other => (other, other),
            };
            for ((xk, xv), (yk, yv)) in x.iter().zip(y) {
                let o = compare_values(xk, yk, kt).then_with(|| compare_values(xv, yv, vt));
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (V::Tuple(x), V::Tuple(y)) => {
            let types: Vec<DataType> = match ty.unfrozen() {
                DataType::Tuple(ts) => ts.clone(),
                _ => Vec::new(),
            };
            compare_seq(
                x.iter().map(Option::as_ref),
                y.iter().map(Option::as_ref),
                |i| types.get(i).unwrap_or(ty),
            )
        }
        (V::Udt(x), V::Udt(y)) => {
            let types: Vec<DataType> = match ty.unfrozen() {
                DataType::Udt(u) => u.fields.iter().map(|(_, t)| t.clone()).collect(),
                _ => Vec::new(),
            };
            compare_seq(
                x.iter().map(|(_, v)| v.as_ref()),
                y.iter().map(|(_, v)| v.as_ref()),
                |i| types.get(i).unwrap_or(ty),
            )
        }
        // Different kinds never meet for one column type; fall back to the encoded bytes.
        _ => a.to_bytes().cmp(&b.to_bytes()),
    }
}

fn compare_seq<'a, 'b>(
    x: impl Iterator<Item = Option<&'a Value>>,
    y: impl Iterator<Item = Option<&'a Value>>,
    ty_at: impl Fn(usize) -> &'b DataType,
) -> Ordering {
    let x: Vec<_> = x.collect();
    let y: Vec<_> = y.collect();
    for (i, (a, b)) in x.iter().zip(&y).enumerate() {
        let o = match (a, b) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(a), Some(b)) => compare_values(a, b, ty_at(i)),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    x.len().cmp(&y.len())
}

fn compare_decimal(sx: i32, ux: &[u8], sy: i32, uy: &[u8]) -> Ordering {
    let (mut a, mut b) = (
        BigInt::from_signed_bytes_be(ux),
        BigInt::from_signed_bytes_be(uy),
    );
    // Bring both to the larger scale.
    let diff = i64::from(sx) - i64::from(sy);
    let pow = |n: i64| {
        BigInt::from(10u8).pow(
            u32::try_from(n.unsigned_abs())
                .unwrap_or(u32::MAX)
                .min(10_000),
        )
    };
    if diff > 0 {
        b *= pow(diff);
    } else if diff < 0 {
        a *= pow(diff);
    }
    a.cmp(&b)
}

fn inet_bytes(ip: &std::net::IpAddr) -> Vec<u8> {
    match ip {
        std::net::IpAddr::V4(v) => v.octets().to_vec(),
        std::net::IpAddr::V6(v) => v.octets().to_vec(),
    }
}

fn timestamp_of(u: &Uuid) -> u64 {
    let b = u.as_bytes();
    let time_low = u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let time_mid = u64::from(u16::from_be_bytes([b[4], b[5]]));
    let time_hi = u64::from(u16::from_be_bytes([b[6], b[7]]) & 0x0FFF);
    (time_hi << 48) | (time_mid << 32) | time_low
}

fn compare_timeuuid(x: &Uuid, y: &Uuid) -> Ordering {
    timestamp_of(x).cmp(&timestamp_of(y)).then_with(|| {
        let (a, b) = (&x.as_bytes()[8..], &y.as_bytes()[8..]);
        a.iter().map(|v| *v as i8).cmp(b.iter().map(|v| *v as i8))
    })
}

fn compare_uuid(x: &Uuid, y: &Uuid) -> Ordering {
    let (vx, vy) = (x.as_bytes()[6] >> 4, y.as_bytes()[6] >> 4);
    vx.cmp(&vy)
        .then_with(|| {
            if vx == 1 {
                timestamp_of(x).cmp(&timestamp_of(y))
            } else {
                x.as_bytes()[..8].cmp(&y.as_bytes()[..8])
            }
        })
        .then_with(|| x.as_bytes()[8..].cmp(&y.as_bytes()[8..]))
}
