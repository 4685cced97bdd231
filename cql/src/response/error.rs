//! ERROR (opcode 0x00, `native_protocol_v4.spec` §4.2.1 and §9): `[int code][string message]`
//! followed by code-specific fields. [`ErrorBody`] has one variant per code; [`codes`] is the
//! single table between variants and wire codes.

use bytes::{BufMut, Bytes};

use super::ResponseError;
use crate::consistency::Consistency;
use crate::frame::FrameError;
use crate::wire::{self, WireError};

/// Protocol error codes.
pub mod codes {
    /// Server error: something unexpected happened.
    pub const SERVER_ERROR: i32 = 0x0000;
    /// Protocol error: a malformed or forbidden message.
    pub const PROTOCOL_ERROR: i32 = 0x000A;
    /// Authentication failed.
    pub const BAD_CREDENTIALS: i32 = 0x0100;
    /// Not enough live replicas.
    pub const UNAVAILABLE: i32 = 0x1000;
    /// The coordinator is overloaded.
    pub const OVERLOADED: i32 = 0x1001;
    /// The coordinator is bootstrapping.
    pub const IS_BOOTSTRAPPING: i32 = 0x1002;
    /// A TRUNCATE failed.
    pub const TRUNCATE_ERROR: i32 = 0x1003;
    /// Write timeout.
    pub const WRITE_TIMEOUT: i32 = 0x1100;
    /// Read timeout.
    pub const READ_TIMEOUT: i32 = 0x1200;
    /// Read failure.
    pub const READ_FAILURE: i32 = 0x1300;
    /// A user function failed.
    pub const FUNCTION_FAILURE: i32 = 0x1400;
    /// Write failure.
    pub const WRITE_FAILURE: i32 = 0x1500;
    /// Syntax error in the query.
    pub const SYNTAX_ERROR: i32 = 0x2000;
    /// Not authorized.
    pub const UNAUTHORIZED: i32 = 0x2100;
    /// Invalid query.
    pub const INVALID: i32 = 0x2200;
    /// Invalid configuration.
    pub const CONFIG_ERROR: i32 = 0x2300;
    /// The keyspace or table already exists.
    pub const ALREADY_EXISTS: i32 = 0x2400;
    /// Unknown prepared statement id.
    pub const UNPREPARED: i32 = 0x2500;
}

use codes::*;

/// The body of an ERROR response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorBody {
    /// 0x0000.
    ServerError(String),
    /// 0x000A.
    ProtocolError(String),
    /// 0x0100.
    BadCredentials(String),
    /// 0x1000.
    Unavailable {
        /// Message.
        message: String,
        /// Requested consistency.
        consistency: Consistency,
        /// Replicas required.
        required: i32,
        /// Replicas known alive.
        alive: i32,
    },
    /// 0x1001.
    Overloaded(String),
    /// 0x1002.
    IsBootstrapping(String),
    /// 0x1003.
    TruncateError(String),
    /// 0x1100.
    WriteTimeout {
        /// Message.
        message: String,
        /// Requested consistency.
        consistency: Consistency,
        /// Acknowledgements received.
        received: i32,
        /// Acknowledgements required.
        block_for: i32,
        /// `SIMPLE`, `BATCH`, `UNLOGGED_BATCH`, `COUNTER`, `BATCH_LOG`, `CAS`, `VIEW`, `CDC`.
        write_type: String,
    },
    /// 0x1200.
    ReadTimeout {
        /// Message.
        message: String,
        /// Requested consistency.
        consistency: Consistency,
        /// Responses received.
        received: i32,
        /// Responses required.
        block_for: i32,
        /// Whether the data replica answered.
        data_present: bool,
    },
    /// 0x1300.
    ReadFailure {
        /// Message.
        message: String,
        /// Requested consistency.
        consistency: Consistency,
        /// Responses received.
        received: i32,
        /// Responses required.
        block_for: i32,
        /// Replicas that failed.
        num_failures: i32,
        /// Whether the data replica answered.
        data_present: bool,
    },
    /// 0x1400.
    FunctionFailure {
        /// Message.
        message: String,
        /// Keyspace of the function.
        keyspace: String,
        /// Function name.
        function: String,
        /// Argument CQL types.
        arg_types: Vec<String>,
    },
    /// 0x1500.
    WriteFailure {
        /// Message.
        message: String,
        /// Requested consistency.
        consistency: Consistency,
        /// Acknowledgements received.
        received: i32,
        /// Acknowledgements required.
        block_for: i32,
        /// Replicas that failed.
        num_failures: i32,
        /// As in [`ErrorBody::WriteTimeout`].
        write_type: String,
    },
    /// 0x2000.
    SyntaxError(String),
    /// 0x2100.
    Unauthorized(String),
    /// 0x2200.
    Invalid(String),
    /// 0x2300.
    ConfigError(String),
    /// 0x2400. `table` is empty for a keyspace.
    AlreadyExists {
        /// Message.
        message: String,
        /// Keyspace.
        keyspace: String,
        /// Table (`""` when the keyspace itself exists).
        table: String,
    },
    /// 0x2500.
    Unprepared {
        /// Message.
        message: String,
        /// The unknown statement id.
        id: Bytes,
    },
}

