//! Native-protocol primitives (`native_protocol_v4.spec` §3): `[int]`, `[string]`, `[bytes]`,
//! `[value]`, `[string map]`, `[inet]`, `[consistency]`, …
//!
//! Readers take `buf: &mut &[u8]` and advance it past what they consumed, so message decoders are
//! plain sequences of `read_*` calls. They never panic: short input is [`WireError::Truncated`].
//! Borrowing readers (`read_string`, `read_bytes`, …) return slices of the input; the list and map
//! readers return owned values.
//!
//! Writers take any [`BufMut`] (`Vec<u8>`, `BytesMut`). Lengths that do not fit the wire field
//! (a `[string]` over 65 535 bytes, a `[string list]` over 65 535 entries) are truncated rather than
//! producing a corrupt frame: strings are cut at a UTF-8 character boundary.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{BufMut, Bytes};
use uuid::Uuid;

use crate::consistency::Consistency;

/// A malformed protocol primitive.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// The message ended before a field was complete.
    #[error("not enough bytes: needed {needed}, {remaining} remaining")]
    Truncated {
        /// Bytes the field needed.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A `[string]` or `[long string]` was not valid UTF-8.
    #[error("invalid UTF-8 in string")]
    InvalidUtf8,
    /// A length that must be non-negative was negative.
    #[error("negative length {0}")]
    NegativeLength(i32),
    /// A `[value]` length below -2 (or -2 where unset is not allowed).
    #[error("invalid value length {0}")]
    InvalidValueLength(i32),
    /// An unset `[value]` (-2) in protocol v3, which has no unset.
    #[error("unset values are not supported before protocol v4")]
    UnsetNotAllowed,
    /// An `[inet]` address whose length is neither 4 nor 16.
    #[error("invalid inet address length {0}")]
    InvalidInetLength(u8),
    /// A `[consistency]` with an unknown code.
    #[error("unknown consistency level 0x{0:04x}")]
    UnknownConsistency(u16),
}

/// A bound `[value]` (`native_protocol_v4.spec` §3): bytes, null (-1) or unset (-2, v4 only).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RawValue {
    /// Length -1.
    Null,
    /// Length -2: "leave this column alone" (v4+).
    Unset,
    /// A serialized value (possibly empty).
    Bytes(Bytes),
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], WireError> {
    let Some((head, tail)) = buf.split_at_checked(n) else {
        return Err(WireError::Truncated {
            needed: n,
            remaining: buf.len(),
        });
    };
    *buf = tail;
    Ok(head)
}

fn take_array<const N: usize>(buf: &mut &[u8]) -> Result<[u8; N], WireError> {
    let mut out = [0u8; N];
    out.copy_from_slice(take(buf, N)?);
    Ok(out)
}

fn non_negative(len: i32) -> Result<usize, WireError> {
    usize::try_from(len).map_err(|_| WireError::NegativeLength(len))
}

fn utf8(bytes: &[u8]) -> Result<&str, WireError> {
    std::str::from_utf8(bytes).map_err(|_| WireError::InvalidUtf8)
}

/// Reads a `[byte]`.
///
/// # Errors
/// [`WireError::Truncated`] on empty input.
pub fn read_byte(buf: &mut &[u8]) -> Result<u8, WireError> {
    Ok(take_array::<1>(buf)?[0])
}

/// Reads a `[short]` (unsigned 16-bit big-endian).
///
/// # Errors
/// [`WireError::Truncated`].
pub fn read_short(buf: &mut &[u8]) -> Result<u16, WireError> {
    Ok(u16::from_be_bytes(take_array(buf)?))
}

/// Reads an `[int]` (signed 32-bit big-endian).
///
/// # Errors
/// [`WireError::Truncated`].
pub fn read_int(buf: &mut &[u8]) -> Result<i32, WireError> {
    Ok(i32::from_be_bytes(take_array(buf)?))
}

/// Reads a `[long]` (signed 64-bit big-endian).
///
/// # Errors
/// [`WireError::Truncated`].
pub fn read_long(buf: &mut &[u8]) -> Result<i64, WireError> {
    Ok(i64::from_be_bytes(take_array(buf)?))
}

