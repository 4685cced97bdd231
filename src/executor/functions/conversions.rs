//! `CAST(x AS type)` with Cassandra 4.0's `CastFcts` matrix, and the Java number and text
//! semantics it inherits.
//!
//! - Numeric to numeric (tinyint, smallint, int, bigint, float, double, decimal, varint, and
//!   counter as input) goes through `java.lang.Number`: integer narrowing keeps the low bits,
//!   floating point to integer saturates (NaN is 0), decimal and varint truncate toward zero
//!   first. To decimal is `BigDecimal.valueOf(x.doubleValue())`, so `CAST(1 AS decimal)` is
//!   `1.0`; to varint is `BigInteger.valueOf(x.longValue())`.
//! - Numbers, ascii, inet, boolean, uuid, timeuuid, timestamp, date and time cast to ascii and
//!   text as Java prints them (`Double.toString`, `BigDecimal.toString`,
//!   `2015-05-21T11:03:02.000Z`, `11:03:02.000000000`, `0:0:0:0:0:0:0:1`).
//! - timeuuid → date/timestamp, timestamp → date, date → timestamp as `toDate`/`toTimestamp`.
//!
//! A cast to the argument's own type is no cast at all (Cassandra drops it, and the column keeps
//! its name). Cassandra resolves a cast as a call of the function `system.castAs<Type>` whose
//! overloads are the matrix above, so a value-compatible argument may take another overload
//! (a timestamp is read as a varint by `CAST(ts AS bigint)`) and errors are the resolver's.

use super::scalar::{date_to_millis, millis_to_date, timeuuid_to_millis};
use super::{pick, ArgKind, FunctionArg, Signature};
use crate::error::QueryError;
use crate::executor::numeric::{decimal_from_str, varint_to_string};
use crate::executor::time::civil_from_days;
use cql::types::{DataType, NativeType, Value};
use num_bigint::BigInt;
use std::net::IpAddr;

use NativeType as N;

/// Numeric inputs in the order `CastFcts.all()` registers them.
const NUMERIC_INPUTS: [NativeType; 9] = [
    N::Tinyint,
    N::Smallint,
    N::Int,
    N::Bigint,
    N::Float,
    N::Double,
    N::Decimal,
    N::Counter,
    N::Varint,
];

/// Numeric outputs in the order `CastFcts.all()` registers them.
const NUMERIC_OUTPUTS: [NativeType; 8] = [
    N::Tinyint,
    N::Smallint,
    N::Int,
    N::Bigint,
    N::Float,
    N::Double,
    N::Decimal,
    N::Varint,
];

/// Cassandra's name of the cast function to `to`: `castAs` and the capitalized type name.
fn cast_function_name(to: NativeType) -> String {
    let name = to.name();
    let mut out = String::from("castAs");
    let mut chars = name.chars();
    if let Some(c) = chars.next() {
        out.push(c.to_ascii_uppercase());
        out.push_str(chars.as_str());
    }
    out
}

/// Every `(input, output)` pair of `CastFcts.all()`, in registration order.
fn cast_matrix() -> Vec<(NativeType, NativeType)> {
    let mut out = Vec::new();
    for input in NUMERIC_INPUTS {
        for output in NUMERIC_OUTPUTS {
            if input != output {
                out.push((input, output));
            }
        }
        out.push((input, N::Ascii));
        out.push((input, N::Text));
    }
    out.push((N::Ascii, N::Text));
    for input in [N::Inet, N::Boolean] {
        out.extend([(input, N::Ascii), (input, N::Text)]);
    }
    out.extend([
        (N::Timeuuid, N::Date),
        (N::Timeuuid, N::Timestamp),
        (N::Timeuuid, N::Ascii),
        (N::Timeuuid, N::Text),
        (N::Timestamp, N::Date),
        (N::Timestamp, N::Ascii),
        (N::Timestamp, N::Text),
        (N::Date, N::Timestamp),
        (N::Date, N::Ascii),
        (N::Date, N::Text),
        (N::Time, N::Ascii),
        (N::Time, N::Text),
        (N::Uuid, N::Ascii),
        (N::Uuid, N::Text),
    ]);
    out
}

