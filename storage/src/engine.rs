//! `Storage`: opens the fjall `Database`, keeps each table's physical partitions (one fjall
//! keyspace each, see [`crate::ring`]), the meta (system) keyspace, write locks, the split
//! workers and the commit-log sync policy.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use smallvec::SmallVec;

use crate::compaction::GcRegistry;
use crate::disk::DiskGuard;
use crate::idle_compaction::IdleCompaction;
use crate::item_cache::{self, ItemCache};
use crate::ring::{delete_keyspace, TableRing};
use crate::split::Splitter;
use crate::{StorageError, TableId, TableLayout};

/// The keyspace holding the server's meta data (schema catalog).
const META_KEYSPACE: &str = "system_meta";
/// Sealed memtables at which a write is treated as stalling (fjall halts writers at 4).
const STALL_SEALED_MEMTABLES: usize = 3;
/// L0 tables at which a write is treated as stalling (fjall slows writers from 20).
const STALL_L0_TABLES: usize = 16;
/// Number of write-lock stripes (writes to one partition always take the same stripe).
const LOCK_STRIPES: usize = 64;

/// Whether this thread's writes defer their journal flush (see
/// [`Storage::deferring_journal_flush`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deferral {
    /// Every commit flushes the journal to the OS.
    Off,
    /// Commits leave the journal in fjall's buffer; none made yet.
    Deferring,
    /// At least one commit left its journal entry in fjall's buffer.
    Owed,
}

thread_local! {
    static DEFERRED: std::cell::Cell<Deferral> = const { std::cell::Cell::new(Deferral::Off) };
}

/// When an acknowledged write is fsynced, like Cassandra's `commitlog_sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// Every write reaches the OS (fjall's journal buffer is flushed) before `apply` returns;
    /// the journal is fsynced every `Duration` (at least every second) in the background,
    /// without blocking writers (see `journal_sync`). Survives a process kill.
    Periodic(Duration),
    /// Every write is fsynced before `apply` returns; concurrent writers share one fsync.
    Batch,
}

impl Default for SyncPolicy {
    fn default() -> Self {
        SyncPolicy::Periodic(Duration::from_secs(10))
    }
}

/// The clock storage uses for TTL expiry and deletion times: seconds since the Unix epoch.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Default [`StorageOptions::physical_partition_max_bytes`]: 30 GiB.
pub const DEFAULT_PHYSICAL_PARTITION_MAX_BYTES: u64 = 30 << 30;
/// Default [`StorageOptions::logical_partition_max_bytes`]: 20 GiB.
pub const DEFAULT_LOGICAL_PARTITION_MAX_BYTES: u64 = 20 << 30;
/// Default [`StorageOptions::item_cache_bytes`]: 64 MiB.
pub const DEFAULT_ITEM_CACHE_BYTES: u64 = 64 << 20;

/// Options for [`Storage::open`].
#[derive(Clone)]
pub struct StorageOptions {
    /// Commit-log sync policy.
    pub sync: SyncPolicy,
    /// Block cache size in bytes (`None`: fjall's default).
    pub cache_bytes: Option<u64>,
    /// Most bytes fjall's journals may take before the oldest memtables are flushed so their
    /// journal can be deleted (`None`: fjall's default, 512 MiB; at least 64 MiB).
    pub max_journal_bytes: Option<u64>,
    /// fjall's flush and compaction threads (`None`: fjall's default, one per core up to 4).
    pub worker_threads: Option<usize>,
    /// Clock override for tests (`None`: the system clock).
    pub clock: Option<Clock>,
    /// A physical partition storing more than this many bytes (keys + values) is split in
    /// two in the background. Default 30 GiB.
    pub physical_partition_max_bytes: u64,
    /// A write that would take one logical partition (one partition key) past this many bytes
    /// fails with [`StorageError::PartitionTooLarge`]. Default 20 GiB.
    pub logical_partition_max_bytes: u64,
    /// Splits running at the same time, one background thread each (at least 1; one split
    /// per table at a time). Default 1.
    pub max_concurrent_splits: usize,
    /// Writes fail with [`StorageError::DiskFull`] while the data directory's file system has
    /// less free space than this (0: never). Default 0.
    pub min_free_disk_bytes: u64,
    /// Compact physical partitions that stopped taking writes (see [`IdleCompaction`];
    /// `None`: never). Default `None`.
    pub idle_compaction: Option<IdleCompaction>,
    /// Nice value of the background threads (fjall's flush and compaction workers, idle
    /// compaction, splits), so they yield the cores to the threads answering requests;
    /// 0..=19, 0 (the default) leaves them at the caller's priority.
    pub background_nice: i32,
    /// Whether the background threads also run under Linux's `SCHED_IDLE` scheduling policy
    /// (see `crate::priority`). Default `false`.
    pub background_idle_policy: bool,
    /// Bytes of the item cache (`crate::item_cache`: single items by key, for point reads and
    /// writes' lookups; 0: off). Default 64 MiB.
    pub item_cache_bytes: u64,
}

