//! Snapshots of a node's data directory, as `nodetool snapshot`: `take` flushes every table,
//! then copies the directory into `snapshots/NAME/` (the LSM trees' immutable files hard-linked,
//! the files rewritten in place — journals, version pointers, the schema — copied), and
//! `restore` puts a snapshot back into the data directory of a stopped node. A file that a
//! compaction removes while the snapshot is being taken starts it over: what the copied
//! version pointers name is all there. A snapshot of a node of a cluster of several is not
//! restored: its Raft state would go back in time under the other replicas (a vote given, a
//! log acknowledged), which Raft's safety forbids; its [`INFO_FILE`] says how many members
//! the cluster had.

use crate::node::Node;
use std::path::{Path, PathBuf};

/// The directory, under the data directory, that holds the snapshots.
pub const SNAPSHOTS_DIR: &str = "snapshots";
/// How many times a snapshot is started over when compactions keep removing files under it.
const ATTEMPTS: usize = 10;
/// The file, in a snapshot's directory, that says what it was taken of (`cluster_members = N`).
pub const INFO_FILE: &str = "ringdb-snapshot.info";

/// Why a snapshot could not be taken or restored.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The name is empty or holds characters other than letters, digits, `-`, `_` and `.`.
    #[error("invalid snapshot name {0:?}: use letters, digits, '-', '_' and '.'")]
    BadName(String),
    /// A snapshot of that name exists already.
    #[error("a snapshot named {0:?} exists already")]
    Exists(String),
    /// No snapshot of that name.
    #[error("no snapshot named {0:?} in {1}")]
    Missing(String, PathBuf),
    /// The snapshot was taken on a node of a cluster of this many members.
    #[error(
        "the snapshot was taken on a node of a cluster of {0} nodes: restoring it would take the \
         node's Raft state back under its replicas; only a single node's snapshot is restored"
    )]
    ClusterNode(usize),
    /// Flushing the tables failed.
    #[error("flushing the tables: {0}")]
    Flush(#[from] storage::StorageError),
    /// A file could not be copied or linked.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn check_name(name: &str) -> Result<(), SnapshotError> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(SnapshotError::BadName(name.to_string()))
    }
}

/// Whether a file is rewritten or appended in place (copied), rather than written once
/// (hard-linked): journals, version pointers, locks, and the node's own files.
fn rewritten(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".jnl")
        || name.ends_with(".json")
        || matches!(name, "current" | "version" | "lock" | "host_id")
}

/// Every regular file under `dir`, relative to it, leaving out `skip` (a top-level entry).
fn files(dir: &Path, skip: Option<&str>) -> Result<Vec<PathBuf>, SnapshotError> {
    let mut out = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let here = dir.join(&rel);
        for entry in std::fs::read_dir(&here).map_err(io(&here))? {
            let entry = entry.map_err(io(&here))?;
            let name = entry.file_name();
            if rel.as_os_str().is_empty() && skip.is_some_and(|s| name == s) {
                continue;
            }
            let kind = entry.file_type().map_err(io(&entry.path()))?;
            if kind.is_dir() {
                pending.push(rel.join(&name));
            } else if kind.is_file() {
                out.push(rel.join(&name));
            }
        }
    }
    // Version pointers first: the immutable files they name are linked after them.
    out.sort_by_key(|p| (!rewritten(p), p.clone()));
    Ok(out)
}

/// Copies or links each of `files` from `from` into `to`. `Ok(false)` when a file vanished
/// on the way (a compaction removed it).
fn place(
    from: &Path,
    to: &Path,
    files: &[PathBuf],
    placed_one: &mut dyn FnMut(u64),
) -> Result<bool, SnapshotError> {
    for (i, rel) in files.iter().enumerate() {
        let (src, dst) = (from.join(rel), to.join(rel));
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let placed = if rewritten(rel) {
            std::fs::copy(&src, &dst).map(|_| ())
        } else {
            std::fs::hard_link(&src, &dst)
        };
        match placed {
            Ok(()) => placed_one(i as u64 + 1),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => {
                return Err(SnapshotError::Io {
                    path: src,
                    source: e,
                })
            }
        }
    }
    Ok(true)
}

/// What a snapshot took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    /// Files in it.
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
}