/// The overload of `system.castAs<to>` a value of type `from` takes; `None` when the cast is
/// the identity.
fn resolve_cast(
    from: &DataType,
    to: &DataType,
    arg_name: &str,
) -> Result<Option<NativeType>, QueryError> {
    if from.unfrozen() == to.unfrozen() {
        return Ok(None);
    }
    let cannot = || QueryError::invalid(format!("{arg_name} cannot be cast to {to}"));
    let DataType::Native(to_native) = to.unfrozen() else {
        return Err(cannot());
    };
    let name = cast_function_name(*to_native);
    let candidates: Vec<Signature> = cast_matrix()
        .into_iter()
        .filter(|(_, o)| o == to_native)
        .map(|(i, o)| Signature {
            name: name.clone(),
            arg_types: vec![DataType::Native(i)],
            return_type: DataType::Native(o),
            is_aggregate: false,
            keyspace: None,
        })
        .collect();
    if candidates.is_empty() {
        return Err(cannot());
    }
    let arg = FunctionArg {
        kind: ArgKind::Typed(from),
        text: arg_name.to_string(),
    };
    let sig = pick(&format!("system.{name}"), candidates, &[arg])?;
    match sig.arg_types.first() {
        Some(DataType::Native(t)) => Ok(Some(*t)),
        _ => Err(cannot()),
    }
}

/// Checks at planning time that `CAST(arg AS to)` exists for an argument of type `from`.
///
/// # Errors
/// InvalidRequest `a cannot be cast to boolean` when Cassandra has no `castAs<Type>` function
/// at all, else the resolver's error for `system.castAs<Type>`.
pub fn check_cast(from: &DataType, to: &DataType, arg_name: &str) -> Result<(), QueryError> {
    resolve_cast(from, to, arg_name).map(|_| ())
}

/// The result column name of a cast: `cast(v as int)`; a cast to the argument's own type keeps
/// the argument's name.
pub fn cast_column_name(arg_name: &str, from: &DataType, to: &DataType) -> String {
    if from.unfrozen() == to.unfrozen() {
        return arg_name.to_string();
    }
    format!("cast({arg_name} as {to})")
}

/// Casts `value` (of type `from`) to `to` (None is null).
///
/// # Errors
/// As [`check_cast`] (naming the argument by its type), and for a decimal of an infinite or
/// NaN number.
pub fn cast(
    value: Option<Value>,
    from: &DataType,
    to: &DataType,
) -> Result<Option<Value>, QueryError> {
    let Some(input) = resolve_cast(from, to, &from.to_string())? else {
        return Ok(value);
    };
    let Some(value) = value else {
        return Ok(None);
    };
    // The function reads the argument's bytes as its own input type.
    let value = if *from.unfrozen() == DataType::Native(input) {
        value
    } else {
        Value::decode(&DataType::Native(input), &value.to_bytes())
            .map_err(|e| QueryError::invalid(e.to_string()))?
    };
    let DataType::Native(to) = to.unfrozen() else {
        return Ok(None);
    };
    convert(&value, *to)
}

fn convert(value: &Value, to: NativeType) -> Result<Option<Value>, QueryError> {
    match to {
        N::Ascii => return Ok(Some(Value::Ascii(java_string(value)))),
        N::Text => {
            return Ok(Some(match value {
                Value::Ascii(s) => Value::Text(s.clone()),
                other => Value::Text(java_string(other)),
            }))
        }
        N::Date | N::Timestamp => {
            let millis = match value {
                Value::Timeuuid(u) => timeuuid_to_millis(u),
                Value::Timestamp(ms) => *ms,
                Value::Date(d) => date_to_millis(*d),
                _ => return Ok(None),
            };
            return Ok(Some(if to == N::Date {
                Value::Date(millis_to_date(millis))
            } else {
                Value::Timestamp(millis)
            }));
        }
        _ => {}
    }
    // Numeric: an empty value has no number (Java would fail on the null).
    let Some(n) = JavaNumber::of(value) else {
        return Ok(None);
    };
    Ok(Some(match to {
        N::Tinyint => Value::Tinyint(n.int_value() as i8),
        N::Smallint => Value::Smallint(n.int_value() as i16),
        N::Int => Value::Int(n.int_value()),
        N::Bigint => Value::Bigint(n.long_value()),
        N::Float => Value::Float(n.float_value()),
        N::Double => Value::Double(n.double_value()),
        N::Decimal => decimal_of_double(n.double_value())?.to_value(),
        N::Varint => Value::Varint(BigInt::from(n.long_value()).to_signed_bytes_be()),
        _ => return Ok(None),
    }))
}

