//! The file reaper: holds descriptors of fjall's young table files, its version files and its
//! journals, so that what a deletion costs the kernel is paid here, not under fjall's locks.
//!
//! Closing the last descriptor of a deleted file makes the kernel drop its cached pages and
//! free its blocks: for a freshly written 64 MiB table that took 100-250 ms of kernel time, and
//! on a filesystem mounted with `discard` (here ext4 without a journal, which discards while it
//! frees) even the unlink of a one-block version file waited 50-70 ms for the device. fjall
//! does both while it rotates a memtable, holding the journal lock and the tree's version
//! lock, so every write waited that long. While this thread holds another descriptor, fjall's
//! unlink and close are cheap; the reaper sees the file's link count drop to zero and closes
//! it itself, with no lock held.
//!
//! It only ever reads directory listings and holds read-only descriptors, so a change of
//! fjall's file layout makes it hold nothing (costing latency, never data), and the number
//! held is capped (the newest files of each kind) so it cannot exhaust the process's
//! descriptors. The same thread runs the [`crate::memtable_keeper`].

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::memtable_keeper::MemtableKeeper;
use crate::open_tables::OpenTables;
use crate::worker::{Activity, Next, Signal};

/// Most table files held at once (newly written tables are the ones compaction deletes soon).
const MAX_HELD: usize = 256;
/// Most version and journal files held at once (a tree keeps a handful of versions and the
/// store a few journals; more only while old snapshots pin old versions).
const MAX_HELD_META: usize = 128;
/// How often the store's directories are walked: a version file lives from one flush or
/// compaction to the memtable rotation after the next, far longer than this.
const TICK: Duration = Duration::from_millis(100);
/// A store of many physical partitions (a cluster's table of a thousand groups) is walked less
/// often: the pause is at least this many times the walk, so the reaper stays a few percent
/// of one core.
const PAUSE_PER_WALK: u32 = 50;
/// The longest pause between walks.
const MAX_TICK: Duration = Duration::from_secs(2);

/// Descriptors held by the reaper, by path.
#[derive(Debug, Default)]
pub(crate) struct Reaper {
    held: HashMap<PathBuf, File>,
}

