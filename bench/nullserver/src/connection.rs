//! One client connection: frames read as they arrive, each answered in order, and the
//! answers of everything read at once written together.

use crate::answer::{Server, Session};
use bytes::BytesMut;
use cql::frame::{self as codec, FrameError};
use cql::request::Request;
use cql::response::{ErrorBody, Response};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest frame body accepted.
const MAX_BODY: u32 = 256 * 1024 * 1024;

/// Serves `socket` until the client closes it or sends what cannot be framed.
///
/// # Errors
/// The socket's I/O errors.
pub(crate) async fn serve(server: Arc<Server>, mut socket: TcpStream) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut input = BytesMut::with_capacity(64 * 1024);
    let mut output = BytesMut::with_capacity(64 * 1024);
    let mut session = Session::default();
    loop {
        if socket.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
        let closing = loop {
            match codec::decode(&mut input, MAX_BODY) {
                Ok(Some(frame)) => {
                    let h = frame.header;
                    let response =
                        match Request::decode_shared(h.flags, h.opcode, h.version, &frame.body) {
                            Ok((request, _)) => server.answer(request, &mut session),
                            Err(e) => Response::Error(ErrorBody::ProtocolError(e.to_string())),
                        };
                    response.encode_frame(h.version, h.stream, None, &mut output);
                }
                Ok(None) => break false,
                Err(e) => {
                    let body = match &e {
                        FrameError::UnsupportedVersion { version, .. } => {
                            ErrorBody::unsupported_version(*version)
                        }
                        other => ErrorBody::ProtocolError(other.to_string()),
                    };
                    Response::Error(body).encode_frame(4, e.stream(), None, &mut output);
                    break true;
                }
            }
        };
        if !output.is_empty() {
            socket.write_all(&output).await?;
            output.clear();
        }
        if closing {
            return Ok(());
        }
    }
}
