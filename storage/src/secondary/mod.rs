//! Secondary indexes (Cassandra's `CREATE INDEX` and SAI): entries `value → row` kept in the
//! store's index keyspace, in step with every write.
//!
//! # Design
//! - **Entries** ([`entry`]) are written in the same atomic batch as the rows they name, under
//!   the rows' write-lock stripes, so after a crash data and entries agree. A write adds the
//!   entries of the values it sets and removes none: a lookup reads every row an entry names
//!   and its caller checks the row against its restrictions, so stale entries (overwritten,
//!   deleted or expired values) cost a read, never a wrong row. A lookup removes the stale
//!   entries it meets, after reading their rows again under the rows' stripes.
//! - **Token order.** An entry key ends with the row's key, which starts with its token: the
//!   entries of one value list rows in scan order, so a lookup pages like a scan (same
//!   cursors) and serves any token range. A split or a move of a physical partition changes
//!   no entry: entries are keyed by token, not by physical partition.
//! - **Builds.** A new index is built by the `index` worker from the stored rows; until its
//!   build is done a lookup is the filtering scan it replaces. An imported range (a moved
//!   replica) gets its entries from its rows before the import returns. A build registers the index first (writers add entries
//!   from then on), waits out every writer that might have missed it (all stripes, once),
//!   then scans. Its readiness is kept in the meta store, after its entries.

mod builder;
mod entry;
mod lookup;
#[cfg(test)]
mod lookup_tests;
pub(crate) mod spec;

pub(crate) use builder::IndexBuilder;
pub use spec::{IndexLookup, IndexPlace, IndexSpec, IndexTarget, IndexValues};

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use fjall::{Keyspace, OwnedWriteBatch};

use crate::mutation::Mutation;
use crate::names::table_meta_prefix;
use crate::table::{TableId, TableLayout};
use crate::worker::Signal;
use crate::StorageError;
use entry::{index_base, mutation_entries, Indexer};

/// The keyspace holding every index entry of the store.
pub(crate) const INDEX_KEYSPACE: &str = "secondary_indexes";

/// One index of an open table.
pub(crate) struct IndexState {
    pub(crate) spec: IndexSpec,
    /// True once its entries name every stored row.
    ready: AtomicBool,
}

