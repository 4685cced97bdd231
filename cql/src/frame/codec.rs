//! Splitting frames off a byte stream: [`check`] reports whether a whole frame is buffered
//! (rejecting a bad version, direction or length as soon as the header shows it), [`decode`]
//! splits it off, [`encode_frame`] writes a response frame.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::header::{FrameHeader, Opcode, HEADER_LEN, RESPONSE_BIT};

/// Cassandra's default maximum body length (256 MiB).
pub const DEFAULT_MAX_BODY: u32 = 256 * 1024 * 1024;

/// A whole frame: its header and its (still possibly compressed) body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The decoded header.
    pub header: FrameHeader,
    /// The body, `header.length` bytes.
    pub body: Bytes,
}

/// A frame that cannot be accepted. Each is fatal for the connection; reply with a
/// PROTOCOL_ERROR on the given stream and close.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// The version (low 7 bits) is not 3 or 4.
    #[error(
        "Invalid or unsupported protocol version ({version}); supported versions are (3/v3, 4/v4)"
    )]
    UnsupportedVersion {
        /// The version the client sent.
        version: u8,
        /// The stream id, as far as it could be read (0 otherwise).
        stream: i16,
    },
    /// The declared body length exceeds the maximum.
    #[error("Request is too big: length {length} exceeds maximum allowed length {max}.")]
    BodyTooLarge {
        /// The declared length.
        length: u32,
        /// The configured maximum.
        max: u32,
        /// The stream id.
        stream: i16,
    },
    /// The direction bit is set on a frame sent by a client.
    #[error("Invalid frame: response direction bit set on a request")]
    NotARequest {
        /// The stream id.
        stream: i16,
    },
}

impl FrameError {
    /// The stream id to answer on.
    pub fn stream(&self) -> i16 {
        match self {
            FrameError::UnsupportedVersion { stream, .. }
            | FrameError::BodyTooLarge { stream, .. }
            | FrameError::NotARequest { stream } => *stream,
        }
    }
}

/// Inspects `buf`: `Ok(None)` if more bytes are needed, `Ok(Some(total_len))` if a whole frame
/// (header + body) is at its front.
///
/// The version, direction bit and length are checked as soon as the header is there, so an
/// oversized length is refused before its body arrives. For an unsupported version only the
/// bytes up to the stream id are awaited (3 for the 8-byte v1/v2 header, 4 otherwise).
///
/// # Errors
/// Any [`FrameError`].
pub fn check(buf: &[u8], max_body: u32) -> Result<Option<usize>, FrameError> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    let version = first & !RESPONSE_BIT;
    if version != 3 && version != 4 {
        let stream = match (version, buf.get(2), buf.get(3)) {
            // v1/v2: one-byte stream id.
            (1 | 2, Some(&s), _) => i16::from(s as i8),
            (1 | 2, None, _) => return Ok(None),
            (_, Some(&hi), Some(&lo)) => i16::from_be_bytes([hi, lo]),
            _ => return Ok(None),
        };
        return Err(FrameError::UnsupportedVersion { version, stream });
    }
    let Some(header) = FrameHeader::decode(buf) else {
        return Ok(None);
    };
    if header.is_response {
        return Err(FrameError::NotARequest {
            stream: header.stream,
        });
    }
    if header.length > max_body {
        return Err(FrameError::BodyTooLarge {
            length: header.length,
            max: max_body,
            stream: header.stream,
        });
    }
    let total = usize::try_from(header.length)
        .ok()
        .and_then(|len| len.checked_add(HEADER_LEN))
        .ok_or(FrameError::BodyTooLarge {
            length: header.length,
            max: max_body,
            stream: header.stream,
        })?;
    Ok((buf.len() >= total).then_some(total))
}

/// [`check`]s `buf` and, if a whole frame is there, splits it off the front.
///
/// # Errors
/// As [`check`]; `buf` is left untouched on error.
pub fn decode(buf: &mut BytesMut, max_body: u32) -> Result<Option<Frame>, FrameError> {
    let Some(total) = check(buf, max_body)? else {
        return Ok(None);
    };
    let mut bytes = buf.split_to(total).freeze();
    let Some(header) = FrameHeader::decode(&bytes) else {
        // Unreachable: check() saw at least HEADER_LEN bytes.
        return Ok(None);
    };
    bytes.advance(HEADER_LEN);
    Ok(Some(Frame {
        header,
        body: bytes,
    }))
}