/// A number as Java's `Number` subclasses hold it.
#[derive(Debug, Clone)]
pub(super) enum JavaNumber {
    /// byte, short, int, long (and counter).
    Long(i64),
    /// float.
    Float(f32),
    /// double.
    Double(f64),
    /// `BigDecimal`.
    Decimal(Decimal),
    /// `BigInteger`.
    Varint(BigInt),
}

impl JavaNumber {
    /// The number in a numeric value; None for other values and the empty value.
    pub(super) fn of(value: &Value) -> Option<JavaNumber> {
        Some(match value {
            Value::Tinyint(v) => JavaNumber::Long(i64::from(*v)),
            Value::Smallint(v) => JavaNumber::Long(i64::from(*v)),
            Value::Int(v) => JavaNumber::Long(i64::from(*v)),
            Value::Bigint(v) | Value::Counter(v) => JavaNumber::Long(*v),
            Value::Float(v) => JavaNumber::Float(*v),
            Value::Double(v) => JavaNumber::Double(*v),
            Value::Decimal { scale, unscaled } => JavaNumber::Decimal(Decimal {
                unscaled: BigInt::from_signed_bytes_be(unscaled),
                scale: *scale,
            }),
            Value::Varint(b) => JavaNumber::Varint(BigInt::from_signed_bytes_be(b)),
            _ => return None,
        })
    }

    /// `Number.longValue()`.
    pub(super) fn long_value(&self) -> i64 {
        match self {
            JavaNumber::Long(v) => *v,
            // Java's narrowing saturates and maps NaN to 0, as Rust's `as` does.
            JavaNumber::Float(v) => *v as i64,
            JavaNumber::Double(v) => *v as i64,
            JavaNumber::Decimal(d) => low_i64(&d.truncate()),
            JavaNumber::Varint(b) => low_i64(b),
        }
    }

    /// `Number.intValue()`; `byteValue()`/`shortValue()` narrow this further.
    pub(super) fn int_value(&self) -> i32 {
        match self {
            JavaNumber::Float(v) => *v as i32,
            JavaNumber::Double(v) => *v as i32,
            other => other.long_value() as i32,
        }
    }

    /// `Number.doubleValue()`.
    pub(super) fn double_value(&self) -> f64 {
        match self {
            JavaNumber::Long(v) => *v as f64,
            JavaNumber::Float(v) => f64::from(*v),
            JavaNumber::Double(v) => *v,
            JavaNumber::Decimal(d) => d.to_f64(),
            JavaNumber::Varint(b) => b.to_string().parse().unwrap_or(f64::NAN),
        }
    }

    /// `Number.floatValue()`.
    pub(super) fn float_value(&self) -> f32 {
        match self {
            JavaNumber::Long(v) => *v as f32,
            JavaNumber::Float(v) => *v,
            JavaNumber::Double(v) => *v as f32,
            JavaNumber::Decimal(d) => d.to_float_string().parse().unwrap_or(f32::NAN),
            JavaNumber::Varint(b) => b.to_string().parse().unwrap_or(f32::NAN),
        }
    }
}

/// The low 64 bits of a big integer's two's complement (`BigInteger.longValue()`).
pub(super) fn low_i64(b: &BigInt) -> i64 {
    let bytes = b.to_signed_bytes_le();
    let fill = if b.sign() == num_bigint::Sign::Minus {
        0xFF
    } else {
        0
    };
    let mut out = [fill; 8];
    for (o, v) in out.iter_mut().zip(&bytes) {
        *o = *v;
    }
    i64::from_le_bytes(out)
}

/// Largest power of ten materialized; beyond it results are known without computing them.
const MAX_POW10: u32 = 10_000;

fn pow10(n: u32) -> BigInt {
    BigInt::from(10u8).pow(n)
}

/// A `java.math.BigDecimal`: `unscaled × 10^-scale`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Decimal {
    /// The unscaled value.
    pub(super) unscaled: BigInt,
    /// The scale.
    pub(super) scale: i32,
}

impl Decimal {
    /// Zero with scale 0 (`BigDecimal.ZERO`).
    pub(super) fn zero() -> Self {
        Decimal {
            unscaled: BigInt::from(0),
            scale: 0,
        }
    }

