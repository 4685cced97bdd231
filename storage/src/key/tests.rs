//! Property tests: the key byte order is Cassandra's comparator order, ASC and DESC, and
//! decoding inverts encoding.

use std::cmp::Ordering;

use cql::types::{DataType, NativeType as N};
use proptest::prelude::*;

use super::*;

fn ser_items(items: &[Vec<u8>], count: usize) -> Vec<u8> {
    let mut out = (count as i32).to_be_bytes().to_vec();
    for i in items {
        out.extend_from_slice(&(i.len() as i32).to_be_bytes());
        out.extend_from_slice(i);
    }
    out
}

fn items(mut v: &[u8]) -> (usize, Vec<Option<Vec<u8>>>) {
    let mut out = Vec::new();
    let n = if v.len() >= 4 {
        let n = i32::from_be_bytes(v[..4].try_into().unwrap()) as usize;
        v = &v[4..];
        n
    } else {
        0
    };
    while v.len() >= 4 {
        let len = i32::from_be_bytes(v[..4].try_into().unwrap());
        v = &v[4..];
        if len < 0 {
            out.push(None);
        } else {
            out.push(Some(v[..len as usize].to_vec()));
            v = &v[len as usize..];
        }
    }
    (n, out)
}

fn i128_of(v: &[u8]) -> i128 {
    let fill = if v[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut buf = [fill; 16];
    buf[16 - v.len()..].copy_from_slice(v);
    i128::from_be_bytes(buf)
}

fn reorder(msb: i64) -> i64 {
    (msb << 48) | ((msb << 16) & 0xFFFF_0000_0000) | ((msb as u64) >> 32) as i64
}

fn long(v: &[u8]) -> i64 {
    i64::from_be_bytes(v.try_into().unwrap())
}

/// Cassandra's comparator, written from the reference independently of the encoder.
fn cassandra_cmp(ty: &DataType, a: &[u8], b: &[u8]) -> Ordering {
    if a.is_empty() || b.is_empty() {
        return a.len().min(1).cmp(&b.len().min(1));
    }
    match ty {
        DataType::Frozen(t) => cassandra_cmp(t, a, b),
        DataType::Native(n) => match n {
            N::Tinyint | N::Smallint | N::Int | N::Bigint | N::Timestamp | N::Time => {
                i128_of(a).cmp(&i128_of(b))
            }
            N::Varint => i128_of(a).cmp(&i128_of(b)),
            N::Date => a.cmp(b),
            N::Boolean => (a[0] != 0).cmp(&(b[0] != 0)),
            N::Float => java_cmp(
                f32::from_be_bytes(a.try_into().unwrap()) as f64,
                f32::from_be_bytes(b.try_into().unwrap()) as f64,
            ),
            N::Double => java_cmp(
                f64::from_be_bytes(a.try_into().unwrap()),
                f64::from_be_bytes(b.try_into().unwrap()),
            ),
            N::Decimal => {
                let (sa, ua) = (
                    i32::from_be_bytes(a[..4].try_into().unwrap()),
                    i128_of(&a[4..]),
                );
                let (sb, ub) = (
                    i32::from_be_bytes(b[..4].try_into().unwrap()),
                    i128_of(&b[4..]),
                );
                let s = sa.max(sb);
                (ua * 10i128.pow((s - sa) as u32)).cmp(&(ub * 10i128.pow((s - sb) as u32)))
            }
            N::Timeuuid => reorder(long(&a[..8]))
                .cmp(&reorder(long(&b[..8])))
                .then_with(|| {
                    let sa: Vec<i8> = a[8..].iter().map(|&x| x as i8).collect();
                    let sb: Vec<i8> = b[8..].iter().map(|&x| x as i8).collect();
                    sa.cmp(&sb)
                }),
            N::Uuid => {
                let (ma, mb) = (long(&a[..8]), long(&b[..8]));
                let (va, vb) = ((ma >> 12) & 0xf, (mb >> 12) & 0xf);
                va.cmp(&vb)
                    .then_with(|| {
                        if va == 1 {
                            reorder(ma).cmp(&reorder(mb))
                        } else {
                            (ma as u64).cmp(&(mb as u64))
                        }
                    })
                    .then_with(|| a[8..].cmp(&b[8..]))
            }
            _ => a.cmp(b),
        },
        DataType::Tuple(types) => {
            let (_, ia) = items_tuple(a);
            let (_, ib) = items_tuple(b);
            for ((x, y), t) in ia.iter().zip(&ib).zip(types) {
                let c = match (x, y) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) => cassandra_cmp(t, x, y),
                };
                if c != Ordering::Equal {
                    return c;
                }
            }
            ia.len().cmp(&ib.len())
        }
        DataType::List(t) | DataType::Set(t) => {
            let ((_, ia), (_, ib)) = (items(a), items(b));
            for (x, y) in ia.iter().zip(&ib) {
                let c = cassandra_cmp(t, x.as_ref().unwrap(), y.as_ref().unwrap());
                if c != Ordering::Equal {
                    return c;
                }
            }
            ia.len().cmp(&ib.len())
        }
        DataType::Map(kt, vt) => {
            let ((_, ia), (_, ib)) = (items(a), items(b));
            for (i, (x, y)) in ia.iter().zip(&ib).enumerate() {
                let t = if i % 2 == 0 { kt } else { vt };
                let c = cassandra_cmp(t, x.as_ref().unwrap(), y.as_ref().unwrap());
                if c != Ordering::Equal {
                    return c;
                }
            }
            ia.len().cmp(&ib.len())
        }
        _ => a.cmp(b),
    }
}

