//! Arbitrary-precision helpers for the `varint` and `decimal` key encodings (no bigint crate):
//! two's-complement normalisation and decimal digit conversion of big-endian magnitudes.

/// Strips redundant sign bytes: the minimal two's-complement form (at least one byte).
pub(crate) fn minimal_twos_complement(bytes: &[u8]) -> &[u8] {
    let mut start = 0;
    while start + 1 < bytes.len() {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0x00 && next < 0x80) || (b == 0xff && next >= 0x80) {
            start += 1;
        } else {
            break;
        }
    }
    &bytes[start..]
}

/// Two's-complement negation of a big-endian number of fixed width.
fn negate(bytes: &mut [u8]) {
    let mut carry = true;
    for b in bytes.iter_mut().rev() {
        let (v, c) = (!*b).overflowing_add(u8::from(carry));
        *b = v;
        carry = c;
    }
}

/// Splits a (non-empty) two's-complement big-endian integer into sign and unsigned magnitude.
pub(crate) fn to_sign_magnitude(bytes: &[u8]) -> (bool, Vec<u8>) {
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    let mut mag = bytes.to_vec();
    if negative {
        mag.insert(0, 0xff);
        negate(&mut mag);
    }
    let start = mag.iter().position(|&b| b != 0).unwrap_or(mag.len());
    (negative, mag[start..].to_vec())
}

/// The minimal two's-complement big-endian form of `±magnitude`.
pub(crate) fn from_sign_magnitude(negative: bool, magnitude: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(magnitude.len() + 1);
    out.push(0);
    out.extend_from_slice(magnitude);
    if negative {
        negate(&mut out);
    }
    minimal_twos_complement(&out).to_vec()
}

const BILLION: u64 = 1_000_000_000;

/// Decimal digits (0..=9 each, most significant first, no leading zeros; empty for zero) of an
/// unsigned big-endian magnitude.
pub(crate) fn to_decimal_digits(magnitude: &[u8]) -> Vec<u8> {
    // Little-endian base-2^32 limbs.
    let mut limbs: Vec<u32> = magnitude
        .rchunks(4)
        .map(|c| c.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))
        .collect();
    let mut groups = Vec::new();
    while limbs.iter().any(|&l| l != 0) {
        let mut rem = 0u64;
        for limb in limbs.iter_mut().rev() {
            let cur = (rem << 32) | u64::from(*limb);
            *limb = (cur / BILLION) as u32;
            rem = cur % BILLION;
        }
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
        groups.push(rem as u32);
    }
    let mut digits = Vec::with_capacity(groups.len() * 9);
    for (i, g) in groups.iter().rev().enumerate() {
        let s = if i == 0 {
            g.to_string()
        } else {
            format!("{g:09}")
        };
        digits.extend(s.bytes().map(|c| c - b'0'));
    }
    digits
}

/// The unsigned big-endian magnitude (no leading zero bytes) of decimal digits.
pub(crate) fn from_decimal_digits(digits: &[u8]) -> Vec<u8> {
    let mut limbs: Vec<u32> = Vec::new();
    let first = digits.len() % 9;
    let chunks = std::iter::once(&digits[..first])
        .filter(|c| !c.is_empty())
        .chain(digits[first..].chunks(9));
    for chunk in chunks {
        let mul = 10u64.pow(chunk.len() as u32);
        let mut carry = chunk.iter().fold(0u64, |acc, &d| acc * 10 + u64::from(d));
        for limb in limbs.iter_mut() {
            let cur = u64::from(*limb) * mul + carry;
            *limb = cur as u32;
            carry = cur >> 32;
        }
        if carry != 0 {
            limbs.push(carry as u32);
        }
    }
    let mut out: Vec<u8> = limbs.iter().rev().flat_map(|l| l.to_be_bytes()).collect();
    let start = out.iter().position(|&b| b != 0).unwrap_or(out.len());
    out.drain(..start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_digits_round_trip() {
        for v in [
            0u128,
            1,
            9,
            10,
            999_999_999,
            1_000_000_000,
            u128::MAX,
            12345678901234567890,
        ] {
            let mag = from_decimal_digits(&to_decimal_digits(&v.to_be_bytes()));
            let digits = to_decimal_digits(&v.to_be_bytes());
            let text: String = digits.iter().map(|d| char::from(b'0' + d)).collect();
            assert_eq!(text, if v == 0 { String::new() } else { v.to_string() });
            let mut buf = [0u8; 16];
            buf[16 - mag.len()..].copy_from_slice(&mag);
            assert_eq!(u128::from_be_bytes(buf), v);
        }
    }

    #[test]
    fn sign_magnitude_round_trip() {
        for v in [0i64, 1, -1, 127, 128, -128, -129, i64::MIN, i64::MAX] {
            let bytes = minimal_twos_complement(&v.to_be_bytes()).to_vec();
            let (neg, mag) = to_sign_magnitude(&bytes);
            assert_eq!(neg, v < 0);
            assert_eq!(from_sign_magnitude(neg, &mag), bytes);
        }
        assert_eq!(minimal_twos_complement(&[0, 0, 0x80]), &[0, 0x80]);
        assert_eq!(minimal_twos_complement(&[0xff, 0xff, 0x7f]), &[0xff, 0x7f]);
    }
}
