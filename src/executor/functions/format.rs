//! Cassandra 5.0's `format_bytes` and `format_time` (`FormatFcts`): a non-negative number
//! (an integer column, or text holding one) shown in a unit of bytes (`B`, `KiB`, `MiB`,
//! `GiB`) or of time (`d`, `h`, `m`, `s`, `ms`, `us`, `µs`, `ns`), as text such as `3 MiB`.
//! One argument picks the largest unit below the value (bytes, or milliseconds for time);
//! two name the target unit; three the source and the target. Results past a long are
//! `Long.MAX_VALUE`, and conversions round down, as Cassandra's.

use super::{ArgKind, FunctionArg, Signature, SYSTEM};
use crate::error::QueryError;
use cql::ast::Literal;
use cql::types::{DataType, NativeType, Value};

use NativeType as N;

/// The format functions' registered names.
pub const FORMAT_FUNCTIONS: [&str; 2] = ["format_bytes", "format_time"];

/// The types the value argument may have (`FunctionParameter.fixed`).
const VALUE_TYPES: [NativeType; 7] = [
    N::Int,
    N::Tinyint,
    N::Smallint,
    N::Bigint,
    N::Varint,
    N::Ascii,
    N::Text,
];

/// True for a format function's registered name.
pub fn is_format_function(name: &str) -> bool {
    FORMAT_FUNCTIONS.contains(&name)
}

fn type_list(types: &[NativeType]) -> String {
    let names: Vec<&str> = types.iter().map(|t| t.name()).collect();
    format!("[{}]", names.join(", "))
}

/// The type an argument takes: its own, or for a literal the one it is read as.
fn argument_type(arg: &FunctionArg<'_>, default: NativeType) -> Option<DataType> {
    match arg.kind {
        ArgKind::Typed(t) => Some(t.clone()),
        ArgKind::Marker => Some(DataType::Native(default)),
        ArgKind::Literal(Literal::Integer(s)) => {
            Some(DataType::Native(if s.parse::<i32>().is_ok() {
                N::Int
            } else if s.parse::<i64>().is_ok() {
                N::Bigint
            } else {
                N::Varint
            }))
        }
        ArgKind::Literal(Literal::String(_)) => Some(DataType::Native(N::Ascii)),
        ArgKind::Literal(Literal::Null) => Some(DataType::Native(default)),
        ArgKind::Literal(_) => None,
    }
}

