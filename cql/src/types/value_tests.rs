//! Tests for [`super::value`]: spec byte vectors, validation errors and proptest round trips.

use std::net::IpAddr;

use proptest::prelude::*;
use uuid::Uuid;

use super::value::{join_vector, split_vector, validate, TypeError, Value, DURATION_CLASS};
use super::varint::varint_from_i128;
use super::{DataType, NativeType, UserType};

fn n(t: NativeType) -> DataType {
    DataType::Native(t)
}

fn list(t: DataType) -> DataType {
    DataType::List(Box::new(t))
}

#[test]
fn spec_byte_vectors() {
    assert_eq!(
        Value::Varint(varint_from_i128(128)).to_bytes(),
        [0x00, 0x80]
    );
    assert_eq!(
        Value::decode(&n(NativeType::Varint), &[0xFF, 0x7F]),
        Ok(Value::Varint(vec![0xFF, 0x7F]))
    );
    // Non-minimal varints are accepted and normalized.
    assert_eq!(
        Value::decode(&n(NativeType::Varint), &[0x00, 0x00, 0x01]),
        Ok(Value::Varint(vec![0x01]))
    );
    assert_eq!(Value::Date(1 << 31).to_bytes(), [0x80, 0, 0, 0]);
    assert_eq!(Value::Boolean(true).to_bytes(), [1]);
    assert_eq!(
        Value::decode(&n(NativeType::Boolean), &[7]),
        Ok(Value::Boolean(true))
    );
    let dec = Value::Decimal {
        scale: 2,
        unscaled: varint_from_i128(12345),
    };
    assert_eq!(dec.to_bytes(), [0, 0, 0, 2, 0x30, 0x39]);
    let dur = Value::Duration {
        months: 1,
        days: 2,
        nanos: 3,
    };
    assert_eq!(dur.to_bytes(), [0x02, 0x04, 0x06]);
    let l = Value::List(vec![Value::Int(1)]);
    assert_eq!(l.to_bytes(), [0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1]);
    let t = Value::Tuple(vec![Some(Value::Tinyint(-1)), None]);
    assert_eq!(t.to_bytes(), [0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
}

#[test]
fn fixed_width_errors_read_like_cassandra() {
    let err = |t, b: &[u8]| Value::decode(&n(t), b).unwrap_err().to_string();
    assert_eq!(
        err(NativeType::Int, &[1, 2, 3]),
        "Expected 4 or 0 byte int (3)"
    );
    assert_eq!(
        err(NativeType::Bigint, &[1]),
        "Expected 8 or 0 byte long (1)"
    );
    assert_eq!(
        err(NativeType::Smallint, &[]),
        "Expected 2 bytes for a smallint (0)"
    );
    assert_eq!(
        err(NativeType::Tinyint, &[1, 2]),
        "Expected 1 byte for a tinyint (2)"
    );
    assert_eq!(
        err(NativeType::Date, &[]),
        "Expected 4 byte long for date (0)"
    );
    assert_eq!(
        err(NativeType::Uuid, &[0; 15]),
        "UUID should be 16 or 0 bytes (15)"
    );
    assert_eq!(
        err(NativeType::Inet, &[0; 5]),
        "Expected 4 or 16 byte inet address (5)"
    );
    assert_eq!(
        err(NativeType::Ascii, &[b'a', 0xC3]),
        "Invalid byte for ascii: 195"
    );
    assert_eq!(
        err(NativeType::Text, &[0xC3, 0x28]),
        "String didn't validate."
    );
    assert_eq!(
        err(NativeType::Decimal, &[0, 0]),
        "Expected 0 or at least 4 bytes (2)"
    );
    assert_eq!(
        Value::decode(&n(NativeType::Decimal), &[0, 0, 0, 1]),
        Err(TypeError::EmptyDecimal)
    );
}

#[test]
fn range_and_version_checks() {
    let t = (super::MAX_TIME_NANOS + 1).to_be_bytes();
    assert!(matches!(
        Value::decode(&n(NativeType::Time), &t),
        Err(TypeError::TimeOutOfRange(_))
    ));
    assert!(Value::decode(&n(NativeType::Time), &(-1i64).to_be_bytes()).is_err());
    let v4 = Uuid::from_u128(0x0123_4567_89ab_4def_8123_4567_89ab_cdef);
    assert_eq!(
        Value::decode(&n(NativeType::Timeuuid), v4.as_bytes()),
        Err(TypeError::NotTimeuuid)
    );
    // Mixed-sign duration: months 1, days -1.
    assert!(matches!(
        Value::decode(&n(NativeType::Duration), &[0x02, 0x01, 0x00]),
        Err(TypeError::InvalidDuration(_))
    ));
    assert!(Value::decode(&n(NativeType::Duration), &[0x02, 0x02]).is_err());
    assert!(Value::decode(&n(NativeType::Duration), &[0xFF, 0xFF, 0xFF]).is_err());
}

#[test]
fn empty_values() {
    for t in [
        NativeType::Int,
        NativeType::Bigint,
        NativeType::Uuid,
        NativeType::Varint,
    ] {
        assert_eq!(Value::decode(&n(t), &[]), Ok(Value::Empty));
    }
    assert_eq!(
        Value::decode(&DataType::TEXT, &[]),
        Ok(Value::Text(String::new()))
    );
    assert_eq!(
        Value::decode(&n(NativeType::Blob), &[]),
        Ok(Value::Blob(vec![]))
    );
    assert!(Value::decode(&n(NativeType::Smallint), &[]).is_err());
    assert!(Value::decode(&list(n(NativeType::Int)), &[]).is_err());
    assert_eq!(Value::Empty.to_bytes(), Vec::<u8>::new());
}

#[test]
fn collection_errors() {
    let li = list(n(NativeType::Int));
    // Null element.
    assert_eq!(
        Value::decode(&li, &[0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF]),
        Err(TypeError::NullInCollection)
    );
    // Negative count.
    assert!(matches!(
        Value::decode(&li, &[0xFF, 0xFF, 0xFF, 0xFE]),
        Err(TypeError::NegativeCount { .. })
    ));
    // Huge count with no elements: must fail fast without a giant allocation.
    assert_eq!(
        Value::decode(&li, &[0x7F, 0xFF, 0xFF, 0xFF]),
        Err(TypeError::Truncated("list"))
    );
    // Huge element length.
    assert_eq!(
        Value::decode(&li, &[0, 0, 0, 1, 0x7F, 0xFF, 0xFF, 0xFF, 1]),
        Err(TypeError::Truncated("list"))
    );
    // Trailing bytes.
    assert_eq!(
        Value::decode(&li, &[0, 0, 0, 0, 9]),
        Err(TypeError::TrailingBytes("list"))
    );
    // Element of the wrong width.
    assert!(Value::decode(&li, &[0, 0, 0, 1, 0, 0, 0, 1, 5]).is_err());
    let map = DataType::Map(Box::new(DataType::TEXT), Box::new(n(NativeType::Int)));
    assert_eq!(
        Value::decode(&map, &[0, 0, 0, 1, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]),
        Err(TypeError::NullInCollection)
    );
}

fn address_type() -> DataType {
    DataType::Udt(Box::new(UserType {
        keyspace: Some("ks".into()),
        name: "address".into(),
        fields: vec![
            ("street".into(), DataType::TEXT),
            ("zip".into(), n(NativeType::Int)),
        ],
    }))
}

#[test]
fn udt_may_have_fewer_fields_but_not_more() {
    let short = [0, 0, 0, 1, b'x'];
    assert_eq!(
        Value::decode(&address_type(), &short),
        Ok(Value::Udt(vec![(
            "street".into(),
            Some(Value::Text("x".into()))
        )]))
    );
    let mut long = short.to_vec();
    long.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF]);
    assert!(matches!(
        Value::decode(&address_type(), &long),
        Err(TypeError::TooManyFields { .. })
    ));
    let frozen = DataType::Frozen(Box::new(address_type()));
    let v = Value::Udt(vec![
        ("street".into(), None),
        ("zip".into(), Some(Value::Int(7))),
    ]);
    assert_eq!(Value::decode(&frozen, &v.to_bytes()), Ok(v));
}