impl Default for StorageOptions {
    fn default() -> Self {
        StorageOptions {
            sync: SyncPolicy::default(),
            cache_bytes: None,
            max_journal_bytes: None,
            worker_threads: None,
            clock: None,
            physical_partition_max_bytes: DEFAULT_PHYSICAL_PARTITION_MAX_BYTES,
            logical_partition_max_bytes: DEFAULT_LOGICAL_PARTITION_MAX_BYTES,
            max_concurrent_splits: 1,
            min_free_disk_bytes: 0,
            idle_compaction: None,
            background_nice: 0,
            background_idle_policy: false,
            item_cache_bytes: DEFAULT_ITEM_CACHE_BYTES,
        }
    }
}

/// The size limits in force.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) physical_partition_max_bytes: u64,
    pub(crate) logical_partition_max_bytes: u64,
}

impl fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StorageOptions")
            .field("sync", &self.sync)
            .field("cache_bytes", &self.cache_bytes)
            .field("item_cache_bytes", &self.item_cache_bytes)
            .field("clock", &self.clock.as_ref().map(|_| "custom"))
            .field(
                "physical_partition_max_bytes",
                &self.physical_partition_max_bytes,
            )
            .field(
                "logical_partition_max_bytes",
                &self.logical_partition_max_bytes,
            )
            .field("max_concurrent_splits", &self.max_concurrent_splits)
            .field("min_free_disk_bytes", &self.min_free_disk_bytes)
            .field("worker_threads", &self.worker_threads)
            .field("idle_compaction", &self.idle_compaction)
            .field("background_nice", &self.background_nice)
            .field("background_idle_policy", &self.background_idle_policy)
            .finish()
    }
}

/// A meta-store entry: (key, value).
pub type MetaEntry = (Vec<u8>, Vec<u8>);

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
    pub(crate) fn keyspace(&self) -> Keyspace {
        self.ring.current().parts[0].keyspace.clone()
    }
}

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

/// Group commit for [`SyncPolicy::Batch`]: a writer whose commit is already covered by a
/// finished fsync returns at once; otherwise one writer fsyncs for everyone committed so far.
#[derive(Default)]
struct GroupSync {
    committed: AtomicU64,
    synced: Mutex<u64>,
}

impl GroupSync {
    fn commit_and_wait(&self, db: &Database) -> Result<(), StorageError> {
        let mine = self.committed.fetch_add(1, Ordering::SeqCst) + 1;
        let mut synced = self.synced.lock().unwrap_or_else(|p| p.into_inner());
        if *synced >= mine {
            return Ok(());
        }
        let target = self.committed.load(Ordering::SeqCst);
        db.persist(PersistMode::SyncData)?;
        *synced = target;
        Ok(())
    }
}

/// The open tables by id (a fast hash: every request looks its table up).
type Tables = HashMap<TableId, Arc<Table>, foldhash::fast::RandomState>;

