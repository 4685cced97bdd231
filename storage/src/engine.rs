//! `Storage`: opens the fjall `Database` and its meta (system) keyspace, builds the handles
//! every operation shares (`Inner`: the open tables, write-lock stripes, ring store, splitter,
//! item cache, durability) and starts the background workers, which hold clones of the few
//! handles each needs; the last handle's drop stops and joins them. Also the meta store (the
//! server's schema catalog) and the journal-flush API. Reads, writes and table administration
//! are `impl Storage` blocks of their own modules (`read`, `scan`, `write`, `table_admin`).

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::ann::{AnnIndexes, AnnWorker};
use crate::clock::Clock;
use crate::compaction::GcRegistry;
use crate::disk::DiskGuard;
use crate::durability::{Durability, SyncPolicy};
use crate::file_reaper::FileReaper;
use crate::idle_compaction::IdleCompactor;
use crate::item_cache::ItemCache;
use crate::journal_sync::JournalSync;
use crate::open_tables::{OpenTables, Table};
use crate::options::{Limits, StorageOptions};
use crate::ring_store::RingStore;
use crate::secondary::{IndexBuilder, SecondaryIndexes, INDEX_KEYSPACE};
use crate::split::Splitter;
use crate::split_worker;
use crate::stripes::{self, Stripes};
use crate::worker::Workers;
use crate::{StorageError, TableId};

/// The keyspace holding the server's meta data (schema catalog).
const META_KEYSPACE: &str = "system_meta";
/// A meta-store entry: (key, value).
pub type MetaEntry = (Vec<u8>, Vec<u8>);

/// What every handle of one store shares: the handles each operation needs, and the
/// background workers that hold clones of some of them.
pub(crate) struct Inner {
    pub(crate) db: Database,
    pub(crate) meta: Keyspace,
    /// Where each table's routing map and statistics are kept.
    pub(crate) rings: RingStore,
    pub(crate) tables: Arc<OpenTables>,
    pub(crate) stripes: Arc<Stripes>,
    pub(crate) limits: Limits,
    pub(crate) splitter: Splitter,
    /// gc-grace and clustering per table, for the compaction filters.
    pub(crate) gc: GcRegistry,
    pub(crate) durability: Durability,
    clock: Option<Clock>,
    pub(crate) items_read: AtomicU64,
    /// Recently read and written items (see `crate::item_cache`).
    pub(crate) item_cache: ItemCache,
    pub(crate) disk: Arc<DiskGuard>,
    /// The background threads (stopped and joined when the store closes).
    pub(crate) workers: Workers,
    /// The vector indexes' graphs (see `crate::ann`).
    pub(crate) ann: AnnIndexes,
    /// The secondary indexes (see `crate::secondary`).
    pub(crate) indexes: SecondaryIndexes,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.workers.stop();
        if let Err(e) = self.rings.save_stats(&self.tables.all()) {
            tracing::error!("saving partition statistics failed: {e}");
        }
        if let Err(e) = self.db.persist(PersistMode::SyncAll) {
            tracing::error!("final journal sync failed: {e}");
        }
    }
}

/// The storage engine: cheap to clone, safe to share between threads. All calls block
/// (fjall is synchronous); async callers use `spawn_blocking`.
#[derive(Clone)]
pub struct Storage {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Storage")
            .field("sync", &self.inner.durability.policy())
            .finish_non_exhaustive()
    }
}