#[test]
fn custom_types() {
    let d = DataType::Custom(DURATION_CLASS.into());
    assert!(matches!(
        Value::decode(&d, &[0, 0, 2]),
        Ok(Value::Duration { nanos: 1, .. })
    ));
    let other = DataType::Custom("com.example.Foo".into());
    assert_eq!(Value::decode(&other, &[1, 2]), Ok(Value::Blob(vec![1, 2])));
    assert_eq!(validate(&other, &[]), Ok(()));
}

fn arb_uuid_v1() -> impl Strategy<Value = Uuid> {
    any::<u128>().prop_map(|x| {
        uuid::Builder::from_u128(x)
            .with_version(uuid::Version::Mac)
            .into_uuid()
    })
}

fn arb_value_of(t: NativeType) -> BoxedStrategy<Value> {
    use NativeType as N;
    match t {
        N::Ascii => "[ -~]{0,12}".prop_map(Value::Ascii).boxed(),
        N::Text => ".{0,12}".prop_map(Value::Text).boxed(),
        N::Bigint => any::<i64>().prop_map(Value::Bigint).boxed(),
        N::Blob => proptest::collection::vec(any::<u8>(), 0..12)
            .prop_map(Value::Blob)
            .boxed(),
        N::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
        N::Counter => any::<i64>().prop_map(Value::Counter).boxed(),
        N::Date => any::<u32>().prop_map(Value::Date).boxed(),
        N::Decimal => (any::<i32>(), any::<i128>())
            .prop_map(|(scale, v)| Value::Decimal {
                scale,
                unscaled: varint_from_i128(v),
            })
            .boxed(),
        N::Double => any::<f64>().prop_map(Value::Double).boxed(),
        N::Float => any::<f32>().prop_map(Value::Float).boxed(),
        N::Duration => (0..=i32::MAX, 0..=i32::MAX, 0..=i64::MAX, any::<bool>())
            .prop_map(|(m, d, ns, neg)| {
                let s = if neg { -1 } else { 1 };
                Value::Duration {
                    months: m * s,
                    days: d * s,
                    nanos: ns * i64::from(s),
                }
            })
            .boxed(),
        N::Inet => prop_oneof![
            any::<[u8; 4]>().prop_map(|a| Value::Inet(IpAddr::from(a))),
            any::<[u8; 16]>().prop_map(|a| Value::Inet(IpAddr::from(a))),
        ]
        .boxed(),
        N::Int => any::<i32>().prop_map(Value::Int).boxed(),
        N::Smallint => any::<i16>().prop_map(Value::Smallint).boxed(),
        N::Time => (0..=super::MAX_TIME_NANOS).prop_map(Value::Time).boxed(),
        N::Timestamp => any::<i64>().prop_map(Value::Timestamp).boxed(),
        N::Timeuuid => arb_uuid_v1().prop_map(Value::Timeuuid).boxed(),
        N::Tinyint => any::<i8>().prop_map(Value::Tinyint).boxed(),
        N::Uuid => any::<u128>()
            .prop_map(|u| Value::Uuid(Uuid::from_u128(u)))
            .boxed(),
        N::Varint => any::<i128>()
            .prop_map(|v| Value::Varint(varint_from_i128(v)))
            .boxed(),
    }
}

