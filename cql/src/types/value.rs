//! `Value`: a decoded CQL value, and the codecs between it and its serialized form
//! (`native_protocol_v4.spec` §6, Cassandra's `serializers` package).
//!
//! Decoding validates as Cassandra does: fixed widths are exact, ASCII and UTF-8 are checked,
//! `time` is within a day, `timeuuid` is version 1, collections use v3+ `[int]` counts and reject
//! null elements, and a UDT (or tuple) may carry fewer trailing fields than its type. A
//! zero-length value of a type that allows it decodes to [`Value::Empty`]. Decoding never panics
//! and never allocates more than the input justifies.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use uuid::Uuid;

use super::varint::{
    normalize_varint, read_signed_vint, read_unsigned_vint, write_signed_vint, write_unsigned_vint,
};
use super::{DataType, NativeType, UserType};

/// The Java class Cassandra uses for `duration` in v4 type options.
pub const DURATION_CLASS: &str = "org.apache.cassandra.db.marshal.DurationType";

/// Largest valid `time` value (nanoseconds in a day, minus one).
pub const MAX_TIME_NANOS: i64 = 86_399_999_999_999;

/// A value that does not validate against its type. The messages follow Cassandra's
/// `MarshalException` texts.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TypeError {
    /// Wrong length for a fixed-width type, e.g. "Expected 4 or 0 byte int (3)".
    #[error("{message} ({len})")]
    Length {
        /// Cassandra's message without the length.
        message: &'static str,
        /// The length received.
        len: usize,
    },
    /// A non-ASCII byte in an `ascii` value.
    #[error("Invalid byte for ascii: {0}")]
    InvalidAscii(u8),
    /// Invalid UTF-8 in a `text` value.
    #[error("String didn't validate.")]
    InvalidUtf8,
    /// A `timeuuid` whose version is not 1.
    #[error("Invalid version for TimeUUID type.")]
    NotTimeuuid,
    /// A `time` outside `0..=86399999999999`.
    #[error("Invalid time value {0}: must be between 0 and 86399999999999 nanoseconds")]
    TimeOutOfRange(i64),
    /// A malformed `duration`.
    #[error("{0}")]
    InvalidDuration(&'static str),
    /// A `decimal` with a scale but no unscaled bytes.
    #[error("Invalid decimal: missing unscaled value")]
    EmptyDecimal,
    /// The input ended inside a collection, tuple or UDT.
    #[error("Not enough bytes to read a {0}")]
    Truncated(&'static str),
    /// A negative element count.
    #[error("Invalid negative number of elements ({count}) in {kind}")]
    NegativeCount {
        /// `list`, `set` or `map`.
        kind: &'static str,
        /// The count received.
        count: i32,
    },
    /// A null (or otherwise negative-length) element in a collection.
    #[error("null is not supported inside collections")]
    NullInCollection,
    /// Bytes left over after a complete value.
    #[error("Unexpected extraneous bytes after {0} value")]
    TrailingBytes(&'static str),
    /// A malformed vector value, with Cassandra's `VectorType` message ("Invalid empty vector
    /// value", "Not enough bytes to read a vector<float, 3>", ...).
    #[error("{0}")]
    Vector(String),
    /// More tuple components or UDT fields than the type has.
    #[error("{kind} value contained too many fields (expected {expected}, got more)")]
    TooManyFields {
        /// `tuple` or `UDT`.
        kind: &'static str,
        /// Number of fields of the type.
        expected: usize,
    },
}

/// A decoded CQL value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `ascii`.
    Ascii(String),
    /// `bigint`.
    Bigint(i64),
    /// `blob`.
    Blob(Vec<u8>),
    /// `boolean`.
    Boolean(bool),
    /// `counter`.
    Counter(i64),
    /// `date`: days with the Unix epoch at 2^31.
    Date(u32),
    /// `decimal`: unscaled × 10^-scale.
    Decimal {
        /// Power-of-ten scale.
        scale: i32,
        /// Unscaled value as varint bytes.
        unscaled: Vec<u8>,
    },
    /// `double`.
    Double(f64),
    /// `duration`: all components share a sign.
    Duration {
        /// Months.
        months: i32,
        /// Days.
        days: i32,
        /// Nanoseconds.
        nanos: i64,
    },
    /// `float`.
    Float(f32),
    /// `inet`.
    Inet(IpAddr),
    /// `int`.
    Int(i32),
    /// `smallint`.
    Smallint(i16),
    /// `text`.
    Text(String),
    /// `time`: nanoseconds since midnight.
    Time(i64),
    /// `timestamp`: milliseconds since the Unix epoch.
    Timestamp(i64),
    /// `timeuuid` (version 1).
    Timeuuid(Uuid),
    /// `tinyint`.
    Tinyint(i8),
    /// `uuid`.
    Uuid(Uuid),
    /// `varint`: minimal big-endian two's complement.
    Varint(Vec<u8>),
    /// `list<T>`.
    List(Vec<Value>),
    /// `set<T>` (in wire order).
    Set(Vec<Value>),
    /// `map<K, V>` (in wire order).
    Map(Vec<(Value, Value)>),
    /// `tuple<...>`; `None` is a null component. May be shorter than the type.
    Tuple(Vec<Option<Value>>),
    /// A UDT: field names and values in definition order; may be shorter than the type.
    Udt(Vec<(String, Option<Value>)>),
    /// `vector<T, n>`: exactly `n` non-null elements.
    Vector(Vec<Value>),
    /// A zero-length value of a non-string type (Cassandra's legacy "empty" value).
    Empty,
}

/// Checks that `bytes` is a valid serialized value of type `ty`.
///
/// # Errors
/// The [`TypeError`] [`Value::decode`] would return.
pub fn validate(ty: &DataType, bytes: &[u8]) -> Result<(), TypeError> {
    Value::decode(ty, bytes).map(|_| ())
}

/// True for types whose zero-length serialization is the legacy empty value (Cassandra's
/// serializers that accept "N or 0 bytes").
fn allows_empty(t: NativeType) -> bool {
    use NativeType::*;
    matches!(
        t,
        Bigint
            | Boolean
            | Counter
            | Decimal
            | Double
            | Float
            | Inet
            | Int
            | Timestamp
            | Timeuuid
            | Uuid
            | Varint
    )
}

fn fixed<const N: usize>(bytes: &[u8], message: &'static str) -> Result<[u8; N], TypeError> {
    bytes.try_into().map_err(|_| TypeError::Length {
        message,
        len: bytes.len(),
    })
}

/// Reads one `[bytes]` element of a collection, tuple or UDT: `None` for a negative length.
fn read_element<'a>(buf: &mut &'a [u8], kind: &'static str) -> Result<Option<&'a [u8]>, TypeError> {
    let (len, rest) = buf
        .split_first_chunk::<4>()
        .ok_or(TypeError::Truncated(kind))?;
    let Ok(len) = usize::try_from(i32::from_be_bytes(*len)) else {
        *buf = rest;
        return Ok(None);
    };
    let (elem, rest) = rest
        .split_at_checked(len)
        .ok_or(TypeError::Truncated(kind))?;
    *buf = rest;
    Ok(Some(elem))
}

fn read_count(buf: &mut &[u8], kind: &'static str) -> Result<usize, TypeError> {
    let (n, rest) = buf
        .split_first_chunk::<4>()
        .ok_or(TypeError::Truncated(kind))?;
    *buf = rest;
    let count = i32::from_be_bytes(*n);
    usize::try_from(count).map_err(|_| TypeError::NegativeCount { kind, count })
}

fn decode_elements(
    elem: &DataType,
    bytes: &[u8],
    kind: &'static str,
) -> Result<Vec<Value>, TypeError> {
    let buf = &mut &bytes[..];
    let n = read_count(buf, kind)?;
    // Every element takes at least 4 bytes: cap the allocation by the input.
    let mut out = Vec::with_capacity(n.min(buf.len() / 4));
    for _ in 0..n {
        let e = read_element(buf, kind)?.ok_or(TypeError::NullInCollection)?;
        out.push(Value::decode(elem, e)?);
    }
    if !buf.is_empty() {
        return Err(TypeError::TrailingBytes(kind));
    }
    Ok(out)
}

fn decode_map(k: &DataType, v: &DataType, bytes: &[u8]) -> Result<Vec<(Value, Value)>, TypeError> {
    let buf = &mut &bytes[..];
    let n = read_count(buf, "map")?;
    let mut out = Vec::with_capacity(n.min(buf.len() / 8));
    for _ in 0..n {
        let kb = read_element(buf, "map")?.ok_or(TypeError::NullInCollection)?;
        let vb = read_element(buf, "map")?.ok_or(TypeError::NullInCollection)?;
        out.push((Value::decode(k, kb)?, Value::decode(v, vb)?));
    }
    if !buf.is_empty() {
        return Err(TypeError::TrailingBytes("map"));
    }
    Ok(out)
}

/// Decodes the components of a tuple or UDT, stopping early when the input ends.
fn decode_fields<'t>(
    types: impl ExactSizeIterator<Item = &'t DataType>,
    bytes: &[u8],
    kind: &'static str,
) -> Result<Vec<Option<Value>>, TypeError> {
    let expected = types.len();
    let buf = &mut &bytes[..];
    let mut out = Vec::new();
    for ty in types {
        if buf.is_empty() {
            break;
        }
        out.push(match read_element(buf, kind)? {
            Some(b) => Some(Value::decode(ty, b)?),
            None => None,
        });
    }
    if !buf.is_empty() {
        return Err(TypeError::TooManyFields { kind, expected });
    }
    Ok(out)
}

