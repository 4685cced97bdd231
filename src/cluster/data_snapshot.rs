//! A physical partition's Raft snapshot. The state machine is the store itself, so building a
//! snapshot only records the position it stands for (and lets Raft purge the log up to it);
//! the data is read when a replica needs it: the group's token range exported from one store
//! snapshot ([`storage::Storage::export_range`]) at the machine's applied position, and
//! imported in place of the range at the receiver. Snapshots travel as unnamed temporary
//! files ([`SnapshotFiles`]): a frame for the range, frames of items, an end frame; so a
//! partition of any size moves without being held in memory.

// openraft's storage traits fix the error type (`StorageError`, 224 bytes).
#![allow(clippy::result_large_err)]

use super::codec::{decode, encode};
use super::raft_types::{GroupId, NodeId, TypeConfig};
use super::snapshot_file::SnapshotFile;
use super::stream_pace::Pace;
use openraft::{
    BasicNode, LogId, RaftSnapshotBuilder, Snapshot, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership,
};
use serde::{Deserialize, Serialize};
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::PathBuf;
use storage::{Storage, TableId};

type Result<T> = std::result::Result<T, StorageError<NodeId>>;

/// The position a snapshot stands for: the last entry applied and the membership then.
pub type Applied = (Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>);

fn io(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// The meta key holding the position of a group's last snapshot.
fn snapshot_key(group: GroupId) -> Vec<u8> {
    let mut k = b"raft/snapshot/".to_vec();
    k.extend_from_slice(&group.to_be_bytes());
    k
}

/// One frame of a snapshot file; each is written as its encoded length (8 bytes, little
/// endian) and its postcard encoding.
#[derive(Serialize, Deserialize)]
enum Frame {
    /// First: the range and the table's content flags.
    Range {
        table: TableId,
        start: i64,
        end: i64,
        /// Where the group was cut by a split, if it was (its fence).
        fence: Option<i64>,
        flags: u8,
    },
    /// Stored items, in key order.
    Items(Vec<(Vec<u8>, Vec<u8>)>),
    /// Last: the file is whole.
    End,
}

/// Bytes of items per frame.
const FRAME_BYTES: usize = 1 << 20;

fn write_frame(out: &mut impl Write, frame: &Frame) -> std::io::Result<()> {
    let bytes = encode(frame).map_err(io)?;
    out.write_all(&(bytes.len() as u64).to_le_bytes())?;
    out.write_all(&bytes)
}

fn read_frame(input: &mut impl Read) -> std::io::Result<Frame> {
    let mut len = [0u8; 8];
    input.read_exact(&mut len)?;
    let len = usize::try_from(u64::from_le_bytes(len)).map_err(io)?;
    if len > 64 * FRAME_BYTES {
        return Err(io("a snapshot frame is too large"));
    }
    let mut bytes = vec![0u8; len];
    input.read_exact(&mut bytes)?;
    decode(&bytes).map_err(io)
}

/// Where snapshots are written: unnamed temporary files in one directory, gone once closed.
#[derive(Debug, Clone)]
pub struct SnapshotFiles {
    dir: PathBuf,
}

impl SnapshotFiles {
    /// Snapshot files in `dir` (created if missing).
    ///
    /// # Errors
    /// When the directory cannot be made.
    pub fn new(dir: PathBuf) -> std::io::Result<SnapshotFiles> {
        std::fs::create_dir_all(&dir)?;
        Ok(SnapshotFiles { dir })
    }

    /// A new empty file.
    ///
    /// # Errors
    /// On I/O failure.
    pub fn create(&self) -> std::io::Result<std::fs::File> {
        tempfile::tempfile_in(&self.dir)
    }

    /// A file holding `bytes`, read from its start (the metadata group's snapshot).
    ///
    /// # Errors
    /// On I/O failure.
    pub fn holding(&self, bytes: &[u8]) -> std::io::Result<SnapshotFile> {
        let mut file = self.create()?;
        file.write_all(bytes)?;
        file.rewind()?;
        Ok(SnapshotFile::ready(file))
    }
}

/// Writes an export into a snapshot file, frame by frame.
struct FrameWriter<W: Write> {
    out: W,
    table: TableId,
    range: (i64, i64),
    fence: Option<i64>,
    batch: Vec<(Vec<u8>, Vec<u8>)>,
    batch_bytes: usize,
    /// Called once the store's snapshot is taken.
    taken: Option<Box<dyn FnOnce() + Send>>,
}

impl<W: Write> FrameWriter<W> {
    fn flush_items(&mut self) -> std::io::Result<()> {
        if !self.batch.is_empty() {
            write_frame(
                &mut self.out,
                &Frame::Items(std::mem::take(&mut self.batch)),
            )?;
            self.batch_bytes = 0;
        }
        Ok(())
    }
}

impl<W: Write> storage::RangeSink for FrameWriter<W> {
    fn flags(&mut self, flags: u8) -> std::result::Result<(), storage::StorageError> {
        if let Some(taken) = self.taken.take() {
            taken();
        }
        let frame = Frame::Range {
            table: self.table,
            start: self.range.0,
            end: self.range.1,
            fence: self.fence,
            flags,
        };
        write_frame(&mut self.out, &frame).map_err(storage::StorageError::Io)
    }

    fn item(&mut self, key: &[u8], value: &[u8]) -> std::result::Result<(), storage::StorageError> {
        self.batch_bytes += key.len() + value.len();
        self.batch.push((key.to_vec(), value.to_vec()));
        if self.batch_bytes >= FRAME_BYTES {
            self.flush_items().map_err(storage::StorageError::Io)?;
        }
        Ok(())
    }
}

/// The snapshot metadata for `applied` in `group`.
pub fn meta_of(group: GroupId, applied: &Applied) -> SnapshotMeta<NodeId, BasicNode> {
    SnapshotMeta {
        last_log_id: applied.0,
        last_membership: applied.1.clone(),
        snapshot_id: format!("g{group}-{}", applied.0.map_or(0, |l| l.index)),
    }
}

/// The position of `group`'s last snapshot on this node, if it made or installed one.
///
/// # Errors
/// When the position cannot be read.
pub fn last(group: GroupId, storage: &Storage) -> std::io::Result<Option<Applied>> {
    match storage.get_meta(&snapshot_key(group)).map_err(io)? {
        Some(bytes) => decode(&bytes).map(Some).map_err(io),
        None => Ok(None),
    }
}

/// Records that `group`'s snapshot stands at `applied`.
///
/// # Errors
/// On I/O failure.
pub fn record(group: GroupId, storage: &Storage, applied: &Applied) -> std::io::Result<()> {
    let bytes = encode(applied).map_err(io)?;
    storage.put_meta(&snapshot_key(group), &bytes).map_err(io)
}

/// Forgets `group`'s snapshot position (the group left this node).
///
/// # Errors
/// On I/O failure.
pub fn forget(group: GroupId, storage: &Storage) -> std::result::Result<(), storage::StorageError> {
    storage.delete_meta(&snapshot_key(group))
}

/// Exports `table`'s range `(start, end]` from `storage` into a snapshot file; returns the
/// file, read from its start, and its size. `taken` is called once the store's snapshot is
/// taken: what the store applies after that is not in the file.
///
/// # Errors
/// When the store cannot be read or the file written.
pub fn export(
    storage: &Storage,
    files: &SnapshotFiles,
    table: TableId,
    range: (i64, i64),
    fence: Option<i64>,
    taken: Box<dyn FnOnce() + Send>,
) -> std::io::Result<(std::fs::File, u64)> {
    let mut writer = FrameWriter {
        out: BufWriter::new(files.create()?),
        table,
        range,
        fence,
        batch: Vec::new(),
        batch_bytes: 0,
        taken: Some(taken),
    };
    storage
        .export_range(table, range.0, range.1, &mut writer)
        .map_err(io)?;
    writer.flush_items()?;
    write_frame(&mut writer.out, &Frame::End)?;
    let mut file = writer.out.into_inner().map_err(|e| io(e.error()))?;
    let size = file.stream_position()?;
    file.rewind()?;
    Ok((file, size))
}

/// Imports a snapshot file into `storage` in place of its range; returns the range's fence,
/// if any.
///
/// # Errors
/// When the file is no whole snapshot or the store fails.
pub fn import(
    storage: &Storage,
    mut file: std::fs::File,
    pace: &Pace,
) -> std::io::Result<Option<i64>> {
    file.rewind()?;
    let mut input = BufReader::new(file);
    let Frame::Range {
        table,
        start,
        end,
        fence,
        flags,
    } = read_frame(&mut input)?
    else {
        return Err(io("a snapshot does not start with its range"));
    };
    // Items come frame by frame; the end frame proves the file whole.
    let mut pending: std::vec::IntoIter<(Vec<u8>, Vec<u8>)> = Vec::new().into_iter();
    let mut ended = false;
    let mut failed: Option<std::io::Error> = None;
    let mut items = std::iter::from_fn(|| loop {
        if let Some(item) = pending.next() {
            return Some(Ok(item));
        }
        if ended || failed.is_some() {
            return None;
        }
        match read_frame(&mut input) {
            Ok(Frame::Items(batch)) => {
                let bytes: usize = batch.iter().map(|(k, v)| k.len() + v.len()).sum();
                std::thread::sleep(pace.reserve(bytes as u64));
                pending = batch.into_iter();
            }
            Ok(Frame::End) => ended = true,
            Ok(Frame::Range { .. }) => {
                return Some(Err(storage::StorageError::Corrupt(
                    "a snapshot holds two ranges".into(),
                )))
            }
            Err(e) => {
                let message = e.to_string();
                failed = Some(e);
                return Some(Err(storage::StorageError::Corrupt(format!(
                    "a snapshot ends early: {message}"
                ))));
            }
        }
    });
    let imported = storage
        .import_range(table, start, end, flags, &mut items)
        .map_err(io)?;
    tracing::info!(
        %table,
        start,
        end,
        imported,
        "installed a physical partition's snapshot"
    );
    Ok(fence)
}

/// Builds a data group's snapshot: records the applied position; the data is the store's.
pub struct DataSnapshotBuilder {
    /// The group.
    pub group: GroupId,
    /// Its position when the build was asked for.
    pub applied: Applied,
    /// The store.
    pub storage: Storage,
    /// Where the (empty) snapshot file is made.
    pub files: SnapshotFiles,
}

impl RaftSnapshotBuilder<TypeConfig> for DataSnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>> {
        record(self.group, &self.storage, &self.applied)
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        let empty = self
            .files
            .holding(&[])
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        Ok(Snapshot {
            meta: meta_of(self.group, &self.applied),
            snapshot: Box::new(empty),
        })
    }
}