/// Reads a `[string]`: `[short]` length + UTF-8.
///
/// # Errors
/// [`WireError::Truncated`], [`WireError::InvalidUtf8`].
pub fn read_string<'a>(buf: &mut &'a [u8]) -> Result<&'a str, WireError> {
    let len = read_short(buf)?;
    utf8(take(buf, usize::from(len))?)
}

/// Reads a `[long string]`: `[int]` length + UTF-8.
///
/// # Errors
/// [`WireError::Truncated`], [`WireError::NegativeLength`], [`WireError::InvalidUtf8`].
pub fn read_long_string<'a>(buf: &mut &'a [u8]) -> Result<&'a str, WireError> {
    let len = non_negative(read_int(buf)?)?;
    utf8(take(buf, len)?)
}

/// Reads `[bytes]`: `[int]` length + bytes; a negative length is null (`None`).
///
/// # Errors
/// [`WireError::Truncated`].
pub fn read_bytes<'a>(buf: &mut &'a [u8]) -> Result<Option<&'a [u8]>, WireError> {
    let len = read_int(buf)?;
    match usize::try_from(len) {
        Ok(len) => take(buf, len).map(Some),
        Err(_) => Ok(None),
    }
}

/// Reads `[short bytes]`: `[short]` length + bytes.
///
/// # Errors
/// [`WireError::Truncated`].
pub fn read_short_bytes<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], WireError> {
    let len = read_short(buf)?;
    take(buf, usize::from(len))
}

/// Reads a `[value]`: like `[bytes]`, but -1 is null, -2 unset (v4+ only) and below -2 an error.
///
/// # Errors
/// [`WireError::Truncated`], [`WireError::InvalidValueLength`], and
/// [`WireError::UnsetNotAllowed`] for -2 when `version < 4`.
pub fn read_value(buf: &mut &[u8], version: u8) -> Result<RawValue, WireError> {
    read_value_in(buf, version, None)
}

/// Like [`read_value`], but the value shares `owner`'s memory when `buf` lies inside it
/// (see [`share`]) instead of being copied.
///
/// # Errors
/// As [`read_value`].
pub fn read_value_in(
    buf: &mut &[u8],
    version: u8,
    owner: Option<&Bytes>,
) -> Result<RawValue, WireError> {
    let len = read_int(buf)?;
    match len {
        -1 => Ok(RawValue::Null),
        -2 if version >= 4 => Ok(RawValue::Unset),
        -2 => Err(WireError::UnsetNotAllowed),
        _ => {
            let len = usize::try_from(len).map_err(|_| WireError::InvalidValueLength(len))?;
            Ok(RawValue::Bytes(share(owner, take(buf, len)?)))
        }
    }
}

/// `part` as `Bytes`: a zero-copy slice of `owner` when `part` lies inside it (a request's
/// values then share its frame body), else a copy.
pub fn share(owner: Option<&Bytes>, part: &[u8]) -> Bytes {
    match owner {
        Some(o) if within(o, part) => o.slice_ref(part),
        _ => Bytes::copy_from_slice(part),
    }
}

/// Whether `part`'s memory lies inside `owner`'s.
fn within(owner: &[u8], part: &[u8]) -> bool {
    let base = owner.as_ptr() as usize;
    let start = part.as_ptr() as usize;
    !part.is_empty() && start >= base && start + part.len() <= base + owner.len()
}

/// Reads a `[string list]`: `[short]` n + n `[string]`.
///
/// # Errors
/// As [`read_string`].
pub fn read_string_list(buf: &mut &[u8]) -> Result<Vec<String>, WireError> {
    let n = read_short(buf)?;
    // Each entry takes at least 2 bytes, which bounds the allocation by the input size.
    let mut list = Vec::with_capacity(usize::from(n).min(buf.len() / 2));
    for _ in 0..n {
        list.push(read_string(buf)?.to_owned());
    }
    Ok(list)
}

