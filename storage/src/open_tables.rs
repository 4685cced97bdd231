//! The open tables: what storage knows of each table (its layout and its ring of physical
//! partitions), by id, as every request and background worker looks them up.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::ring::TableRing;
use crate::{StorageError, TableId, TableLayout};

/// One table as storage knows it.
pub(crate) struct Table {
    pub(crate) id: TableId,
    pub(crate) layout: TableLayout,
    /// Routing to physical partitions (kept across layout updates).
    pub(crate) ring: Arc<TableRing>,
}

impl Table {
    /// The keyspace of the first physical partition (tests poke at raw keys through it).
    #[cfg(test)]
    pub(crate) fn keyspace(&self) -> fjall::Keyspace {
        self.ring.current().parts[0].keyspace.clone()
    }
}

/// Tables by id (a fast hash: every request looks its table up).
type ById = HashMap<TableId, Arc<Table>, foldhash::fast::RandomState>;

/// The open tables.
#[derive(Default)]
pub(crate) struct OpenTables {
    tables: RwLock<ById>,
}

impl OpenTables {
    /// The open table `id`.
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`].
    pub(crate) fn get(&self, id: TableId) -> Result<Arc<Table>, StorageError> {
        self.tables
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
            .ok_or(StorageError::UnknownTable(id))
    }

    /// Adds `table`, or replaces the open table of its id.
    pub(crate) fn insert(&self, table: Table) {
        self.write().insert(table.id, Arc::new(table));
    }

    /// Forgets table `id`.
    pub(crate) fn remove(&self, id: TableId) {
        self.write().remove(&id);
    }

    /// Every open table.
    pub(crate) fn all(&self) -> Vec<Arc<Table>> {
        let tables = self.tables.read().unwrap_or_else(|p| p.into_inner());
        tables.values().cloned().collect()
    }

    /// The active memtable of every physical partition of every table.
    pub(crate) fn active_memtables(&self) -> Vec<Arc<lsm_tree::Memtable>> {
        self.all()
            .iter()
            .flat_map(|table| table.ring.current().parts.clone())
            .map(|part| fjall::AbstractTree::active_memtable(&part.keyspace.tree))
            .collect()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, ById> {
        self.tables.write().unwrap_or_else(|p| p.into_inner())
    }
}
