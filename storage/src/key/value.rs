//! Memcomparable encodings of single CQL values: byte order equals Cassandra's comparator.
//!
//! Every encoding is *prefix-free* (no encoding is a proper prefix of another), which is what
//! lets components be concatenated and lets DESC simply invert every byte of a component.
//!
//! A value is a header byte, `0x01` for the empty value (it sorts first) or `0x02` followed by
//! the type's body:
//! - text, ascii, blob, inet, custom: bytes with `00` escaped as `00 FF`, terminated by `00 01`;
//! - fixed-width signed integers (tinyint..bigint, counter, timestamp, time): sign bit flipped,
//!   big-endian; `date` unchanged (already unsigned chronological); boolean `00`/`01`;
//! - float/double: Java `compare` order (−0.0 < 0.0, one canonical NaN, greatest);
//! - varint: class byte (`00` negative, `01` zero, `02` positive), length (u32, inverted for
//!   negatives), minimal two's-complement bytes;
//! - decimal: class byte, then for positives exponent (i64, sign-flipped) and digits (`d+1`
//!   each, `00` terminator) of `0.d1d2.. × 10^E` without trailing zeros; negatives invert
//!   that; so `1.0` and `1.00` encode alike, as Cassandra's `compareTo` says they are equal;
//! - timeuuid: the reordered 60-bit timestamp (sign-flipped, `Long.compare`), then the low 8
//!   bytes as signed bytes (each `^ 0x80`);
//! - uuid: version nibble byte, then the reordered timestamp for v1 or the high 8 bytes, then the
//!   low 8 bytes unsigned;
//! - tuple/UDT: per component `01` (null) or `02` + value; `00` ends it (fewer components first);
//! - frozen list/set/map: per element its value (a map entry is key then value), `00` ends it;
//!   set elements and map entries are sorted and deduplicated first, so the decoded form is the
//!   canonical (sorted) serialization.

use cql::types::{DataType, NativeType};

use super::number;
use crate::StorageError;

const EMPTY: u8 = 0x01;
const PRESENT: u8 = 0x02;
const END: u8 = 0x00;
const TUPLE_NULL: u8 = 0x01;

/// Appends the memcomparable encoding of one value (header byte plus body).
///
/// # Errors
/// [`StorageError::InvalidValue`] when `value` is not a valid serialization of `ty`.
pub fn encode_value(ty: &DataType, value: &[u8], out: &mut Vec<u8>) -> Result<(), StorageError> {
    if value.is_empty() {
        out.push(EMPTY);
        return Ok(());
    }
    out.push(PRESENT);
    encode_body(ty, value, out)
}

fn fixed<'a, const N: usize>(ty: &DataType, v: &'a [u8]) -> Result<&'a [u8; N], StorageError> {
    v.try_into()
        .map_err(|_| StorageError::invalid(ty, format!("expected {N} bytes, got {}", v.len())))
}

fn escape(v: &[u8], out: &mut Vec<u8>) {
    // Room for the bytes and the terminator up front (escaped zeros may still grow it).
    out.reserve(v.len() + 2);
    for &b in v {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Appends `v` escaped so the result is prefix-free and sorts like `v` (unsigned, prefix first).
pub(crate) fn escape_bytes(v: &[u8], out: &mut Vec<u8>) {
    escape(v, out);
}

fn reorder_timestamp(msb: u64) -> u64 {
    (msb << 48) | ((msb << 16) & 0xFFFF_0000_0000) | (msb >> 32)
}

fn unorder_timestamp(r: u64) -> u64 {
    let time_hi = r >> 48;
    let time_mid = (r >> 32) & 0xFFFF;
    let time_low = r & 0xFFFF_FFFF;
    (time_low << 32) | (time_mid << 16) | time_hi
}

/// Reads a `[i32 len][bytes]` item (len < 0 is null) from a collection or tuple serialization.
fn read_item<'a>(ty: &DataType, v: &mut &'a [u8]) -> Result<Option<&'a [u8]>, StorageError> {
    let (len, rest) = v
        .split_first_chunk::<4>()
        .ok_or_else(|| StorageError::invalid(ty, "truncated length"))?;
    let len = i32::from_be_bytes(*len);
    if len < 0 {
        *v = rest;
        return Ok(None);
    }
    let len = len as usize;
    if rest.len() < len {
        return Err(StorageError::invalid(ty, "truncated element"));
    }
    let (item, rest) = rest.split_at(len);
    *v = rest;
    Ok(Some(item))
}