/// Reads a `[string map]`: `[short]` n + n (`[string]` key, `[string]` value), in wire order.
///
/// # Errors
/// As [`read_string`].
pub fn read_string_map(buf: &mut &[u8]) -> Result<Vec<(String, String)>, WireError> {
    let n = read_short(buf)?;
    let mut map = Vec::with_capacity(usize::from(n).min(buf.len() / 4));
    for _ in 0..n {
        let k = read_string(buf)?.to_owned();
        let v = read_string(buf)?.to_owned();
        map.push((k, v));
    }
    Ok(map)
}

/// Reads a `[string multimap]`: `[short]` n + n (`[string]` key, `[string list]` value).
///
/// # Errors
/// As [`read_string`].
pub fn read_string_multimap(buf: &mut &[u8]) -> Result<Vec<(String, Vec<String>)>, WireError> {
    let n = read_short(buf)?;
    let mut map = Vec::with_capacity(usize::from(n).min(buf.len() / 4));
    for _ in 0..n {
        let k = read_string(buf)?.to_owned();
        let v = read_string_list(buf)?;
        map.push((k, v));
    }
    Ok(map)
}

/// Reads a `[bytes map]`: `[short]` n + n (`[string]` key, `[bytes]` value).
///
/// # Errors
/// As [`read_string`] and [`read_bytes`].
pub fn read_bytes_map(buf: &mut &[u8]) -> Result<Vec<(String, Option<Bytes>)>, WireError> {
    let n = read_short(buf)?;
    let mut map = Vec::with_capacity(usize::from(n).min(buf.len() / 6));
    for _ in 0..n {
        let k = read_string(buf)?.to_owned();
        let v = read_bytes(buf)?.map(Bytes::copy_from_slice);
        map.push((k, v));
    }
    Ok(map)
}

/// Reads an `[inetaddr]`: one length byte (4 or 16) + the address.
///
/// # Errors
/// [`WireError::Truncated`], [`WireError::InvalidInetLength`].
pub fn read_inetaddr(buf: &mut &[u8]) -> Result<IpAddr, WireError> {
    match read_byte(buf)? {
        4 => Ok(IpAddr::V4(Ipv4Addr::from(take_array::<4>(buf)?))),
        16 => Ok(IpAddr::V6(Ipv6Addr::from(take_array::<16>(buf)?))),
        n => Err(WireError::InvalidInetLength(n)),
    }
}

/// Reads an `[inet]`: an `[inetaddr]` followed by an `[int]` port.
///
/// # Errors
/// As [`read_inetaddr`]; a port outside 0..=65535 is truncated to 16 bits.
pub fn read_inet(buf: &mut &[u8]) -> Result<SocketAddr, WireError> {
    let ip = read_inetaddr(buf)?;
    let port = read_int(buf)?;
    // The spec stores the port in an [int]; only the low 16 bits are meaningful.
    Ok(SocketAddr::new(ip, (port & 0xFFFF) as u16))
}

/// Reads a `[consistency]` (`[short]` code).
///
/// # Errors
/// [`WireError::Truncated`], [`WireError::UnknownConsistency`].
pub fn read_consistency(buf: &mut &[u8]) -> Result<Consistency, WireError> {
    let code = read_short(buf)?;
    Consistency::from_u16(code).ok_or(WireError::UnknownConsistency(code))
}

/// Reads a `[uuid]` (16 bytes).
///
/// # Errors
/// [`WireError::Truncated`].
pub fn read_uuid(buf: &mut &[u8]) -> Result<Uuid, WireError> {
    Ok(Uuid::from_bytes(take_array(buf)?))
}

/// The longest prefix of `s` that is at most `max` bytes and ends on a character boundary.
fn clamp_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Writes a `[byte]`.
pub fn write_byte(out: &mut impl BufMut, v: u8) {
    out.put_u8(v);
}

/// Writes a `[short]`.
pub fn write_short(out: &mut impl BufMut, v: u16) {
    out.put_u16(v);
}

/// Writes an `[int]`.
pub fn write_int(out: &mut impl BufMut, v: i32) {
    out.put_i32(v);
}

/// Writes a `[long]`.
pub fn write_long(out: &mut impl BufMut, v: i64) {
    out.put_i64(v);
}

