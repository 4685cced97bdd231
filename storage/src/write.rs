//! Mutations: everything one statement (or batch) changes in one partition, applied as one
//! atomic fjall write batch.
//!
//! Each physical key holds exactly one [`StoredCell`]: the winner of Cassandra's reconciliation.
//! So a write reads the keys it touches (under the partition's lock stripe) and writes only
//! where the new cell wins; deletions are their own keys and shadow older cells at read time.
//! The same lock makes counter read-modify-write safe under concurrent increments.
//!
//! Every batch also rewrites the partition's size cell (see [`crate::key`]), which is how the
//! logical partition cap is enforced and how the physical partition's byte count is kept
//! exact. During a split, each write to the splitting partition is also written, in the same
//! batch, to the new partition that will own its token.

use std::collections::HashMap;
use std::sync::Arc;

use cql::types::{DataType, NativeType};

use crate::cell::StoredCell;
use crate::engine::{Storage, Table};
use crate::key::{self, ClusteringBound, ItemPath};
use crate::ring::Route;
use crate::{content, token, StorageError, TableId};

/// A deletion at a write timestamp (microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deletion {
    /// Data written at or before this timestamp is shadowed.
    pub timestamp: i64,
}

/// The primary-key liveness marker that INSERT writes (UPDATE does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    /// Write timestamp (microseconds).
    pub timestamp: i64,
    /// TTL in seconds (`None` or 0: no expiry).
    pub ttl: Option<u32>,
}

/// A clustering range deletion (`DELETE ... WHERE ck > x AND ck <= y`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeDeletion {
    /// Start bound (a clustering prefix, inclusive or exclusive).
    pub start: ClusteringBound,
    /// End bound.
    pub end: ClusteringBound,
    /// The deletion.
    pub deletion: Deletion,
}

/// One change to one column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnOp {
    /// Sets a simple (or frozen) cell.
    Set {
        /// Protocol-serialized value.
        value: Vec<u8>,
        /// Write timestamp (microseconds).
        timestamp: i64,
        /// TTL in seconds.
        ttl: Option<u32>,
    },
    /// Deletes a simple cell (a cell tombstone).
    Delete {
        /// Write timestamp (microseconds).
        timestamp: i64,
    },
    /// Deletes a whole collection (before an overwrite `SET c = {...}`, or `DELETE c`).
    DeleteCollection {
        /// Write timestamp; use `timestamp - 1` for the overwrite case, as Cassandra does.
        timestamp: i64,
    },
    /// Sets one collection element: list (key = a timeuuid), set (key = element, value
    /// empty), map (key = map key), non-frozen UDT (key = field index as a smallint).
    SetElement {
        /// Element key, protocol-serialized.
        key: Vec<u8>,
        /// Element value, protocol-serialized.
        value: Vec<u8>,
        /// Write timestamp (microseconds).
        timestamp: i64,
        /// TTL in seconds.
        ttl: Option<u32>,
    },
    /// Deletes one collection element.
    DeleteElement {
        /// Element key, protocol-serialized.
        key: Vec<u8>,
        /// Write timestamp (microseconds).
        timestamp: i64,
    },
    /// Adds `delta` to a counter.
    AddCounter {
        /// Increment (negative to decrement).
        delta: i64,
        /// Write timestamp (microseconds).
        timestamp: i64,
    },
}

/// A change to one column of a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnWrite {
    /// Column id (from the server's schema).
    pub column: u32,
    /// What happens to it.
    pub op: ColumnOp,
}

/// Changes to one row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowWrite {
    /// Full clustering, protocol-serialized, one value per clustering column.
    pub clustering: Vec<Vec<u8>>,
    /// The liveness marker (INSERT).
    pub liveness: Option<Liveness>,
    /// A row deletion (`DELETE FROM t WHERE pk = .. AND ck = ..`).
    pub deletion: Option<Deletion>,
    /// Column changes.
    pub columns: Vec<ColumnWrite>,
}

/// Everything that changes in one partition, applied atomically.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Mutation {
    /// Partition-key components, protocol-serialized, in key order.
    pub partition_key: Vec<Vec<u8>>,
    /// A partition deletion.
    pub partition_deletion: Option<Deletion>,
    /// Clustering range deletions.
    pub range_deletions: Vec<RangeDeletion>,
    /// Static column changes.
    pub static_columns: Vec<ColumnWrite>,
    /// Row changes.
    pub rows: Vec<RowWrite>,
}

/// A mutation turned into keyed items, ready to be reconciled and written.
struct Staged<'m> {
    table_id: TableId,
    table: Arc<Table>,
    addr: PartitionAddress,
    items: Vec<(Vec<u8>, Pending)>,
    mutation: &'m Mutation,
}

/// The serialized key, token and key prefix of a partition.
pub(crate) struct PartitionAddress {
    pub(crate) token: i64,
    pub(crate) prefix: Vec<u8>,
}