fn read_count(ty: &DataType, v: &mut &[u8]) -> Result<usize, StorageError> {
    let (n, rest) = v
        .split_first_chunk::<4>()
        .ok_or_else(|| StorageError::invalid(ty, "truncated element count"))?;
    *v = rest;
    usize::try_from(i32::from_be_bytes(*n)).map_err(|_| StorageError::invalid(ty, "negative count"))
}

fn encode_body(ty: &DataType, v: &[u8], out: &mut Vec<u8>) -> Result<(), StorageError> {
    use NativeType as N;
    match ty {
        DataType::Frozen(inner) => encode_body(inner, v, out),
        DataType::Custom(_) => {
            escape(v, out);
            Ok(())
        }
        DataType::Native(n) => match n {
            N::Ascii | N::Text | N::Blob | N::Inet | N::Duration => {
                escape(v, out);
                Ok(())
            }
            N::Tinyint => {
                out.push(fixed::<1>(ty, v)?[0] ^ 0x80);
                Ok(())
            }
            N::Smallint => flip_sign(fixed::<2>(ty, v)?, out),
            N::Int => flip_sign(fixed::<4>(ty, v)?, out),
            N::Bigint | N::Counter | N::Timestamp | N::Time => flip_sign(fixed::<8>(ty, v)?, out),
            N::Date => {
                out.extend_from_slice(fixed::<4>(ty, v)?);
                Ok(())
            }
            N::Boolean => {
                out.push(u8::from(fixed::<1>(ty, v)?[0] != 0));
                Ok(())
            }
            N::Float => {
                let f = f32::from_be_bytes(*fixed::<4>(ty, v)?);
                let bits = if f.is_nan() { 0x7fc0_0000 } else { f.to_bits() };
                let key = if bits >> 31 == 1 {
                    !bits
                } else {
                    bits | 1 << 31
                };
                out.extend_from_slice(&key.to_be_bytes());
                Ok(())
            }
            N::Double => {
                let f = f64::from_be_bytes(*fixed::<8>(ty, v)?);
                let bits = if f.is_nan() {
                    0x7ff8_0000_0000_0000
                } else {
                    f.to_bits()
                };
                let key = if bits >> 63 == 1 {
                    !bits
                } else {
                    bits | 1 << 63
                };
                out.extend_from_slice(&key.to_be_bytes());
                Ok(())
            }
            N::Timeuuid => {
                let u = fixed::<16>(ty, v)?;
                let msb = u64::from_be_bytes(u[..8].try_into().unwrap_or_default());
                out.extend_from_slice(&(reorder_timestamp(msb) ^ 1 << 63).to_be_bytes());
                out.extend(u[8..].iter().map(|b| b ^ 0x80));
                Ok(())
            }
            N::Uuid => {
                let u = fixed::<16>(ty, v)?;
                let msb = u64::from_be_bytes(u[..8].try_into().unwrap_or_default());
                let version = ((msb >> 12) & 0xf) as u8;
                out.push(version);
                let high = if version == 1 {
                    reorder_timestamp(msb)
                } else {
                    msb
                };
                out.extend_from_slice(&high.to_be_bytes());
                out.extend_from_slice(&u[8..]);
                Ok(())
            }
            N::Varint => {
                encode_varint(v, out);
                Ok(())
            }
            N::Decimal => encode_decimal(ty, v, out),
        },
        DataType::Vector(elem, n) => {
            // A fixed number of elements: no end marker, each compared in turn.
            let items = cql::types::split_vector(elem, *n, v)
                .map_err(|e| StorageError::invalid(ty, e.to_string()))?;
            for item in items {
                encode_value(elem, item, out)?;
            }
            Ok(())
        }
        DataType::Tuple(types) => encode_tuple(ty, types.iter(), v, out),
        DataType::Udt(udt) => encode_tuple(ty, udt.fields.iter().map(|(_, t)| t), v, out),
        DataType::List(elem) => {
            let mut rest = v;
            let n = read_count(ty, &mut rest)?;
            for _ in 0..n {
                let item = read_item(ty, &mut rest)?
                    .ok_or_else(|| StorageError::invalid(ty, "null element"))?;
                encode_value(elem, item, out)?;
            }
            trailing(ty, rest)?;
            out.push(END);
            Ok(())
        }
        DataType::Set(elem) => {
            let mut rest = v;
            let n = read_count(ty, &mut rest)?;
            let mut encoded = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                let item = read_item(ty, &mut rest)?
                    .ok_or_else(|| StorageError::invalid(ty, "null element"))?;
                let mut e = Vec::new();
                encode_value(elem, item, &mut e)?;
                encoded.push(e);
            }
            trailing(ty, rest)?;
            encoded.sort();
            encoded.dedup();
            encoded.iter().for_each(|e| out.extend_from_slice(e));
            out.push(END);
            Ok(())
        }
        DataType::Map(kt, vt) => {
            let mut rest = v;
            let n = read_count(ty, &mut rest)?;
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                let (mut k, mut e) = (Vec::new(), Vec::new());
                let key = read_item(ty, &mut rest)?
                    .ok_or_else(|| StorageError::invalid(ty, "null key"))?;
                let val = read_item(ty, &mut rest)?
                    .ok_or_else(|| StorageError::invalid(ty, "null value"))?;
                encode_value(kt, key, &mut k)?;
                encode_value(vt, val, &mut e)?;
                entries.push((k, e));
            }
            trailing(ty, rest)?;
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries.dedup_by(|a, b| a.0 == b.0);
            for (k, e) in &entries {
                out.extend_from_slice(k);
                out.extend_from_slice(e);
            }
            out.push(END);
            Ok(())
        }
    }
}

