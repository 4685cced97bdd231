//! Cassandra 5.0's math functions (`MathFcts`): `abs`, `exp`, `log`, `log10` and `round`,
//! each returning its argument's type, computed as each `NumberType` does: the fixed-width
//! types through `double` and Java's narrowing casts, `decimal` and `varint` exactly
//! (`abs`, `round`; their `exp` and logarithms are not offered yet).

use cql::types::{NativeType, Value};
use num_bigint::{BigInt, Sign};

/// The math functions' names.
pub const MATH_FUNCTIONS: [&str; 5] = ["abs", "exp", "log", "log10", "round"];

/// The argument types `name` takes (its return type is the same).
pub fn argument_types(name: &str) -> Vec<NativeType> {
    use NativeType as N;
    let fixed = [
        N::Tinyint,
        N::Smallint,
        N::Int,
        N::Bigint,
        N::Float,
        N::Double,
        N::Counter,
    ];
    match name {
        "abs" | "round" => fixed.into_iter().chain([N::Decimal, N::Varint]).collect(),
        "exp" | "log" | "log10" => fixed.to_vec(),
        _ => Vec::new(),
    }
}

/// Java's `Math.round` (ties toward positive infinity) of a double, as a double; the caller
/// narrows it as Java does.
fn java_round(x: f64) -> f64 {
    let f = x.floor();
    if x - f >= 0.5 {
        f + 1.0
    } else {
        f
    }
}

/// Applies `f` to `x` as a double: `exp`, `log` or `log10`.
fn real(name: &str, x: f64) -> f64 {
    match name {
        "exp" => x.exp(),
        "log" => x.ln(),
        _ => x.log10(),
    }
}

/// Evaluates the math function `name` on `v` (None when `v` is not a number it takes).
pub fn call(name: &str, v: &Value) -> Option<Value> {
    // Java narrows a double to an integer type through int (or long), saturating, NaN to 0,
    // then drops the high bits for byte and short: Rust's `as` casts do the same.
    Some(match (name, v) {
        ("abs", Value::Tinyint(x)) => Value::Tinyint(x.wrapping_abs()),
        ("abs", Value::Smallint(x)) => Value::Smallint(x.wrapping_abs()),
        ("abs", Value::Int(x)) => Value::Int(x.wrapping_abs()),
        ("abs", Value::Bigint(x)) => Value::Bigint(x.wrapping_abs()),
        ("abs", Value::Counter(x)) => Value::Counter(x.wrapping_abs()),
        ("abs", Value::Float(x)) => Value::Float(x.abs()),
        ("abs", Value::Double(x)) => Value::Double(x.abs()),
        ("abs", Value::Varint(b)) => Value::Varint(
            BigInt::from_signed_bytes_be(b)
                .magnitude()
                .clone()
                .into_bigint(),
        ),
        ("abs", Value::Decimal { scale, unscaled }) => Value::Decimal {
            scale: *scale,
            unscaled: BigInt::from_signed_bytes_be(unscaled)
                .magnitude()
                .clone()
                .into_bigint(),
        },
        ("round", Value::Float(x)) => Value::Float(
            java_round(f64::from(*x)).clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32 as f32,
        ),
        ("round", Value::Double(x)) => Value::Double(java_round(*x) as i64 as f64),
        ("round", Value::Decimal { scale, unscaled }) => round_decimal(*scale, unscaled),
        (
            "round",
            v @ (Value::Tinyint(_)
            | Value::Smallint(_)
            | Value::Int(_)
            | Value::Bigint(_)
            | Value::Counter(_)
            | Value::Varint(_)),
        ) => v.clone(),
        ("exp" | "log" | "log10", Value::Tinyint(x)) => {
            Value::Tinyint(real(name, f64::from(*x)) as i32 as i8)
        }
        ("exp" | "log" | "log10", Value::Smallint(x)) => {
            Value::Smallint(real(name, f64::from(*x)) as i32 as i16)
        }
        ("exp" | "log" | "log10", Value::Int(x)) => Value::Int(real(name, f64::from(*x)) as i32),
        ("exp" | "log" | "log10", Value::Bigint(x)) => Value::Bigint(real(name, *x as f64) as i64),
        ("exp" | "log" | "log10", Value::Counter(x)) => {
            Value::Counter(real(name, *x as f64) as i64)
        }
        ("exp" | "log" | "log10", Value::Float(x)) => {
            Value::Float(real(name, f64::from(*x)) as f32)
        }
        ("exp" | "log" | "log10", Value::Double(x)) => Value::Double(real(name, *x)),
        _ => return None,
    })
}

