//! When an acknowledged write is durable: the sync policy applied after each commit, group
//! commit for [`SyncPolicy::Batch`], and the per-thread deferral of journal flushes that lets a
//! caller acknowledge several writes after one flush (see
//! [`crate::Storage::deferring_journal_flush`]). The periodic fsync itself runs in
//! [`crate::journal_sync`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use fjall::{Database, OwnedWriteBatch, PersistMode};

use crate::StorageError;

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

/// Whether this thread's writes defer their journal flush (see [`Durability::deferring`]).
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

/// The write batches and the sync policy of one store.
pub(crate) struct Durability {
    db: Database,
    policy: SyncPolicy,
    group: GroupSync,
}

impl Durability {
    /// Applies `policy` to the writes committed to `db`.
    pub(crate) fn new(db: Database, policy: SyncPolicy) -> Durability {
        Durability {
            db,
            policy,
            group: GroupSync::default(),
        }
    }

    /// The sync policy in force.
    pub(crate) fn policy(&self) -> SyncPolicy {
        self.policy
    }

    /// A write batch that flushes the journal to the OS on commit, unless the calling thread
    /// is inside [`Durability::deferring`] (then the flush is owed by the caller).
    pub(crate) fn batch(&self) -> OwnedWriteBatch {
        let batch = self.db.batch();
        DEFERRED.with(|d| match d.get() {
            Deferral::Off => batch,
            Deferral::Deferring | Deferral::Owed => {
                d.set(Deferral::Owed);
                batch.durability(None)
            }
        })
    }

    /// Applies the sync policy after a committed write (journal already written to the OS).
    pub(crate) fn after_write(&self) -> Result<(), StorageError> {
        match self.policy {
            SyncPolicy::Periodic(_) => Ok(()),
            SyncPolicy::Batch => self.group.commit_and_wait(&self.db),
        }
    }

    /// Runs `work` with the journal flush of its batches (from [`Durability::batch`])
    /// deferred; returns its result and whether a [`Durability::flush_journal`] is owed.
    /// Under [`SyncPolicy::Batch`] nothing is deferred (every write fsyncs).
    pub(crate) fn deferring<R>(&self, work: impl FnOnce() -> R) -> (R, bool) {
        if self.policy == SyncPolicy::Batch {
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

    /// Writes fjall's buffered journal to the OS: one system call for every deferred write.
    pub(crate) fn flush_journal(&self) -> Result<(), StorageError> {
        self.db.persist(PersistMode::Buffer)?;
        Ok(())
    }
}