fn trailing(ty: &DataType, rest: &[u8]) -> Result<(), StorageError> {
    if rest.is_empty() {
        Ok(())
    } else {
        Err(StorageError::invalid(ty, "trailing bytes"))
    }
}

fn flip_sign(v: &[u8], out: &mut Vec<u8>) -> Result<(), StorageError> {
    let start = out.len();
    out.extend_from_slice(v);
    out[start] ^= 0x80;
    Ok(())
}

fn encode_tuple<'t>(
    ty: &DataType,
    mut types: impl Iterator<Item = &'t DataType>,
    v: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), StorageError> {
    let mut rest = v;
    while !rest.is_empty() {
        let component_type = types
            .next()
            .ok_or_else(|| StorageError::invalid(ty, "more components than the type has"))?;
        match read_item(ty, &mut rest)? {
            None => out.push(TUPLE_NULL),
            Some(item) => {
                out.push(PRESENT);
                encode_value(component_type, item, out)?;
            }
        }
    }
    out.push(END);
    Ok(())
}

fn encode_varint(v: &[u8], out: &mut Vec<u8>) {
    let v = number::minimal_twos_complement(v);
    if v == [0] {
        out.push(0x01);
        return;
    }
    let len = v.len() as u32;
    if v[0] & 0x80 != 0 {
        out.push(0x00);
        out.extend_from_slice(&(!len).to_be_bytes());
    } else {
        out.push(0x02);
        out.extend_from_slice(&len.to_be_bytes());
    }
    out.extend_from_slice(v);
}

fn encode_decimal(ty: &DataType, v: &[u8], out: &mut Vec<u8>) -> Result<(), StorageError> {
    let (scale, unscaled) = v
        .split_first_chunk::<4>()
        .ok_or_else(|| StorageError::invalid(ty, "shorter than its scale"))?;
    if unscaled.is_empty() {
        return Err(StorageError::invalid(ty, "missing unscaled value"));
    }
    let scale = i64::from(i32::from_be_bytes(*scale));
    let (negative, magnitude) = number::to_sign_magnitude(unscaled);
    let mut digits = number::to_decimal_digits(&magnitude);
    if digits.is_empty() {
        out.push(0x01);
        return Ok(());
    }
    let significant = digits.iter().rposition(|&d| d != 0).map_or(0, |p| p + 1);
    let trailing_zeros = (digits.len() - significant) as i64;
    // The canonical form drops trailing zeros, lowering the scale; it must still fit an i32
    // or the key could never be decoded back into a decimal.
    if scale - trailing_zeros < i64::from(i32::MIN) {
        return Err(StorageError::invalid(
            ty,
            "decimal scale out of range once trailing zeros are removed",
        ));
    }
    digits.truncate(significant);
    let exponent = digits.len() as i64 + trailing_zeros - scale;
    out.push(if negative { 0x00 } else { 0x02 });
    let start = out.len();
    out.extend_from_slice(&((exponent as u64) ^ 1 << 63).to_be_bytes());
    out.extend(digits.iter().map(|d| d + 1));
    out.push(END);
    if negative {
        out[start..].iter_mut().for_each(|b| *b = !*b);
    }
    Ok(())
}