    /// From a CQL decimal value.
    pub(super) fn of(value: &Value) -> Option<Decimal> {
        match value {
            Value::Decimal { scale, unscaled } => Some(Decimal {
                unscaled: BigInt::from_signed_bytes_be(unscaled),
                scale: *scale,
            }),
            _ => None,
        }
    }

    /// As a CQL decimal value.
    pub(super) fn to_value(&self) -> Value {
        Value::Decimal {
            scale: self.scale,
            unscaled: self.unscaled.to_signed_bytes_be(),
        }
    }

    /// The unscaled value brought to a larger `scale`.
    fn rescaled(&self, scale: i32) -> BigInt {
        let diff = (i64::from(scale) - i64::from(self.scale)).clamp(0, i64::from(MAX_POW10));
        &self.unscaled * pow10(diff as u32)
    }

    /// `BigDecimal.add`: the result has the larger scale.
    pub(super) fn add(&self, other: &Decimal) -> Decimal {
        let scale = self.scale.max(other.scale);
        Decimal {
            unscaled: self.rescaled(scale) + other.rescaled(scale),
            scale,
        }
    }

    /// `BigDecimal.subtract`.
    pub(super) fn sub(&self, other: &Decimal) -> Decimal {
        let scale = self.scale.max(other.scale);
        Decimal {
            unscaled: self.rescaled(scale) - other.rescaled(scale),
            scale,
        }
    }

    /// `BigDecimal.divide(BigDecimal.valueOf(n), RoundingMode.HALF_EVEN)`: keeps this scale.
    pub(super) fn div_half_even(&self, n: i64) -> Decimal {
        let d = BigInt::from(n);
        let q = &self.unscaled / &d;
        let r = &self.unscaled - &q * &d;
        let twice = (&r * 2u8).magnitude().clone();
        let dm = d.magnitude().clone();
        let negative = (self.unscaled.sign() == num_bigint::Sign::Minus) != (n < 0);
        let step = if negative { -1 } else { 1 };
        let q = if twice > dm || (twice == dm && (&q % 2u8) != BigInt::from(0)) {
            q + step
        } else {
            q
        };
        Decimal {
            unscaled: q,
            scale: self.scale,
        }
    }

    /// `toBigInteger()`: truncated toward zero.
    pub(super) fn truncate(&self) -> BigInt {
        if self.scale <= 0 {
            let up = self.scale.unsigned_abs();
            // 10^64 is a multiple of 2^64: only the low bits matter to callers.
            if up >= 64 {
                return BigInt::from(0);
            }
            return &self.unscaled * pow10(up);
        }
        let digits = self.unscaled.magnitude().to_string().len();
        if self.scale as usize > digits {
            return BigInt::from(0);
        }
        &self.unscaled / pow10(self.scale.unsigned_abs())
    }

    /// Scientific text Rust's float parser reads (`123e-2`).
    fn to_float_string(&self) -> String {
        format!("{}e{}", self.unscaled, -i64::from(self.scale))
    }

    /// `doubleValue()`, correctly rounded.
    pub(super) fn to_f64(&self) -> f64 {
        self.to_float_string().parse().unwrap_or(f64::NAN)
    }

    /// `BigDecimal.toString()`: plain when the scale is non-negative and the adjusted exponent
    /// is at least -6, else scientific with `E+n`/`E-n`.
    pub(super) fn to_java_string(&self) -> String {
        let digits = self.unscaled.magnitude().to_string();
        let sign = if self.unscaled.sign() == num_bigint::Sign::Minus {
            "-"
        } else {
            ""
        };
        let len = digits.len() as i64;
        let scale = i64::from(self.scale);
        let adjusted = -scale + (len - 1);
        if scale >= 0 && adjusted >= -6 {
            let body = if scale == 0 {
                digits
            } else if len > scale {
                let (int, frac) = digits.split_at((len - scale) as usize);
                format!("{int}.{frac}")
            } else {
                format!("0.{}{digits}", "0".repeat((scale - len) as usize))
            };
            return format!("{sign}{body}");
        }
        let (first, rest) = digits.split_at(1);
        let mantissa = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let exp_sign = if adjusted >= 0 { "+" } else { "" };
        format!("{sign}{mantissa}E{exp_sign}{adjusted}")
    }
}

