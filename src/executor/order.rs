//! Cassandra's comparators on decoded values: set and map element order, the canonical form of
//! a bound value's sets and maps, and in-memory sorts.

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
        (V::List(x), V::List(y)) | (V::Set(x), V::Set(y)) | (V::Vector(x), V::Vector(y)) => {
            let elem = match ty.unfrozen() {
                DataType::List(e) | DataType::Set(e) | DataType::Vector(e, _) => e.as_ref(),
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

/// A set's elements in Cassandra's order: sorted by the element type's comparator, duplicates
/// removed (the first kept).
pub fn sort_set(items: &mut Vec<Value>, elem: &DataType) {
    items.sort_by(|a, b| compare_values(a, b, elem));
    items.dedup_by(|a, b| compare_values(a, b, elem).is_eq());
}

/// A map's entries in Cassandra's order: sorted by the key type's comparator, one entry per
/// key, the last given winning (as Cassandra's `TreeMap::put` keeps it).
pub fn sort_map(entries: &mut Vec<(Value, Value)>, key: &DataType) {
    entries.sort_by(|a, b| compare_values(&a.0, &b.0, key));
    // `dedup_by` drops the later of two equal keys: keep its value instead.
    entries.dedup_by(|later, kept| {
        let same = compare_values(&later.0, &kept.0, key).is_eq();
        if same {
            std::mem::swap(&mut later.1, &mut kept.1);
        }
        same
    });
}

/// Puts every set and map inside `value` (at any depth: in lists, sets, maps, tuples and UDT
/// fields) into Cassandra's canonical form: sets sorted by the element type's comparator with
/// duplicates removed (the first kept), maps sorted by the key type's comparator with one entry
/// per key (the last given wins, as Cassandra's `TreeMap` keeps it). A frozen collection is
/// stored, read and compared as its serialized bytes, so a bound value must reach storage in
/// this one form.
pub fn canonicalize(value: &mut Value, ty: &DataType) {
    if !has_set_or_map(ty) {
        return;
    }
    match (value, ty.unfrozen()) {
        (Value::List(items), DataType::List(elem))
        | (Value::Vector(items), DataType::Vector(elem, _)) => {
            items.iter_mut().for_each(|v| canonicalize(v, elem));
        }
        (Value::Set(items), DataType::Set(elem)) => {
            items.iter_mut().for_each(|v| canonicalize(v, elem));
            sort_set(items, elem);
        }
        (Value::Map(entries), DataType::Map(kt, vt)) => {
            for (k, v) in entries.iter_mut() {
                canonicalize(k, kt);
                canonicalize(v, vt);
            }
            sort_map(entries, kt);
        }
        (Value::Tuple(items), DataType::Tuple(types)) => {
            for (v, t) in items.iter_mut().zip(types) {
                if let Some(v) = v {
                    canonicalize(v, t);
                }
            }
        }
        (Value::Udt(fields), DataType::Udt(u)) => {
            for ((_, v), (_, t)) in fields.iter_mut().zip(&u.fields) {
                if let Some(v) = v {
                    canonicalize(v, t);
                }
            }
        }
        _ => {}
    }
}

/// True when a value of type `ty` can hold a set or a map (so may need [`canonicalize`]).
fn has_set_or_map(ty: &DataType) -> bool {
    match ty {
        DataType::Native(_) | DataType::Custom(_) => false,
        DataType::Set(_) | DataType::Map(_, _) => true,
        DataType::List(e) | DataType::Frozen(e) | DataType::Vector(e, _) => has_set_or_map(e),
        DataType::Tuple(ts) => ts.iter().any(has_set_or_map),
        DataType::Udt(u) => u.fields.iter().any(|(_, t)| has_set_or_map(t)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use cql::types::{NativeType, UserType};

    fn int() -> DataType {
        DataType::Native(NativeType::Int)
    }

    fn frozen_set_of_int() -> DataType {
        DataType::Frozen(Box::new(DataType::Set(Box::new(int()))))
    }

    fn ints(v: &[i32]) -> Value {
        Value::Set(v.iter().map(|i| Value::Int(*i)).collect())
    }

    #[test]
    fn sets_sort_by_the_element_type_and_lose_duplicates() {
        let mut v = ints(&[3, 5, -1, 3]);
        canonicalize(&mut v, &frozen_set_of_int());
        assert_eq!(v, ints(&[-1, 3, 5]));
        let text = DataType::Set(Box::new(DataType::Native(NativeType::Text)));
        let mut v = Value::Set(["b", "a", "B"].map(|s| Value::Text(s.into())).to_vec());
        canonicalize(&mut v, &text);
        assert_eq!(
            v,
            Value::Set(["B", "a", "b"].map(|s| Value::Text(s.into())).to_vec())
        );
    }

    #[test]
    fn maps_sort_by_key_and_keep_the_last_value_of_a_key() {
        let ty = DataType::Map(Box::new(int()), Box::new(int()));
        let entry = |k: i32, v: i32| (Value::Int(k), Value::Int(v));
        let mut v = Value::Map(vec![entry(3, 1), entry(-1, 2), entry(3, 3), entry(3, 4)]);
        canonicalize(&mut v, &ty);
        assert_eq!(v, Value::Map(vec![entry(-1, 2), entry(3, 4)]));
    }

    #[test]
    fn nested_sets_are_sorted_where_they_sit() {
        // A list keeps its order; the sets inside it are sorted.
        let ty = DataType::List(Box::new(frozen_set_of_int()));
        let mut v = Value::List(vec![ints(&[3, -1]), ints(&[9, 2, 2])]);
        canonicalize(&mut v, &ty);
        assert_eq!(v, Value::List(vec![ints(&[-1, 3]), ints(&[2, 9])]));
        let ty = DataType::Tuple(vec![int(), frozen_set_of_int()]);
        let mut v = Value::Tuple(vec![Some(Value::Int(1)), Some(ints(&[5, -5]))]);
        canonicalize(&mut v, &ty);
        assert_eq!(
            v,
            Value::Tuple(vec![Some(Value::Int(1)), Some(ints(&[-5, 5]))])
        );
        let udt = DataType::Udt(Box::new(UserType {
            keyspace: None,
            name: "holder".into(),
            fields: vec![("nums".into(), frozen_set_of_int()), ("n".into(), int())],
        }));
        let mut v = Value::Udt(vec![
            ("nums".into(), Some(ints(&[2, 1]))),
            ("n".into(), None),
        ]);
        canonicalize(&mut v, &udt);
        assert_eq!(
            v,
            Value::Udt(vec![
                ("nums".into(), Some(ints(&[1, 2]))),
                ("n".into(), None)
            ])
        );
        // Sets of sets: the inner ones first, then the outer by Cassandra's set comparator.
        let ty = DataType::Set(Box::new(frozen_set_of_int()));
        let mut v = Value::Set(vec![ints(&[3, 1]), ints(&[0, 7]), ints(&[1, 3])]);
        canonicalize(&mut v, &ty);
        assert_eq!(v, Value::Set(vec![ints(&[0, 7]), ints(&[1, 3])]));
    }
}