/// Reads an encoded key, optionally inverting every byte (for DESC components).
pub(crate) struct KeyReader<'a> {
    buf: &'a [u8],
    mask: u8,
}

impl<'a> KeyReader<'a> {
    pub(crate) fn new(buf: &'a [u8], inverted: bool) -> Self {
        KeyReader {
            buf,
            mask: if inverted { 0xff } else { 0 },
        }
    }

    pub(crate) fn remaining(&self) -> &'a [u8] {
        self.buf
    }

    pub(crate) fn set_inverted(&mut self, inverted: bool) {
        self.mask = if inverted { 0xff } else { 0 };
    }

    pub(crate) fn byte(&mut self) -> Result<u8, StorageError> {
        let (&b, rest) = self
            .buf
            .split_first()
            .ok_or_else(|| StorageError::corrupt("truncated key"))?;
        self.buf = rest;
        Ok(b ^ self.mask)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], StorageError> {
        let mut out = [0u8; N];
        for b in out.iter_mut() {
            *b = self.byte()?;
        }
        Ok(out)
    }

    fn unescape(&mut self) -> Result<Vec<u8>, StorageError> {
        let mut out = Vec::new();
        loop {
            match self.byte()? {
                0 => match self.byte()? {
                    0xff => out.push(0),
                    0x01 => return Ok(out),
                    _ => return Err(StorageError::corrupt("bad escape in key")),
                },
                b => out.push(b),
            }
        }
    }
}

/// Reads bytes written by [`escape_bytes`].
pub(crate) fn unescape_bytes(reader: &mut KeyReader<'_>) -> Result<Vec<u8>, StorageError> {
    reader.unescape()
}

/// Decodes one value written by [`encode_value`] back to its protocol serialization.
pub(crate) fn decode_value(ty: &DataType, r: &mut KeyReader<'_>) -> Result<Vec<u8>, StorageError> {
    match r.byte()? {
        EMPTY => Ok(Vec::new()),
        PRESENT => decode_body(ty, r),
        _ => Err(StorageError::corrupt("bad value header in key")),
    }
}

fn decode_body(ty: &DataType, r: &mut KeyReader<'_>) -> Result<Vec<u8>, StorageError> {
    use NativeType as N;
    Ok(match ty {
        DataType::Frozen(inner) => decode_body(inner, r)?,
        DataType::Custom(_) => r.unescape()?,
        DataType::Native(n) => match n {
            N::Ascii | N::Text | N::Blob | N::Inet | N::Duration => r.unescape()?,
            N::Tinyint => vec![r.byte()? ^ 0x80],
            N::Smallint => unflip(r.array::<2>()?),
            N::Int => unflip(r.array::<4>()?),
            N::Bigint | N::Counter | N::Timestamp | N::Time => unflip(r.array::<8>()?),
            N::Date => r.array::<4>()?.to_vec(),
            N::Boolean => vec![r.byte()?],
            N::Float => {
                let key = u32::from_be_bytes(r.array()?);
                let bits = if key >> 31 == 1 { key ^ 1 << 31 } else { !key };
                bits.to_be_bytes().to_vec()
            }
            N::Double => {
                let key = u64::from_be_bytes(r.array()?);
                let bits = if key >> 63 == 1 { key ^ 1 << 63 } else { !key };
                bits.to_be_bytes().to_vec()
            }
            N::Timeuuid => {
                let high = u64::from_be_bytes(r.array()?) ^ 1 << 63;
                let mut out = unorder_timestamp(high).to_be_bytes().to_vec();
                out.extend(r.array::<8>()?.iter().map(|b| b ^ 0x80));
                out
            }
            N::Uuid => {
                let version = r.byte()?;
                let high = u64::from_be_bytes(r.array()?);
                let msb = if version == 1 {
                    unorder_timestamp(high)
                } else {
                    high
                };
                let mut out = msb.to_be_bytes().to_vec();
                out.extend_from_slice(&r.array::<8>()?);
                out
            }
            N::Varint => decode_varint(r)?,
            N::Decimal => decode_decimal(r)?,
        },
        DataType::Vector(elem, n) => {
            let mut items = Vec::new();
            for _ in 0..*n {
                items.push(decode_value(elem, r)?);
            }
            cql::types::join_vector(elem, items.iter().map(Vec::as_slice))
        }
        DataType::Tuple(types) => decode_tuple(types.iter(), r)?,
        DataType::Udt(udt) => decode_tuple(udt.fields.iter().map(|(_, t)| t), r)?,
        DataType::List(elem) | DataType::Set(elem) => {
            let mut items = Vec::new();
            while peek_not_end(r)? {
                items.push(decode_value(elem, r)?);
            }
            write_collection(items.len(), items.iter())
        }
        DataType::Map(kt, vt) => {
            let mut items = Vec::new();
            while peek_not_end(r)? {
                items.push(decode_value(kt, r)?);
                items.push(decode_value(vt, r)?);
            }
            write_collection(items.len() / 2, items.iter())
        }
    })
}

