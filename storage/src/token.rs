//! Cassandra's `Murmur3Partitioner`: the token of a partition key, and partition-key serialization.
//!
//! Cassandra hashes with MurmurHash3 x64_128 (seed 0) and keeps `h1`, but reads the tail bytes
//! (`len % 16`) as *signed* Java bytes, so any tail byte `>= 0x80` sign-extends into the lane.
//! Reference implementations (and the `murmur3` crate) read them unsigned, which is why this file
//! exists. `Long.MIN_VALUE` is reserved as the ring's minimum token: a hash equal to it becomes
//! `i64::MAX`, and only the empty key has token `i64::MIN`.

/// The ring's minimum token, also its start/end sentinel (§4 of the reference).
pub const MIN_TOKEN: i64 = i64::MIN;

/// The greatest token.
pub const MAX_TOKEN: i64 = i64::MAX;

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

fn fmix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

fn le_u64(bytes: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(buf)
}

/// Cassandra's `MurmurHash.hash3_x64_128(key, 0)[0]`, tail bytes sign-extended.
fn murmur3_h1(key: &[u8]) -> i64 {
    let mut h1: u64 = 0;
    let mut h2: u64 = 0;
    let mut blocks = key.chunks_exact(16);
    for block in &mut blocks {
        let mut k1 = le_u64(&block[..8]);
        let mut k2 = le_u64(&block[8..]);
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    let mut k1: u64 = 0;
    let mut k2: u64 = 0;
    for (i, &b) in tail.iter().enumerate() {
        // Java's `(long) key.get(i)`: a signed byte, sign-extended to 64 bits.
        let v = (b as i8 as i64) as u64;
        if i < 8 {
            k1 ^= v << (8 * i);
        } else {
            k2 ^= v << (8 * (i - 8));
        }
    }
    if tail.len() > 8 {
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
    }
    if !tail.is_empty() {
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
    }
    let len = key.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1 = h1.wrapping_add(h2);
    h1 as i64
}

/// The Murmur3Partitioner token of a serialized partition key (see [`serialize_partition_key`]).
///
/// The empty key has token [`MIN_TOKEN`]; a hash equal to `MIN_TOKEN` is normalised to
/// [`MAX_TOKEN`], so no non-empty key ever has the minimum token.
pub fn token(key: &[u8]) -> i64 {
    if key.is_empty() {
        return MIN_TOKEN;
    }
    match murmur3_h1(key) {
        MIN_TOKEN => MAX_TOKEN,
        h => h,
    }
}

/// The token of a partition key given as its serialized components (Cassandra's Murmur3 of
/// [`serialize_partition_key`]).
pub fn partition_token(components: &[Vec<u8>]) -> i64 {
    if let [one] = components {
        return token(one);
    }
    let parts: Vec<&[u8]> = components.iter().map(Vec::as_slice).collect();
    token(&serialize_partition_key(&parts))
}

/// Serializes a partition key the way Cassandra hashes it: a single component is its raw bytes;
/// a composite key is, for each component, `u16 BE length ‖ bytes ‖ 0x00`.
///
/// Components longer than 65535 bytes are truncated in the length field by Cassandra's rules;
/// callers must reject them first (see [`crate::key`], which checks).
pub fn serialize_partition_key(components: &[&[u8]]) -> Vec<u8> {
    match components {
        [single] => single.to_vec(),
        parts => {
            let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 3).sum());
            for part in parts {
                let len = u16::try_from(part.len()).unwrap_or(u16::MAX);
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(part);
                out.push(0);
            }
            out
        }
    }
}

/// Splits a serialized partition key back into components, given how many there are.
///
/// Returns `None` when the bytes are not a valid composite of `count` components.
pub fn split_partition_key(serialized: &[u8], count: usize) -> Option<Vec<Vec<u8>>> {
    if count == 1 {
        return Some(vec![serialized.to_vec()]);
    }
    let mut out = Vec::with_capacity(count);
    let mut rest = serialized;
    for _ in 0..count {
        let (len, tail) = rest.split_first_chunk::<2>()?;
        let len = usize::from(u16::from_be_bytes(*len));
        let value = tail.get(..len)?;
        if tail.get(len) != Some(&0) {
            return None;
        }
        out.push(value.to_vec());
        rest = &tail[len + 1..];
    }
    rest.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn token_matches_cassandra_vectors() {
        let vectors: &[(&str, i64)] = &[
            ("61", -8839064797231613815),
            ("68656c6c6f", -3758069500696749310),
            ("43617373616e647261", -8102916151384655401),
            (
                "54686520717569636b2062726f776e20666f78206a756d7073206f76657220746865206c617a7920646f67",
                -2068352364225029268,
            ),
            ("c3a9", 5461403030378599040),
            ("6e61c3af766520636166c3a9", 3828589147105053679),
            ("00000000", -3485513579396041028),
            ("00000001", -4069959284402364209),
            ("0000002a", -7160136740246525330),
            ("ffffffff", 7297452126230313552),
            ("00000080", -9081975895656599623),
            ("0000000000000001", 6292367497774912474),
            ("fffffffffffffffe", -1469196152397050732),
            ("80", -5284281814142962636),
            ("ff", -4442228696663692417),
            ("000102030405060708090a0b0c0d0e0f80", -3508686450516251035),
            ("ffffffffffffffffffff", -2285028417834605101),
            ("00112233445566778899aabbccddeeff", 5713842290320563023),
            ("", i64::MIN),
        ];
        for (key, expected) in vectors {
            assert_eq!(token(&hex(key)), *expected, "key {key}");
        }
    }

    #[test]
    fn composite_keys_match_cassandra_vectors() {
        let cases: &[(&[&[u8]], i64)] = &[
            (&[b"a", &[0, 0, 0, 1]], 8247712171917364652),
            (&[b"hello", &[0, 0, 0, 42]], 7666157718303755816),
            (&[b"k", &[0xff; 4]], -6451811785764377163),
            (&[&[0, 0, 0, 1], &[0, 0, 0, 2]], 4881097376275569167),
        ];
        for (parts, expected) in cases {
            let key = serialize_partition_key(parts);
            assert_eq!(token(&key), *expected);
            let back = split_partition_key(&key, parts.len()).unwrap();
            assert_eq!(back, parts.iter().map(|p| p.to_vec()).collect::<Vec<_>>());
        }
        let key = serialize_partition_key(&[b"a", &[0, 0, 0, 1]]);
        assert_eq!(key, hex("0001610000040000000100"));
    }

    #[test]
    fn murmur3_crate_differs_on_sign_extended_tail() {
        // The reference MurmurHash3 reads tail bytes unsigned; Cassandra reads them signed.
        let std_h1 = |key: &[u8]| {
            let h = murmur3::murmur3_x64_128(&mut std::io::Cursor::new(key), 0).unwrap();
            h as u64 as i64
        };
        assert_eq!(std_h1(&[0xff; 4]), 4889297221962843713);
        assert_eq!(token(&[0xff; 4]), 7297452126230313552);
        // Without a tail byte >= 0x80 they agree.
        assert_eq!(std_h1(b"hello"), token(b"hello"));
    }
}