fn arb_native() -> impl Strategy<Value = NativeType> {
    proptest::sample::select(NativeType::ALL.to_vec())
}

fn arb_typed_value() -> impl Strategy<Value = (DataType, Value)> {
    let native = arb_native().prop_flat_map(|t| (Just(n(t)), arb_value_of(t)));
    let lists = arb_native().prop_flat_map(|t| {
        (
            Just(list(n(t))),
            proptest::collection::vec(arb_value_of(t), 0..4).prop_map(Value::List),
        )
    });
    let sets = arb_native().prop_flat_map(|t| {
        (
            Just(DataType::Frozen(Box::new(DataType::Set(Box::new(n(t)))))),
            proptest::collection::vec(arb_value_of(t), 0..4).prop_map(Value::Set),
        )
    });
    let maps = (arb_native(), arb_native()).prop_flat_map(|(k, v)| {
        (
            Just(DataType::Map(Box::new(n(k)), Box::new(n(v)))),
            proptest::collection::vec((arb_value_of(k), arb_value_of(v)), 0..4)
                .prop_map(Value::Map),
        )
    });
    let tuples = proptest::collection::vec(arb_native(), 0..4).prop_flat_map(|ts| {
        let values: Vec<_> = ts
            .iter()
            .map(|t| proptest::option::of(arb_value_of(*t)))
            .collect();
        (
            Just(DataType::Tuple(ts.into_iter().map(n).collect())),
            values.prop_map(Value::Tuple),
        )
    });
    let udts = proptest::collection::vec(arb_native(), 0..4).prop_flat_map(|ts| {
        let names: Vec<String> = (0..ts.len()).map(|i| format!("f{i}")).collect();
        let values: Vec<_> = ts
            .iter()
            .map(|t| proptest::option::of(arb_value_of(*t)))
            .collect();
        let ty = DataType::Udt(Box::new(UserType {
            keyspace: None,
            name: "u".into(),
            fields: names.iter().cloned().zip(ts.into_iter().map(n)).collect(),
        }));
        (
            Just(ty),
            values.prop_map(move |vs| Value::Udt(names.clone().into_iter().zip(vs).collect())),
        )
    });
    prop_oneof![native, lists, sets, maps, tuples, udts]
}

