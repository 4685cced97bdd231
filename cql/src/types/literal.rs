//! Printing a [`Value`] as a CQL literal that cqlsh (and our parser) accepts back:
//! `'it''s'`, `0xcafe`, bare uuids, `true`, `1.5`, `[1, 2]`, `{'a': 1}`, `(1, null)`,
//! `{field: 1}`, `'2024-01-31'`, `'12:00:00.000000000'`, `'2024-01-31 12:00:00.000+0000'`,
//! `1y2mo3d4h`. Used by DESCRIBE and in error messages.

use std::fmt::{self, Write};

use super::value::Value;
use super::varint::varint_to_decimal_string;
use super::write_identifier;

const NANOS_PER_SECOND: u64 = 1_000_000_000;
const NANOS_PER_MINUTE: u64 = 60 * NANOS_PER_SECOND;
const NANOS_PER_HOUR: u64 = 60 * NANOS_PER_MINUTE;
const MILLIS_PER_DAY: i64 = 86_400_000;
/// Date values count days with the Unix epoch at 2^31.
const DATE_EPOCH: i64 = 1 << 31;

impl Value {
    /// The value as a CQL literal (see the module docs). [`Value::Empty`] has no literal and
    /// prints as the empty blob `0x`.
    pub fn to_cql_literal(&self) -> String {
        self.to_string()
    }
}

/// Formats as [`Value::to_cql_literal`].
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Ascii(s) | Value::Text(s) => write_quoted(f, s),
            Value::Bigint(v) | Value::Counter(v) => write!(f, "{v}"),
            Value::Blob(b) => {
                f.write_str("0x")?;
                b.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
            }
            Value::Boolean(b) => write!(f, "{b}"),
            Value::Date(d) => write_date(f, *d),
            Value::Decimal { scale, unscaled } => write_decimal(f, *scale, unscaled),
            Value::Double(v) => write_float(f, *v, format_args!("{v:?}")),
            Value::Float(v) => write_float(f, f64::from(*v), format_args!("{v:?}")),
            Value::Duration {
                months,
                days,
                nanos,
            } => write_duration(f, *months, *days, *nanos),
            Value::Inet(ip) => write!(f, "'{ip}'"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Smallint(v) => write!(f, "{v}"),
            Value::Tinyint(v) => write!(f, "{v}"),
            Value::Time(t) => write_time(f, *t),
            Value::Timestamp(ms) => write_timestamp(f, *ms),
            Value::Uuid(u) | Value::Timeuuid(u) => write!(f, "{u}"),
            Value::Varint(b) => f.write_str(&varint_to_decimal_string(b)),
            Value::List(items) | Value::Vector(items) => {
                write_seq(f, "[", "]", items.iter().map(Some))
            }
            Value::Set(items) => write_seq(f, "{", "}", items.iter().map(Some)),
            Value::Tuple(items) => write_seq(f, "(", ")", items.iter().map(Option::as_ref)),
            Value::Map(entries) => {
                f.write_char('{')?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_char('}')
            }
            Value::Udt(fields) => {
                f.write_char('{')?;
                for (i, (name, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write_identifier(f, name)?;
                    f.write_str(": ")?;
                    write_optional(f, v.as_ref())?;
                }
                f.write_char('}')
            }
            Value::Empty => f.write_str("0x"),
        }
    }
}

fn write_quoted(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('\'')?;
    for part in s.split_inclusive('\'') {
        f.write_str(part)?;
        if part.ends_with('\'') {
            f.write_char('\'')?;
        }
    }
    f.write_char('\'')
}

fn write_optional(f: &mut fmt::Formatter<'_>, v: Option<&Value>) -> fmt::Result {
    match v {
        Some(v) => write!(f, "{v}"),
        None => f.write_str("null"),
    }
}

fn write_seq<'a>(
    f: &mut fmt::Formatter<'_>,
    open: &str,
    close: &str,
    items: impl Iterator<Item = Option<&'a Value>>,
) -> fmt::Result {
    f.write_str(open)?;
    for (i, item) in items.enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_optional(f, item)?;
    }
    f.write_str(close)
}

