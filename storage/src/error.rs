//! `StorageError`: every way a storage call can fail.

use crate::TableId;

/// An error from the storage engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// fjall (I/O, journal, poisoning) failed.
    #[error("fjall: {0}")]
    Fjall(#[from] fjall::Error),
    /// An I/O error outside fjall (directory creation, sync thread).
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// Bytes read from disk do not decode: the store is corrupt or from another format.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// A caller-supplied value is not a valid serialization of its type.
    #[error("invalid {type_name} value: {reason}")]
    InvalidValue {
        /// The CQL type the value should have.
        type_name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A mutation or read request is malformed (wrong number of key components, ...).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The table was never created (or was dropped).
    #[error("unknown table {0}")]
    UnknownTable(TableId),
    /// A write would take one logical partition (partition key) past
    /// `logical_partition_max_bytes`.
    #[error(
        "partition key with token {token} of table {table} would grow to {bytes} bytes, \
         exceeding logical_partition_max_bytes ({max}): partition too large"
    )]
    PartitionTooLarge {
        /// The table.
        table: TableId,
        /// The partition key's token.
        token: i64,
        /// The size the partition would have had.
        bytes: u64,
        /// The cap.
        max: u64,
    },
    /// The data directory's file system has less free space than `min_free_disk_bytes`:
    /// writes are refused (nothing is written) until space returns.
    #[error(
        "not enough free disk space for writes: {free} bytes free, min_free_disk_bytes is {min_free}"
    )]
    DiskFull {
        /// Free bytes measured.
        free: u64,
        /// The threshold.
        min_free: u64,
    },
    /// A paging cursor does not belong to this read.
    #[error("invalid paging cursor")]
    InvalidCursor,
}

impl StorageError {
    /// True when fjall has stopped after a failed journal write (it is poisoned): no write
    /// can succeed until the node restarts.
    pub fn is_stopped(&self) -> bool {
        matches!(self, StorageError::Fjall(fjall::Error::Poisoned))
    }

    pub(crate) fn corrupt(what: impl Into<String>) -> Self {
        StorageError::Corrupt(what.into())
    }

    pub(crate) fn invalid(type_name: impl ToString, reason: impl Into<String>) -> Self {
        StorageError::InvalidValue {
            type_name: type_name.to_string(),
            reason: reason.into(),
        }
    }
}