pub(crate) fn address(
    table: &Table,
    components: &[impl AsRef<[u8]>],
) -> Result<PartitionAddress, StorageError> {
    if components.len() != table.layout.partition_key.len() {
        return Err(StorageError::InvalidRequest(format!(
            "{} partition key components for a {}-column partition key",
            components.len(),
            table.layout.partition_key.len()
        )));
    }
    if components.len() > 1 && components.iter().any(|c| c.as_ref().len() > 0xffff) {
        return Err(StorageError::InvalidRequest(
            "partition key component longer than 65535 bytes".into(),
        ));
    }
    let parts: Vec<&[u8]> = components.iter().map(AsRef::as_ref).collect();
    let serialized = token::serialize_partition_key(&parts);
    if serialized.is_empty() {
        return Err(StorageError::InvalidRequest("key may not be empty".into()));
    }
    let token = token::token(&serialized);
    Ok(PartitionAddress {
        token,
        prefix: key::partition_prefix(token, &serialized),
    })
}

/// The element-key type of a collection column.
fn element_key_type(table: &Table, column: u32) -> Result<DataType, StorageError> {
    match table.layout.columns.get(&column).map(DataType::unfrozen) {
        Some(DataType::List(_)) => Ok(NativeType::Timeuuid.into()),
        Some(DataType::Set(t)) | Some(DataType::Map(t, _)) => Ok((**t).clone()),
        Some(DataType::Udt(_)) => Ok(NativeType::Smallint.into()),
        _ => Err(StorageError::InvalidRequest(format!(
            "column {column} is not a collection column of table {}",
            table.id
        ))),
    }
}

enum Pending {
    Cell(StoredCell),
    Counter { delta: i64, timestamp: i64 },
}