pub(crate) struct Inner {
    pub(crate) db: Database,
    pub(crate) meta: Keyspace,
    tables: RwLock<Tables>,
    locks: Vec<Mutex<()>>,
    pub(crate) limits: Limits,
    pub(crate) splitter: Splitter,
    gc: GcRegistry,
    sync: SyncPolicy,
    group_sync: GroupSync,
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
            .field("sync", &self.inner.sync)
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
                db,
                meta,
                tables: RwLock::new(HashMap::default()),
                locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
                limits: Limits {
                    physical_partition_max_bytes: options.physical_partition_max_bytes.max(1),
                    logical_partition_max_bytes: options.logical_partition_max_bytes,
                },
                splitter: Splitter::default(),
                gc,
                sync: options.sync,
                group_sync: GroupSync::default(),
                clock: options.clock,
                items_read: AtomicU64::new(0),
                item_cache: ItemCache::new(options.item_cache_bytes, LOCK_STRIPES),
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
        let table = Arc::new(Table {
            id,
            layout,
            ring: ring.clone(),
        });
        self.write_tables().insert(id, table);
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
        self.write_tables().remove(&id);
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
            if let Some((t, pid)) = crate::ring::parse_keyspace_name(&name) {
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
        let all = self.lock_stripes(u64::MAX);
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
        if self.inner.sync == SyncPolicy::Batch {
            return (work(), false);
        }
        /// Turns deferral off again even if `work` panics.
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                DEFERRED.with(|d| d.set(Deferral::Off));
            }
        }
        DEFERRED.with(|d| d.set(Deferral::Deferring));
        let reset = Reset;
        let result = work();
        let owed = DEFERRED.with(|d| d.get()) == Deferral::Owed;
        drop(reset);
        (result, owed)
    }

    /// Writes fjall's buffered journal to the OS: one system call for every write deferred by
    /// [`Storage::deferring_journal_flush`] since the last flush.
    ///
    /// # Errors
    /// [`StorageError::Fjall`] on I/O failure (fjall is then poisoned and refuses writes).
    pub fn flush_journal(&self) -> Result<(), StorageError> {
        self.inner.db.persist(PersistMode::Buffer)?;
        Ok(())
    }

    /// A write batch that flushes the journal to the OS on commit, unless the calling thread
    /// is inside [`Storage::deferring_journal_flush`] (then the flush is owed by the caller).
    pub(crate) fn write_batch(&self) -> fjall::OwnedWriteBatch {
        let batch = self.inner.db.batch();
        DEFERRED.with(|d| match d.get() {
            Deferral::Off => batch,
            Deferral::Deferring | Deferral::Owed => {
                d.set(Deferral::Owed);
                batch.durability(None)
            }
        })
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
        match &self.inner.clock {
            Some(clock) => clock(),
            None => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
        }
    }

    pub(crate) fn table(&self, id: TableId) -> Result<Arc<Table>, StorageError> {
        self.inner
            .tables
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
            .ok_or(StorageError::UnknownTable(id))
    }

    /// The active memtable of every physical partition of every table.
    pub(crate) fn active_memtables(&self) -> Vec<Arc<lsm_tree::Memtable>> {
        self.tables_snapshot()
            .iter()
            .flat_map(|table| table.ring.current().parts.clone())
            .map(|part| fjall::AbstractTree::active_memtable(&part.keyspace.tree))
            .collect()
    }

    /// Every open table.
    pub(crate) fn tables_snapshot(&self) -> Vec<Arc<Table>> {
        Self::tables_of(&self.inner)
    }

    fn tables_of(inner: &Inner) -> Vec<Arc<Table>> {
        let tables = inner.tables.read().unwrap_or_else(|p| p.into_inner());
        tables.values().cloned().collect()
    }

    /// [`Storage::persist_stats`] on an `Inner` (also used while it drops).
    pub(crate) fn persist_stats_of(inner: &Inner) -> Result<(), StorageError> {
        crate::ring::persist_stats(inner, &Self::tables_of(inner))
    }

    fn write_tables(&self) -> std::sync::RwLockWriteGuard<'_, Tables> {
        self.inner.tables.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The lock stripe (0..64) owning `(table, token)`.
    pub(crate) fn stripe(table: TableId, token: i64) -> usize {
        let h = (table.0 as u64) ^ ((table.0 >> 64) as u64) ^ (token as u64);
        (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % LOCK_STRIPES
    }

    /// Locks every stripe whose bit is set in `mask`, in stripe order (every locker takes
    /// its stripes in that order, so this cannot deadlock).
    pub(crate) fn lock_stripes(&self, mask: u64) -> SmallVec<[MutexGuard<'_, ()>; 2]> {
        (0..LOCK_STRIPES)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| {
                self.inner.locks[i]
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
            })
            .collect()
    }

    /// Applies the sync policy after a committed write (journal already written to the OS).
    pub(crate) fn after_write(&self) -> Result<(), StorageError> {
        match self.inner.sync {
            SyncPolicy::Periodic(_) => Ok(()),
            SyncPolicy::Batch => self.inner.group_sync.commit_and_wait(&self.inner.db),
        }
    }
}

/// Locks `m`, ignoring poisoning (the guarded lists stay valid if a holder panicked).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