impl Reaper {
    /// One pass over `db_dir`: closes held files that were deleted, then holds the newest
    /// table files and the newest version and journal files (fjall numbers each kind in
    /// creation order), at most the caps: an old file that a newer one displaces is released
    /// (it is still live, so that close is cheap). Returns how many deleted files it closed.
    pub(crate) fn pass(&mut self, db_dir: &Path) -> usize {
        let before = self.held.len();
        self.held
            .retain(|_, file| file.metadata().map(|m| m.nlink() > 0).unwrap_or(false));
        let reaped = before - self.held.len();
        let keyspaces = keyspace_dirs(db_dir);
        let tables = keyspaces
            .iter()
            .flat_map(|dir| numbered_files(&dir.join("tables"), Naming::Table));
        let mut wanted = newest(tables.collect(), MAX_HELD);
        let meta = keyspaces
            .iter()
            .flat_map(|dir| numbered_files(dir, Naming::Version))
            .chain(numbered_files(db_dir, Naming::Journal));
        wanted.extend(newest(meta.collect(), MAX_HELD_META));
        self.held.retain(|path, _| wanted.contains(path));
        for path in wanted {
            if let std::collections::hash_map::Entry::Vacant(slot) = self.held.entry(path) {
                // A file deleted between listing and opening is simply not held.
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

/// The directory of every keyspace (`<db>/keyspaces/<id>`).
fn keyspace_dirs(db_dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(db_dir.join("keyspaces")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect()
}

/// How fjall names a kind of numbered file.
#[derive(Debug, Clone, Copy)]
enum Naming {
    /// `<keyspace>/tables/<n>`.
    Table,
    /// `<keyspace>/v<n>`: a tree version (its list of tables).
    Version,
    /// `<db>/<n>.jnl`.
    Journal,
}

impl Naming {
    /// The number in a file name of this kind.
    fn number(self, name: &str) -> Option<u64> {
        let digits = match self {
            Naming::Table => Some(name),
            Naming::Version => name.strip_prefix('v'),
            Naming::Journal => name.strip_suffix(".jnl"),
        };
        digits?.parse().ok()
    }
}

/// The files in `dir` named as `naming` says, with their numbers.
fn numbered_files(dir: &Path, naming: Naming) -> Vec<(u64, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| Some((naming.number(e.file_name().to_str()?)?, e.path())))
        .collect()
}

/// The paths of the `cap` highest-numbered `files`.
fn newest(mut files: Vec<(u64, PathBuf)>, cap: usize) -> HashSet<PathBuf> {
    files.sort_unstable_by_key(|f| std::cmp::Reverse(f.0));
    files.truncate(cap);
    files.into_iter().map(|(_, path)| path).collect()
}

/// The reaper's activity over the store in `db_dir`: every [`TICK`], it closes deleted files
/// ([`Reaper`]) and frees the flushed memtables of the open tables ([`MemtableKeeper`]). It
/// runs at the background priority (it holds no lock the writers need, and freeing a memtable
/// takes tens of milliseconds of CPU); its descriptors are closed when it stops.
pub(crate) struct FileReaper {
    db_dir: PathBuf,
    tables: Arc<OpenTables>,
    reaper: Reaper,
    memtables: MemtableKeeper,
}

impl FileReaper {
    /// A reaper of the files in `db_dir` and of the memtables of `tables`.
    pub(crate) fn new(db_dir: PathBuf, tables: Arc<OpenTables>) -> FileReaper {
        FileReaper {
            db_dir,
            tables,
            reaper: Reaper::default(),
            memtables: MemtableKeeper::default(),
        }
    }
}

impl Activity for FileReaper {
    fn name(&self) -> String {
        "storage-reaper".into()
    }

    fn first(&self) -> Next {
        Next::After(TICK)
    }

    fn step(&mut self, _signal: &Signal) -> Next {
        let started = std::time::Instant::now();
        let freed = self.memtables.pass(self.tables.active_memtables());
        let reaped = self.reaper.pass(&self.db_dir);
        if reaped > 0 || freed > 0 {
            tracing::debug!(reaped, freed, "closed deleted files, freed memtables");
        }
        let walk = started.elapsed();
        Next::After(TICK.max(walk * PAUSE_PER_WALK).min(MAX_TICK))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_table_version_and_journal_files_and_closes_deleted_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let keyspace = dir.path().join("keyspaces").join("7");
        let tables = keyspace.join("tables");
        std::fs::create_dir_all(&tables).expect("mkdir");
        std::fs::write(tables.join("1"), b"table one").expect("write");
        std::fs::write(tables.join("2"), b"table two").expect("write");
        std::fs::write(keyspace.join("v3"), b"version").expect("write");
        std::fs::write(dir.path().join("3.jnl"), b"journal").expect("write");
        // Files fjall rewrites or keeps open itself are not held.
        std::fs::write(keyspace.join("current"), b"3").expect("write");
        std::fs::write(dir.path().join("lock"), b"").expect("write");
        std::fs::write(dir.path().join("notes.txt"), b"x").expect("write");
        let mut reaper = Reaper::default();
        assert_eq!(reaper.pass(dir.path()), 0);
        assert_eq!(reaper.held(), 4, "two tables, a version and a journal");
        std::fs::remove_file(tables.join("1")).expect("rm");
        std::fs::remove_file(keyspace.join("v3")).expect("rm");
        assert_eq!(reaper.pass(dir.path()), 2, "the deleted files are closed");
        assert_eq!(reaper.held(), 2);
        assert_eq!(reaper.pass(dir.path()), 0);
    }

    #[test]
    fn names_of_numbered_files() {
        assert_eq!(Naming::Table.number("12"), Some(12));
        assert_eq!(Naming::Table.number("v12"), None);
        assert_eq!(Naming::Version.number("v12"), Some(12));
        assert_eq!(Naming::Version.number("12"), None);
        assert_eq!(Naming::Journal.number("12.jnl"), Some(12));
        assert_eq!(Naming::Journal.number("12.jnl.tmp"), None);
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

    /// The held paths that `keep` selects.
    fn held_paths(reaper: &Reaper, keep: impl Fn(&Path) -> bool) -> HashSet<PathBuf> {
        reaper.held.keys().filter(|p| keep(p)).cloned().collect()
    }

    fn is_table(path: &Path) -> bool {
        path.parent().is_some_and(|d| d.ends_with("tables"))
    }

    fn is_version(path: &Path) -> bool {
        path.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| Naming::Version.number(n))
            .is_some()
    }

    #[test]
    fn follows_the_files_fjall_writes_and_deletes() {
        let (dir, _db, ks) = crate::tests::scratch_fjall();
        let mut reaper = Reaper::default();
        reaper.pass(dir.path());
        // fjall's own meta keyspace may hold tables already.
        let before = held_paths(&reaper, is_table);
        assert!(
            !held_paths(&reaper, |p| p.extension().is_some_and(|e| e == "jnl")).is_empty(),
            "the journal is held"
        );
        for round in 0..2u8 {
            for i in 0..100u8 {
                ks.insert([round, i], [i; 64]).expect("insert");
            }
            ks.rotate_memtable_and_wait().expect("flush");
        }
        reaper.pass(dir.path());
        let flushed: HashSet<PathBuf> = held_paths(&reaper, is_table)
            .difference(&before)
            .cloned()
            .collect();
        assert_eq!(flushed.len(), 2, "each flush wrote one table file");
        let versions = held_paths(&reaper, is_version);
        assert!(!versions.is_empty(), "the tree's versions are held");
        ks.major_compact().expect("compact");
        // The compacted-away tables and the old versions are unlinked once no snapshot needs
        // them: fjall drops old versions when it next rotates a memtable (where its unlinks
        // and closes used to stall writes).
        ks.insert([9u8], [9u8]).expect("insert");
        ks.rotate_memtable_and_wait().expect("flush");
        let mut reaped = 0;
        for _ in 0..50 {
            reaped += reaper.pass(dir.path());
            let tables = held_paths(&reaper, is_table);
            let old_versions = held_paths(&reaper, |p| versions.contains(p));
            if flushed.is_disjoint(&tables) && old_versions.len() < versions.len() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            flushed.is_disjoint(&held_paths(&reaper, is_table)),
            "both flushed tables were deleted by the compaction and closed"
        );
        let left = held_paths(&reaper, |p| versions.contains(p));
        assert!(left.len() < versions.len(), "old versions were closed");
        assert!(reaped >= 3, "{reaped} files closed");
    }
}