impl Storage {
    /// Opens (or creates) the store in `dir`, replaying fjall's journal.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] or [`StorageError::Io`] when the directory cannot be opened or
    /// recovered.
    pub fn open(dir: impl AsRef<Path>, options: StorageOptions) -> Result<Storage, StorageError> {
        std::fs::create_dir_all(dir.as_ref())?;
        let gc = GcRegistry::new(options.clock.clone());
        let mut builder =
            Database::builder(dir.as_ref()).with_compaction_filter_factories(gc.assigner());
        if let Some(n) = options.worker_threads {
            builder = builder.worker_threads(n.max(1));
        }
        if let Some(bytes) = options.cache_bytes {
            builder = builder.cache_size(bytes);
        }
        if let Some(bytes) = options.max_journal_bytes {
            // fjall refuses less than 64 MiB.
            builder = builder.max_journaling_size(bytes.max(64 << 20));
        }
        // fjall starts its flush and compaction workers while opening: opened from a thread
        // at the background priority, they inherit it.
        let priority = crate::priority::Background {
            nice: options.background_nice,
            idle_policy: options.background_idle_policy,
        };
        let db = crate::priority::run_lowered(priority, || builder.open())??;
        let meta = db.keyspace(META_KEYSPACE, KeyspaceCreateOptions::default)?;
        let rings = RingStore::new(db.clone(), meta.clone());
        let index_ks = db.keyspace(INDEX_KEYSPACE, KeyspaceCreateOptions::default)?;
        let indexes = SecondaryIndexes::new(index_ks, meta.clone());
        let (tables, stripes) = (Arc::<OpenTables>::default(), Arc::<Stripes>::default());
        let limits = Limits {
            physical_partition_max_bytes: options.physical_partition_max_bytes.max(1),
            logical_partition_max_bytes: options.logical_partition_max_bytes,
            partition_cache_max_bytes: options.partition_cache_max_bytes,
        };
        let splitter = Splitter::new(
            db.clone(),
            rings.clone(),
            tables.clone(),
            stripes.clone(),
            limits.physical_partition_max_bytes,
        );
        let db_dir = dir.as_ref().to_path_buf();
        let disk = Arc::new(DiskGuard::new(db_dir.clone(), options.min_free_disk_bytes));
        let inner = Arc::new(Inner {
            durability: Durability::new(db.clone(), options.sync),
            db,
            meta,
            rings,
            tables,
            stripes,
            limits,
            splitter,
            gc,
            clock: options.clock,
            items_read: AtomicU64::new(0),
            item_cache: ItemCache::new(options.item_cache_bytes, stripes::COUNT),
            disk,
            workers: Workers::new(priority),
            ann: AnnIndexes::default(),
            indexes,
        });
        let workers = &inner.workers;
        if let SyncPolicy::Periodic(every) = options.sync {
            workers.start(JournalSync::new(inner.db.clone(), db_dir.clone(), every))?;
        }
        split_worker::start(workers, &inner.splitter, options.max_concurrent_splits)?;
        workers.start(FileReaper::new(db_dir, inner.tables.clone()))?;
        workers.start_with(
            inner.ann.signal.clone(),
            AnnWorker::new(Arc::downgrade(&inner)),
        )?;
        workers.start_with(
            inner.indexes.signal.clone(),
            IndexBuilder::new(Arc::downgrade(&inner)),
        )?;
        if let Some(idle) = options.idle_compaction {
            workers.start(IdleCompactor::new(
                inner.tables.clone(),
                inner.disk.clone(),
                idle,
            ))?;
        }
        Ok(Storage { inner })
    }

    /// Stores a meta value (the server's schema catalog) in the system keyspace.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] on I/O failure.
    pub fn put_meta(&self, key: &[u8], value: &[u8]) -> Result<(), StorageError> {
        self.inner.meta.insert(key, value)?;
        self.after_write()
    }

    /// Reads a meta value.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] on I/O failure.
    pub fn get_meta(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.inner.meta.get(key)?.map(|v| v.to_vec()))
    }

    /// Deletes a meta value.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] on I/O failure.
    pub fn delete_meta(&self, key: &[u8]) -> Result<(), StorageError> {
        self.inner.meta.remove(key)?;
        self.after_write()
    }

    /// Every meta entry whose key starts with `prefix`, in key order.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] on I/O failure.
    pub fn scan_meta(&self, prefix: &[u8]) -> Result<Vec<MetaEntry>, StorageError> {
        self.inner
            .meta
            .prefix(prefix)
            .map(|g| {
                let (k, v) = g.into_inner()?;
                Ok((k.to_vec(), v.to_vec()))
            })
            .collect()
    }

    /// Fsyncs the journal (for shutdown; also called when the last handle drops).
    ///
    /// # Errors
    /// [`StorageError::Fjall`] on I/O failure.
    pub fn persist(&self) -> Result<(), StorageError> {
        self.inner.db.persist(PersistMode::SyncAll)?;
        Ok(())
    }

    /// Runs `work` with the journal flush of its writes deferred (group commit): writes made
    /// by `work` on this thread reach fjall's journal buffer but not the OS. Returns `work`'s
    /// result and whether a [`Storage::flush_journal`] is owed before any of those writes may
    /// be acknowledged. Under [`SyncPolicy::Batch`] nothing is deferred (every write fsyncs).
    pub fn deferring_journal_flush<R>(&self, work: impl FnOnce() -> R) -> (R, bool) {
        self.inner.durability.deferring(work)
    }

    /// Writes fjall's buffered journal to the OS: one system call for every write deferred by
    /// [`Storage::deferring_journal_flush`] since the last flush.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] on I/O failure (fjall is then poisoned and refuses writes).
    pub fn flush_journal(&self) -> Result<(), StorageError> {
        self.inner.durability.flush_journal()
    }

    /// Total number of stored items all reads have pulled from fjall so far.
    pub fn items_read(&self) -> u64 {
        self.inner.items_read.load(Ordering::Relaxed)
    }

    /// Counts `n` more stored items pulled from fjall by a read (see [`Storage::items_read`]).
    pub(crate) fn count_items(&self, n: u64) {
        self.inner.items_read.fetch_add(n, Ordering::Relaxed);
    }

    /// Seconds since the Unix epoch, from the configured clock.
    pub(crate) fn now(&self) -> i64 {
        crate::clock::now(self.inner.clock.as_ref())
    }

    /// The open table `id`.
    pub(crate) fn table(&self, id: TableId) -> Result<Arc<Table>, StorageError> {
        self.inner.tables.get(id)
    }

    /// Applies the sync policy after a committed write (journal already written to the OS).
    pub(crate) fn after_write(&self) -> Result<(), StorageError> {
        self.inner.durability.after_write()
    }
}