fn decode_udt(u: &UserType, bytes: &[u8]) -> Result<Value, TypeError> {
    let values = decode_fields(u.fields.iter().map(|(_, t)| t), bytes, "UDT")?;
    Ok(Value::Udt(
        u.fields
            .iter()
            .map(|(name, _)| name.clone())
            .zip(values)
            .collect(),
    ))
}

/// Splits a serialized `vector<elem, dimension>` into its elements' serializations: fixed-width
/// elements are concatenated, others each prefixed by an unsigned vint length (Cassandra's
/// `VectorType` serializers). Checks the length and element count, not the elements.
///
/// # Errors
/// [`TypeError::Vector`] with Cassandra's message for an empty, short or long value.
pub fn split_vector<'a>(
    elem: &DataType,
    dimension: u32,
    bytes: &'a [u8],
) -> Result<Vec<&'a [u8]>, TypeError> {
    let ty = || DataType::Vector(Box::new(elem.clone()), dimension);
    if bytes.is_empty() {
        return Err(TypeError::Vector("Invalid empty vector value".into()));
    }
    let short = || TypeError::Vector(format!("Not enough bytes to read a {}", ty()));
    let n = usize::try_from(dimension).unwrap_or(usize::MAX);
    let (out, used) = if let Some(width) = elem.fixed_width().filter(|w| *w > 0) {
        let expected = width.saturating_mul(n);
        if bytes.len() < expected {
            return Err(short());
        }
        (bytes[..expected].chunks_exact(width).collect(), expected)
    } else {
        let buf = &mut &bytes[..];
        // Every element takes at least one byte (its length): cap the allocation by the input.
        let mut out = Vec::with_capacity(n.min(buf.len()));
        for _ in 0..n {
            let len = read_unsigned_vint(buf).ok_or_else(short)?;
            let len = usize::try_from(len).map_err(|_| short())?;
            let (e, rest) = buf.split_at_checked(len).ok_or_else(short)?;
            *buf = rest;
            out.push(e);
        }
        (out, bytes.len() - buf.len())
    };
    if used < bytes.len() {
        return Err(TypeError::Vector(format!(
            "Unexpected {} extraneous bytes after {} value",
            bytes.len() - used,
            ty()
        )));
    }
    Ok(out)
}