fn write_float(f: &mut fmt::Formatter<'_>, v: f64, repr: fmt::Arguments<'_>) -> fmt::Result {
    if v.is_nan() {
        f.write_str("NaN")
    } else if v.is_infinite() {
        f.write_str(if v > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        // Debug gives the shortest round-tripping form (`1.0`, `1e-7`), all valid CQL floats.
        f.write_fmt(repr)
    }
}

fn write_decimal(f: &mut fmt::Formatter<'_>, scale: i32, unscaled: &[u8]) -> fmt::Result {
    let digits = varint_to_decimal_string(unscaled);
    let (sign, digits) = match digits.strip_prefix('-') {
        Some(d) => ("-", d),
        None => ("", digits.as_str()),
    };
    let scale = i64::from(scale);
    let len = digits.len() as i64;
    if scale == 0 {
        write!(f, "{sign}{digits}")
    } else if scale < 0 {
        write!(f, "{sign}{digits}E{}", -scale)
    } else if scale < len {
        let (int, frac) = digits.split_at((len - scale) as usize);
        write!(f, "{sign}{int}.{frac}")
    } else if scale - len <= 20 {
        let zeros = "0".repeat((scale - len) as usize);
        write!(f, "{sign}0.{zeros}{digits}")
    } else {
        write!(f, "{sign}{digits}E-{scale}")
    }
}

/// Proleptic Gregorian (year, month, day) of a day count from 1970-01-01 (Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn write_date(f: &mut fmt::Formatter<'_>, d: u32) -> fmt::Result {
    let (y, m, day) = civil_from_days(i64::from(d) - DATE_EPOCH);
    if (1..=9999).contains(&y) {
        write!(f, "'{y:04}-{m:02}-{day:02}'")
    } else {
        // Cassandra also accepts the raw (2^31-based) day count as a string.
        write!(f, "'{d}'")
    }
}

fn write_time(f: &mut fmt::Formatter<'_>, nanos: i64) -> fmt::Result {
    let n = nanos.unsigned_abs();
    let (h, rem) = (n / NANOS_PER_HOUR, n % NANOS_PER_HOUR);
    let (m, rem) = (rem / NANOS_PER_MINUTE, rem % NANOS_PER_MINUTE);
    let (s, ns) = (rem / NANOS_PER_SECOND, rem % NANOS_PER_SECOND);
    write!(f, "'{h:02}:{m:02}:{s:02}.{ns:09}'")
}

fn write_timestamp(f: &mut fmt::Formatter<'_>, ms: i64) -> fmt::Result {
    let days = ms.div_euclid(MILLIS_PER_DAY);
    let in_day = ms.rem_euclid(MILLIS_PER_DAY);
    let (y, mo, d) = civil_from_days(days);
    if !(1..=9999).contains(&y) {
        // Outside what the date formats parse: a bare integer is a valid timestamp literal.
        return write!(f, "{ms}");
    }
    let (h, rem) = (in_day / 3_600_000, in_day % 3_600_000);
    let (mi, rem) = (rem / 60_000, rem % 60_000);
    let (s, milli) = (rem / 1000, rem % 1000);
    write!(
        f,
        "'{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{milli:03}+0000'"
    )
}