/// `BigDecimal.valueOf(double)`: the decimal of `Double.toString(d)`.
pub(super) fn decimal_of_double(d: f64) -> Result<Decimal, QueryError> {
    if !d.is_finite() {
        return Err(QueryError::invalid("Infinite or NaN"));
    }
    match decimal_from_str(&java_double(d))
        .as_ref()
        .and_then(Decimal::of)
    {
        Some(dec) => Ok(dec),
        None => Err(QueryError::invalid(format!("Invalid decimal {d}"))),
    }
}

/// True when a float literal's decimal equals `BigDecimal.valueOf` of its double, the test
/// Cassandra uses to prefer `double` over `decimal` for it.
pub(super) fn float_literal_is_lossless_double(text: &str) -> bool {
    let Some(exact) = decimal_from_str(text).as_ref().and_then(Decimal::of) else {
        return false;
    };
    let Ok(d) = text.parse::<f64>() else {
        return false;
    };
    decimal_of_double(d).is_ok_and(|via_double| via_double == exact)
}

/// Lays out shortest significant `digits` with decimal exponent `exp` (value
/// `d.ddd × 10^exp`) as Java's `Double.toString`/`Float.toString` do.
fn java_float_layout(negative: bool, digits: &str, exp: i32, plain: bool) -> String {
    let sign = if negative { "-" } else { "" };
    if plain {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            let (int, frac) = if digits.len() > int_len {
                (digits[..int_len].to_string(), digits[int_len..].to_string())
            } else {
                (
                    format!("{digits}{}", "0".repeat(int_len - digits.len())),
                    "0".to_string(),
                )
            };
            format!("{sign}{int}.{frac}")
        } else {
            let zeros = "0".repeat((-exp - 1) as usize);
            format!("{sign}0.{zeros}{digits}")
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() { "0" } else { rest };
        format!("{sign}{first}.{rest}E{exp}")
    }
}

/// Splits Rust's shortest `{:e}` form (`1.25e-3`) into digits and exponent.
fn shortest_digits(sci: &str) -> (String, i32) {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

/// `Double.toString(d)`: `1.0`, `6.3`, `1.0E7`, `1.0E-4`, `NaN`, `-Infinity`.
pub(super) fn java_double(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let a = d.abs();
    let (digits, exp) = shortest_digits(&format!("{a:e}"));
    java_float_layout(d < 0.0, &digits, exp, (1e-3..1e7).contains(&a))
}

/// `Float.toString(f)`.
pub(super) fn java_float(f: f32) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let a = f.abs();
    let (digits, exp) = shortest_digits(&format!("{a:e}"));
    java_float_layout(f < 0.0, &digits, exp, (1e-3..1e7).contains(&a))
}

/// `yyyy-MM-dd` of days since 1970-01-01 as `ISO_LOCAL_DATE` prints it (`+10000-01-01`,
/// `-0001-01-01`).
fn iso_date(days_since_epoch: i64) -> String {
    let (y, m, d) = civil_from_days(days_since_epoch);
    let year = if y > 9999 {
        format!("+{y}")
    } else if y < 0 {
        format!("-{:04}", -y)
    } else {
        format!("{y:04}")
    };
    format!("{year}-{m:02}-{d:02}")
}

/// The text Cassandra's `TypeSerializer.toCQLLiteral` gives a value in a cast to text: the
/// serializer's `toString`, or `null` for the empty value.
pub(super) fn java_string(value: &Value) -> String {
    match value {
        Value::Empty => "null".into(),
        Value::Ascii(s) | Value::Text(s) => s.clone(),
        Value::Tinyint(v) => v.to_string(),
        Value::Smallint(v) => v.to_string(),
        Value::Int(v) => v.to_string(),
        Value::Bigint(v) | Value::Counter(v) => v.to_string(),
        Value::Float(v) => java_float(*v),
        Value::Double(v) => java_double(*v),
        Value::Varint(b) => varint_to_string(b),
        Value::Decimal { .. } => Decimal::of(value)
            .map(|d| d.to_java_string())
            .unwrap_or_default(),
        Value::Boolean(b) => b.to_string(),
        Value::Uuid(u) | Value::Timeuuid(u) => u.hyphenated().to_string(),
        Value::Inet(ip) => java_inet(ip),
        Value::Timestamp(ms) => {
            let days = ms.div_euclid(86_400_000);
            let rem = ms.rem_euclid(86_400_000);
            let (h, mi, s, milli) = (
                rem / 3_600_000,
                rem / 60_000 % 60,
                rem / 1000 % 60,
                rem % 1000,
            );
            format!("{}T{h:02}:{mi:02}:{s:02}.{milli:03}Z", iso_date(days))
        }
        Value::Date(d) => iso_date(i64::from(*d) - (1i64 << 31)),
        Value::Time(nanos) => {
            let secs = nanos / 1_000_000_000;
            format!(
                "{:02}:{:02}:{:02}.{:09}",
                secs / 3600,
                secs / 60 % 60,
                secs % 60,
                nanos % 1_000_000_000
            )
        }
        other => other.to_cql_literal(),
    }
}

