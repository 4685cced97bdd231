//! `Storage`: opens the fjall `Database`, keeps each table's physical partitions (one fjall
//! keyspace each, see [`crate::ring`]), the meta (system) keyspace, write locks, the split
//! workers and the commit-log sync policy.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::clock::Clock;
use crate::compaction::GcRegistry;
use crate::disk::DiskGuard;
use crate::durability::{Durability, SyncPolicy};
use crate::item_cache::{self, ItemCache};
use crate::open_tables::{OpenTables, Table};
use crate::options::{Limits, StorageOptions};
use crate::ring::delete_keyspace;
use crate::split::Splitter;
use crate::stripes::{self, Stripes};
use crate::{StorageError, TableId, TableLayout};

/// The keyspace holding the server's meta data (schema catalog).
const META_KEYSPACE: &str = "system_meta";
/// Sealed memtables at which a write is treated as stalling (fjall halts writers at 4).
const STALL_SEALED_MEMTABLES: usize = 3;
/// L0 tables at which a write is treated as stalling (fjall slows writers from 20).
const STALL_L0_TABLES: usize = 16;
/// A meta-store entry: (key, value).
pub type MetaEntry = (Vec<u8>, Vec<u8>);

/// Size statistics a planner can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableStats {
    /// Approximate number of stored items (cells, markers, tombstones).
    pub approximate_items: u64,
    /// Bytes on disk (SSTables and blobs, journal excluded).
    pub disk_bytes: u64,
    /// Stored key + value bytes, unflushed writes included (the split accounting).
    pub bytes: u64,
    /// Logical partitions stored.
    pub partitions: u64,
    /// Physical partitions.
    pub physical_partitions: u64,
}

/// What every handle of one store shares.
pub(crate) struct Inner {
    pub(crate) db: Database,
    pub(crate) meta: Keyspace,
    pub(crate) tables: Arc<OpenTables>,
    pub(crate) stripes: Arc<Stripes>,
    pub(crate) limits: Limits,
    pub(crate) splitter: Splitter,
    gc: GcRegistry,
    pub(crate) durability: Durability,
    clock: Option<Clock>,
    pub(crate) items_read: AtomicU64,
    /// Recently read and written items (see `crate::item_cache`).
    pub(crate) item_cache: ItemCache,
    /// Stops the background threads (journal syncer, file reaper) when dropped.
    stop_background: Mutex<Vec<mpsc::Sender<()>>>,
    background: Mutex<Vec<JoinHandle<()>>>,
    pub(crate) disk: DiskGuard,
    /// Priority of background threads started after open (partition filter builds).
    background_priority: crate::priority::Background,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.splitter.stop();
        if let Err(e) = Storage::persist_stats_of(self) {
            tracing::error!("saving partition statistics failed: {e}");
        }
        if let Ok(mut stops) = self.stop_background.lock() {
            stops.clear();
        }
        if let Ok(handles) = self.background.get_mut() {
            // A background thread may hold the last handle (the idle compactor between passes).
            let me = std::thread::current().id();
            for handle in handles.drain(..) {
                if handle.thread().id() != me {
                    let _ = handle.join();
                }
            }
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
        let (mut stops, mut background) = (Vec::new(), Vec::new());
        if let SyncPolicy::Periodic(every) = options.sync {
            let (tx, rx) = mpsc::channel::<()>();
            let db_dir = dir.as_ref().to_path_buf();
            background.push(crate::journal_sync::spawn(db.clone(), db_dir, every, rx)?);
            stops.push(tx);
        }
        let storage = Storage {
            inner: Arc::new(Inner {
                durability: Durability::new(db.clone(), options.sync),
                db,
                meta,
                tables: Arc::default(),
                stripes: Arc::default(),
                limits: Limits {
                    physical_partition_max_bytes: options.physical_partition_max_bytes.max(1),
                    logical_partition_max_bytes: options.logical_partition_max_bytes,
                },
                splitter: Splitter::default(),
                gc,
                clock: options.clock,
                items_read: AtomicU64::new(0),
                item_cache: ItemCache::new(options.item_cache_bytes, stripes::COUNT),
                stop_background: Mutex::new(stops),
                background: Mutex::new(background),
                disk: DiskGuard::new(dir.as_ref().to_path_buf(), options.min_free_disk_bytes),
                background_priority: priority,
            }),
        };
        storage.start_split_workers(options.max_concurrent_splits, priority)?;
        storage.start_background(|stop| {
            let db_dir = dir.as_ref().to_path_buf();
            crate::file_reaper::spawn(db_dir, Arc::downgrade(&storage.inner), priority, stop)
        })?;
        if let Some(idle) = options.idle_compaction {
            storage.start_background(|stop| {
                crate::idle_compaction::spawn(Arc::downgrade(&storage.inner), idle, priority, stop)
            })?;
        }
        Ok(storage)
    }

    /// Starts a background thread with `spawn`, which gets the receiver that tells it to
    /// stop; the storage stops it (drops the sender) and joins it when it closes.
    fn start_background(
        &self,
        spawn: impl FnOnce(mpsc::Receiver<()>) -> std::io::Result<JoinHandle<()>>,
    ) -> std::io::Result<()> {
        let (tx, rx) = mpsc::channel::<()>();
        let handle = spawn(rx)?;
        lock(&self.inner.stop_background).push(tx);
        lock(&self.inner.background).push(handle);
        Ok(())
    }

