//! `LocalShards`: the [`Shards`] seam over this node's own fjall store, whose ring routes each
//! token to the physical partition that owns it.

use super::{CasDecision, CasError, PartitionLocks, ShardError, Shards};
use storage::{
    Cursor, IndexLookup, Mutation, NearestRow, PartitionSlice, ScanPage, Slice, Storage, TableId,
    TableLayout, TokenRange, VectorIndexSpec,
};

/// Every physical partition of this node, read and written in place.
pub struct LocalShards {
    storage: Storage,
    cas_locks: PartitionLocks,
}

impl LocalShards {
    /// The shards of `storage`.
    pub fn new(storage: Storage) -> LocalShards {
        LocalShards {
            storage,
            cas_locks: PartitionLocks::default(),
        }
    }
}

impl Shards for LocalShards {
    fn apply(&self, writes: &[(TableId, &Mutation)]) -> Result<(), ShardError> {
        Ok(self.storage.apply_all(writes)?)
    }

    fn read(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        slice: &Slice,
    ) -> Result<PartitionSlice, ShardError> {
        Ok(self.storage.read_partition(table, partition_key, slice)?)
    }

    fn scan(
        &self,
        table: TableId,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, ShardError> {
        Ok(self.storage.scan(table, range, limit, cursor)?)
    }

    fn index_scan(
        &self,
        table: TableId,
        lookup: &IndexLookup,
        range: TokenRange,
        limit: usize,
        cursor: Option<&Cursor>,
    ) -> Result<ScanPage, ShardError> {
        Ok(self
            .storage
            .index_scan(table, lookup, range, limit, cursor)?)
    }

    fn nearest(
        &self,
        table: TableId,
        range: TokenRange,
        index: &VectorIndexSpec,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<NearestRow>, ShardError> {
        Ok(self.storage.nearest(table, range, index.column, query, k)?)
    }

    fn compare_and_set(
        &self,
        table: TableId,
        partition_key: &[Vec<u8>],
        decide: &mut CasDecision<'_>,
    ) -> Result<bool, CasError> {
        let _guard = self.cas_locks.lock(table.0, partition_key);
        match decide(self).map_err(CasError::Decide)? {
            Some(mutation) => {
                self.storage
                    .apply(table, &mutation)
                    .map_err(|e| CasError::Apply(e.into()))?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn write_stalled(&self, table: TableId) -> bool {
        self.storage.write_stalled(table)
    }

    fn deferring_sync(&self, work: &mut dyn FnMut()) -> bool {
        self.storage.deferring_journal_flush(work).1
    }

    fn sync(&self) -> Result<(), ShardError> {
        Ok(self.storage.flush_journal()?)
    }

    fn create_table(&self, table: TableId, layout: TableLayout) -> Result<(), ShardError> {
        Ok(self.storage.create_table(table, layout)?)
    }

    fn drop_table(&self, table: TableId) -> Result<(), ShardError> {
        Ok(self.storage.drop_table(table)?)
    }

    fn truncate(&self, table: TableId) -> Result<(), ShardError> {
        Ok(self.storage.truncate(table)?)
    }
}