proptest! {
    #[test]
    fn values_round_trip((ty, v) in arb_typed_value()) {
        let bytes = v.to_bytes();
        let back = Value::decode(&ty, &bytes);
        prop_assert!(back.is_ok(), "{:?} failed: {:?}", v, back);
        let back = back.unwrap();
        // Debug comparison treats NaN as equal to itself.
        prop_assert_eq!(format!("{back:?}"), format!("{v:?}"));
        prop_assert_eq!(back.to_bytes(), bytes);
        let _ = back.to_cql_literal();
    }

    #[test]
    fn decode_never_panics((ty, _) in arb_typed_value(),
                           bytes in proptest::collection::vec(any::<u8>(), 0..48)) {
        let _ = Value::decode(&ty, &bytes);
        let _ = Value::decode(&list(ty.clone()), &bytes);
    }
}

fn vector_of(elem: DataType, n: u32) -> DataType {
    DataType::Vector(Box::new(elem), n)
}

#[test]
fn fixed_width_vector_elements_have_no_length_prefix() {
    let ty = vector_of(NativeType::Float.into(), 3);
    let v = Value::Vector(vec![
        Value::Float(1.0),
        Value::Float(2.5),
        Value::Float(-3.0),
    ]);
    let bytes = v.to_bytes();
    let mut expected = Vec::new();
    for f in [1.0f32, 2.5, -3.0] {
        expected.extend_from_slice(&f.to_be_bytes());
    }
    assert_eq!(bytes, expected);
    assert_eq!(Value::decode(&ty, &bytes).unwrap(), v);
    let ints = vector_of(NativeType::Bigint.into(), 2);
    let v = Value::Vector(vec![Value::Bigint(1), Value::Bigint(-1)]);
    assert_eq!(v.to_bytes().len(), 16);
    assert_eq!(Value::decode(&ints, &v.to_bytes()).unwrap(), v);
}

