//! `QueryError`: every failure a request can meet, and its single mapping to a CQL ERROR body.

use bytes::Bytes;
use cql::request::Consistency;
use cql::response::ErrorBody;

/// A request that failed. Each variant is one native-protocol error code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// 0x2000: the statement does not parse.
    #[error("{0}")]
    Syntax(String),
    /// 0x2200: the statement is well formed but invalid (unknown table, wrong type, ...).
    #[error("{0}")]
    Invalid(String),
    /// 0x2300: a configuration problem (e.g. a bad replication map).
    #[error("{0}")]
    Config(String),
    /// 0x2400: CREATE of something that exists; `table` is empty for a keyspace.
    #[error("{message}")]
    AlreadyExists {
        /// Human message.
        message: String,
        /// Keyspace of the existing object.
        keyspace: String,
        /// Table (or type) name; empty for a keyspace.
        table: String,
    },
    /// 0x2500: EXECUTE of an id this node does not know.
    #[error("Prepared query with ID {} not found (either the query was not prepared on this host (maybe the host has been restarted?) or you have prepared too many queries and it has been evicted from the internal cache)", hex(.0))]
    Unprepared(Bytes),
    /// 0x000A: a broken request.
    #[error("{0}")]
    Protocol(String),
    /// 0x1000: the consistency level cannot be met by one replica.
    #[error("Cannot achieve consistency level {}{}", .consistency.name(), in_dc(.dc))]
    Unavailable {
        /// Requested consistency.
        consistency: Consistency,
        /// Replicas required.
        required: i32,
        /// Replicas alive.
        alive: i32,
        /// The datacenter short of replicas, for EACH_QUORUM (Cassandra names it).
        dc: Option<String>,
    },
    /// 0x1001: too much load.
    #[error("{0}")]
    Overloaded(String),
    /// 0x2100: not allowed.
    #[error("{0}")]
    Unauthorized(String),
    /// 0x0100: authentication failed.
    #[error("{0}")]
    BadCredentials(String),
    /// 0x1500: a write failed on the node (disk full, storage stopped); nothing was written.
    #[error("{0}")]
    WriteFailure(String),
    /// 0x0000: an internal failure (details are logged, not sent).
    #[error("{0}")]
    Server(String),
    /// 0x1200: a read (or another request) did not finish within its timeout.
    #[error("Operation timed out - received only 0 responses.")]
    ReadTimeout {
        /// The request's level.
        consistency: Consistency,
        /// Replicas it waited for.
        block_for: i32,
    },
    /// 0x1100: a write did not finish within its timeout; `batch` for a BATCH.
    #[error("Operation timed out - received only 0 responses.")]
    WriteTimeout {
        /// The write was a batch.
        batch: bool,
        /// The request's level.
        consistency: Consistency,
        /// Replicas it waited for.
        block_for: i32,
    },
    /// 0x1400: a user-defined function failed while running.
    #[error("{message}")]
    FunctionFailure {
        /// Cassandra's `execution of 'ks.f[int]' failed: ...`.
        message: String,
        /// The function's keyspace.
        keyspace: String,
        /// The function's name.
        function: String,
        /// Its argument types, as CQL.
        arg_types: Vec<String>,
    },
}

/// Cassandra's " in DC <dc>" suffix of an Unavailable message, when a datacenter is named.
fn in_dc(dc: &Option<String>) -> String {
    dc.as_ref()
        .map_or_else(String::new, |dc| format!(" in DC {dc}"))
}

