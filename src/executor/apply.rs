//! Writing mutations: those of one partition of one table are merged, then every partition
//! goes to the shards in one atomic call.

use crate::error::QueryError;
use crate::schema::{self, Table};
use crate::shard::Shards;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Writes grouped by (table id, partition key).
type WritesByPartition = BTreeMap<(u128, Vec<Vec<u8>>), (Arc<Table>, storage::Mutation)>;

/// Applies mutations, merging those of one partition of one table into one atomic write.
///
/// # Errors
/// The storage error of the write, with the partition named when it grew too large.
pub(crate) fn apply(
    shards: &dyn Shards,
    writes: Vec<(Arc<Table>, storage::Mutation)>,
) -> Result<(), QueryError> {
    // Statements on one partition (every single-statement write) need no merging.
    let merged: Vec<(Arc<Table>, storage::Mutation)> = if writes.len() == 1 {
        writes
    } else {
        let mut by_partition: WritesByPartition = BTreeMap::new();
        for (table, m) in writes {
            let key = (table.id.as_u128(), m.partition_key.clone());
            match by_partition.get_mut(&key) {
                Some((_, into)) => {
                    into.partition_deletion = match (into.partition_deletion, m.partition_deletion)
                    {
                        (Some(a), Some(b)) => Some(if a.timestamp >= b.timestamp { a } else { b }),
                        (a, b) => a.or(b),
                    };
                    into.range_deletions.extend(m.range_deletions);
                    into.static_columns.extend(m.static_columns);
                    into.rows.extend(m.rows);
                }
                None => {
                    by_partition.insert(key, (table, m));
                }
            }
        }
        by_partition.into_values().collect()
    };
    // One atomic storage write for every partition: a logged batch spanning partitions
    // is all there or not at all after a crash.
    let writes: Vec<(storage::TableId, &storage::Mutation)> = merged
        .iter()
        .map(|(table, m)| (schema::table_id(table), m))
        .collect();
    shards.apply(&writes).map_err(|e| {
        use crate::shard::{Rejected, ShardError};
        let culprit = match &e {
            ShardError::Storage(storage::StorageError::PartitionTooLarge {
                table, token, ..
            })
            | ShardError::Rejected(Rejected::TooLarge { table, token, .. }) => {
                merged.iter().find(|(t, m)| {
                    schema::table_id(t) == *table
                        && storage::token::partition_token(&m.partition_key) == *token
                })
            }
            _ => None,
        };
        match culprit {
            Some((table, m)) => crate::schema::write_error(e, table, &m.partition_key),
            None => e.into(),
        }
    })
}