#[test]
fn variable_width_vector_elements_have_an_unsigned_vint_length() {
    let ty = vector_of(DataType::TEXT, 2);
    let v = Value::Vector(vec![Value::Text("ab".into()), Value::Text(String::new())]);
    let bytes = v.to_bytes();
    assert_eq!(bytes, [2, b'a', b'b', 0]);
    assert_eq!(Value::decode(&ty, &bytes).unwrap(), v);
    // A 200-byte element takes a two-byte vint (0x80 | 0, 200).
    let long = "x".repeat(200);
    let v = Value::Vector(vec![Value::Text(long.clone()), Value::Text("y".into())]);
    let bytes = v.to_bytes();
    assert_eq!(&bytes[..2], &[0x80, 200]);
    assert_eq!(Value::decode(&ty, &bytes).unwrap(), v);
    // Nested collections are variable-width, each with its collection serialization inside.
    let nested = vector_of(
        DataType::Frozen(Box::new(DataType::List(Box::new(NativeType::Int.into())))),
        2,
    );
    let v = Value::Vector(vec![Value::List(vec![Value::Int(1)]), Value::List(vec![])]);
    assert_eq!(Value::decode(&nested, &v.to_bytes()).unwrap(), v);
}

#[test]
fn vector_values_of_the_wrong_size_are_refused() {
    let ty = vector_of(NativeType::Float.into(), 3);
    let msg = |bytes: &[u8]| validate(&ty, bytes).unwrap_err().to_string();
    // VectorType.rejectNullOrEmptyValue, FixedLengthSerializer.validate, checkConsumedFully.
    assert_eq!(msg(&[]), "Invalid empty vector value");
    assert_eq!(msg(&[0; 8]), "Not enough bytes to read a vector<float, 3>");
    assert_eq!(
        msg(&[0; 13]),
        "Unexpected 1 extraneous bytes after vector<float, 3> value"
    );
    assert!(validate(&ty, &[0; 12]).is_ok());
    let text = vector_of(DataType::TEXT, 2);
    assert_eq!(
        validate(&text, &[1, b'a']).unwrap_err().to_string(),
        "Not enough bytes to read a vector<text, 2>"
    );
    assert!(validate(&text, &[1, b'a', 5, b'b']).is_err());
    assert!(validate(&text, &[1, b'a', 1, b'b', 0]).is_err());
    assert!(matches!(
        validate(&text, &[1, 0xff, 0]),
        Err(TypeError::InvalidUtf8)
    ));
    // A claimed length far beyond the input is a truncation, not an allocation.
    assert!(validate(
        &text,
        &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
    )
    .is_err());
}

#[test]
fn vectors_split_and_join_their_elements() {
    let text = vector_of(DataType::TEXT, 2);
    let bytes = [1, b'a', 2, b'b', b'c'];
    let parts = split_vector(&DataType::TEXT, 2, &bytes).unwrap();
    assert_eq!(parts, vec![&b"a"[..], &b"bc"[..]]);
    assert_eq!(join_vector(&DataType::TEXT, parts), bytes);
    assert!(validate(&text, &bytes).is_ok());
    let float = DataType::Native(NativeType::Float);
    let parts = split_vector(&float, 2, &[0; 8]).unwrap();
    assert_eq!(join_vector(&float, parts), [0; 8]);
}

proptest! {
    #[test]
    fn float_vectors_round_trip(xs in proptest::collection::vec(any::<f32>().prop_filter("nan", |f| !f.is_nan()), 1..20)) {
        let ty = vector_of(NativeType::Float.into(), xs.len() as u32);
        let v = Value::Vector(xs.into_iter().map(Value::Float).collect());
        prop_assert_eq!(Value::decode(&ty, &v.to_bytes()).unwrap(), v);
    }

    #[test]
    fn text_vectors_round_trip(xs in proptest::collection::vec(".{0,40}", 1..10)) {
        let ty = vector_of(DataType::TEXT, xs.len() as u32);
        let v = Value::Vector(xs.into_iter().map(Value::Text).collect());
        prop_assert_eq!(Value::decode(&ty, &v.to_bytes()).unwrap(), v);
    }
}