impl ErrorBody {
    /// The wire error code (see [`codes`]).
    pub fn code(&self) -> i32 {
        match self {
            ErrorBody::ServerError(_) => SERVER_ERROR,
            ErrorBody::ProtocolError(_) => PROTOCOL_ERROR,
            ErrorBody::BadCredentials(_) => BAD_CREDENTIALS,
            ErrorBody::Unavailable { .. } => UNAVAILABLE,
            ErrorBody::Overloaded(_) => OVERLOADED,
            ErrorBody::IsBootstrapping(_) => IS_BOOTSTRAPPING,
            ErrorBody::TruncateError(_) => TRUNCATE_ERROR,
            ErrorBody::WriteTimeout { .. } => WRITE_TIMEOUT,
            ErrorBody::ReadTimeout { .. } => READ_TIMEOUT,
            ErrorBody::ReadFailure { .. } => READ_FAILURE,
            ErrorBody::FunctionFailure { .. } => FUNCTION_FAILURE,
            ErrorBody::WriteFailure { .. } => WRITE_FAILURE,
            ErrorBody::SyntaxError(_) => SYNTAX_ERROR,
            ErrorBody::Unauthorized(_) => UNAUTHORIZED,
            ErrorBody::Invalid(_) => INVALID,
            ErrorBody::ConfigError(_) => CONFIG_ERROR,
            ErrorBody::AlreadyExists { .. } => ALREADY_EXISTS,
            ErrorBody::Unprepared { .. } => UNPREPARED,
        }
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        match self {
            ErrorBody::ServerError(m)
            | ErrorBody::ProtocolError(m)
            | ErrorBody::BadCredentials(m)
            | ErrorBody::Overloaded(m)
            | ErrorBody::IsBootstrapping(m)
            | ErrorBody::TruncateError(m)
            | ErrorBody::SyntaxError(m)
            | ErrorBody::Unauthorized(m)
            | ErrorBody::Invalid(m)
            | ErrorBody::ConfigError(m)
            | ErrorBody::Unavailable { message: m, .. }
            | ErrorBody::WriteTimeout { message: m, .. }
            | ErrorBody::ReadTimeout { message: m, .. }
            | ErrorBody::ReadFailure { message: m, .. }
            | ErrorBody::FunctionFailure { message: m, .. }
            | ErrorBody::WriteFailure { message: m, .. }
            | ErrorBody::AlreadyExists { message: m, .. }
            | ErrorBody::Unprepared { message: m, .. } => m,
        }
    }

    /// The PROTOCOL_ERROR Cassandra sends for an unsupported version; every driver recognises
    /// its wording and downgrades (reference §1.3).
    pub fn unsupported_version(version: u8) -> ErrorBody {
        ErrorBody::ProtocolError(format!(
            "Invalid or unsupported protocol version ({version}); supported versions are (3/v3, 4/v4)"
        ))
    }

