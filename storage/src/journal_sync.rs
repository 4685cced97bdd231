//! The background commit-log sync of [`crate::SyncPolicy::Periodic`]: fsyncs fjall's journal
//! files through descriptors of its own, so writers never wait for the disk.
//!
//! fjall's own `Database::persist` fsyncs while holding the journal's writer lock, and every
//! write needs that lock to append: a 10 s sync of ~200 MB of journal stalled all writes for
//! ~200 ms. An fsync through another descriptor of the same file makes the same pages durable
//! (fsync acts on the file, not the descriptor) without the lock. Writes acknowledged under
//! the periodic policy have already reached the OS (their journal buffer was flushed before
//! the answer), so a sync of every journal file covers all of them.
//!
//! It syncs at least every second even when the policy's period is longer: fjall still fsyncs
//! under its lock when it flushes a memtable or rotates a journal, and those fsyncs are short
//! only when little of the journal is left unsynced.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fjall::{Database, PersistMode};

use crate::worker::{Activity, Next, Signal};

/// The longest the syncer waits between two syncs, whatever the policy's period.
const MAX_SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// The activity syncing the journal of one store.
pub(crate) struct JournalSync {
    db: Database,
    /// Where `db` keeps its journal.
    dir: PathBuf,
    every: Duration,
}

impl JournalSync {
    /// Syncs the journal of `db` (stored in `dir`) every `period`, capped at one second.
    pub(crate) fn new(db: Database, dir: PathBuf, period: Duration) -> JournalSync {
        JournalSync {
            db,
            dir,
            every: period.min(MAX_SYNC_INTERVAL),
        }
    }
}

impl Activity for JournalSync {
    fn name(&self) -> String {
        "storage-sync".into()
    }

    /// Not lowered: its period bounds what a power loss can take of the acknowledged writes.
    fn lowered(&self) -> bool {
        false
    }

    fn first(&self) -> Next {
        Next::After(self.every)
    }

    fn step(&mut self, _signal: &Signal) -> Next {
        if let Err(e) = sync_journals(&self.db, &self.dir) {
            tracing::error!("periodic journal sync failed: {e}");
        }
        Next::After(self.every)
    }
}

/// Fsyncs every journal file in `dir` without fjall's journal lock; falls back to fjall's
/// own (locking) sync when no journal file is found, so a change of fjall's file layout can
/// cost latency but never durability.
fn sync_journals(db: &Database, dir: &Path) -> Result<(), crate::StorageError> {
    let synced = sync_journal_files(dir)?;
    if synced == 0 {
        db.persist(PersistMode::SyncData)?;
    }
    Ok(())
}

/// Fsyncs (data only) each `*.jnl` file in `dir`; returns how many. A journal deleted
/// meanwhile (fjall removes journals whose memtables were flushed) is skipped.
pub(crate) fn sync_journal_files(dir: &Path) -> io::Result<usize> {
    let mut synced = 0;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "jnl") {
            continue;
        }
        match File::open(&path).and_then(|f| f.sync_data()) {
            Ok(()) => synced += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(synced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syncs_the_journal_files_fjall_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let storage =
            crate::Storage::open(dir.path(), crate::StorageOptions::default()).expect("open");
        // fjall keeps its journal beside its keyspaces: the syncer must find it, or every
        // sync would fall back to fjall's locking path.
        assert!(sync_journal_files(dir.path()).expect("sync") >= 1);
        drop(storage);
    }

    #[test]
    fn other_files_and_missing_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("notes.txt"), b"x").expect("write");
        assert_eq!(sync_journal_files(dir.path()).expect("sync"), 0);
        assert!(sync_journal_files(&dir.path().join("gone")).is_err());
    }
}
