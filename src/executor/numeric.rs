//! Arbitrary-precision numeric literals: varint and decimal from their CQL text.

use cql::types::Value;
use num_bigint::BigInt;
use std::str::FromStr;

/// A decimal integer string as varint bytes (minimal two's complement, big-endian).
pub fn varint_from_decimal_str(s: &str) -> Option<Vec<u8>> {
    let n = BigInt::from_str(s.trim()).ok()?;
    Some(n.to_signed_bytes_be())
}

/// A decimal literal (`-12.5`, `1e10`, `3`) as a CQL decimal: unscaled varint and scale.
pub fn decimal_from_str(s: &str) -> Option<Value> {
    let s = s.trim();
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i64>().ok()?),
        None => (s, 0),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    if !frac_part.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{int_part}{frac_part}");
    let unscaled = BigInt::from_str(&digits).ok()?;
    let scale = i64::try_from(frac_part.len()).ok()? - exponent;
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
}