/// Joins elements' serializations into a `vector<elem, _>` one (the inverse of
/// [`split_vector`]).
pub fn join_vector<'a>(elem: &DataType, items: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let fixed = elem.fixed_width().is_some();
    let mut out = Vec::new();
    for item in items {
        if !fixed {
            write_unsigned_vint(&mut out, item.len() as u64);
        }
        out.extend_from_slice(item);
    }
    out
}

/// Decodes a `vector<elem, dimension>` (see [`split_vector`]), validating each element.
fn decode_vector(elem: &DataType, dimension: u32, bytes: &[u8]) -> Result<Value, TypeError> {
    split_vector(elem, dimension, bytes)?
        .into_iter()
        .map(|e| Value::decode(elem, e))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Vector)
}

/// True when `v` serializes to the same width as every value of its type (the value-side
/// twin of [`DataType::fixed_width`]), so a vector writes it without a length.
fn is_fixed_width(v: &Value) -> bool {
    match v {
        Value::Boolean(_)
        | Value::Tinyint(_)
        | Value::Smallint(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Date(_)
        | Value::Bigint(_)
        | Value::Counter(_)
        | Value::Double(_)
        | Value::Timestamp(_)
        | Value::Time(_)
        | Value::Uuid(_)
        | Value::Timeuuid(_) => true,
        Value::Vector(items) => items.first().is_some_and(is_fixed_width),
        _ => false,
    }
}

fn decode_duration(bytes: &[u8]) -> Result<Value, TypeError> {
    if bytes.len() < 3 {
        return Err(TypeError::Length {
            message: "Expected at least 3 bytes for a duration",
            len: bytes.len(),
        });
    }
    let buf = &mut &bytes[..];
    let truncated = TypeError::InvalidDuration("Not enough bytes to read a duration");
    let months = read_signed_vint(buf).ok_or(truncated.clone())?;
    let days = read_signed_vint(buf).ok_or(truncated.clone())?;
    let nanos = read_signed_vint(buf).ok_or(truncated)?;
    if !buf.is_empty() {
        return Err(TypeError::TrailingBytes("duration"));
    }
    let (Ok(months), Ok(days)) = (i32::try_from(months), i32::try_from(days)) else {
        return Err(TypeError::InvalidDuration(
            "The duration months and days must fit in 32 bits",
        ));
    };
    let all_non_neg = months >= 0 && days >= 0 && nanos >= 0;
    let all_non_pos = months <= 0 && days <= 0 && nanos <= 0;
    if !all_non_neg && !all_non_pos {
        return Err(TypeError::InvalidDuration(
            "The duration months, days and nanoseconds must be all of the same sign",
        ));
    }
    Ok(Value::Duration {
        months,
        days,
        nanos,
    })
}

fn decode_native(t: NativeType, bytes: &[u8]) -> Result<Value, TypeError> {
    use NativeType as N;
    if bytes.is_empty() && allows_empty(t) {
        return Ok(Value::Empty);
    }
    Ok(match t {
        N::Ascii => {
            if let Some(&b) = bytes.iter().find(|b| !b.is_ascii()) {
                return Err(TypeError::InvalidAscii(b));
            }
            Value::Ascii(String::from_utf8(bytes.to_vec()).map_err(|_| TypeError::InvalidUtf8)?)
        }
        N::Text => {
            Value::Text(String::from_utf8(bytes.to_vec()).map_err(|_| TypeError::InvalidUtf8)?)
        }
        N::Blob => Value::Blob(bytes.to_vec()),
        N::Bigint => Value::Bigint(i64::from_be_bytes(fixed(
            bytes,
            "Expected 8 or 0 byte long",
        )?)),
        N::Counter => Value::Counter(i64::from_be_bytes(fixed(
            bytes,
            "Expected 8 or 0 byte long",
        )?)),
        N::Boolean => {
            let [b] = fixed::<1>(bytes, "Expected 1 or 0 byte value")?;
            Value::Boolean(b != 0)
        }
        N::Date => Value::Date(u32::from_be_bytes(fixed(
            bytes,
            "Expected 4 byte long for date",
        )?)),
        N::Decimal => {
            let (scale, unscaled) = bytes.split_first_chunk::<4>().ok_or(TypeError::Length {
                message: "Expected 0 or at least 4 bytes",
                len: bytes.len(),
            })?;
            if unscaled.is_empty() {
                return Err(TypeError::EmptyDecimal);
            }
            Value::Decimal {
                scale: i32::from_be_bytes(*scale),
                unscaled: normalize_varint(unscaled),
            }
        }
        N::Double => Value::Double(f64::from_be_bytes(fixed(
            bytes,
            "Expected 8 or 0 byte value for a double",
        )?)),
        N::Float => Value::Float(f32::from_be_bytes(fixed(
            bytes,
            "Expected 4 or 0 byte value for a float",
        )?)),
        N::Duration => decode_duration(bytes)?,
        N::Inet => match bytes.len() {
            4 => Value::Inet(IpAddr::V4(Ipv4Addr::from(fixed::<4>(bytes, "")?))),
            16 => Value::Inet(IpAddr::V6(Ipv6Addr::from(fixed::<16>(bytes, "")?))),
            len => {
                return Err(TypeError::Length {
                    message: "Expected 4 or 16 byte inet address",
                    len,
                })
            }
        },
        N::Int => Value::Int(i32::from_be_bytes(fixed(
            bytes,
            "Expected 4 or 0 byte int",
        )?)),
        N::Smallint => Value::Smallint(i16::from_be_bytes(fixed(
            bytes,
            "Expected 2 bytes for a smallint",
        )?)),
        N::Tinyint => Value::Tinyint(i8::from_be_bytes(fixed(
            bytes,
            "Expected 1 byte for a tinyint",
        )?)),
        N::Time => {
            let nanos = i64::from_be_bytes(fixed(bytes, "Expected 8 byte long for time")?);
            if !(0..=MAX_TIME_NANOS).contains(&nanos) {
                return Err(TypeError::TimeOutOfRange(nanos));
            }
            Value::Time(nanos)
        }
        N::Timestamp => Value::Timestamp(i64::from_be_bytes(fixed(
            bytes,
            "Expected 8 or 0 byte long for date",
        )?)),
        N::Uuid => Value::Uuid(Uuid::from_bytes(fixed(
            bytes,
            "UUID should be 16 or 0 bytes",
        )?)),
        N::Timeuuid => {
            let u = Uuid::from_bytes(fixed(bytes, "TimeUUID should be 16 or 0 bytes")?);
            if u.get_version_num() != 1 {
                return Err(TypeError::NotTimeuuid);
            }
            Value::Timeuuid(u)
        }
        N::Varint => Value::Varint(normalize_varint(bytes)),
    })
}

/// Appends `[bytes]` framing around whatever `f` writes, back-patching the length.
fn write_framed(out: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    f(out);
    let len = i32::try_from(out.len() - at - 4).unwrap_or(i32::MAX);
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn write_count(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&i32::try_from(n).unwrap_or(i32::MAX).to_be_bytes());
}

impl Value {
    /// Decodes and validates the serialized value `bytes` of type `ty` (`frozen<>` is
    /// transparent; a Custom type decodes as a blob unless it is Cassandra's `DurationType`).
    ///
    /// # Errors
    /// A [`TypeError`] describing the first problem found.
    pub fn decode(ty: &DataType, bytes: &[u8]) -> Result<Value, TypeError> {
        match ty {
            DataType::Native(t) => decode_native(*t, bytes),
            DataType::Frozen(inner) => Value::decode(inner, bytes),
            DataType::Custom(class) if class == DURATION_CLASS => {
                decode_native(NativeType::Duration, bytes)
            }
            DataType::Custom(_) => Ok(Value::Blob(bytes.to_vec())),
            DataType::List(e) => Ok(Value::List(decode_elements(e, bytes, "list")?)),
            DataType::Set(e) => Ok(Value::Set(decode_elements(e, bytes, "set")?)),
            DataType::Map(k, v) => Ok(Value::Map(decode_map(k, v, bytes)?)),
            DataType::Tuple(ts) => Ok(Value::Tuple(decode_fields(ts.iter(), bytes, "tuple")?)),
            DataType::Udt(u) => decode_udt(u, bytes),
            DataType::Vector(e, n) => decode_vector(e, *n, bytes),
        }
    }

    /// Appends the serialized form (the content of the `[bytes]`, without its length).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Ascii(s) | Value::Text(s) => out.extend_from_slice(s.as_bytes()),
            Value::Blob(b) => out.extend_from_slice(b),
            Value::Bigint(v) | Value::Counter(v) | Value::Time(v) | Value::Timestamp(v) => {
                out.extend_from_slice(&v.to_be_bytes())
            }
            Value::Boolean(b) => out.push(u8::from(*b)),
            Value::Date(d) => out.extend_from_slice(&d.to_be_bytes()),
            Value::Decimal { scale, unscaled } => {
                out.extend_from_slice(&scale.to_be_bytes());
                write_varint(out, unscaled);
            }
            Value::Double(v) => out.extend_from_slice(&v.to_be_bytes()),
            Value::Float(v) => out.extend_from_slice(&v.to_be_bytes()),
            Value::Duration {
                months,
                days,
                nanos,
            } => {
                write_signed_vint(out, i64::from(*months));
                write_signed_vint(out, i64::from(*days));
                write_signed_vint(out, *nanos);
            }
            Value::Inet(IpAddr::V4(a)) => out.extend_from_slice(&a.octets()),
            Value::Inet(IpAddr::V6(a)) => out.extend_from_slice(&a.octets()),
            Value::Int(v) => out.extend_from_slice(&v.to_be_bytes()),
            Value::Smallint(v) => out.extend_from_slice(&v.to_be_bytes()),
            Value::Tinyint(v) => out.extend_from_slice(&v.to_be_bytes()),
            Value::Uuid(u) | Value::Timeuuid(u) => out.extend_from_slice(u.as_bytes()),
            Value::Varint(b) => write_varint(out, b),
            Value::List(items) | Value::Set(items) => {
                write_count(out, items.len());
                for item in items {
                    write_framed(out, |o| item.encode(o));
                }
            }
            Value::Map(entries) => {
                write_count(out, entries.len());
                for (k, v) in entries {
                    write_framed(out, |o| k.encode(o));
                    write_framed(out, |o| v.encode(o));
                }
            }
            Value::Tuple(items) => {
                for item in items {
                    write_optional(out, item.as_ref());
                }
            }
            Value::Udt(fields) => {
                for (_, item) in fields {
                    write_optional(out, item.as_ref());
                }
            }
            Value::Vector(items) => {
                for item in items {
                    if is_fixed_width(item) {
                        item.encode(out);
                    } else {
                        let bytes = item.to_bytes();
                        write_unsigned_vint(out, bytes.len() as u64);
                        out.extend_from_slice(&bytes);
                    }
                }
            }
            Value::Empty => {}
        }
    }

    /// The serialized form as a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }
}

fn write_varint(out: &mut Vec<u8>, b: &[u8]) {
    if b.is_empty() {
        // An empty varint would read back as the empty value; zero is what was meant.
        out.push(0);
    } else {
        out.extend_from_slice(b);
    }
}

fn write_optional(out: &mut Vec<u8>, v: Option<&Value>) {
    match v {
        Some(v) => write_framed(out, |o| v.encode(o)),
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
    }
}