    /// Appends the ERROR body (v3/v4 layout; `_version` is kept for v5's differences).
    pub fn encode(&self, _version: u8, out: &mut impl BufMut) {
        wire::write_int(out, self.code());
        wire::write_string(out, self.message());
        match self {
            ErrorBody::Unavailable {
                consistency,
                required,
                alive,
                ..
            } => {
                wire::write_consistency(out, *consistency);
                wire::write_int(out, *required);
                wire::write_int(out, *alive);
            }
            ErrorBody::WriteTimeout {
                consistency,
                received,
                block_for,
                write_type,
                ..
            } => {
                wire::write_consistency(out, *consistency);
                wire::write_int(out, *received);
                wire::write_int(out, *block_for);
                wire::write_string(out, write_type);
            }
            ErrorBody::ReadTimeout {
                consistency,
                received,
                block_for,
                data_present,
                ..
            } => {
                wire::write_consistency(out, *consistency);
                wire::write_int(out, *received);
                wire::write_int(out, *block_for);
                wire::write_byte(out, u8::from(*data_present));
            }
            ErrorBody::ReadFailure {
                consistency,
                received,
                block_for,
                num_failures,
                data_present,
                ..
            } => {
                wire::write_consistency(out, *consistency);
                wire::write_int(out, *received);
                wire::write_int(out, *block_for);
                wire::write_int(out, *num_failures);
                wire::write_byte(out, u8::from(*data_present));
            }
            ErrorBody::FunctionFailure {
                keyspace,
                function,
                arg_types,
                ..
            } => {
                wire::write_string(out, keyspace);
                wire::write_string(out, function);
                wire::write_string_list(out, arg_types);
            }
            ErrorBody::WriteFailure {
                consistency,
                received,
                block_for,
                num_failures,
                write_type,
                ..
            } => {
                wire::write_consistency(out, *consistency);
                wire::write_int(out, *received);
                wire::write_int(out, *block_for);
                wire::write_int(out, *num_failures);
                wire::write_string(out, write_type);
            }
            ErrorBody::AlreadyExists {
                keyspace, table, ..
            } => {
                wire::write_string(out, keyspace);
                wire::write_string(out, table);
            }
            ErrorBody::Unprepared { id, .. } => wire::write_short_bytes(out, id),
            _ => {}
        }
    }

    /// Decodes an ERROR body.
    ///
    /// # Errors
    /// [`ResponseError::UnknownErrorCode`] or a wire error.
    pub fn decode(buf: &mut &[u8], _version: u8) -> Result<ErrorBody, ResponseError> {
        let code = wire::read_int(buf)?;
        let message = wire::read_string(buf)?.to_owned();
        let string = |buf: &mut &[u8]| -> Result<String, WireError> {
            Ok(wire::read_string(buf)?.to_owned())
        };
        Ok(match code {
            SERVER_ERROR => ErrorBody::ServerError(message),
            PROTOCOL_ERROR => ErrorBody::ProtocolError(message),
            BAD_CREDENTIALS => ErrorBody::BadCredentials(message),
            UNAVAILABLE => ErrorBody::Unavailable {
                message,
                consistency: wire::read_consistency(buf)?,
                required: wire::read_int(buf)?,
                alive: wire::read_int(buf)?,
            },
            OVERLOADED => ErrorBody::Overloaded(message),
            IS_BOOTSTRAPPING => ErrorBody::IsBootstrapping(message),
            TRUNCATE_ERROR => ErrorBody::TruncateError(message),
            WRITE_TIMEOUT => ErrorBody::WriteTimeout {
                message,
                consistency: wire::read_consistency(buf)?,
                received: wire::read_int(buf)?,
                block_for: wire::read_int(buf)?,
                write_type: string(buf)?,
            },
            READ_TIMEOUT => ErrorBody::ReadTimeout {
                message,
                consistency: wire::read_consistency(buf)?,
                received: wire::read_int(buf)?,
                block_for: wire::read_int(buf)?,
                data_present: wire::read_byte(buf)? != 0,
            },
            READ_FAILURE => ErrorBody::ReadFailure {
                message,
                consistency: wire::read_consistency(buf)?,
                received: wire::read_int(buf)?,
                block_for: wire::read_int(buf)?,
                num_failures: wire::read_int(buf)?,
                data_present: wire::read_byte(buf)? != 0,
            },
            FUNCTION_FAILURE => ErrorBody::FunctionFailure {
                message,
                keyspace: string(buf)?,
                function: string(buf)?,
                arg_types: wire::read_string_list(buf)?,
            },
            WRITE_FAILURE => ErrorBody::WriteFailure {
                message,
                consistency: wire::read_consistency(buf)?,
                received: wire::read_int(buf)?,
                block_for: wire::read_int(buf)?,
                num_failures: wire::read_int(buf)?,
                write_type: string(buf)?,
            },
            SYNTAX_ERROR => ErrorBody::SyntaxError(message),
            UNAUTHORIZED => ErrorBody::Unauthorized(message),
            INVALID => ErrorBody::Invalid(message),
            CONFIG_ERROR => ErrorBody::ConfigError(message),
            ALREADY_EXISTS => ErrorBody::AlreadyExists {
                message,
                keyspace: string(buf)?,
                table: string(buf)?,
            },
            UNPREPARED => ErrorBody::Unprepared {
                message,
                id: Bytes::copy_from_slice(wire::read_short_bytes(buf)?),
            },
            other => return Err(ResponseError::UnknownErrorCode(other)),
        })
    }
}

