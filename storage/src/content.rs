//! Which kinds of shadowing items a table has ever stored, so reads skip lookups for kinds it
//! never had.
//!
//! A point read must look for the partition's head (partition deletion, statics, range
//! tombstones) and the row's deletion, but most tables only ever receive inserts and updates.
//! Each flag is sticky: set (in memory, then persisted as its own meta key in the same fjall
//! batch) by the first write carrying such an item, and never cleared. Tables whose flags were
//! not tracked from their creation (older data directories) have every flag set.
//!
//! Ordering: a writer sets the in-memory flag *before* committing its batch, and a reader
//! checks it *after* taking its snapshot (or, for a read without one, after its lookup), so
//! a read that could see such an item always sees the flag (a flag set by a batch that then
//! fails only costs a lookup).

use std::sync::atomic::{AtomicU8, Ordering};

use fjall::{Keyspace, OwnedWriteBatch};

use crate::mutation::Mutation;
use crate::names::table_meta_prefix;
use crate::{StorageError, TableId};

/// Partition deletions, static cells or range tombstones (the partition's head).
pub(crate) const HEAD: u8 = 1;
/// Row deletions.
pub(crate) const ROW_DELETIONS: u8 = 2;
/// Separate cell items of regular columns in rows: the older layout (see [`crate::bundle`]),
/// kept by counter tables, tables from before row items and tables with a row item too large
/// to merge into.
pub(crate) const SEPARATE_CELLS: u8 = 4;
/// Rows whose liveness item carries bundled cells.
pub(crate) const BUNDLES: u8 = 8;
/// What a table with untracked content must assume: it predates bundles, so it may hold
/// every kind of item except bundles (and, its separate-cells flag being set, never gets any).
const ALL: u8 = HEAD | ROW_DELETIONS | SEPARATE_CELLS;

/// The meta-key suffix of each flag, and of the marker saying the flags are tracked.
const FLAG_KEYS: [(u8, &str); 4] = [
    (HEAD, "head"),
    (ROW_DELETIONS, "row_deletions"),
    (SEPARATE_CELLS, "separate_cells"),
    (BUNDLES, "bundles"),
];
const TRACKED: &str = "tracked";
/// Marks tables whose separate row cells are tracked (created since row bundles exist). A
/// table tracked before that stores every row cell separately without the flag saying so.
const CELLS_TRACKED: &str = "cells_tracked";

/// The sticky content flags of one table.
#[derive(Debug)]
pub(crate) struct ContentFlags {
    table: TableId,
    /// Flags readers must honour (set before the batch that needs them commits).
    flags: AtomicU8,
    /// Flags whose meta key is known committed; until then every batch needing a flag writes
    /// its key too, so no committed item can outlive its flag in a crash.
    persisted: AtomicU8,
}

fn key(table: TableId, name: &str) -> Vec<u8> {
    let mut k = table_meta_prefix("content", table);
    k.extend_from_slice(name.as_bytes());
    k
}

impl ContentFlags {
    /// Loads a table's flags; `new_table` starts tracking them (none set).
    pub(crate) fn load(
        meta: &Keyspace,
        table: TableId,
        new_table: bool,
    ) -> Result<ContentFlags, StorageError> {
        let flags = if new_table {
            // A crash between the two inserts leaves a table that assumes more, never less.
            meta.insert(key(table, CELLS_TRACKED), [])?;
            meta.insert(key(table, TRACKED), [])?;
            0
        } else if meta.get(key(table, TRACKED))?.is_none() {
            ALL
        } else {
            let mut flags = 0;
            for (flag, name) in FLAG_KEYS {
                if meta.get(key(table, name))?.is_some() {
                    flags |= flag;
                }
            }
            if meta.get(key(table, CELLS_TRACKED))?.is_none() {
                flags |= SEPARATE_CELLS;
            }
            flags
        };
        Ok(ContentFlags {
            table,
            flags: AtomicU8::new(flags),
            persisted: AtomicU8::new(flags),
        })
    }

    /// True when the table may hold items of kind `flag`. Call after taking the snapshot
    /// the read uses (a read without a snapshot calls it again after its lookup).
    pub(crate) fn may_have(&self, flag: u8) -> bool {
        self.flags.load(Ordering::SeqCst) & flag != 0
    }

    /// Every flag readers honour now (an exported range carries them to its importer).
    pub(crate) fn bits(&self) -> u8 {
        self.flags.load(Ordering::SeqCst)
    }

    /// Records that the batch about to be committed holds items of the kinds in `flags`:
    /// sets them now and adds the meta key of each one not yet persisted to `batch`. Call
    /// before committing it; returns the flags to pass to [`ContentFlags::committed`] after.
    pub(crate) fn mark(&self, flags: u8, meta: &Keyspace, batch: &mut OwnedWriteBatch) -> u8 {
        let missing = flags & !self.persisted.load(Ordering::SeqCst);
        if missing == 0 {
            return 0;
        }
        self.flags.fetch_or(missing, Ordering::SeqCst);
        for (flag, name) in FLAG_KEYS {
            if missing & flag != 0 {
                batch.insert(meta, key(self.table, name), []);
            }
        }
        missing
    }

    /// The batch that [`ContentFlags::mark`] added `flags` to has committed.
    pub(crate) fn committed(&self, flags: u8) {
        if flags != 0 {
            self.persisted.fetch_or(flags, Ordering::SeqCst);
        }
    }

    /// The meta-key prefix of a table's flags (removed when the table is dropped).
    pub(crate) fn meta_prefix(table: TableId) -> Vec<u8> {
        table_meta_prefix("content", table)
    }
}

/// The flags a mutation's items need.
pub(crate) fn flags_of(m: &Mutation) -> u8 {
    let mut flags = 0;
    if m.partition_deletion.is_some()
        || !m.range_deletions.is_empty()
        || !m.static_columns.is_empty()
    {
        flags |= HEAD;
    }
    if m.rows.iter().any(|r| r.deletion.is_some()) {
        flags |= ROW_DELETIONS;
    }
    flags
}
