//! The file reaper: holds a descriptor of each young LSM table file so that the page cache of
//! a table deleted by compaction is released here, not under fjall's locks.
//!
//! Closing the last descriptor of a deleted file makes the kernel drop its cached pages: for a
//! freshly written 64 MiB table that took 100-250 ms of kernel time, and fjall closes its
//! descriptors while dropping old versions during a memtable rotation, with the journal lock
//! held, so every write waited that long. While this thread holds another descriptor, fjall's
//! close is cheap; the reaper sees the file's link count drop to zero and closes it itself,
//! with no lock held.
//!
//! It only ever reads directory listings and holds read-only descriptors, so a change of
//! fjall's file layout makes it hold nothing (costing latency, never data), and the number
//! held is capped (the newest tables) so it cannot exhaust the process's descriptors.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Most table files held at once (newly written tables are the ones compaction deletes soon).
const MAX_HELD: usize = 256;
/// How often the table directories are walked.
const TICK: Duration = Duration::from_millis(200);

/// Descriptors held by the reaper, by path.
#[derive(Debug, Default)]
pub(crate) struct Reaper {
    held: HashMap<PathBuf, File>,
}

impl Reaper {
    /// One pass over `db_dir`: closes held files that were deleted, then holds the newest
    /// table files (fjall numbers tables in creation order), at most the cap: an old table
    /// that a newer one displaces is released (it is still live, so that close is cheap).
    /// Returns how many deleted files it closed.
    pub(crate) fn pass(&mut self, db_dir: &Path) -> usize {
        let before = self.held.len();
        self.held
            .retain(|_, file| file.metadata().map(|m| m.nlink() > 0).unwrap_or(false));
        let reaped = before - self.held.len();
        let mut tables: Vec<(u64, PathBuf)> = table_dirs(db_dir)
            .iter()
            .filter_map(|dir| std::fs::read_dir(dir).ok())
            .flat_map(|entries| entries.flatten())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| {
                let id = e
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                (id, e.path())
            })
            .collect();
        tables.sort_unstable_by_key(|t| std::cmp::Reverse(t.0));
        tables.truncate(MAX_HELD);
        let newest: HashMap<PathBuf, ()> = tables.into_iter().map(|(_, p)| (p, ())).collect();
        self.held.retain(|path, _| newest.contains_key(path));
        for path in newest.into_keys() {
            if let std::collections::hash_map::Entry::Vacant(slot) = self.held.entry(path) {
                // A table deleted between listing and opening is simply not held.
                if let Ok(file) = File::open(slot.key()) {
                    slot.insert(file);
                }
            }
        }
        reaped
    }

    /// How many files are held.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.len()
    }
}

/// The `tables` directory of every keyspace (`<db>/keyspaces/<id>/tables`).
fn table_dirs(db_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(db_dir.join("keyspaces")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path().join("tables"))
        .filter(|p| p.is_dir())
        .collect()
}

/// Starts the reaper thread over the store in `db_dir`; it stops when `stop` receives or is
/// dropped (its descriptors are closed then).
pub(crate) fn spawn(db_dir: PathBuf, stop: mpsc::Receiver<()>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("storage-reaper".into())
        .spawn(move || {
            let mut reaper = Reaper::default();
            while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(TICK) {
                let reaped = reaper.pass(&db_dir);
                if reaped > 0 {
                    tracing::debug!(reaped, "closed deleted table files");
                }
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_table_files_and_closes_deleted_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tables = dir.path().join("keyspaces").join("7").join("tables");
        std::fs::create_dir_all(&tables).expect("mkdir");
        std::fs::write(tables.join("1"), b"table one").expect("write");
        std::fs::write(tables.join("2"), b"table two").expect("write");
        std::fs::write(dir.path().join("3.jnl"), b"journal").expect("write");
        let mut reaper = Reaper::default();
        assert_eq!(reaper.pass(dir.path()), 0);
        assert_eq!(reaper.held(), 2, "only the tables are held");
        std::fs::remove_file(tables.join("1")).expect("rm");
        assert_eq!(reaper.pass(dir.path()), 1, "the deleted table is closed");
        assert_eq!(reaper.held(), 1);
        assert_eq!(reaper.pass(dir.path()), 0);
    }

    #[test]
    fn holds_at_most_the_cap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tables = dir.path().join("keyspaces").join("1").join("tables");
        std::fs::create_dir_all(&tables).expect("mkdir");
        for i in 0..MAX_HELD + 5 {
            std::fs::write(tables.join(i.to_string()), b"t").expect("write");
        }
        let mut reaper = Reaper::default();
        reaper.pass(dir.path());
        assert_eq!(reaper.held(), MAX_HELD);
        // The newest tables are the ones held: a new one displaces the oldest held.
        assert!(!reaper.held.contains_key(&tables.join("4")));
        std::fs::write(tables.join((MAX_HELD + 5).to_string()), b"t").expect("write");
        reaper.pass(dir.path());
        assert_eq!(reaper.held(), MAX_HELD);
        assert!(reaper
            .held
            .contains_key(&tables.join((MAX_HELD + 5).to_string())));
        assert!(!reaper.held.contains_key(&tables.join("5")));
    }

    #[test]
    fn follows_the_tables_fjall_writes_and_compacts_away() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = fjall::Database::builder(dir.path()).open().expect("open");
        let ks = db
            .keyspace("k", fjall::KeyspaceCreateOptions::default)
            .expect("keyspace");
        let mut reaper = Reaper::default();
        reaper.pass(dir.path());
        // fjall's own meta keyspace may hold tables already.
        let before = reaper.held();
        for round in 0..2u8 {
            for i in 0..100u8 {
                ks.insert([round, i], [i; 64]).expect("insert");
            }
            ks.rotate_memtable_and_wait().expect("flush");
        }
        reaper.pass(dir.path());
        assert_eq!(reaper.held(), before + 2, "each flush wrote one table file");
        ks.major_compact().expect("compact");
        // The compacted-away tables are unlinked once no version uses them: fjall drops old
        // versions when it next rotates a memtable (that is where its close used to stall).
        ks.insert([9u8], [9u8]).expect("insert");
        ks.rotate_memtable_and_wait().expect("flush");
        let mut reaped = 0;
        for _ in 0..50 {
            reaped += reaper.pass(dir.path());
            if reaped >= 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            reaped, 2,
            "both flushed tables were deleted by the compaction"
        );
    }
}