/// Writes a `[string]` (truncated to 65 535 bytes at a character boundary).
pub fn write_string(out: &mut impl BufMut, s: &str) {
    let s = clamp_str(s, usize::from(u16::MAX));
    out.put_u16(s.len() as u16);
    out.put_slice(s.as_bytes());
}

/// Writes a `[long string]` (truncated to `i32::MAX` bytes at a character boundary).
pub fn write_long_string(out: &mut impl BufMut, s: &str) {
    let s = clamp_str(s, i32::MAX as usize);
    out.put_i32(s.len() as i32);
    out.put_slice(s.as_bytes());
}

/// Writes `[bytes]`; `None` is written as length -1 (null).
pub fn write_bytes(out: &mut impl BufMut, b: Option<&[u8]>) {
    match b {
        Some(b) => {
            let b = &b[..b.len().min(i32::MAX as usize)];
            out.put_i32(b.len() as i32);
            out.put_slice(b);
        }
        None => out.put_i32(-1),
    }
}

/// Writes `[short bytes]` (truncated to 65 535 bytes).
pub fn write_short_bytes(out: &mut impl BufMut, b: &[u8]) {
    let b = &b[..b.len().min(usize::from(u16::MAX))];
    out.put_u16(b.len() as u16);
    out.put_slice(b);
}

/// Writes a `[value]`: bytes, -1 for null, -2 for unset.
pub fn write_value(out: &mut impl BufMut, v: &RawValue) {
    match v {
        RawValue::Null => out.put_i32(-1),
        RawValue::Unset => out.put_i32(-2),
        RawValue::Bytes(b) => write_bytes(out, Some(b)),
    }
}

/// Writes a `[string list]` (at most 65 535 entries).
pub fn write_string_list<S: AsRef<str>>(out: &mut impl BufMut, list: &[S]) {
    let list = &list[..list.len().min(usize::from(u16::MAX))];
    out.put_u16(list.len() as u16);
    for s in list {
        write_string(out, s.as_ref());
    }
}

/// Writes a `[string map]` (at most 65 535 entries).
pub fn write_string_map<K: AsRef<str>, V: AsRef<str>>(out: &mut impl BufMut, map: &[(K, V)]) {
    let map = &map[..map.len().min(usize::from(u16::MAX))];
    out.put_u16(map.len() as u16);
    for (k, v) in map {
        write_string(out, k.as_ref());
        write_string(out, v.as_ref());
    }
}

/// Writes a `[string multimap]` (at most 65 535 entries).
pub fn write_string_multimap<K: AsRef<str>, V: AsRef<str>>(
    out: &mut impl BufMut,
    map: &[(K, Vec<V>)],
) {
    let map = &map[..map.len().min(usize::from(u16::MAX))];
    out.put_u16(map.len() as u16);
    for (k, v) in map {
        write_string(out, k.as_ref());
        write_string_list(out, v);
    }
}

/// Writes a `[bytes map]` (at most 65 535 entries).
pub fn write_bytes_map<K: AsRef<str>>(out: &mut impl BufMut, map: &[(K, Option<Bytes>)]) {
    let map = &map[..map.len().min(usize::from(u16::MAX))];
    out.put_u16(map.len() as u16);
    for (k, v) in map {
        write_string(out, k.as_ref());
        write_bytes(out, v.as_deref());
    }
}

/// Writes an `[inetaddr]`.
pub fn write_inetaddr(out: &mut impl BufMut, ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => {
            out.put_u8(4);
            out.put_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            out.put_u8(16);
            out.put_slice(&v6.octets());
        }
    }
}

/// Writes an `[inet]`: address then `[int]` port.
pub fn write_inet(out: &mut impl BufMut, addr: SocketAddr) {
    write_inetaddr(out, addr.ip());
    out.put_i32(i32::from(addr.port()));
}

/// Writes a `[consistency]`.
pub fn write_consistency(out: &mut impl BufMut, c: Consistency) {
    out.put_u16(c as u16);
}