/// Appends a whole response frame to `out`: header (`version | 0x80`, flags, stream, opcode,
/// body length) followed by `body`.
///
/// # Panics
/// If `body` is 4 GiB or longer, which no frame can carry.
pub fn encode_frame(
    version: u8,
    flags: u8,
    stream: i16,
    opcode: Opcode,
    body: &[u8],
    out: &mut BytesMut,
) {
    let length = u32::try_from(body.len()).expect("frame body must be shorter than 4 GiB");
    out.reserve(HEADER_LEN + body.len());
    FrameHeader {
        version,
        is_response: true,
        flags,
        stream,
        opcode: opcode as u8,
        length,
    }
    .encode(out);
    out.put_slice(body);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn request(version: u8, stream: i16, opcode: Opcode, body: &[u8]) -> BytesMut {
        let mut out = BytesMut::new();
        FrameHeader {
            version,
            is_response: false,
            flags: 0,
            stream,
            opcode: opcode as u8,
            length: body.len() as u32,
        }
        .encode(&mut out);
        out.put_slice(body);
        out
    }

    #[test]
    fn incomplete_then_complete() {
        let full = request(4, 7, Opcode::Options, b"abc");
        for cut in 0..full.len() {
            assert_eq!(check(&full[..cut], 100), Ok(None), "cut {cut}");
        }
        assert_eq!(check(&full, 100), Ok(Some(12)));
        let mut buf = full.clone();
        buf.extend_from_slice(&[4, 0]); // start of the next frame
        let frame = decode(&mut buf, 100).unwrap().unwrap();
        assert_eq!(frame.header.stream, 7);
        assert_eq!(frame.header.opcode, Opcode::Options as u8);
        assert_eq!(&frame.body[..], b"abc");
        assert_eq!(&buf[..], &[4, 0]);
    }

    #[test]
    fn oversized_length_is_rejected_before_the_body() {
        let mut h = request(4, 3, Opcode::Query, &[]);
        h[5..9].copy_from_slice(&1000u32.to_be_bytes());
        assert_eq!(
            check(&h, 999),
            Err(FrameError::BodyTooLarge {
                length: 1000,
                max: 999,
                stream: 3
            })
        );
        h[5..9].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(check(&h, u32::MAX).is_ok());
    }

    #[test]
    fn unsupported_versions_report_the_stream() {
        // python's first attempt: v=0x42 (DSE_V2) OPTIONS on stream 0.
        let f = request(0x42, 0, Opcode::Options, &[]);
        assert_eq!(
            check(&f, 100),
            Err(FrameError::UnsupportedVersion {
                version: 0x42,
                stream: 0
            })
        );
        let f = request(5, 0x0102, Opcode::Options, &[]);
        assert_eq!(
            check(&f[..4], 100),
            Err(FrameError::UnsupportedVersion {
                version: 5,
                stream: 0x0102
            })
        );
        assert_eq!(check(&[5, 0, 1], 100), Ok(None));
        // v2: 8-byte header, 1-byte stream.
        assert_eq!(
            check(&[2, 0, 0xFF, 5, 0, 0, 0, 0], 100),
            Err(FrameError::UnsupportedVersion {
                version: 2,
                stream: -1
            })
        );
        assert_eq!(
            FrameError::UnsupportedVersion {
                version: 66,
                stream: 0
            }
            .to_string(),
            "Invalid or unsupported protocol version (66); supported versions are (3/v3, 4/v4)"
        );
    }

    #[test]
    fn response_direction_is_rejected() {
        let mut f = request(4, 9, Opcode::Query, &[]);
        f[0] = 0x84;
        assert_eq!(check(&f, 100), Err(FrameError::NotARequest { stream: 9 }));
        let mut buf = f.clone();
        assert!(decode(&mut buf, 100).is_err());
        assert_eq!(buf, f);
    }

    #[test]
    fn encode_frame_writes_response_header() {
        let mut out = BytesMut::new();
        encode_frame(4, 0, 5, Opcode::Ready, &[], &mut out);
        assert_eq!(&out[..], &[0x84, 0, 0, 5, 2, 0, 0, 0, 0]);
        let mut out = BytesMut::new();
        encode_frame(3, 0, -1, Opcode::Event, b"xy", &mut out);
        assert_eq!(
            &out[..],
            &[0x83, 0, 0xFF, 0xFF, 0x0C, 0, 0, 0, 2, b'x', b'y']
        );
    }

    proptest! {
        #[test]
        fn check_never_panics(data in proptest::collection::vec(any::<u8>(), 0..32), max in any::<u32>()) {
            let _ = check(&data, max);
            let mut buf = BytesMut::from(&data[..]);
            let _ = decode(&mut buf, max);
        }

        #[test]
        fn frames_round_trip(version in 3u8..5, stream in any::<i16>(),
                             body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut buf = request(version, stream, Opcode::Query, &body);
            let frame = decode(&mut buf, 1024).unwrap().unwrap();
            prop_assert_eq!(frame.header.version, version);
            prop_assert_eq!(frame.header.stream, stream);
            prop_assert_eq!(&frame.body[..], &body[..]);
            prop_assert!(buf.is_empty());
        }
    }
}
