//! Helpers for `varint` (minimal big-endian two's complement) and the unsigned/zig-zag
//! variable-length integers (`vint`) inside `duration` values.

/// Strips redundant sign bytes so `bytes` is the minimal two's-complement encoding
/// (`00 80` stays, `00 7F` becomes `7F`, `FF FF` becomes `FF`). Empty input becomes `00`.
pub fn normalize_varint(bytes: &[u8]) -> Vec<u8> {
    let mut start = 0;
    while let (Some(&b0), Some(&b1)) = (bytes.get(start), bytes.get(start + 1)) {
        let redundant = (b0 == 0x00 && b1 & 0x80 == 0) || (b0 == 0xFF && b1 & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    match bytes.get(start..) {
        Some(rest) if !rest.is_empty() => rest.to_vec(),
        _ => vec![0],
    }
}

/// The minimal varint encoding of `v` (128 → `00 80`, -129 → `FF 7F`).
pub fn varint_from_i128(v: i128) -> Vec<u8> {
    normalize_varint(&v.to_be_bytes())
}

/// The value of a varint if it fits an `i128` (`None` for empty or over-long input).
pub fn varint_to_i128(bytes: &[u8]) -> Option<i128> {
    let first = *bytes.first()?;
    let norm = normalize_varint(bytes);
    if norm.len() > 16 {
        return None;
    }
    let fill = if first & 0x80 != 0 { 0xFF } else { 0x00 };
    let mut buf = [fill; 16];
    buf[16 - norm.len()..].copy_from_slice(&norm);
    Some(i128::from_be_bytes(buf))
}

/// The decimal digits of a varint, with a leading `-` if negative (`"0"` for empty input).
pub fn varint_to_decimal_string(bytes: &[u8]) -> String {
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    let mut mag = bytes.to_vec();
    if negative {
        // Two's complement negation: invert, then add one.
        for b in mag.iter_mut() {
            *b = !*b;
        }
        for b in mag.iter_mut().rev() {
            let (sum, carry) = b.overflowing_add(1);
            *b = sum;
            if !carry {
                break;
            }
        }
    }
    // Repeated division by 10^9, least significant chunk first.
    let mut chunks = Vec::new();
    loop {
        let nz = mag.iter().position(|&b| b != 0).unwrap_or(mag.len());
        mag.drain(..nz);
        if mag.is_empty() {
            break;
        }
        let mut rem: u64 = 0;
        for b in mag.iter_mut() {
            let cur = (rem << 8) | u64::from(*b);
            *b = (cur / 1_000_000_000) as u8;
            rem = cur % 1_000_000_000;
        }
        chunks.push(rem);
    }
    let mut s = String::new();
    if negative {
        s.push('-');
    }
    match chunks.split_last() {
        None => s.push('0'),
        Some((top, rest)) => {
            s.push_str(&top.to_string());
            for c in rest.iter().rev() {
                s.push_str(&format!("{c:09}"));
            }
        }
    }
    s
}

/// Appends Cassandra's unsigned vint: the number of leading 1 bits of the first byte is the
/// number of extra bytes; the value is big-endian.
pub(crate) fn write_unsigned_vint(out: &mut Vec<u8>, v: u64) {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    let size = bits.div_ceil(7).min(9);
    if size == 9 {
        out.push(0xFF);
        out.extend_from_slice(&v.to_be_bytes());
        return;
    }
    let extra = size - 1;
    let be = v.to_be_bytes();
    let mut bytes = be[8 - size..].to_vec();
    // `extra` <= 7 here, so the mask keeps at least the top bit clear below the 1-run.
    bytes[0] |= !(0xFFu8 >> extra);
    out.extend_from_slice(&bytes);
}

/// Reads an unsigned vint from the front of `buf`; `None` if truncated.
pub(crate) fn read_unsigned_vint(buf: &mut &[u8]) -> Option<u64> {
    let (&first, rest) = buf.split_first()?;
    let extra = first.leading_ones() as usize;
    let (tail, rest) = rest.split_at_checked(extra)?;
    let mut v = u64::from(first & 0xFFu8.checked_shr(extra as u32).unwrap_or(0));
    for &b in tail {
        v = (v << 8) | u64::from(b);
    }
    *buf = rest;
    Some(v)
}

/// Appends a zig-zag signed vint.
pub(crate) fn write_signed_vint(out: &mut Vec<u8>, v: i64) {
    write_unsigned_vint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Reads a zig-zag signed vint; `None` if truncated.
pub(crate) fn read_signed_vint(buf: &mut &[u8]) -> Option<i64> {
    let u = read_unsigned_vint(buf)?;
    Some(((u >> 1) as i64) ^ -((u & 1) as i64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varint_spec_vectors() {
        assert_eq!(varint_from_i128(0), [0x00]);
        assert_eq!(varint_from_i128(127), [0x7F]);
        assert_eq!(varint_from_i128(128), [0x00, 0x80]);
        assert_eq!(varint_from_i128(-1), [0xFF]);
        assert_eq!(varint_from_i128(-128), [0x80]);
        assert_eq!(varint_from_i128(-129), [0xFF, 0x7F]);
        assert_eq!(normalize_varint(&[0, 0, 0x7F]), [0x7F]);
        assert_eq!(normalize_varint(&[0xFF, 0xFF, 0x80]), [0x80]);
        assert_eq!(normalize_varint(&[]), [0]);
    }

    #[test]
    fn varint_decimal_strings() {
        assert_eq!(varint_to_decimal_string(&[0x00, 0x80]), "128");
        assert_eq!(varint_to_decimal_string(&[0xFF, 0x7F]), "-129");
        assert_eq!(varint_to_decimal_string(&[0x80]), "-128");
        assert_eq!(varint_to_decimal_string(&[0]), "0");
        let big = varint_from_i128(i128::MIN);
        assert_eq!(varint_to_decimal_string(&big), i128::MIN.to_string());
        let mut huge = vec![0x01];
        huge.extend_from_slice(&[0; 16]); // 2^128
        assert_eq!(
            varint_to_decimal_string(&huge),
            "340282366920938463463374607431768211456"
        );
        assert_eq!(varint_to_i128(&huge), None);
    }

    #[test]
    fn vint_vectors() {
        let mut out = Vec::new();
        write_unsigned_vint(&mut out, 0);
        write_unsigned_vint(&mut out, 127);
        write_unsigned_vint(&mut out, 128);
        write_unsigned_vint(&mut out, u64::MAX);
        assert_eq!(&out[..4], &[0x00, 0x7F, 0x80, 0x80]);
        assert_eq!(&out[4..], &[0xFF; 9]);
        let mut out = Vec::new();
        write_signed_vint(&mut out, -1);
        write_signed_vint(&mut out, 1);
        assert_eq!(out, [0x01, 0x02]);
        assert_eq!(read_unsigned_vint(&mut &[0xC0u8, 1][..]), None);
    }

    proptest! {
        #[test]
        fn varint_i128_round_trip(v in any::<i128>()) {
            let b = varint_from_i128(v);
            prop_assert_eq!(varint_to_i128(&b), Some(v));
            prop_assert_eq!(varint_to_decimal_string(&b), v.to_string());
        }

        #[test]
        fn vint_round_trip(u in any::<u64>(), s in any::<i64>()) {
            let mut out = Vec::new();
            write_unsigned_vint(&mut out, u);
            write_signed_vint(&mut out, s);
            let mut buf = &out[..];
            prop_assert_eq!(read_unsigned_vint(&mut buf), Some(u));
            prop_assert_eq!(read_signed_vint(&mut buf), Some(s));
            prop_assert!(buf.is_empty());
        }
    }
}