/// A framing error becomes the PROTOCOL_ERROR sent before closing the connection.
impl From<&FrameError> for ErrorBody {
    fn from(e: &FrameError) -> Self {
        ErrorBody::ProtocolError(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<ErrorBody> {
        let cl = Consistency::Quorum;
        vec![
            ErrorBody::ServerError("boom".into()),
            ErrorBody::ProtocolError("bad".into()),
            ErrorBody::BadCredentials("no".into()),
            ErrorBody::Unavailable {
                message: "u".into(),
                consistency: cl,
                required: 2,
                alive: 1,
            },
            ErrorBody::Overloaded("o".into()),
            ErrorBody::IsBootstrapping("b".into()),
            ErrorBody::TruncateError("t".into()),
            ErrorBody::WriteTimeout {
                message: "wt".into(),
                consistency: cl,
                received: 0,
                block_for: 1,
                write_type: "SIMPLE".into(),
            },
            ErrorBody::ReadTimeout {
                message: "rt".into(),
                consistency: cl,
                received: 0,
                block_for: 1,
                data_present: true,
            },
            ErrorBody::ReadFailure {
                message: "rf".into(),
                consistency: cl,
                received: 0,
                block_for: 1,
                num_failures: 1,
                data_present: false,
            },
            ErrorBody::FunctionFailure {
                message: "ff".into(),
                keyspace: "ks".into(),
                function: "f".into(),
                arg_types: vec!["int".into(), "text".into()],
            },
            ErrorBody::WriteFailure {
                message: "wf".into(),
                consistency: cl,
                received: 0,
                block_for: 1,
                num_failures: 1,
                write_type: "BATCH".into(),
            },
            ErrorBody::SyntaxError("s".into()),
            ErrorBody::Unauthorized("u".into()),
            ErrorBody::Invalid("i".into()),
            ErrorBody::ConfigError("c".into()),
            ErrorBody::AlreadyExists {
                message: "a".into(),
                keyspace: "ks".into(),
                table: String::new(),
            },
            ErrorBody::Unprepared {
                message: "p".into(),
                id: Bytes::from_static(&[1, 2, 3]),
            },
        ]
    }

    #[test]
    fn every_error_round_trips() {
        for e in all() {
            let mut out = Vec::new();
            e.encode(4, &mut out);
            assert_eq!(&out[..4], &e.code().to_be_bytes());
            let mut buf = &out[..];
            assert_eq!(ErrorBody::decode(&mut buf, 4), Ok(e.clone()));
            assert!(buf.is_empty());
            for cut in 0..out.len() {
                assert!(ErrorBody::decode(&mut &out[..cut], 4).is_err());
            }
        }
    }

    #[test]
    fn protocol_version_error_body() {
        let mut out = Vec::new();
        ErrorBody::unsupported_version(66).encode(4, &mut out);
        let msg =
            b"Invalid or unsupported protocol version (66); supported versions are (3/v3, 4/v4)";
        let mut expected = vec![0, 0, 0, 0x0A, 0, msg.len() as u8];
        expected.extend_from_slice(msg);
        assert_eq!(out, expected);
        let from_frame = ErrorBody::from(&FrameError::UnsupportedVersion {
            version: 66,
            stream: 0,
        });
        assert_eq!(from_frame, ErrorBody::unsupported_version(66));
    }

    #[test]
    fn unknown_code_is_an_error() {
        let body = [0, 0, 0x16, 0, 0, 0];
        assert_eq!(
            ErrorBody::decode(&mut &body[..], 4),
            Err(ResponseError::UnknownErrorCode(0x1600))
        );
    }
}
