//! `ShardError`: how a call through the [`super::Shards`] seam fails: the local store's own
//! error, or what a replicated group answers (no majority, no answer in time, a write its
//! replicas refused). Mapped to CQL errors with the rest in `crate::error`.

use cql::request::Consistency;
use serde::{Deserialize, Serialize};
use storage::{StorageError, TableId};

/// Why a shard call failed.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    /// The local store failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The group has no majority alive: Cassandra's Unavailable.
    #[error("unavailable: {alive} of {required} replicas alive")]
    Unavailable {
        /// The request's level.
        consistency: Consistency,
        /// Replicas the level needs.
        required: i32,
        /// Replicas alive.
        alive: i32,
    },
    /// A write was sent but not confirmed in time (it may still apply).
    #[error("write timed out")]
    WriteTimeout {
        /// The request's level.
        consistency: Consistency,
        /// Replicas the level needs.
        block_for: i32,
    },
    /// A read got no answer in time.
    #[error("read timed out")]
    ReadTimeout {
        /// The request's level.
        consistency: Consistency,
        /// Replicas the level needs.
        block_for: i32,
    },
    /// The group's replicas refused the write (deterministically, so all of them did).
    #[error("{0:?}")]
    Rejected(Rejected),
    /// The physical partition's throughput budget is spent (`crate::throughput`).
    #[error("request rate is large: retry after {retry_after_ms} ms")]
    Throttled {
        /// Milliseconds until the budget admits requests again.
        retry_after_ms: u64,
    },
}

/// A write every replica refuses alike, sent back from the group's leader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rejected {
    /// An invalid request or value.
    Invalid(String),
    /// The logical partition would grow past its cap.
    TooLarge {
        /// The table.
        table: TableId,
        /// The partition's token.
        token: i64,
        /// The size it would reach.
        bytes: u64,
        /// The cap.
        max: u64,
    },
}

impl Rejected {
    /// The refusal of a deterministic storage error; None for one that depends on the replica
    /// (I/O, a full disk), which must not be answered as a refusal.
    pub fn of(e: &StorageError) -> Option<Rejected> {
        match e {
            StorageError::InvalidValue { type_name, reason } => Some(Rejected::Invalid(format!(
                "Invalid {type_name} value: {reason}"
            ))),
            StorageError::InvalidRequest(m) => Some(Rejected::Invalid(m.clone())),
            StorageError::UnknownTable(_) => {
                Some(Rejected::Invalid("The table was dropped".into()))
            }
            StorageError::PartitionTooLarge {
                table,
                token,
                bytes,
                max,
            } => Some(Rejected::TooLarge {
                table: *table,
                token: *token,
                bytes: *bytes,
                max: *max,
            }),
            _ => None,
        }
    }

    /// Back into the storage error it came from.
    pub fn into_storage(self) -> StorageError {
        match self {
            Rejected::Invalid(m) => StorageError::InvalidRequest(m),
            Rejected::TooLarge {
                table,
                token,
                bytes,
                max,
            } => StorageError::PartitionTooLarge {
                table,
                token,
                bytes,
                max,
            },
        }
    }
}