/// Takes the snapshot `name` of `node`'s data directory, calling `progress` with (done, total,
/// unit) as it flushes the tables, then as it places the files.
///
/// # Errors
/// A bad or taken name, a flush or file failure.
pub fn take(
    node: &Node,
    name: &str,
    progress: &mut dyn FnMut(u64, u64, &'static str),
) -> Result<Taken, SnapshotError> {
    check_name(name)?;
    let data = node.config().data_dir.clone();
    let target = data.join(SNAPSHOTS_DIR).join(name);
    if target.exists() {
        return Err(SnapshotError::Exists(name.to_string()));
    }
    let tables = node.storage().list_tables();
    for (i, id) in tables.iter().enumerate() {
        node.storage().flush_table(*id)?;
        progress(i as u64 + 1, tables.len() as u64, "tables flushed");
    }
    node.storage().persist()?;
    for attempt in 1..=ATTEMPTS {
        let listed = files(&data, Some(SNAPSHOTS_DIR))?;
        let placed = place(&data, &target, &listed, &mut |done| {
            progress(done, listed.len() as u64, "files")
        })?;
        if placed {
            let members = match node.cluster().filter(|_| node.has_peers()) {
                Some(cluster) => cluster.peers().len() + 1,
                None => 1,
            };
            let info = target.join(INFO_FILE);
            std::fs::write(&info, format!("cluster_members = {members}\n")).map_err(io(&info))?;
            let bytes = listed
                .iter()
                .filter_map(|f| std::fs::metadata(target.join(f)).ok())
                .map(|m| m.len())
                .sum();
            tracing::info!(name, files = listed.len(), bytes, attempt, "snapshot taken");
            return Ok(Taken {
                files: listed.len(),
                bytes,
            });
        }
        tracing::info!(
            name,
            attempt,
            "a file went while snapshotting; starting over"
        );
        std::fs::remove_dir_all(&target).map_err(io(&target))?;
    }
    Err(SnapshotError::Io {
        path: data,
        source: std::io::Error::other("compactions kept removing files; try again"),
    })
}

/// Puts the snapshot `name` back into `data_dir` (the node must be stopped): everything but
/// the snapshots is removed, then the snapshot's files are copied or linked in.
///
/// # Errors
/// No such snapshot, or a file failure.
pub fn restore(data_dir: &Path, name: &str) -> Result<usize, SnapshotError> {
    check_name(name)?;
    let source = data_dir.join(SNAPSHOTS_DIR).join(name);
    if !source.is_dir() {
        return Err(SnapshotError::Missing(
            name.to_string(),
            data_dir.to_path_buf(),
        ));
    }
    let members = std::fs::read_to_string(source.join(INFO_FILE))
        .ok()
        .and_then(|text| {
            let value = text.trim().strip_prefix("cluster_members = ")?;
            value.parse::<usize>().ok()
        })
        .unwrap_or(1);
    if members > 1 {
        return Err(SnapshotError::ClusterNode(members));
    }
    let wanted: Vec<PathBuf> = files(&source, None)?
        .into_iter()
        .filter(|f| f.as_os_str() != INFO_FILE)
        .collect();
    for entry in std::fs::read_dir(data_dir).map_err(io(data_dir))? {
        let entry = entry.map_err(io(data_dir))?;
        if entry.file_name() == SNAPSHOTS_DIR {
            continue;
        }
        let path = entry.path();
        if entry.file_type().map_err(io(&path))?.is_dir() {
            std::fs::remove_dir_all(&path).map_err(io(&path))?;
        } else {
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
    }
    if !place(&source, data_dir, &wanted, &mut |_| {})? {
        return Err(SnapshotError::Io {
            path: source,
            source: std::io::Error::other("a file of the snapshot went missing"),
        });
    }
    Ok(wanted.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain() {
        assert!(check_name("before-upgrade_1.2").is_ok());
        for bad in ["", ".", "..", "a/b", "x y", "../etc"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn version_pointers_and_journals_are_copied_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("storage/keyspaces/1/tables")).expect("mkdir");
        std::fs::write(root.join("storage/keyspaces/1/tables/7"), b"segment").expect("write");
        std::fs::write(root.join("storage/keyspaces/1/current"), b"v3").expect("write");
        std::fs::write(root.join("storage/0.jnl"), b"journal").expect("write");
        std::fs::create_dir_all(root.join("snapshots/old")).expect("mkdir");
        std::fs::write(root.join("snapshots/old/x"), b"old").expect("write");
        let listed = files(root, Some(SNAPSHOTS_DIR)).expect("files");
        let rewritten_first: Vec<bool> = listed.iter().map(|p| rewritten(p)).collect();
        assert_eq!(rewritten_first, [true, true, false], "{listed:?}");
        assert!(listed.iter().all(|p| !p.starts_with(SNAPSHOTS_DIR)));
        let target = root.join("snapshots/new");
        assert!(place(root, &target, &listed, &mut |_| {}).expect("place"));
        assert_eq!(
            std::fs::read(target.join("storage/keyspaces/1/tables/7")).expect("read"),
            b"segment"
        );
        // A file that vanished makes the caller start over.
        let gone = vec![PathBuf::from("storage/keyspaces/1/tables/8")];
        assert!(!place(root, &root.join("snapshots/again"), &gone, &mut |_| {}).expect("place"));
    }

    #[test]
    fn a_cluster_nodes_snapshot_is_not_restored_and_a_single_nodes_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(root.join("host_id"), b"now").expect("write");
        for (name, members) in [("clustered", 3), ("single", 1)] {
            let snap = root.join(SNAPSHOTS_DIR).join(name);
            std::fs::create_dir_all(&snap).expect("mkdir");
            std::fs::write(snap.join("host_id"), b"then").expect("write");
            std::fs::write(
                snap.join(INFO_FILE),
                format!("cluster_members = {members}\n"),
            )
            .expect("write");
        }
        let refused = restore(root, "clustered");
        assert!(
            matches!(refused, Err(SnapshotError::ClusterNode(3))),
            "{refused:?}"
        );
        assert_eq!(std::fs::read(root.join("host_id")).expect("read"), b"now");
        assert_eq!(restore(root, "single").expect("restore"), 1);
        assert_eq!(std::fs::read(root.join("host_id")).expect("read"), b"then");
        assert!(!root.join(INFO_FILE).exists());
    }
}
