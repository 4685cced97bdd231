//! Arbitrary-precision numeric literals: varint and decimal from their CQL text.

use cql::types::Value;
use num_bigint::BigInt;
use std::str::FromStr;

/// A decimal integer string as varint bytes (minimal two's complement, big-endian).
pub fn varint_from_decimal_str(s: &str) -> Option<Vec<u8>> {
    let n = BigInt::from_str(s.trim()).ok()?;
    Some(n.to_signed_bytes_be())
}

/// A decimal literal (`-12.5`, `1e10`, `3`) as a CQL decimal: unscaled varint and scale, as
/// Java's `new BigDecimal(text)` (Cassandra's `DecimalType.fromString`) reads it: every digit
/// kept, the scale is the fraction's length less the exponent, and the exponent must fit an
/// int. `None` for malformed text or a scale outside an int.
pub fn decimal_from_str(s: &str) -> Option<Value> {
    let s = s.trim();
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (negative, unsigned) = match mantissa.as_bytes().first() {
        Some(b'-') => (true, &mantissa[1..]),
        Some(b'+') => (false, &mantissa[1..]),
        _ => (false, mantissa),
    };
    let (int_part, frac_part) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let all_digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if int_part.len() + frac_part.len() == 0 || !all_digits(int_part) || !all_digits(frac_part) {
        return None;
    }
    let magnitude = BigInt::from_str(&format!("{int_part}{frac_part}")).ok()?;
    let unscaled = if negative { -magnitude } else { magnitude };
    let scale = i64::try_from(frac_part.len()).ok()? - i64::from(exponent);
    Some(Value::Decimal {
        scale: i32::try_from(scale).ok()?,
        unscaled: unscaled.to_signed_bytes_be(),
    })
}

/// The decimal text of varint bytes.
pub fn varint_to_string(bytes: &[u8]) -> String {
    BigInt::from_signed_bytes_be(bytes).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_text_round_trips_with_minimal_bytes() {
        assert_eq!(varint_from_decimal_str("128"), Some(vec![0x00, 0x80]));
        assert_eq!(varint_from_decimal_str("-129"), Some(vec![0xFF, 0x7F]));
        assert_eq!(varint_to_string(&[0x00, 0x80]), "128");
    }

    #[test]
    fn decimal_scale_follows_fraction_and_exponent() {
        let Some(Value::Decimal { scale, unscaled }) = decimal_from_str("-12.50") else {
            panic!("decimal expected");
        };
        assert_eq!(scale, 2);
        assert_eq!(varint_to_string(&unscaled), "-1250");
        let Some(Value::Decimal { scale, .. }) = decimal_from_str("1.5e3") else {
            panic!("decimal expected");
        };
        assert_eq!(scale, -2);
    }

    /// (unscaled as decimal text, scale) of a decimal literal.
    fn parts(s: &str) -> Option<(String, i32)> {
        match decimal_from_str(s)? {
            Value::Decimal { scale, unscaled } => Some((varint_to_string(&unscaled), scale)),
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn decimal_literals_keep_every_digit_as_java_big_decimal_does() {
        // `new BigDecimal(text)`: every digit in the unscaled value, the scale from the
        // fraction less the exponent; no float on the way.
        for (text, unscaled, scale) in [
            (
                "-123456789012345678901234567890.000000000123",
                "-123456789012345678901234567890000000000123",
                12,
            ),
            (
                "98765432109876543210.98765432109876543210",
                "9876543210987654321098765432109876543210",
                20,
            ),
            ("1.5E+3", "15", -2),
            ("-2e-5", "-2", 5),
            ("1e10", "1", -10),
            ("2.50E-3", "250", 5),
            ("-0.0010", "-10", 4),
            ("0.000", "0", 3),
            ("-0", "0", 0),
            ("007.10", "710", 2),
            ("12345678901234567890123", "12345678901234567890123", 0),
        ] {
            assert_eq!(parts(text), Some((unscaled.to_string(), scale)), "{text}");
        }
    }

    #[test]
    fn decimal_literals_outside_the_scale_range_or_malformed_are_refused() {
        // Java refuses an exponent beyond an int, then a scale beyond an int.
        assert_eq!(parts("10e2147483647"), Some(("10".into(), -2_147_483_647)));
        assert_eq!(parts("1e-2147483647"), Some(("1".into(), 2_147_483_647)));
        assert_eq!(parts("1e2147483648"), None);
        assert_eq!(parts("1.5e-2147483647"), None);
        for text in [
            "", ".", "-", "1.2.3", "1e", "1e+", "1.5x", "--1", "+-1", "1.-5", "e5", "1_000", "1 0",
        ] {
            assert_eq!(parts(text), None, "{text:?}");
        }
    }
}