/// A non-negative big integer's minimal two's-complement bytes.
trait IntoBigint {
    fn into_bigint(self) -> Vec<u8>;
}

impl IntoBigint for num_bigint::BigUint {
    fn into_bigint(self) -> Vec<u8> {
        BigInt::from_biguint(Sign::Plus, self).to_signed_bytes_be()
    }
}

/// `BigDecimal.setScale(0, RoundingMode.HALF_UP)`: to the nearest integer, ties away from
/// zero; a scale at or below zero is already whole.
fn round_decimal(scale: i32, unscaled: &[u8]) -> Value {
    let n = BigInt::from_signed_bytes_be(unscaled);
    if scale <= 0 {
        let whole = n * BigInt::from(10u8).pow(scale.unsigned_abs());
        return Value::Decimal {
            scale: 0,
            unscaled: whole.to_signed_bytes_be(),
        };
    }
    let divisor = BigInt::from(10u8).pow(scale.unsigned_abs());
    let (q, r) = (&n / &divisor, &n % &divisor);
    let twice = r.magnitude() * 2u8;
    let q = if twice >= *divisor.magnitude() {
        if n.sign() == Sign::Minus {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    };
    Value::Decimal {
        scale: 0,
        unscaled: q.to_signed_bytes_be(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(text: &str) -> Value {
        crate::executor::numeric::decimal_from_str(text).expect("decimal")
    }

    #[test]
    fn integers_narrow_as_java_casts_do() {
        // (byte) Math.exp(10) = (byte) 22026 = 10; (int) Math.log(0) = (int) -Infinity.
        assert_eq!(call("exp", &Value::Tinyint(10)), Some(Value::Tinyint(10)));
        assert_eq!(call("log", &Value::Int(0)), Some(Value::Int(i32::MIN)));
        assert_eq!(call("log10", &Value::Bigint(1000)), Some(Value::Bigint(3)));
        assert_eq!(call("abs", &Value::Int(-7)), Some(Value::Int(7)));
        assert_eq!(
            call("abs", &Value::Int(i32::MIN)),
            Some(Value::Int(i32::MIN))
        );
        assert_eq!(call("round", &Value::Int(5)), Some(Value::Int(5)));
    }

    #[test]
    fn floats_round_ties_up_as_java_math_round() {
        assert_eq!(call("round", &Value::Double(2.5)), Some(Value::Double(3.0)));
        assert_eq!(
            call("round", &Value::Double(-2.5)),
            Some(Value::Double(-2.0))
        );
        assert_eq!(
            call("round", &Value::Double(0.499_999_999_999_999_94)),
            Some(Value::Double(0.0))
        );
        assert_eq!(
            call("round", &Value::Float(1e20)),
            Some(Value::Float(i32::MAX as f32))
        );
        assert_eq!(
            call("round", &Value::Double(f64::NAN)),
            Some(Value::Double(0.0))
        );
        assert_eq!(call("exp", &Value::Double(0.0)), Some(Value::Double(1.0)));
    }

    #[test]
    fn decimals_and_varints_are_exact() {
        assert_eq!(call("abs", &dec("-12.50")), Some(dec("12.50")));
        assert_eq!(call("round", &dec("2.5")), Some(dec("3")));
        assert_eq!(call("round", &dec("-2.5")), Some(dec("-3")));
        assert_eq!(call("round", &dec("-2.49")), Some(dec("-2")));
        let v = Value::Varint(BigInt::from(-300).to_signed_bytes_be());
        assert_eq!(
            call("abs", &v),
            Some(Value::Varint(BigInt::from(300).to_signed_bytes_be()))
        );
        assert_eq!(call("exp", &dec("1")), None);
    }
}