/// Cassandra's `Duration.toString`: `[-]` then y, mo, d, h, m, s, ms, us, ns, skipping zeros.
fn write_duration(f: &mut fmt::Formatter<'_>, months: i32, days: i32, nanos: i64) -> fmt::Result {
    if months == 0 && days == 0 && nanos == 0 {
        return f.write_str("0s");
    }
    if months < 0 || days < 0 || nanos < 0 {
        f.write_char('-')?;
    }
    let months = u64::from(months.unsigned_abs());
    let mut parts = vec![(months / 12, "y"), (months % 12, "mo")];
    parts.push((u64::from(days.unsigned_abs()), "d"));
    let mut rem = nanos.unsigned_abs();
    for (unit, name) in [
        (NANOS_PER_HOUR, "h"),
        (NANOS_PER_MINUTE, "m"),
        (NANOS_PER_SECOND, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ] {
        parts.push((rem / unit, name));
        rem %= unit;
    }
    for (n, unit) in parts {
        if n != 0 {
            write!(f, "{n}{unit}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::varint::varint_from_i128;
    use uuid::Uuid;

    fn lit(v: Value) -> String {
        v.to_cql_literal()
    }

    #[test]
    fn scalars() {
        assert_eq!(lit(Value::Text("it's".into())), "'it''s'");
        assert_eq!(lit(Value::Ascii("''".into())), "''''''");
        assert_eq!(lit(Value::Blob(vec![0xCA, 0xFE, 0x01])), "0xcafe01");
        assert_eq!(lit(Value::Blob(vec![])), "0x");
        assert_eq!(lit(Value::Boolean(true)), "true");
        assert_eq!(lit(Value::Int(-5)), "-5");
        assert_eq!(lit(Value::Double(1.0)), "1.0");
        assert_eq!(lit(Value::Double(1e-7)), "1e-7");
        assert_eq!(lit(Value::Float(f32::NAN)), "NaN");
        assert_eq!(lit(Value::Double(f64::NEG_INFINITY)), "-Infinity");
        assert_eq!(lit(Value::Varint(vec![0xFF, 0x7F])), "-129");
        let u = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        assert_eq!(lit(Value::Uuid(u)), "01234567-89ab-cdef-0123-456789abcdef");
        assert_eq!(lit(Value::Inet("::1".parse().unwrap())), "'::1'");
        assert_eq!(lit(Value::Empty), "0x");
    }

    #[test]
    fn decimals() {
        let d = |scale, v| {
            Value::Decimal {
                scale,
                unscaled: varint_from_i128(v),
            }
            .to_cql_literal()
        };
        assert_eq!(d(2, 12345), "123.45");
        assert_eq!(d(0, 7), "7");
        assert_eq!(d(5, -12), "-0.00012");
        assert_eq!(d(-3, 12), "12E3");
        assert_eq!(d(100, 12), "12E-100");
        assert_eq!(d(2, 5), "0.05");
    }

    #[test]
    fn dates_and_times() {
        assert_eq!(lit(Value::Date(0x8000_0000)), "'1970-01-01'");
        assert_eq!(lit(Value::Date(0x8000_0000 + 19_753)), "'2024-01-31'");
        assert_eq!(lit(Value::Date(0x8000_0000 - 1)), "'1969-12-31'");
        assert_eq!(lit(Value::Date(0)), "'0'");
        assert_eq!(lit(Value::Time(0)), "'00:00:00.000000000'");
        assert_eq!(lit(Value::Time(MAX_TIME)), "'23:59:59.999999999'");
        assert_eq!(lit(Value::Timestamp(0)), "'1970-01-01 00:00:00.000+0000'");
        assert_eq!(
            lit(Value::Timestamp(1_706_702_400_123)),
            "'2024-01-31 12:00:00.123+0000'"
        );
        assert_eq!(lit(Value::Timestamp(-1)), "'1969-12-31 23:59:59.999+0000'");
        assert_eq!(lit(Value::Timestamp(i64::MIN)), i64::MIN.to_string());
    }
    const MAX_TIME: i64 = crate::types::MAX_TIME_NANOS;

    #[test]
    fn durations() {
        let dur = |months, days, nanos| {
            Value::Duration {
                months,
                days,
                nanos,
            }
            .to_cql_literal()
        };
        assert_eq!(dur(1, 2, 3), "1mo2d3ns");
        assert_eq!(dur(14, 0, 3_600_000_000_001), "1y2mo1h1ns");
        assert_eq!(dur(0, -1, -1_500_000), "-1d1ms500us");
        assert_eq!(dur(0, 0, 0), "0s");
        assert_eq!(dur(i32::MIN, i32::MIN, i64::MIN).chars().next(), Some('-'));
    }

    #[test]
    fn composites() {
        let list = Value::List(vec![Value::Int(1), Value::Int(2)]);
        assert_eq!(lit(list), "[1, 2]");
        let set = Value::Set(vec![Value::Text("a".into())]);
        assert_eq!(lit(set), "{'a'}");
        let map = Value::Map(vec![(Value::Text("k".into()), Value::Boolean(false))]);
        assert_eq!(lit(map), "{'k': false}");
        let tup = Value::Tuple(vec![Some(Value::Int(1)), None]);
        assert_eq!(lit(tup), "(1, null)");
        let udt = Value::Udt(vec![
            ("street".into(), Some(Value::Text("x".into()))),
            ("Zip".into(), None),
        ]);
        assert_eq!(lit(udt), "{street: 'x', \"Zip\": null}");
    }
}