impl Storage {
    /// Applies a mutation to one partition as one atomic fjall batch. When it returns, the
    /// write is in fjall's journal in the OS (periodic sync) or fsynced (batch sync).
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`]; [`StorageError::InvalidRequest`] or
    /// [`StorageError::InvalidValue`] for malformed keys and values;
    /// [`StorageError::PartitionTooLarge`] when the write would take the partition past
    /// `logical_partition_max_bytes`; [`StorageError::Fjall`] on I/O failure;
    /// [`StorageError::Corrupt`] for unreadable existing data.
    pub fn apply(&self, table_id: TableId, mutation: &Mutation) -> Result<(), StorageError> {
        self.apply_all(&[(table_id, mutation)])
    }

    /// Applies mutations of several partitions (of one or more tables) as one atomic fjall
    /// batch: after a crash either all of them are there or none (a logged batch spanning
    /// partitions). Each partition must appear at most once.
    ///
    /// # Errors
    /// As [`Storage::apply`]; when any mutation fails nothing is written.
    pub fn apply_all(&self, writes: &[(TableId, &Mutation)]) -> Result<(), StorageError> {
        let staged = writes
            .iter()
            .map(|(table_id, m)| self.stage(*table_id, m))
            .collect::<Result<Vec<_>, _>>()?;
        self.inner.disk.check()?;
        let mask = staged
            .iter()
            .fold(0u64, |m, s| m | 1 << Self::stripe(s.table_id, s.addr.token));
        let guards = self.lock_stripes(mask);
        // Routing is read under the stripe locks: a split switches routing and then waits for
        // every stripe, so a write never lands in a partition that has stopped owning it.
        let views: Vec<_> = staged.iter().map(|s| s.table.ring.current()).collect();
        let mut batch = self.write_batch();
        let mut accounted = Vec::new();
        for (s, view) in staged.iter().zip(&views) {
            let route = view.route(s.addr.token);
            if let Some((delta, new_partition)) = self.write_staged(s, &route, &mut batch)? {
                accounted.push((s.table_id, route, delta, new_partition));
            }
        }
        if accounted.is_empty() {
            return self.after_write();
        }
        // Set before the commit, so a reader whose snapshot holds these items sees the flags.
        let marked: Vec<u8> = staged
            .iter()
            .map(|s| {
                let flags = content::flags_of(s.mutation);
                s.table
                    .ring
                    .content
                    .mark(flags, &self.inner.meta, &mut batch)
            })
            .collect();
        batch.commit()?;
        for (s, flags) in staged.iter().zip(marked) {
            s.table.ring.content.committed(flags);
        }
        for (_, route, delta, new_partition) in &accounted {
            route.primary.account(*delta, *new_partition);
            if let Some(dual) = route.dual {
                dual.account(*delta, *new_partition);
            }
        }
        drop(guards);
        for (table_id, route, ..) in &accounted {
            self.maybe_queue_split(*table_id, route.primary);
        }
        self.after_write()
    }

    /// Turns a mutation into keyed items (no storage access yet).
    fn stage<'m>(
        &self,
        table_id: TableId,
        mutation: &'m Mutation,
    ) -> Result<Staged<'m>, StorageError> {
        let table = self.table(table_id)?;
        let addr = address(&table, &mutation.partition_key)?;
        let now = self.now();
        let mut items: Vec<(Vec<u8>, Pending)> = Vec::new();
        let tomb = |d: &Deletion| {
            Pending::Cell(StoredCell::Tombstone {
                timestamp: d.timestamp,
                deleted_at: now,
            })
        };

        if let Some(d) = &mutation.partition_deletion {
            let mut k = addr.prefix.clone();
            k.push(key::SECTION_PARTITION_DELETION);
            items.push((k, tomb(d)));
        }
        let clustering = &table.layout.clustering;
        for rd in &mutation.range_deletions {
            let lo = key::start_bytes(clustering, &rd.start)?;
            let hi = key::end_bytes(clustering, &rd.end)?;
            let len = u16::try_from(lo.len())
                .map_err(|_| StorageError::InvalidRequest("range bound too long".into()))?;
            let mut k = addr.prefix.clone();
            k.push(key::SECTION_RANGE_TOMBSTONE);
            k.extend_from_slice(&len.to_be_bytes());
            k.extend_from_slice(&lo);
            k.extend_from_slice(&hi);
            items.push((k, tomb(&rd.deletion)));
        }
        let mut static_prefix = addr.prefix.clone();
        static_prefix.push(key::SECTION_STATIC);
        for cw in &mutation.static_columns {
            column_items(&table, &static_prefix, cw, now, &mut items)?;
        }
        for row in &mutation.rows {
            if row.clustering.len() != clustering.len() {
                return Err(StorageError::InvalidRequest(format!(
                    "{} clustering values for {} clustering columns",
                    row.clustering.len(),
                    clustering.len()
                )));
            }
            let mut row_prefix = addr.prefix.clone();
            row_prefix.push(key::SECTION_ROWS);
            key::encode_clustering(clustering, &row.clustering, &mut row_prefix)?;
            row_prefix.push(key::CLUSTERING_END);
            if let Some(d) = &row.deletion {
                items.push((path_key(&row_prefix, &ItemPath::RowDeletion), tomb(d)));
            }
            if let Some(l) = &row.liveness {
                let marker = StoredCell::live(l.timestamp, l.ttl, now, Vec::new());
                items.push((
                    path_key(&row_prefix, &ItemPath::Liveness),
                    Pending::Cell(marker),
                ));
            }
            for cw in &row.columns {
                column_items(&table, &row_prefix, cw, now, &mut items)?;
            }
        }
        if items.iter().any(|(k, _)| k.len() > 0xffff) {
            return Err(StorageError::InvalidRequest(
                "key longer than 64 KiB".into(),
            ));
        }
        Ok(Staged {
            table_id,
            table,
            addr,
            items,
            mutation,
        })
    }

    /// Reconciles a staged mutation with what is stored and adds the winning items and the
    /// new size cell to `batch`. Returns (byte delta, whether the partition is new), or None
    /// when nothing wins. Called with the partition's stripe locked.
    fn write_staged(
        &self,
        staged: &Staged<'_>,
        route: &Route<'_>,
        batch: &mut fjall::OwnedWriteBatch,
    ) -> Result<Option<(i64, i64)>, StorageError> {
        let Staged {
            table_id,
            addr,
            items,
            mutation,
            ..
        } = staged;
        let now = self.now();
        let ks = &route.primary.keyspace;
        // Every write stores the partition's size cell with its items and nothing removes it,
        // so its absence means the partition is new.
        let size_key = key::size_cell_key(&addr.prefix);
        let old_cell = match ks.get(&size_key)? {
            Some(v) => Some(key::decode_size_cell(&v)?),
            None => None,
        };
        // Within one mutation later items reconcile against earlier ones, not just disk.
        // Values: the winning cell and its encoded length.
        let mut written: HashMap<&[u8], (StoredCell, usize)> = HashMap::new();
        let mut delta: i64 = 0;
        for (k, pending) in items {
            let (existing, old_len) = match written.get(k.as_slice()) {
                Some((c, len)) => (Some(c.clone()), *len),
                // A partition without a size cell holds nothing yet: no item to look up.
                None if old_cell.is_none() => (None, 0),
                None => match ks.get(k)? {
                    Some(v) => (Some(StoredCell::decode(&v)?), v.len()),
                    None => (None, 0),
                },
            };
            let new = match pending {
                Pending::Cell(c) => c.clone(),
                Pending::Counter { delta, timestamp } => {
                    counter_sum(existing.as_ref(), *delta, *timestamp, now)?
                }
            };
            let wins = match (&existing, pending) {
                (None, _) | (Some(_), Pending::Counter { .. }) => true,
                (Some(old), Pending::Cell(_)) => new.wins_over(old),
            };
            if wins {
                let encoded = new.encode();
                let old_total = if existing.is_some() {
                    k.len() + old_len
                } else {
                    0
                };
                delta += (k.len() + encoded.len()) as i64 - old_total as i64;
                written.insert(k.as_slice(), (new, encoded.len()));
                if let Some(dual) = route.dual {
                    batch.insert(&dual.keyspace, k.as_slice(), encoded.clone());
                }
                batch.insert(ks, k.as_slice(), encoded);
            }
        }
        if written.is_empty() {
            return Ok(None);
        }
        let (old_size, old_flags) = match old_cell {
            Some((size, flags)) => (Some(size), flags),
            None => (None, 0),
        };
        let head_items = content::flags_of(mutation) & content::HEAD != 0;
        let flags = old_flags | if head_items { key::SIZE_FLAG_HEAD } else { 0 };
        let new_size = old_size.unwrap_or(0).saturating_add_signed(delta);
        let max = self.inner.limits.logical_partition_max_bytes;
        if delta > 0 && new_size > max {
            return Err(StorageError::PartitionTooLarge {
                table: *table_id,
                token: addr.token,
                bytes: new_size,
                max,
            });
        }
        let size_value = key::encode_size_cell(new_size, flags);
        if let Some(dual) = route.dual {
            batch.insert(&dual.keyspace, size_key.as_slice(), size_value);
        }
        batch.insert(ks, size_key.as_slice(), size_value);
        let new_partition = i64::from(old_size.is_none());
        if new_partition > 0 {
            delta += (size_key.len() + size_value.len()) as i64;
        }
        Ok(Some((delta, new_partition)))
    }
}

fn path_key(prefix: &[u8], path: &ItemPath) -> Vec<u8> {
    let mut k = prefix.to_vec();
    path.encode(&mut k);
    k
}

/// The new counter cell: the current (live) total plus `delta`. A counter deleted at or after
/// this increment stays deleted (Cassandra's counter deletions are final for older updates).
fn counter_sum(
    existing: Option<&StoredCell>,
    delta: i64,
    timestamp: i64,
    now: i64,
) -> Result<StoredCell, StorageError> {
    let (base, base_ts) = match existing {
        Some(c) => match c.live_value(now) {
            Some(v) => {
                let v: [u8; 8] = v
                    .try_into()
                    .map_err(|_| StorageError::corrupt("counter cell is not 8 bytes"))?;
                (i64::from_be_bytes(v), c.timestamp())
            }
            None if c.timestamp() >= timestamp => return Ok(c.clone()),
            None => (0, i64::MIN),
        },
        None => (0, i64::MIN),
    };
    Ok(StoredCell::Live {
        timestamp: timestamp.max(base_ts),
        value: base.wrapping_add(delta).to_be_bytes().to_vec(),
    })
}

fn column_items(
    table: &Table,
    row_prefix: &[u8],
    cw: &ColumnWrite,
    now: i64,
    items: &mut Vec<(Vec<u8>, Pending)>,
) -> Result<(), StorageError> {
    let col = cw.column;
    let element = |k: &[u8]| -> Result<Vec<u8>, StorageError> {
        let ty = element_key_type(table, col)?;
        let mut e = Vec::new();
        key::encode_value(&ty, k, &mut e)?;
        Ok(path_key(row_prefix, &ItemPath::Complex(col, Some(e))))
    };
    let tomb = |timestamp| {
        Pending::Cell(StoredCell::Tombstone {
            timestamp,
            deleted_at: now,
        })
    };
    let item = match &cw.op {
        ColumnOp::Set {
            value,
            timestamp,
            ttl,
        } => (
            path_key(row_prefix, &ItemPath::Cell(col)),
            Pending::Cell(StoredCell::live(*timestamp, *ttl, now, value.clone())),
        ),
        ColumnOp::Delete { timestamp } => {
            (path_key(row_prefix, &ItemPath::Cell(col)), tomb(*timestamp))
        }
        ColumnOp::DeleteCollection { timestamp } => (
            path_key(row_prefix, &ItemPath::Complex(col, None)),
            tomb(*timestamp),
        ),
        ColumnOp::SetElement {
            key,
            value,
            timestamp,
            ttl,
        } => (
            element(key)?,
            Pending::Cell(StoredCell::live(*timestamp, *ttl, now, value.clone())),
        ),
        ColumnOp::DeleteElement { key, timestamp } => (element(key)?, tomb(*timestamp)),
        ColumnOp::AddCounter { delta, timestamp } => (
            path_key(row_prefix, &ItemPath::Cell(col)),
            Pending::Counter {
                delta: *delta,
                timestamp: *timestamp,
            },
        ),
    };
    items.push(item);
    Ok(())
}
