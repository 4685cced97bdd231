//! Where each data group's range was cut on this node: a group that split keeps the tokens up
//! to its fence (`Command::Fence`) and answers `Moved` for later ones. A fence is applied in
//! the group's log order and saved with it, so it is the same on every replica; the right
//! half's replicas wait for it before applying their own entries.

use super::raft_types::GroupId;
use std::collections::HashMap;
use std::sync::RwLock;
use storage::{Storage, StorageError};

/// The meta key holding a group's fence.
fn fence_key(group: GroupId) -> Vec<u8> {
    let mut k = b"raft/fence/".to_vec();
    k.extend_from_slice(&group.to_be_bytes());
    k
}

/// The fences of the groups this node holds, cached from the store.
#[derive(Default)]
pub struct Fences {
    ends: RwLock<HashMap<GroupId, i64>>,
}

impl Fences {
    /// The last token `group` owns after its splits, when it split.
    pub fn get(&self, group: GroupId) -> Option<i64> {
        self.ends
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&group)
            .copied()
    }

    /// Whether `group` (as this node's replica has applied its log) still owns `token`.
    pub fn owns(&self, group: GroupId, token: i64) -> bool {
        self.get(group).is_none_or(|end| token <= end)
    }

    /// Loads `group`'s fence from the store (when its replica opens).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn load(&self, group: GroupId, storage: &Storage) -> Result<Option<i64>, StorageError> {
        let saved = storage.get_meta(&fence_key(group))?.and_then(|bytes| {
            let raw: [u8; 8] = bytes.as_slice().try_into().ok()?;
            Some(i64::from_be_bytes(raw))
        });
        let mut ends = self.ends.write().unwrap_or_else(|p| p.into_inner());
        match saved {
            Some(end) => ends.insert(group, end),
            None => ends.remove(&group),
        };
        Ok(saved)
    }

    /// Moves `group`'s fence down to `at` (never up) and saves it.
    ///
    /// # Errors
    /// When the store cannot be written.
    pub fn cut(&self, group: GroupId, at: i64, storage: &Storage) -> Result<(), StorageError> {
        let end = self.get(group).map_or(at, |e| e.min(at));
        storage.put_meta(&fence_key(group), &end.to_be_bytes())?;
        self.ends
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(group, end);
        Ok(())
    }

    /// Forgets `group`'s fence (the group left this node).
    ///
    /// # Errors
    /// When the store cannot be written.
    pub fn forget(&self, group: GroupId, storage: &Storage) -> Result<(), StorageError> {
        self.ends
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&group);
        storage.delete_meta(&fence_key(group))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_only_moves_down_and_survives_a_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let storage = Storage::open(dir.path(), storage::StorageOptions::default()).expect("open");
        let fences = Fences::default();
        assert!(
            fences.owns(7, i64::MAX),
            "an unsplit group owns its whole range"
        );
        fences.cut(7, 100, &storage).expect("cut");
        assert!(fences.owns(7, 100));
        assert!(!fences.owns(7, 101));
        // A later split cuts lower; a replayed older fence never moves it back up.
        fences.cut(7, 50, &storage).expect("cut");
        fences.cut(7, 100, &storage).expect("replayed");
        assert_eq!(fences.get(7), Some(50));
        let reopened = Fences::default();
        assert_eq!(reopened.load(7, &storage).expect("load"), Some(50));
        assert_eq!(reopened.load(8, &storage).expect("load"), None);
        reopened.forget(7, &storage).expect("forget");
        assert_eq!(reopened.get(7), None);
        assert_eq!(Fences::default().load(7, &storage).expect("load"), None);
    }
}
