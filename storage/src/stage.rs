//! Staging a mutation: turning what it changes into keyed items (cells, markers, tombstones,
//! counter deltas and row bundles) before anything is read or written.

use std::sync::Arc;

use cql::types::{DataType, NativeType};

use crate::cell::StoredCell;
use crate::key::{self, path_key, ItemPath};
use crate::mutation::{ColumnOp, ColumnWrite, Deletion, Mutation};
use crate::open_tables::Table;
use crate::partition_address::{address, PartitionAddress};
use crate::{StorageError, TableId};

/// A mutation turned into keyed items, ready to be reconciled and written.
pub(crate) struct Staged<'m> {
    pub(crate) table_id: TableId,
    pub(crate) table: Arc<Table>,
    pub(crate) addr: PartitionAddress,
    pub(crate) items: Vec<Item<'m>>,
    pub(crate) mutation: &'m Mutation,
    /// The time (seconds) the mutation's TTLs and tombstones were stamped with.
    pub(crate) now: i64,
}

/// One keyed change of a staged mutation (its values borrowed from the mutation).
pub(crate) struct Item<'m> {
    pub(crate) key: Vec<u8>,
    pub(crate) pending: Pending<'m>,
    /// For a regular row's liveness item or simple cell: the length of the row's key prefix
    /// (everything before the item path), to find the row's other items.
    pub(crate) row: Option<usize>,
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

/// What one keyed change does.
pub(crate) enum Pending<'m> {
    Cell(StoredCell),
    Counter {
        delta: i64,
        timestamp: i64,
    },
    /// An INSERT's liveness marker (a plain marker, empty value) and the simple cells it
    /// sets with the marker's timestamp and TTL, in column order: merged into the row's item
    /// as plain entries (see [`crate::bundle`]).
    Row {
        marker: StoredCell,
        cells: Vec<(u32, &'m [u8])>,
    },
}

/// Turns a mutation of `table` into keyed items stamped with the time `now` (seconds), with
/// no storage access yet.
///
/// # Errors
/// [`StorageError::InvalidRequest`] or [`StorageError::InvalidValue`] for malformed keys,
/// clustering values, bounds or collection elements.
pub(crate) fn stage<'m>(
    table: Arc<Table>,
    mutation: &'m Mutation,
    now: i64,
) -> Result<Staged<'m>, StorageError> {
    let table_id = table.id;
    let addr = address(&table.layout, &mutation.partition_key)?;
    let mut items: Vec<Item<'m>> = Vec::new();
    let item = |key, pending| Item {
        key,
        pending,
        row: None,
    };
    let tomb = |d: &Deletion| {
        Pending::Cell(StoredCell::Tombstone {
            timestamp: d.timestamp,
            deleted_at: now,
        })
    };

    if let Some(d) = &mutation.partition_deletion {
        let mut k = addr.prefix.clone();
        k.push(key::SECTION_PARTITION_DELETION);
        items.push(item(k, tomb(d)));
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
        items.push(item(k, tomb(&rd.deletion)));
    }
    if !mutation.static_columns.is_empty() {
        let static_prefix = key::extended(&addr.prefix, &[key::SECTION_STATIC], 0);
        for cw in &mutation.static_columns {
            items.push(item_of(&table, &static_prefix, cw, now)?);
        }
    }
    for row in &mutation.rows {
        if row.clustering.len() != clustering.len() {
            return Err(StorageError::InvalidRequest(format!(
                "{} clustering values for {} clustering columns",
                row.clustering.len(),
                clustering.len()
            )));
        }
        // Room for the encoded clustering (each value and its terminator) and its end.
        let reserve = row.clustering.iter().map(|v| v.len() + 2).sum::<usize>() + 1;
        let mut row_prefix = key::extended(&addr.prefix, &[key::SECTION_ROWS], reserve);
        key::encode_clustering(clustering, &row.clustering, &mut row_prefix)?;
        row_prefix.push(key::CLUSTERING_END);
        if let Some(d) = &row.deletion {
            items.push(item(path_key(&row_prefix, &ItemPath::RowDeletion), tomb(d)));
        }
        let row_len = Some(row_prefix.len());
        // An INSERT's simple cells written with its timestamp and TTL go with its marker.
        let mut bundled: Vec<(u32, &'m [u8])> = Vec::new();
        if let Some(l) = &row.liveness {
            let ttl = l.ttl.filter(|t| *t > 0);
            for cw in &row.columns {
                if let ColumnOp::Set {
                    value,
                    timestamp,
                    ttl: cell_ttl,
                } = &cw.op
                {
                    if *timestamp == l.timestamp && cell_ttl.filter(|t| *t > 0) == ttl {
                        bundled.push((cw.column, value.as_slice()));
                    }
                }
            }
            bundled.sort_by_key(|(c, _)| *c);
            if bundled.windows(2).any(|w| w[0].0 == w[1].0) {
                bundled.clear();
            }
        }
        // The row's bundle (with a liveness) is the item at this index, columns sorted.
        let bundle_at = row.liveness.as_ref().map(|_| items.len());
        if let Some(l) = &row.liveness {
            items.push(Item {
                key: path_key(&row_prefix, &ItemPath::Liveness),
                pending: Pending::Row {
                    marker: StoredCell::live(l.timestamp, l.ttl, now, Vec::new()),
                    cells: bundled,
                },
                row: row_len,
            });
        }
        for cw in &row.columns {
            let in_bundle = match bundle_at.and_then(|at| items.get(at)).map(|i| &i.pending) {
                Some(Pending::Row { cells, .. }) => {
                    cells.binary_search_by_key(&cw.column, |(c, _)| *c).is_ok()
                }
                _ => false,
            };
            if in_bundle {
                continue;
            }
            let mut it = item_of(&table, &row_prefix, cw, now)?;
            if matches!(
                cw.op,
                ColumnOp::Set { .. } | ColumnOp::Delete { .. } | ColumnOp::AddCounter { .. }
            ) {
                it.row = row_len;
            }
            items.push(it);
        }
    }
    if items.iter().any(|i| i.key.len() > 0xffff) {
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
        now,
    })
}

/// The item of one column change (`row` unset: the caller marks regular row cells).
fn item_of(
    table: &Table,
    row_prefix: &[u8],
    cw: &ColumnWrite,
    now: i64,
) -> Result<Item<'static>, StorageError> {
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
    Ok(Item {
        key: item.0,
        pending: item.1,
        row: None,
    })
}