fn items_tuple(v: &[u8]) -> (usize, Vec<Option<Vec<u8>>>) {
    let mut with_count = 0i32.to_be_bytes().to_vec();
    with_count.extend_from_slice(v);
    items(&with_count)
}

fn java_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ if a == b => (a.is_sign_positive()).cmp(&b.is_sign_positive()),
        _ => a.partial_cmp(&b).unwrap(),
    }
}

fn minimal(v: i128) -> Vec<u8> {
    number::minimal_twos_complement(&v.to_be_bytes()).to_vec()
}

fn arb_native(n: N) -> BoxedStrategy<Vec<u8>> {
    let s: BoxedStrategy<Vec<u8>> = match n {
        N::Tinyint => any::<i8>().prop_map(|v| v.to_be_bytes().to_vec()).boxed(),
        N::Smallint => any::<i16>().prop_map(|v| v.to_be_bytes().to_vec()).boxed(),
        N::Int => prop_oneof![any::<i32>(), -3..3i32]
            .prop_map(|v| v.to_be_bytes().to_vec())
            .boxed(),
        N::Bigint | N::Timestamp | N::Time => {
            any::<i64>().prop_map(|v| v.to_be_bytes().to_vec()).boxed()
        }
        N::Date => any::<u32>().prop_map(|v| v.to_be_bytes().to_vec()).boxed(),
        N::Boolean => any::<bool>().prop_map(|v| vec![u8::from(v)]).boxed(),
        N::Float => prop_oneof![
            any::<f32>(),
            Just(0.0f32),
            Just(-0.0f32),
            Just(f32::NAN),
            Just(f32::INFINITY),
            Just(f32::NEG_INFINITY)
        ]
        .prop_map(|v| {
            let v = if v.is_nan() { f32::NAN } else { v };
            v.to_be_bytes().to_vec()
        })
        .boxed(),
        N::Double => prop_oneof![
            any::<f64>(),
            Just(0.0f64),
            Just(-0.0f64),
            Just(f64::NAN),
            Just(f64::NEG_INFINITY)
        ]
        .prop_map(|v| {
            let v = if v.is_nan() { f64::NAN } else { v };
            v.to_be_bytes().to_vec()
        })
        .boxed(),
        N::Varint => prop_oneof![any::<i128>(), any::<i16>().prop_map(i128::from)]
            .prop_map(minimal)
            .boxed(),
        N::Decimal => (-5..5i32, prop_oneof![any::<i64>(), -1000..1000i64])
            .prop_map(|(s, u)| {
                let mut out = s.to_be_bytes().to_vec();
                out.extend(minimal(i128::from(u)));
                out
            })
            .boxed(),
        N::Uuid | N::Timeuuid => (any::<[u8; 16]>(), 0u8..3)
            .prop_map(move |(mut u, v)| {
                let version = if n == N::Timeuuid || v == 0 { 1 } else { v * 2 };
                u[6] = (u[6] & 0x0f) | (version << 4);
                u.to_vec()
            })
            .boxed(),
        N::Inet => prop_oneof![
            any::<[u8; 4]>().prop_map(|a| a.to_vec()),
            any::<[u8; 16]>().prop_map(|a| a.to_vec())
        ]
        .boxed(),
        N::Text | N::Ascii => "[a-c\u{0}Zé]{0,6}".prop_map(String::into_bytes).boxed(),
        _ => prop::collection::vec(prop_oneof![Just(0u8), Just(0xff), any::<u8>()], 0..6).boxed(),
    };
    prop_oneof![9 => s, 1 => Just(Vec::new())].boxed()
}

fn non_empty(s: BoxedStrategy<Vec<u8>>) -> BoxedStrategy<Vec<u8>> {
    s.prop_filter("non-empty", |v| !v.is_empty()).boxed()
}