fn peek_not_end(r: &mut KeyReader<'_>) -> Result<bool, StorageError> {
    let first = r
        .buf
        .first()
        .ok_or_else(|| StorageError::corrupt("truncated key"))?;
    if first ^ r.mask == END {
        r.byte()?;
        Ok(false)
    } else {
        Ok(true)
    }
}

fn write_collection<'a>(count: usize, items: impl Iterator<Item = &'a Vec<u8>>) -> Vec<u8> {
    let mut out = (count as i32).to_be_bytes().to_vec();
    for item in items {
        out.extend_from_slice(&(item.len() as i32).to_be_bytes());
        out.extend_from_slice(item);
    }
    out
}

fn unflip<const N: usize>(mut v: [u8; N]) -> Vec<u8> {
    if let Some(b) = v.first_mut() {
        *b ^= 0x80;
    }
    v.to_vec()
}

fn decode_tuple<'t>(
    mut types: impl Iterator<Item = &'t DataType>,
    r: &mut KeyReader<'_>,
) -> Result<Vec<u8>, StorageError> {
    let mut out = Vec::new();
    loop {
        match r.byte()? {
            END => return Ok(out),
            TUPLE_NULL => {
                types.next();
                out.extend_from_slice(&(-1i32).to_be_bytes());
            }
            PRESENT => {
                let ty = types
                    .next()
                    .ok_or_else(|| StorageError::corrupt("tuple has too many components"))?;
                let v = decode_value(ty, r)?;
                out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                out.extend_from_slice(&v);
            }
            _ => return Err(StorageError::corrupt("bad tuple component marker")),
        }
    }
}

fn decode_varint(r: &mut KeyReader<'_>) -> Result<Vec<u8>, StorageError> {
    let class = r.byte()?;
    let len = match class {
        0x01 => return Ok(vec![0]),
        0x00 => !u32::from_be_bytes(r.array()?),
        0x02 => u32::from_be_bytes(r.array()?),
        _ => return Err(StorageError::corrupt("bad varint class")),
    };
    let len = len as usize;
    if len > r.buf.len() {
        return Err(StorageError::corrupt("varint longer than key"));
    }
    (0..len).map(|_| r.byte()).collect()
}

fn decode_decimal(r: &mut KeyReader<'_>) -> Result<Vec<u8>, StorageError> {
    let negative = match r.byte()? {
        0x01 => return Ok(vec![0, 0, 0, 0, 0]),
        0x00 => true,
        0x02 => false,
        _ => return Err(StorageError::corrupt("bad decimal class")),
    };
    let outer_mask = r.mask;
    if negative {
        r.mask ^= 0xff;
    }
    let exponent = (u64::from_be_bytes(r.array()?) ^ 1 << 63) as i64;
    let mut digits = Vec::new();
    loop {
        match r.byte()? {
            END => break,
            d @ 1..=10 => digits.push(d - 1),
            _ => {
                r.mask = outer_mask;
                return Err(StorageError::corrupt("bad decimal digit"));
            }
        }
    }
    r.mask = outer_mask;
    let mut scale = digits.len() as i64 - exponent;
    if (-32..0).contains(&scale) {
        digits.extend(std::iter::repeat_n(0, scale.unsigned_abs() as usize));
        scale = 0;
    }
    let scale =
        i32::try_from(scale).map_err(|_| StorageError::corrupt("decimal scale overflow"))?;
    let magnitude = number::from_decimal_digits(&digits);
    let mut out = scale.to_be_bytes().to_vec();
    out.extend(number::from_sign_magnitude(negative, &magnitude));
    Ok(out)
}