impl IndexState {
    /// True once lookups may use the index.
    pub(crate) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

type TableIndexes = Arc<[Arc<IndexState>]>;

/// The indexes of every open table.
pub(crate) struct SecondaryIndexes {
    /// The entries.
    pub(crate) ks: Keyspace,
    meta: Keyspace,
    tables: RwLock<HashMap<TableId, TableIndexes>>,
    /// True while any table has an index: writes to a store without any look no further.
    any: AtomicBool,
    /// Wakes the builder.
    pub(crate) signal: Signal,
}

/// Removes every key of `ks` starting with `prefix`.
fn remove_prefix(ks: &Keyspace, prefix: &[u8]) -> Result<(), StorageError> {
    let keys: Vec<fjall::Slice> = ks
        .prefix(prefix)
        .map(|g| g.key())
        .collect::<Result<_, _>>()?;
    for k in keys {
        ks.remove(k)?;
    }
    Ok(())
}

/// The meta key marking an index ready.
fn ready_key(table: TableId, spec: &IndexSpec) -> Vec<u8> {
    let mut k = table_meta_prefix("index", table);
    k.extend_from_slice(&spec.tag());
    k
}

impl SecondaryIndexes {
    /// The indexes of a store whose entries are in `ks` and readiness marks in `meta`.
    pub(crate) fn new(ks: Keyspace, meta: Keyspace) -> SecondaryIndexes {
        SecondaryIndexes {
            ks,
            meta,
            tables: RwLock::default(),
            any: AtomicBool::new(false),
            signal: Signal::default(),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<TableId, TableIndexes>> {
        self.tables.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<TableId, TableIndexes>> {
        self.tables.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The indexes of `table`, if it has any.
    pub(crate) fn of(&self, table: TableId) -> Option<TableIndexes> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.read().get(&table).cloned()
    }

    /// The index `spec` of `table`, if registered.
    pub(crate) fn find(&self, table: TableId, spec: &IndexSpec) -> Option<Arc<IndexState>> {
        self.of(table)?.iter().find(|s| s.spec == *spec).cloned()
    }

    /// Registers `table`'s indexes as its layout lists them: indexes kept keep their state,
    /// new ones are ready when the meta store says so (after a restart) and built otherwise;
    /// dropped ones lose their entries.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] on I/O failure.
    pub(crate) fn set(&self, table: TableId, layout: &TableLayout) -> Result<(), StorageError> {
        let old = self.read().get(&table).cloned();
        let mut states = Vec::new();
        for spec in &layout.indexes {
            if let Some(s) = old
                .as_ref()
                .and_then(|o| o.iter().find(|s| s.spec == *spec))
            {
                states.push(s.clone());
                continue;
            }
            let ready = self.meta.get(ready_key(table, spec))?.is_some();
            states.push(Arc::new(IndexState {
                spec: spec.clone(),
                ready: AtomicBool::new(ready),
            }));
        }
        for gone in old.iter().flat_map(|o| o.iter()) {
            if !layout.indexes.contains(&gone.spec) {
                self.remove_entries(table, Some(&gone.spec))?;
            }
        }
        {
            let mut tables = self.write();
            if states.is_empty() {
                tables.remove(&table);
            } else {
                tables.insert(table, states.into());
            }
            self.any.store(!tables.is_empty(), Ordering::Release);
        }
        self.signal.wake();
        Ok(())
    }

    /// Forgets a dropped table's indexes and removes their entries.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] on I/O failure.
    pub(crate) fn forget_table(&self, table: TableId) -> Result<(), StorageError> {
        {
            let mut tables = self.write();
            tables.remove(&table);
            self.any.store(!tables.is_empty(), Ordering::Release);
        }
        self.remove_entries(table, None)
    }

    /// Removes every entry of `table` (truncated), keeping its indexes ready: called with
    /// every write-lock stripe held.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] on I/O failure.
    pub(crate) fn clear(&self, table: TableId) -> Result<(), StorageError> {
        remove_prefix(&self.ks, &entry::table_base(table))
    }

    /// Removes the entries (and readiness marks) of one index of `table`, or of all of them.
    fn remove_entries(&self, table: TableId, spec: Option<&IndexSpec>) -> Result<(), StorageError> {
        let prefix = match spec {
            Some(s) => index_base(table, s),
            None => entry::table_base(table).to_vec(),
        };
        remove_prefix(&self.ks, &prefix)?;
        let marks = match spec {
            Some(s) => ready_key(table, s),
            None => table_meta_prefix("index", table),
        };
        remove_prefix(&self.meta, &marks)
    }

    /// Adds to `batch` the entries a mutation of `table` (laid out as `layout`, in the
    /// partition at `prefix`) writes for its indexes `states` (from [`SecondaryIndexes::of`],
    /// read under the partition's write-lock stripe, as this is called).
    ///
    /// # Errors
    /// [`StorageError::InvalidValue`] for a clustering value its type refuses.
    pub(crate) fn add_entries(
        &self,
        states: &[Arc<IndexState>],
        table: TableId,
        layout: &TableLayout,
        prefix: &[u8],
        mutation: &Mutation,
        batch: &mut OwnedWriteBatch,
    ) -> Result<(), StorageError> {
        let mut keys = Vec::new();
        for s in states.iter() {
            let Some(indexer) = Indexer::new(&s.spec, layout) else {
                continue;
            };
            let base = index_base(table, &s.spec);
            mutation_entries(&indexer, layout, &base, prefix, mutation, &mut keys)?;
        }
        for k in keys {
            batch.insert(&self.ks, k, []);
        }
        Ok(())
    }

    /// An index not yet ready, to build.
    fn next_build(&self) -> Option<(TableId, Arc<IndexState>)> {
        self.read().iter().find_map(|(t, states)| {
            states
                .iter()
                .find(|s| !s.is_ready())
                .map(|s| (*t, s.clone()))
        })
    }

    /// Marks a built index ready, unless it was dropped meanwhile.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] on I/O failure.
    fn built(&self, table: TableId, state: &IndexState) -> Result<bool, StorageError> {
        let registered = self
            .find(table, &state.spec)
            .is_some_and(|s| std::ptr::eq(Arc::as_ptr(&s), state));
        if !registered {
            return Ok(false);
        }
        self.meta.insert(ready_key(table, &state.spec), [])?;
        state.ready.store(true, Ordering::Release);
        Ok(true)
    }

    /// Indexes whose builds are not done.
    pub(crate) fn backlog(&self) -> u64 {
        self.read()
            .values()
            .flat_map(|s| s.iter())
            .filter(|s| !s.is_ready())
            .count() as u64
    }
}
