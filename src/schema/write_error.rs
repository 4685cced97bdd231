//! The error of a failed write, with the table's names: the logical-partition cap becomes a
//! clear InvalidRequest naming the table and the partition key.

use super::Table;
use crate::error::QueryError;

/// A failed write: the logical-partition cap becomes a clear InvalidRequest naming the table
/// and the partition key; other storage errors map as usual.
pub fn write_error(
    e: crate::shard::ShardError,
    table: &Table,
    partition_key: &[Vec<u8>],
) -> QueryError {
    use crate::shard::ShardError;
    let e = match e {
        ShardError::Rejected(r) => ShardError::Storage(r.into_storage()),
        other => other,
    };
    match e {
        ShardError::Storage(storage::StorageError::PartitionTooLarge { bytes, max, .. }) => {
            let key: Vec<String> = table
                .partition_key()
                .zip(partition_key)
                .map(|(c, b)| {
                    cql::types::Value::decode(&c.data_type, b)
                        .map(|v| v.to_cql_literal())
                        .unwrap_or_else(|_| "?".into())
                })
                .collect();
            QueryError::Invalid(format!(
                "Partition ({}) of table {}.{} would grow to {bytes} bytes, over logical_partition_max_bytes ({max}); the write was rejected",
                key.join(", "),
                table.keyspace,
                table.name
            ))
        }
        other => other.into(),
    }
}