    /// Creates a table, or opens it (after a restart, or to update its layout). Idempotent.
    /// Opening loads the table's routing map and finishes or rolls back a split that a crash
    /// interrupted.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] when a keyspace cannot be created, [`StorageError::Corrupt`]
    /// for an unreadable routing map.
    pub fn create_table(&self, id: TableId, layout: TableLayout) -> Result<(), StorageError> {
        let existing = self.table(id).ok();
        let ring = match existing {
            Some(t) => t.ring.clone(),
            None => {
                let ring = Arc::new(self.load_ring(id)?);
                if !ring.filter.is_complete() {
                    self.start_background(|stop| {
                        let (db, priority) =
                            (self.inner.db.clone(), self.inner.background_priority);
                        crate::partition_filter::spawn(db, id, ring.clone(), priority, stop)
                    })?;
                }
                ring
            }
        };
        self.inner.gc.register(id, &layout);
        self.inner.tables.insert(Table {
            id,
            layout,
            ring: ring.clone(),
        });
        for p in &ring.current().parts {
            self.maybe_queue_split(id, p);
        }
        Ok(())
    }

    /// Drops a table and all its data (a running split of it is rolled back first).
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], or [`StorageError::Fjall`] on I/O failure.
    pub fn drop_table(&self, id: TableId) -> Result<(), StorageError> {
        let table = self.table(id)?;
        table.ring.cancel.store(true, Ordering::SeqCst);
        let _split = table
            .ring
            .split_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        self.inner.tables.remove(id);
        self.inner.gc.unregister(id);
        let view = table.ring.current();
        let cached: Vec<u64> = view
            .parts
            .iter()
            .map(|p| p.cache_id.load(Ordering::Relaxed))
            .collect();
        self.inner.item_cache.forget_partitions(&cached);
        for p in &view.parts {
            self.inner.db.delete_keyspace(p.keyspace.clone())?;
        }
        for name in self.inner.db.list_keyspace_names() {
            if let Some((t, pid)) = crate::names::parse_keyspace_name(&name) {
                if t == id {
                    delete_keyspace(&self.inner.db, id, pid)?;
                }
            }
        }
        self.forget_ring(id)?;
        self.after_write()
    }

    /// Removes every row of a table (the table and its physical partitions stay).
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`], or [`StorageError::Fjall`] on I/O failure.
    pub fn truncate(&self, id: TableId) -> Result<(), StorageError> {
        let table = self.table(id)?;
        table.ring.cancel.store(true, Ordering::SeqCst);
        let _split = table
            .ring
            .split_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        table.ring.cancel.store(false, Ordering::SeqCst);
        let all = self.inner.stripes.lock(u64::MAX);
        let mut retired = Vec::new();
        let mut cleared = Ok(());
        for p in &table.ring.current().parts {
            // Before the clear: a clear that fails part-way leaves no entry in use.
            retired.push(p.cache_id.swap(item_cache::fresh_id(), Ordering::Relaxed));
            if let Err(e) = p.keyspace.clear() {
                cleared = Err(e);
                break;
            }
            p.bytes.store(0, Ordering::Relaxed);
            p.partitions.store(0, Ordering::Relaxed);
            p.set_oversized(false);
        }
        if cleared.is_ok() {
            // Every stripe is held over an empty table: an interrupted filter build is moot.
            table.ring.filter.mark_complete();
        }
        drop(all);
        // No lookup reaches the retired ids' entries any more; the scan runs without stripes.
        self.inner.item_cache.forget_partitions(&retired);
        cleared?;
        self.after_write()
    }

    /// Size statistics of a table (summed over its physical partitions).
    ///
    /// # Errors
    /// [`StorageError::UnknownTable`].
    pub fn table_stats(&self, id: TableId) -> Result<TableStats, StorageError> {
        let view = self.table(id)?.ring.current();
        let mut stats = TableStats {
            physical_partitions: view.parts.len() as u64,
            ..TableStats::default()
        };
        for p in &view.parts {
            stats.approximate_items += p.keyspace.approximate_len() as u64;
            stats.disk_bytes += p.keyspace.disk_space();
            stats.bytes += p.bytes();
            stats.partitions += p.partitions();
        }
        Ok(stats)
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

    /// True while a write to `table` would stall inside fjall: a physical partition has a
    /// backlog of sealed memtables waiting for flush, or of L0 tables waiting for compaction
    /// (fjall then sleeps in the writer). Callers use it to keep such writes off threads that
    /// must not sleep.
    pub fn write_stalled(&self, table: TableId) -> bool {
        let Ok(t) = self.table(table) else {
            return false;
        };
        t.ring.current().parts.iter().any(|p| {
            p.keyspace.sealed_memtable_count() >= STALL_SEALED_MEMTABLES
                || p.keyspace.l0_table_count() >= STALL_L0_TABLES
        })
    }

    /// Total number of stored items all reads have pulled from fjall so far.
    pub fn items_read(&self) -> u64 {
        self.inner.items_read.load(Ordering::Relaxed)
    }

    /// Seconds since the Unix epoch, from the configured clock.
    pub(crate) fn now(&self) -> i64 {
        crate::clock::now(self.inner.clock.as_ref())
    }

    /// The open table `id`.
    pub(crate) fn table(&self, id: TableId) -> Result<Arc<Table>, StorageError> {
        self.inner.tables.get(id)
    }

    /// [`Storage::persist_stats`] on an `Inner` (also used while it drops).
    pub(crate) fn persist_stats_of(inner: &Inner) -> Result<(), StorageError> {
        crate::ring::persist_stats(inner, &inner.tables.all())
    }

    /// Applies the sync policy after a committed write (journal already written to the OS).
    pub(crate) fn after_write(&self) -> Result<(), StorageError> {
        self.inner.durability.after_write()
    }
}

/// Locks `m`, ignoring poisoning (the guarded lists stay valid if a holder panicked).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