/// `InetAddress.getHostAddress()`: IPv4-mapped addresses read back as IPv4, IPv6 in eight
/// uncompressed groups.
fn java_inet(ip: &IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6
                .segments()
                .iter()
                .map(|s| format!("{s:x}"))
                .collect::<Vec<_>>()
                .join(":"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::time::{parse_date, parse_timestamp};

    fn ty(t: NativeType) -> DataType {
        DataType::Native(t)
    }

    fn cast_ok(v: Value, from: NativeType, to: NativeType) -> Option<Value> {
        cast(Some(v), &ty(from), &ty(to)).ok().flatten()
    }

    fn dec(text: &str) -> Value {
        decimal_from_str(text).unwrap()
    }

    #[test]
    fn floating_point_to_integer_truncates() {
        assert_eq!(
            cast_ok(Value::Double(1.5), N::Double, N::Int),
            Some(Value::Int(1))
        );
        assert_eq!(
            cast_ok(Value::Double(-1.5), N::Double, N::Int),
            Some(Value::Int(-1))
        );
        assert_eq!(
            cast_ok(Value::Float(5.2), N::Float, N::Tinyint),
            Some(Value::Tinyint(5))
        );
        assert_eq!(
            cast_ok(Value::Double(f64::NAN), N::Double, N::Bigint),
            Some(Value::Bigint(0))
        );
        // Java narrows double to int (saturating), then int to byte (low bits).
        assert_eq!(
            cast_ok(Value::Double(1e10), N::Double, N::Tinyint),
            Some(Value::Tinyint(-1))
        );
        assert_eq!(cast_ok(dec("6.3"), N::Decimal, N::Int), Some(Value::Int(6)));
    }

    #[test]
    fn integer_narrowing_keeps_low_bits() {
        assert_eq!(
            cast_ok(Value::Int(300), N::Int, N::Tinyint),
            Some(Value::Tinyint(44))
        );
        assert_eq!(
            cast_ok(Value::Bigint(1 << 32 | 7), N::Bigint, N::Int),
            Some(Value::Int(7))
        );
        let big = BigInt::from(1u8) << 70u32;
        let v = Value::Varint((big + 5u8).to_signed_bytes_be());
        assert_eq!(cast_ok(v, N::Varint, N::Bigint), Some(Value::Bigint(5)));
        assert_eq!(
            cast_ok(Value::Counter(2), N::Counter, N::Smallint),
            Some(Value::Smallint(2))
        );
    }

    #[test]
    fn decimal_goes_through_double_text() {
        // BigDecimal.valueOf(1.0) has scale 1.
        assert_eq!(
            cast_ok(Value::Int(1), N::Int, N::Decimal),
            Some(Value::Decimal {
                scale: 1,
                unscaled: vec![10]
            })
        );
        assert_eq!(
            cast_ok(Value::Double(6.3), N::Double, N::Decimal),
            Some(dec("6.3"))
        );
        assert_eq!(
            cast_ok(Value::Float(5.2), N::Float, N::Decimal),
            Some(dec("5.199999809265137"))
        );
        assert!(cast(
            Some(Value::Double(f64::INFINITY)),
            &ty(N::Double),
            &ty(N::Decimal)
        )
        .is_err());
        assert_eq!(
            cast_ok(Value::Double(2.9), N::Double, N::Varint),
            Some(Value::Varint(vec![2]))
        );
    }

    #[test]
    fn text_is_what_java_prints() {
        let text = |v: Value, from| cast_ok(v, from, N::Text);
        let t = |s: &str| Some(Value::Text(s.to_string()));
        assert_eq!(text(Value::Float(5.2), N::Float), t("5.2"));
        assert_eq!(text(Value::Double(6.0), N::Double), t("6.0"));
        assert_eq!(text(Value::Double(1e7), N::Double), t("1.0E7"));
        assert_eq!(text(Value::Double(0.0001), N::Double), t("1.0E-4"));
        assert_eq!(text(Value::Double(123456.789), N::Double), t("123456.789"));
        assert_eq!(text(Value::Double(-0.001), N::Double), t("-0.001"));
        assert_eq!(text(dec("6.3"), N::Decimal), t("6.3"));
        assert_eq!(text(dec("1E+3"), N::Decimal), t("1E+3"));
        assert_eq!(text(dec("0.0000001"), N::Decimal), t("1E-7"));
        assert_eq!(text(dec("0.000123"), N::Decimal), t("0.000123"));
        assert_eq!(text(Value::Boolean(true), N::Boolean), t("true"));
        assert_eq!(
            text(Value::Inet("::1".parse().unwrap()), N::Inet),
            t("0:0:0:0:0:0:0:1")
        );
        assert_eq!(
            text(Value::Inet("::ffff:127.0.0.1".parse().unwrap()), N::Inet),
            t("127.0.0.1")
        );
        assert_eq!(
            cast_ok(Value::Ascii("test".into()), N::Ascii, N::Text),
            t("test")
        );
        assert_eq!(
            cast_ok(Value::Int(4), N::Int, N::Ascii),
            Some(Value::Ascii("4".into()))
        );
    }

    #[test]
    fn temporal_casts_match_cassandra() {
        let ms = parse_timestamp("2015-05-21 11:03:02+0000").unwrap();
        let day = parse_date("2015-05-21").unwrap();
        assert_eq!(
            cast_ok(Value::Timestamp(ms), N::Timestamp, N::Date),
            Some(Value::Date(day))
        );
        assert_eq!(
            cast_ok(Value::Date(day), N::Date, N::Timestamp),
            Some(Value::Timestamp(ms - 11 * 3_600_000 - 3 * 60_000 - 2000))
        );
        assert_eq!(
            cast_ok(Value::Timestamp(ms), N::Timestamp, N::Text),
            Some(Value::Text("2015-05-21T11:03:02.000Z".into()))
        );
        assert_eq!(
            cast_ok(Value::Date(day), N::Date, N::Text),
            Some(Value::Text("2015-05-21".into()))
        );
        assert_eq!(
            cast_ok(Value::Time(39_782_000_000_000), N::Time, N::Text),
            Some(Value::Text("11:03:02.000000000".into()))
        );
    }

    #[test]
    fn unsupported_casts_are_invalid() {
        let e = check_cast(&ty(N::Int), &ty(N::Boolean), "a")
            .err()
            .map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("a cannot be cast to boolean"));
        let e = check_cast(&ty(N::Blob), &ty(N::Int), "b")
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|m| m.starts_with(
            "Invalid call to function system.castAsInt, none of its type signatures match (known type signatures: system.castAsInt : (tinyint) -> int"
        )));
        assert!(check_cast(&ty(N::Text), &ty(N::Ascii), "t").is_err());
        // Identity casts are dropped, and keep the column name.
        assert!(check_cast(&ty(N::Int), &ty(N::Int), "c").is_ok());
        assert_eq!(cast_column_name("c", &ty(N::Int), &ty(N::Int)), "c");
        assert_eq!(
            cast_column_name("b", &ty(N::Smallint), &ty(N::Int)),
            "cast(b as int)"
        );
        assert_eq!(cast(None, &ty(N::Int), &ty(N::Text)).ok(), Some(None));
    }

    #[test]
    fn decimal_rounding_is_half_even() {
        let d = |u: i64, s: i32| Decimal {
            unscaled: BigInt::from(u),
            scale: s,
        };
        assert_eq!(d(25, 1).div_half_even(10), d(2, 1));
        assert_eq!(d(35, 1).div_half_even(10), d(4, 1));
        assert_eq!(d(-35, 1).div_half_even(10), d(-4, 1));
        assert_eq!(d(26, 1).div_half_even(10), d(3, 1));
        assert_eq!(d(1, 2).add(&d(1, 0)), d(101, 2));
    }

    #[test]
    fn float_literal_preference() {
        assert!(float_literal_is_lossless_double("1.5"));
        assert!(!float_literal_is_lossless_double("1.50"));
        assert!(!float_literal_is_lossless_double(
            "0.1000000000000000000001"
        ));
    }
}