fn arb_value(ty: &DataType) -> BoxedStrategy<Vec<u8>> {
    match ty {
        DataType::Native(n) => arb_native(*n),
        DataType::Frozen(t) => arb_value(t),
        DataType::Tuple(types) => {
            let parts: Vec<_> = types
                .iter()
                .map(|t| prop::option::weighted(0.8, arb_value(t)))
                .collect();
            (parts, 0..=types.len())
                .prop_map(|(parts, keep)| {
                    let mut out = Vec::new();
                    for p in parts.into_iter().take(keep) {
                        match p {
                            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                            Some(v) => {
                                out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                                out.extend(v);
                            }
                        }
                    }
                    out
                })
                .boxed()
        }
        DataType::List(t) => prop::collection::vec(arb_value(t), 0..4)
            .prop_map(|v| ser_items(&v, v.len()))
            .boxed(),
        DataType::Set(t) => {
            let t2 = (**t).clone();
            prop::collection::vec(non_empty(arb_value(t)), 0..4)
                .prop_map(move |mut v| {
                    v.sort_by(|a, b| cassandra_cmp(&t2, a, b));
                    v.dedup_by(|a, b| cassandra_cmp(&t2, a, b) == Ordering::Equal);
                    ser_items(&v, v.len())
                })
                .boxed()
        }
        DataType::Map(k, v) => {
            let kt = (**k).clone();
            prop::collection::vec((non_empty(arb_value(k)), arb_value(v)), 0..4)
                .prop_map(move |mut e| {
                    e.sort_by(|a, b| cassandra_cmp(&kt, &a.0, &b.0));
                    e.dedup_by(|a, b| cassandra_cmp(&kt, &a.0, &b.0) == Ordering::Equal);
                    let flat: Vec<Vec<u8>> = e.into_iter().flat_map(|(k, v)| [k, v]).collect();
                    ser_items(&flat, flat.len() / 2)
                })
                .boxed()
        }
        _ => unreachable!(),
    }
}

fn clusterable_types() -> Vec<DataType> {
    let mut types: Vec<DataType> = N::ALL
        .into_iter()
        .filter(|n| !matches!(n, N::Duration | N::Counter))
        .map(DataType::Native)
        .collect();
    let frozen = |t| DataType::Frozen(Box::new(t));
    types.push(DataType::Tuple(vec![N::Int.into(), N::Text.into()]));
    types.push(DataType::Tuple(vec![
        N::Varint.into(),
        DataType::Tuple(vec![N::Double.into()]),
    ]));
    types.push(frozen(DataType::List(Box::new(N::Int.into()))));
    types.push(frozen(DataType::Set(Box::new(N::Text.into()))));
    types.push(frozen(DataType::Map(
        Box::new(N::Timeuuid.into()),
        Box::new(N::Blob.into()),
    )));
    types.push(frozen(DataType::List(Box::new(DataType::Tuple(vec![
        N::Decimal.into(),
    ])))));
    types
}

fn arb_typed_pair() -> impl Strategy<Value = (DataType, Vec<u8>, Vec<u8>)> {
    prop::sample::select(clusterable_types()).prop_flat_map(|ty| {
        let v = arb_value(&ty);
        (Just(ty), v.clone(), v)
    })
}

fn enc(ty: &DataType, order: Order, v: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_clustering(&[(ty.clone(), order)], &[v], &mut out).unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn byte_order_is_cassandra_order((ty, a, b) in arb_typed_pair()) {
        let expected = cassandra_cmp(&ty, &a, &b);
        let (ea, eb) = (enc(&ty, Order::Asc, &a), enc(&ty, Order::Asc, &b));
        prop_assert_eq!(ea.cmp(&eb), expected, "{} {:?} {:?}", ty, a, b);
        let (da, db) = (enc(&ty, Order::Desc, &a), enc(&ty, Order::Desc, &b));
        prop_assert_eq!(da.cmp(&db), expected.reverse(), "desc {} {:?} {:?}", ty, a, b);
    }

    #[test]
    fn decode_inverts_encode((ty, a, _b) in arb_typed_pair()) {
        for order in [Order::Asc, Order::Desc] {
            let cols = [(ty.clone(), order)];
            let e = enc(&ty, order, &a);
            let back = decode_clustering(&cols, &e).unwrap();
            prop_assert_eq!(back.len(), 1);
            // Decimals come back canonical (1.50 as 1.5): equal by the comparator.
            prop_assert_eq!(cassandra_cmp(&ty, &back[0], &a), Ordering::Equal);
            prop_assert_eq!(enc(&ty, order, &back[0]), e.clone());
            if !format!("{ty}").contains("decimal") {
                prop_assert_eq!(&back[0], &a);
            }
        }
    }

    #[test]
    fn multi_component_order_is_lexicographic(
        a in (any::<i32>(), "[ab]{0,3}"), b in (any::<i32>(), "[ab]{0,3}"),
    ) {
        let cols = [(DataType::from(N::Int), Order::Desc), (DataType::TEXT, Order::Asc)];
        let e = |(i, s): &(i32, String)| {
            let mut out = Vec::new();
            encode_clustering(&cols, &[i.to_be_bytes().to_vec(), s.clone().into_bytes()], &mut out).unwrap();
            out
        };
        let expected = b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1));
        prop_assert_eq!(e(&a).cmp(&e(&b)), expected);
    }

    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..40), idx in 0usize..100) {
        let types = clusterable_types();
        let ty = &types[idx % types.len()];
        let _ = decode_clustering(&[(ty.clone(), Order::Asc)], &bytes);
        let _ = ItemPath::decode(&bytes);
        let _ = split_partition_prefix(&bytes);
    }
}