/// Resolves a call of `format_bytes` or `format_time`.
///
/// # Errors
/// InvalidRequest with `FunctionFactory`'s and `FunctionParameter.fixed`'s messages.
pub fn resolve(name: &str, args: &[FunctionArg<'_>]) -> Result<Signature, QueryError> {
    let value_types = type_list(&VALUE_TYPES);
    if args.is_empty() || args.len() > 3 {
        return Err(QueryError::invalid(format!(
            "Invalid number of arguments for function {SYSTEM}.{name}({value_types}, [ascii], \
             [ascii])"
        )));
    }
    let mut arg_types = Vec::with_capacity(args.len());
    for (i, arg) in args.iter().enumerate() {
        let (allowed, default): (&[NativeType], _) = if i == 0 {
            (&VALUE_TYPES, N::Int)
        } else {
            (&[N::Ascii, N::Text], N::Ascii)
        };
        let ty = argument_type(arg, default);
        match ty {
            Some(DataType::Native(n)) if allowed.contains(&n) => {
                arg_types.push(DataType::Native(n))
            }
            other => {
                let found = other.map_or_else(|| "unknown".to_string(), |t| t.to_string());
                let wanted = if i == 0 {
                    value_types.clone()
                } else {
                    "ascii".to_string()
                };
                return Err(QueryError::invalid(format!(
                    "Function {SYSTEM}.{name} requires an argument of type {wanted}, but found \
                     argument {} of type {found}",
                    arg.text
                )));
            }
        }
    }
    Ok(Signature {
        name: name.to_string(),
        arg_types,
        return_type: DataType::Native(N::Text),
        is_aggregate: false,
        keyspace: None,
    })
}

/// The value argument as a long (`FormatFcts.getValue`).
fn long_of(v: &Value) -> Result<i64, QueryError> {
    Ok(match v {
        Value::Tinyint(x) => i64::from(*x),
        Value::Smallint(x) => i64::from(*x),
        Value::Int(x) => i64::from(*x),
        Value::Bigint(x) => *x,
        Value::Varint(bytes) => {
            let n = num_bigint::BigInt::from_signed_bytes_be(bytes);
            // BigInteger.longValue: the low 64 bits.
            let (sign, digits) = n.to_u64_digits();
            let low = digits.first().copied().unwrap_or(0) as i64;
            if sign == num_bigint::Sign::Minus {
                low.wrapping_neg()
            } else {
                low
            }
        }
        Value::Ascii(s) | Value::Text(s) => s.parse::<i64>().map_err(|_| {
            QueryError::invalid(format!(
                "unable to convert string '{s}' to a value of type long"
            ))
        })?,
        _ => 0,
    })
}

/// Bytes per unit of `format_bytes`, by symbol (matched ignoring case).
const BYTE_UNITS: [(&str, u64); 4] = [
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
];

/// Nanoseconds per unit of `format_time`, in `TimeUnit` order.
const TIME_UNITS: [(&str, u64); 7] = [
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
];

fn byte_unit(symbol: &str) -> Result<(&'static str, u64), QueryError> {
    BYTE_UNITS
        .iter()
        .find(|(s, _)| s.eq_ignore_ascii_case(symbol))
        .copied()
        .ok_or_else(|| {
            QueryError::invalid(format!(
                "Unsupported data storage unit: {symbol}. Supported units are: B, KiB, MiB, GiB"
            ))
        })
}

fn time_unit(symbol: &str) -> Result<u64, QueryError> {
    let lower = symbol.to_lowercase();
    let lower = if lower == "µs" { "us" } else { lower.as_str() };
    TIME_UNITS
        .iter()
        .find(|(s, _)| *s == lower)
        .map(|(_, n)| *n)
        .ok_or_else(|| {
            QueryError::invalid(format!(
                "Unsupported time unit: {symbol}. Supported units are: ns, us, ms, s, m, h, d"
            ))
        })
}

/// `value` of a unit of `from` base units in units of `to`, rounded down, capped at a long.
fn convert(value: i64, from: u64, to: u64) -> i64 {
    let base = u128::from(value.unsigned_abs()) * u128::from(from);
    i64::try_from(base / u128::from(to)).unwrap_or(i64::MAX)
}

/// Evaluates `format_bytes` or `format_time` (a null value gives null).
///
/// # Errors
/// InvalidRequest with `FormatFcts`' messages: a null unit, a negative value, text that is
/// no number, an unknown unit.
pub fn call(name: &str, args: &[Option<Value>]) -> Result<Option<Value>, QueryError> {
    let Some(Some(first)) = args.first() else {
        return Ok(None);
    };
    if args.iter().any(Option::is_none) {
        return Err(QueryError::invalid("none of the arguments may be null"));
    }
    let value = long_of(first)?;
    if value < 0 {
        return Err(QueryError::invalid("value must be non-negative"));
    }
    let unit = |i: usize| match args.get(i) {
        Some(Some(Value::Ascii(s) | Value::Text(s))) => s.clone(),
        _ => String::new(),
    };
    let text = if name == "format_bytes" {
        let (from, to) = match args.len() {
            1 => {
                let v = value as u64;
                let to = if v > 1 << 30 {
                    BYTE_UNITS[3]
                } else if v > 1 << 20 {
                    BYTE_UNITS[2]
                } else if v > 1 << 10 {
                    BYTE_UNITS[1]
                } else {
                    BYTE_UNITS[0]
                };
                (BYTE_UNITS[0], to)
            }
            2 => (BYTE_UNITS[0], byte_unit(&unit(1))?),
            _ => (byte_unit(&unit(1))?, byte_unit(&unit(2))?),
        };
        format!("{} {}", convert(value, from.1, to.1), to.0)
    } else {
        let ms = TIME_UNITS[2].1;
        match args.len() {
            1 => {
                // The largest unit in which the value is at least 1.
                let (symbol, n) = TIME_UNITS[3..]
                    .iter()
                    .rev()
                    .find(|(_, n)| convert(value, ms, *n) > 0)
                    .copied()
                    .unwrap_or(TIME_UNITS[2]);
                format!("{} {symbol}", convert(value, ms, n))
            }
            2 => {
                let target = unit(1);
                format!("{} {target}", convert(value, ms, time_unit(&target)?))
            }
            _ => {
                let (source, target) = (unit(1), unit(2));
                let from = time_unit(&source)?;
                format!("{} {target}", convert(value, from, time_unit(&target)?))
            }
        }
    };
    Ok(Some(Value::Text(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, args: &[Value]) -> String {
        let args: Vec<Option<Value>> = args.iter().cloned().map(Some).collect();
        match call(name, &args) {
            Ok(Some(Value::Text(s))) => s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bytes_and_time_as_format_fcts() {
        let a = |s: &str| Value::Ascii(s.into());
        assert_eq!(run("format_bytes", &[Value::Int(1024)]), "1024 B");
        assert_eq!(run("format_bytes", &[Value::Int(1025)]), "1 KiB");
        assert_eq!(run("format_bytes", &[Value::Bigint(5 << 30)]), "5 GiB");
        assert_eq!(
            run("format_bytes", &[Value::Int(3 << 20), a("KiB")]),
            "3072 KiB"
        );
        assert_eq!(
            run("format_bytes", &[Value::Int(2), a("GiB"), a("mib")]),
            "2048 MiB"
        );
        assert_eq!(
            run("format_bytes", &[Value::Bigint(i64::MAX), a("GiB"), a("B")]),
            i64::MAX.to_string() + " B"
        );
        assert_eq!(run("format_time", &[Value::Int(60_001)]), "1 m");
        assert_eq!(run("format_time", &[Value::Int(999)]), "999 ms");
        assert_eq!(run("format_time", &[Value::Text("90000000".into())]), "1 d");
        assert_eq!(
            run("format_time", &[Value::Int(5), a("s"), a("ms")]),
            "5000 ms"
        );
        assert_eq!(run("format_time", &[Value::Int(1500), a("s")]), "1 s");
        assert_eq!(run("format_time", &[Value::Int(3), a("µs")]), "3000 µs");
        let e = call("format_time", &[Some(Value::Int(-1))])
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|m| m.contains("value must be non-negative")));
        let e = call("format_bytes", &[Some(Value::Int(1)), Some(a("abc"))]);
        assert!(e.err().is_some_and(|m| m.to_string().contains(
            "Unsupported data storage unit: abc. Supported units are: B, KiB, MiB, GiB"
        )));
        assert_eq!(call("format_bytes", &[None]).ok(), Some(None));
    }
}