/// Writes a `[uuid]`.
pub fn write_uuid(out: &mut impl BufMut, u: Uuid) {
    out.put_slice(u.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn string_round_trip_and_layout() {
        let mut out = Vec::new();
        write_string(&mut out, "héllo");
        assert_eq!(&out[..2], &[0, 6]);
        let mut buf = &out[..];
        assert_eq!(read_string(&mut buf), Ok("héllo"));
        assert!(buf.is_empty());
    }

    #[test]
    fn truncated_inputs_are_errors() {
        let mut buf: &[u8] = &[0, 5, b'a'];
        assert_eq!(
            read_string(&mut buf),
            Err(WireError::Truncated {
                needed: 5,
                remaining: 1
            })
        );
        let mut buf: &[u8] = &[0, 0, 0];
        assert!(read_int(&mut buf).is_err());
        let mut buf: &[u8] = &[0x7F, 0xFF, 0xFF, 0xFF];
        assert!(matches!(
            read_bytes(&mut buf),
            Err(WireError::Truncated { .. })
        ));
        let mut buf: &[u8] = &[0xFF, 0xFF];
        // 65535 list entries claimed, none present: must fail without allocating much.
        assert!(read_string_list(&mut buf).is_err());
    }

    #[test]
    fn values_share_their_frame_body() {
        let body = Bytes::from(vec![
            0, 0, 0, 3, b'a', b'b', b'c', 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF,
        ]);
        let mut buf: &[u8] = &body;
        let RawValue::Bytes(v) = read_value_in(&mut buf, 4, Some(&body)).unwrap() else {
            panic!("a value")
        };
        assert_eq!(&v[..], b"abc");
        assert_eq!(v.as_ptr(), body[4..].as_ptr(), "sliced, not copied");
        // An empty value, then a null.
        assert_eq!(
            read_value_in(&mut buf, 4, Some(&body)),
            Ok(RawValue::Bytes(Bytes::new()))
        );
        assert_eq!(read_value_in(&mut buf, 4, Some(&body)), Ok(RawValue::Null));
        // Bytes outside the owner are copied.
        let other = [9u8, 8, 7];
        let copied = share(Some(&body), &other);
        assert_eq!(&copied[..], &other);
        assert_ne!(copied.as_ptr(), other.as_ptr());
        assert_eq!(&share(None, &body[4..7])[..], b"abc");
    }

    #[test]
    fn invalid_utf8_is_rejected() {
        let mut buf: &[u8] = &[0, 2, 0xC3, 0x28];
        assert_eq!(read_string(&mut buf), Err(WireError::InvalidUtf8));
        let mut buf: &[u8] = &[0, 0, 0, 1, 0xFF];
        assert_eq!(read_long_string(&mut buf), Err(WireError::InvalidUtf8));
    }

    #[test]
    fn negative_long_string_length_is_rejected() {
        let mut buf: &[u8] = &[0xFF, 0xFF, 0xFF, 0xFF];
        assert_eq!(
            read_long_string(&mut buf),
            Err(WireError::NegativeLength(-1))
        );
    }

    #[test]
    fn value_lengths_follow_the_spec() {
        let mut buf: &[u8] = &[0xFF, 0xFF, 0xFF, 0xFF];
        assert_eq!(read_value(&mut buf, 4), Ok(RawValue::Null));
        let mut buf: &[u8] = &[0xFF, 0xFF, 0xFF, 0xFE];
        assert_eq!(read_value(&mut buf, 4), Ok(RawValue::Unset));
        let mut buf: &[u8] = &[0xFF, 0xFF, 0xFF, 0xFE];
        assert_eq!(read_value(&mut buf, 3), Err(WireError::UnsetNotAllowed));
        let mut buf: &[u8] = &[0xFF, 0xFF, 0xFF, 0xFD];
        assert_eq!(
            read_value(&mut buf, 4),
            Err(WireError::InvalidValueLength(-3))
        );
        let mut buf: &[u8] = &[0, 0, 0, 0];
        assert_eq!(read_value(&mut buf, 4), Ok(RawValue::Bytes(Bytes::new())));
    }

    #[test]
    fn inet_round_trip_and_bad_length() {
        let addr: SocketAddr = "10.1.2.3:9042".parse().unwrap();
        let mut out = Vec::new();
        write_inet(&mut out, addr);
        assert_eq!(out, [4, 10, 1, 2, 3, 0, 0, 0x23, 0x52]);
        assert_eq!(read_inet(&mut &out[..]), Ok(addr));
        let mut buf: &[u8] = &[5, 1, 2, 3, 4, 5];
        assert_eq!(read_inet(&mut buf), Err(WireError::InvalidInetLength(5)));
    }

    #[test]
    fn consistency_codes() {
        let mut out = Vec::new();
        write_consistency(&mut out, Consistency::LocalOne);
        assert_eq!(out, [0, 0x0A]);
        assert_eq!(read_consistency(&mut &out[..]), Ok(Consistency::LocalOne));
        let mut buf: &[u8] = &[0, 0x0B];
        assert_eq!(
            read_consistency(&mut buf),
            Err(WireError::UnknownConsistency(0x0B))
        );
    }

    #[test]
    fn overlong_string_is_truncated_at_char_boundary() {
        let s = "é".repeat(40_000); // 80 000 bytes
        let mut out = Vec::new();
        write_string(&mut out, &s);
        let got = read_string(&mut &out[..]).unwrap();
        assert_eq!(got.len(), 65_534);
    }

    proptest! {
        #[test]
        fn primitives_round_trip(b in any::<u8>(), s in any::<u16>(), i in any::<i32>(),
                                 l in any::<i64>(), st in ".{0,40}", ls in ".{0,40}",
                                 by in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
                                 sb in proptest::collection::vec(any::<u8>(), 0..40),
                                 u in any::<u128>()) {
            let mut out = Vec::new();
            write_byte(&mut out, b);
            write_short(&mut out, s);
            write_int(&mut out, i);
            write_long(&mut out, l);
            write_string(&mut out, &st);
            write_long_string(&mut out, &ls);
            write_bytes(&mut out, by.as_deref());
            write_short_bytes(&mut out, &sb);
            write_uuid(&mut out, Uuid::from_u128(u));
            let mut buf = &out[..];
            prop_assert_eq!(read_byte(&mut buf), Ok(b));
            prop_assert_eq!(read_short(&mut buf), Ok(s));
            prop_assert_eq!(read_int(&mut buf), Ok(i));
            prop_assert_eq!(read_long(&mut buf), Ok(l));
            prop_assert_eq!(read_string(&mut buf), Ok(st.as_str()));
            prop_assert_eq!(read_long_string(&mut buf), Ok(ls.as_str()));
            prop_assert_eq!(read_bytes(&mut buf), Ok(by.as_deref()));
            prop_assert_eq!(read_short_bytes(&mut buf), Ok(&sb[..]));
            prop_assert_eq!(read_uuid(&mut buf), Ok(Uuid::from_u128(u)));
            prop_assert!(buf.is_empty());
        }

        #[test]
        fn collections_round_trip(list in proptest::collection::vec(".{0,8}", 0..6),
                                  map in proptest::collection::vec((".{0,8}", ".{0,8}"), 0..6),
                                  multi in proptest::collection::vec((".{0,8}", proptest::collection::vec(".{0,4}", 0..3)), 0..4),
                                  bmap in proptest::collection::vec((".{0,8}", proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8))), 0..4)) {
            let bmap: Vec<(String, Option<Bytes>)> = bmap.into_iter().map(|(k, v)| (k, v.map(Bytes::from))).collect();
            let mut out = Vec::new();
            write_string_list(&mut out, &list);
            write_string_map(&mut out, &map);
            write_string_multimap(&mut out, &multi);
            write_bytes_map(&mut out, &bmap);
            let mut buf = &out[..];
            prop_assert_eq!(read_string_list(&mut buf), Ok(list));
            prop_assert_eq!(read_string_map(&mut buf), Ok(map));
            prop_assert_eq!(read_string_multimap(&mut buf), Ok(multi));
            prop_assert_eq!(read_bytes_map(&mut buf), Ok(bmap));
            prop_assert!(buf.is_empty());
        }

        #[test]
        fn readers_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = read_string_multimap(&mut &data[..]);
            let _ = read_bytes_map(&mut &data[..]);
            let _ = read_inet(&mut &data[..]);
            let _ = read_value(&mut &data[..], 3);
            let _ = read_long_string(&mut &data[..]);
        }
    }
}