#[test]
fn prefix_bounds_bracket_extensions() {
    let cols = [
        (DataType::from(N::Int), Order::Asc),
        (DataType::TEXT, Order::Desc),
    ];
    let p = vec![5i32.to_be_bytes().to_vec()];
    let mut row = Vec::new();
    encode_clustering(
        &cols,
        &[5i32.to_be_bytes().to_vec(), b"zz".to_vec()],
        &mut row,
    )
    .unwrap();
    row.push(CLUSTERING_END);
    let lo_in = start_bytes(&cols, &ClusteringBound::Inclusive(p.clone())).unwrap();
    let lo_ex = start_bytes(&cols, &ClusteringBound::Exclusive(p.clone())).unwrap();
    let hi_in = end_bytes(&cols, &ClusteringBound::Inclusive(p.clone())).unwrap();
    let hi_ex = end_bytes(&cols, &ClusteringBound::Exclusive(p)).unwrap();
    assert!(lo_in <= row && row < hi_in);
    assert!(row < lo_ex && row >= hi_ex);
}

#[test]
fn special_values_order() {
    let big_pos = {
        let mut v = vec![0x01];
        v.extend([0u8; 40]);
        v
    };
    let big_neg = {
        let mut v = vec![0xfe];
        v.extend([0u8; 40]);
        v
    };
    let varint = DataType::from(N::Varint);
    let seq = [
        big_neg,
        minimal(-1),
        minimal(0),
        minimal(1),
        minimal(1 << 100),
        big_pos,
    ];
    for w in seq.windows(2) {
        assert!(enc(&varint, Order::Asc, &w[0]) < enc(&varint, Order::Asc, &w[1]));
    }
    // Decimal 1.0 == 1.00, -0.5 < 0 < 1E+40 with huge scales.
    let dec = |scale: i32, unscaled: i128| {
        let mut out = scale.to_be_bytes().to_vec();
        out.extend(minimal(unscaled));
        out
    };
    let d = DataType::from(N::Decimal);
    assert_eq!(
        enc(&d, Order::Asc, &dec(1, 10)),
        enc(&d, Order::Asc, &dec(2, 100))
    );
    assert!(enc(&d, Order::Asc, &dec(1, -5)) < enc(&d, Order::Asc, &dec(0, 0)));
    assert!(enc(&d, Order::Asc, &dec(-40, 1)) > enc(&d, Order::Asc, &dec(0, i128::MAX)));
    assert!(enc(&d, Order::Asc, &dec(i32::MAX, 1)) > enc(&d, Order::Asc, &dec(0, 0)));
    let back = decode_clustering(
        &[(d.clone(), Order::Asc)],
        &enc(&d, Order::Asc, &dec(2, 150)),
    )
    .unwrap();
    assert_eq!(back[0], dec(1, 15));
    let back = decode_clustering(
        &[(d.clone(), Order::Asc)],
        &enc(&d, Order::Asc, &dec(0, 100)),
    )
    .unwrap();
    assert_eq!(back[0], dec(0, 100));
}

#[test]
fn tokens_sort_signed() {
    assert!(encode_token(i64::MIN) < encode_token(-1));
    assert!(encode_token(-1) < encode_token(0));
    assert!(encode_token(0) < encode_token(i64::MAX));
    assert_eq!(decode_token(encode_token(-42)), -42);
    let p = partition_prefix(7, &[1, 0, 2]);
    let (t, pk, rest) = split_partition_prefix(&p).unwrap();
    assert_eq!((t, pk, rest), (7, vec![1, 0, 2], &[][..]));
}