fn hex(bytes: &Bytes) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl QueryError {
    /// Shorthand for [`QueryError::Invalid`].
    pub fn invalid(message: impl Into<String>) -> Self {
        QueryError::Invalid(message.into())
    }

    /// The ERROR response for this error.
    pub fn to_response(&self) -> cql::response::Response {
        cql::response::Response::Error(self.to_error_body())
    }

    /// The wire ERROR body for this error: the one place error variants meet protocol codes.
    pub fn to_error_body(&self) -> ErrorBody {
        let message = self.to_string();
        match self {
            QueryError::Syntax(_) => ErrorBody::SyntaxError(message),
            QueryError::Invalid(_) => ErrorBody::Invalid(message),
            QueryError::Config(_) => ErrorBody::ConfigError(message),
            QueryError::AlreadyExists {
                keyspace, table, ..
            } => ErrorBody::AlreadyExists {
                message,
                keyspace: keyspace.clone(),
                table: table.clone(),
            },
            QueryError::Unprepared(id) => ErrorBody::Unprepared {
                message,
                id: id.clone(),
            },
            QueryError::Protocol(_) => ErrorBody::ProtocolError(message),
            QueryError::Unavailable {
                consistency,
                required,
                alive,
                ..
            } => ErrorBody::Unavailable {
                message,
                consistency: *consistency,
                required: *required,
                alive: *alive,
            },
            QueryError::Overloaded(_) => ErrorBody::Overloaded(message),
            QueryError::Unauthorized(_) => ErrorBody::Unauthorized(message),
            QueryError::BadCredentials(_) => ErrorBody::BadCredentials(message),
            QueryError::Server(_) => ErrorBody::ServerError(message),
            QueryError::ReadTimeout {
                consistency,
                block_for,
            } => ErrorBody::ReadTimeout {
                message,
                consistency: *consistency,
                received: 0,
                block_for: *block_for,
                data_present: false,
            },
            QueryError::WriteTimeout {
                batch,
                consistency,
                block_for,
            } => ErrorBody::WriteTimeout {
                message,
                consistency: *consistency,
                received: 0,
                block_for: *block_for,
                write_type: if *batch { "BATCH" } else { "SIMPLE" }.to_string(),
            },
            QueryError::FunctionFailure {
                keyspace,
                function,
                arg_types,
                ..
            } => ErrorBody::FunctionFailure {
                message,
                keyspace: keyspace.clone(),
                function: function.clone(),
                arg_types: arg_types.clone(),
            },
            QueryError::WriteFailure(_) => ErrorBody::WriteFailure {
                message,
                consistency: cql::request::Consistency::One,
                received: 0,
                block_for: 1,
                num_failures: 1,
                write_type: "SIMPLE".into(),
            },
        }
    }
}

impl From<crate::shard::ShardError> for QueryError {
    fn from(e: crate::shard::ShardError) -> Self {
        use crate::shard::ShardError as S;
        match e {
            S::Storage(e) => e.into(),
            S::Rejected(r) => r.into_storage().into(),
            S::Unavailable {
                consistency,
                required,
                alive,
            } => QueryError::Unavailable {
                consistency,
                required,
                alive,
                dc: None,
            },
            S::WriteTimeout {
                consistency,
                block_for,
            } => QueryError::WriteTimeout {
                batch: false,
                consistency,
                block_for,
            },
            S::ReadTimeout {
                consistency,
                block_for,
            } => QueryError::ReadTimeout {
                consistency,
                block_for,
            },
            S::Throttled { retry_after_ms } => {
                QueryError::Overloaded(crate::throughput::rate_is_large(retry_after_ms))
            }
        }
    }
}

impl From<storage::StorageError> for QueryError {
    fn from(e: storage::StorageError) -> Self {
        use storage::StorageError as S;
        match e {
            S::InvalidValue { type_name, reason } => {
                QueryError::Invalid(format!("Invalid {type_name} value: {reason}"))
            }
            S::InvalidRequest(m) => QueryError::Invalid(capitalize(&m)),
            S::InvalidCursor => QueryError::Protocol("Invalid value for the paging state".into()),
            e @ S::DiskFull { .. } => QueryError::WriteFailure(capitalize(&e.to_string())),
            other if other.is_stopped() => {
                tracing::error!("storage refused a write: it stopped after an I/O error");
                QueryError::WriteFailure(
                    "Storage stopped accepting writes after an I/O error (see the server log); \
                     restart the node once the cause (e.g. a full or failing disk) is fixed"
                        .into(),
                )
            }
            other => {
                tracing::error!(error = %other, "storage failure");
                QueryError::Server("Internal storage error; see the server log".to_string())
            }
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

impl From<cql::ParseError> for QueryError {
    fn from(e: cql::ParseError) -> Self {
        if e.invalid {
            return QueryError::Invalid(e.message);
        }
        QueryError::Syntax(e.to_string())
    }
}

/// The answer to a request whose execution panicked: the details are in the server log.
pub(crate) fn internal_error() -> cql::response::Response {
    QueryError::Server("Internal error while processing the request; see the server log".into())
        .to_response()
}
