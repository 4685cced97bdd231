//! A minimal raw-frame client for protocol tests: hand-built frames over a plain TCP socket.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A received frame.
#[derive(Debug)]
pub struct RawFrame {
    pub version: u8,
    pub flags: u8,
    pub stream: i16,
    pub opcode: u8,
    /// The message: after the envelope (warnings, custom payload) when the frame is not
    /// compressed; the whole compressed body otherwise ([`RawFrame::message`] strips it).
    pub body: Vec<u8>,
    /// The envelope of an uncompressed frame.
    pub envelope: cql::response::Envelope,
}

impl RawFrame {
    /// The message of a decompressed body: what follows its envelope.
    pub fn message(&self, plain: &[u8]) -> Vec<u8> {
        let mut rest = plain;
        let _ = cql::response::Envelope::decode(self.flags, &mut rest);
        rest.to_vec()
    }

    /// The error code of an ERROR frame.
    pub fn error_code(&self) -> Option<i32> {
        (self.opcode == 0 && self.body.len() >= 4)
            .then(|| i32::from_be_bytes([self.body[0], self.body[1], self.body[2], self.body[3]]))
    }

    /// The message of an ERROR frame.
    pub fn error_message(&self) -> String {
        if self.body.len() < 6 {
            return String::new();
        }
        let len = u16::from_be_bytes([self.body[4], self.body[5]]) as usize;
        String::from_utf8_lossy(&self.body[6..(6 + len).min(self.body.len())]).into_owned()
    }
}

/// A connection speaking raw frames.
pub struct RawClient {
    pub stream: TcpStream,
}

pub fn string(s: &str) -> Vec<u8> {
    let mut v = (s.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

pub fn long_string(s: &str) -> Vec<u8> {
    let mut v = (s.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

pub fn string_map(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut v = (entries.len() as u16).to_be_bytes().to_vec();
    for (k, val) in entries {
        v.extend(string(k));
        v.extend(string(val));
    }
    v
}

/// A QUERY body: text, consistency ONE, no flags.
pub fn query_body(text: &str) -> Vec<u8> {
    let mut v = long_string(text);
    v.extend_from_slice(&1u16.to_be_bytes());
    v.push(0);
    v
}

/// One frame: a 9-byte header (no flags) and `body`.
pub fn frame(version: u8, stream: i16, opcode: u8, body: &[u8]) -> Vec<u8> {
    let mut f = vec![version, 0];
    f.extend_from_slice(&stream.to_be_bytes());
    f.push(opcode);
    f.extend_from_slice(&(body.len() as u32).to_be_bytes());
    f.extend_from_slice(body);
    f
}

/// `n` QUERY frames for `text` on streams 0..n, back to back, to send in one write.
pub fn pipelined_queries(n: i16, text: &str) -> Vec<u8> {
    let body = query_body(text);
    (0..n)
        .flat_map(|stream| frame(4, stream, 0x07, &body))
        .collect()
}

/// A v4 EXECUTE frame of prepared statement `id` on `stream` with bigint `values`, asking
/// the server to skip the rows' metadata.
pub fn execute_frame(stream: i16, id: &[u8], values: &[i64]) -> Vec<u8> {
    let values: Vec<[u8; 8]> = values.iter().map(|v| v.to_be_bytes()).collect();
    let values: Vec<&[u8]> = values.iter().map(|v| &v[..]).collect();
    execute_bytes_frame(stream, id, &values)
}

/// Like [`execute_frame`], with each value's serialized bytes as given (valid or not).
pub fn execute_bytes_frame(stream: i16, id: &[u8], values: &[&[u8]]) -> Vec<u8> {
    let mut body = (id.len() as u16).to_be_bytes().to_vec();
    body.extend_from_slice(id);
    body.extend_from_slice(&1u16.to_be_bytes()); // consistency ONE
    body.push(0x01 | 0x02); // values, skip metadata
    body.extend_from_slice(&(values.len() as u16).to_be_bytes());
    for v in values {
        body.extend_from_slice(&(v.len() as i32).to_be_bytes());
        body.extend_from_slice(v);
    }
    frame(4, stream, 0x0A, &body)
}

impl RawClient {
    pub fn connect(addr: SocketAddr) -> RawClient {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        RawClient { stream }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    pub fn send(&mut self, version: u8, flags: u8, stream: i16, opcode: u8, body: &[u8]) {
        let mut f = frame(version, stream, opcode, body);
        f[1] = flags;
        self.send_raw(&f);
    }

    /// Reads one frame; None on EOF or timeout.
    pub fn recv(&mut self) -> Option<RawFrame> {
        let mut header = [0u8; 9];
        self.stream.read_exact(&mut header).ok()?;
        let len = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) as usize;
        let mut body = vec![0u8; len];
        self.stream.read_exact(&mut body).ok()?;
        let flags = header[1];
        let mut envelope = cql::response::Envelope::default();
        if flags & 0x01 == 0 {
            let mut rest = &body[..];
            envelope = cql::response::Envelope::decode(flags, &mut rest).ok()?;
            body = rest.to_vec();
        }
        Some(RawFrame {
            version: header[0],
            flags,
            stream: i16::from_be_bytes([header[2], header[3]]),
            opcode: header[4],
            body,
            envelope,
        })
    }

    /// STARTUP with the given extra options; asserts READY.
    pub fn startup(&mut self, extra: &[(&str, &str)]) {
        let mut opts = vec![("CQL_VERSION", "3.0.0")];
        opts.extend_from_slice(extra);
        self.send(4, 0, 1, 0x01, &string_map(&opts));
        let f = self.recv().expect("STARTUP answered");
        assert_eq!(f.opcode, 0x02, "READY expected, got {f:?}");
    }

    /// PREPAREs `cql` (v4, stream 7) and returns the statement id.
    pub fn prepare(&mut self, cql: &str) -> Vec<u8> {
        self.send(4, 0, 7, 0x09, &long_string(cql));
        let f = self.recv().expect("PREPARE answered");
        assert_eq!(f.opcode, 0x08, "RESULT expected, got {f:?}");
        assert_eq!(f.body[..4], 4i32.to_be_bytes(), "a Prepared result");
        let len = u16::from_be_bytes([f.body[4], f.body[5]]) as usize;
        f.body[6..6 + len].to_vec()
    }

    /// True when the server closed the connection (EOF) within the read timeout.
    pub fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.stream.read(&mut b), Ok(0))
    }
}
