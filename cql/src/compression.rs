//! Frame body compression negotiated at STARTUP (`native_protocol_v4.spec` §5).
//!
//! LZ4 uses Cassandra's framing, `[int uncompressed length][raw lz4 block]`; Snappy is the raw
//! snappy format. Decompression refuses claimed lengths above a caller-given maximum before
//! allocating anything, so hostile input cannot exhaust memory.

/// A compression algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// LZ4 block format with a 4-byte big-endian length prefix.
    Lz4,
    /// Raw Snappy.
    Snappy,
}

/// A compressed body that cannot be decompressed.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompressionError {
    /// The LZ4 body is shorter than its 4-byte length prefix.
    #[error("compressed body too short")]
    Truncated,
    /// The LZ4 length prefix is negative.
    #[error("negative uncompressed length {0}")]
    NegativeLength(i32),
    /// The claimed uncompressed length exceeds the limit.
    #[error("uncompressed length {length} exceeds maximum {max}")]
    TooLarge {
        /// Claimed length.
        length: usize,
        /// Limit.
        max: usize,
    },
    /// The decompressed length differs from the claimed one.
    #[error("decompressed {actual} bytes, expected {expected}")]
    LengthMismatch {
        /// Claimed length.
        expected: usize,
        /// Actual length.
        actual: usize,
    },
    /// The compressed data is corrupt.
    #[error("corrupt compressed body: {0}")]
    Corrupt(String),
}

impl Compression {
    /// The algorithm named `name` (`"lz4"` or `"snappy"`, case-insensitive).
    pub fn from_name(name: &str) -> Option<Self> {
        if name.eq_ignore_ascii_case("lz4") {
            Some(Compression::Lz4)
        } else if name.eq_ignore_ascii_case("snappy") {
            Some(Compression::Snappy)
        } else {
            None
        }
    }

    /// The lower-case name used in STARTUP and SUPPORTED.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Lz4 => "lz4",
            Compression::Snappy => "snappy",
        }
    }

    /// Compresses a frame body.
    ///
    /// # Panics
    /// If `body` is 4 GiB or longer (beyond what either format or a frame can carry).
    pub fn compress(&self, body: &[u8]) -> Vec<u8> {
        match self {
            Compression::Lz4 => {
                let len = i32::try_from(body.len()).expect("frame body must be shorter than 2 GiB");
                let mut out =
                    Vec::with_capacity(4 + lz4_flex::block::get_maximum_output_size(body.len()));
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(&lz4_flex::block::compress(body));
                out
            }
            Compression::Snappy => snap::raw::Encoder::new()
                .compress_vec(body)
                .expect("frame body must be shorter than 4 GiB"),
        }
    }

    /// Decompresses a frame body whose uncompressed size may not exceed `max_len`.
    ///
    /// # Errors
    /// Any [`CompressionError`].
    pub fn decompress(&self, body: &[u8], max_len: usize) -> Result<Vec<u8>, CompressionError> {
        match self {
            Compression::Lz4 => {
                let Some((len, block)) = body.split_first_chunk::<4>() else {
                    return Err(CompressionError::Truncated);
                };
                let claimed = i32::from_be_bytes(*len);
                let expected = usize::try_from(claimed)
                    .map_err(|_| CompressionError::NegativeLength(claimed))?;
                if expected > max_len {
                    return Err(CompressionError::TooLarge {
                        length: expected,
                        max: max_len,
                    });
                }
                if expected == 0 {
                    return Ok(Vec::new());
                }
                let out = lz4_flex::block::decompress(block, expected)
                    .map_err(|e| CompressionError::Corrupt(e.to_string()))?;
                if out.len() != expected {
                    return Err(CompressionError::LengthMismatch {
                        expected,
                        actual: out.len(),
                    });
                }
                Ok(out)
            }
            Compression::Snappy => {
                let expected = snap::raw::decompress_len(body)
                    .map_err(|e| CompressionError::Corrupt(e.to_string()))?;
                if expected > max_len {
                    return Err(CompressionError::TooLarge {
                        length: expected,
                        max: max_len,
                    });
                }
                snap::raw::Decoder::new()
                    .decompress_vec(body)
                    .map_err(|e| CompressionError::Corrupt(e.to_string()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_are_case_insensitive() {
        assert_eq!(Compression::from_name("LZ4"), Some(Compression::Lz4));
        assert_eq!(Compression::from_name("Snappy"), Some(Compression::Snappy));
        assert_eq!(Compression::from_name("zstd"), None);
        assert_eq!(Compression::Lz4.name(), "lz4");
    }

    #[test]
    fn lz4_has_big_endian_length_prefix() {
        let body = b"hello hello hello hello";
        let c = Compression::Lz4.compress(body);
        assert_eq!(&c[..4], &[0, 0, 0, 23]);
        assert_eq!(Compression::Lz4.decompress(&c, 100).unwrap(), body);
        assert_eq!(Compression::Lz4.compress(b""), vec![0, 0, 0, 0, 0]);
        assert_eq!(Compression::Lz4.decompress(&[0, 0, 0, 0], 0).unwrap(), b"");
    }

    #[test]
    fn hostile_lengths_are_rejected() {
        assert_eq!(
            Compression::Lz4.decompress(&[0x7F, 0xFF, 0xFF, 0xFF, 0], 1 << 20),
            Err(CompressionError::TooLarge {
                length: 0x7FFF_FFFF,
                max: 1 << 20
            })
        );
        assert_eq!(
            Compression::Lz4.decompress(&[0xFF, 0xFF, 0xFF, 0xFF], 10),
            Err(CompressionError::NegativeLength(-1))
        );
        assert_eq!(
            Compression::Lz4.decompress(&[0, 0], 10),
            Err(CompressionError::Truncated)
        );
        // Snappy varint header claiming ~4 GiB.
        assert!(matches!(
            Compression::Snappy.decompress(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F], 1 << 20),
            Err(CompressionError::TooLarge { .. })
        ));
        // A length prefix larger than what the block yields.
        let mut c = Compression::Lz4.compress(b"abc");
        c[3] = 10;
        assert!(Compression::Lz4.decompress(&c, 100).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(body in proptest::collection::vec(any::<u8>(), 0..512)) {
            for c in [Compression::Lz4, Compression::Snappy] {
                let z = c.compress(&body);
                prop_assert_eq!(c.decompress(&z, body.len()).unwrap(), body.clone());
            }
        }

        #[test]
        fn decompress_never_panics(body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Compression::Lz4.decompress(&body, 4096);
            let _ = Compression::Snappy.decompress(&body, 4096);
        }
    }
}
