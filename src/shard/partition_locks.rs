//! `PartitionLocks`: striped locks that serialise compare-and-set per partition.

/// Serialises conditional writes per partition (striped).
pub struct PartitionLocks {
    stripes: Vec<std::sync::Mutex<()>>,
}

impl Default for PartitionLocks {
    fn default() -> Self {
        PartitionLocks {
            stripes: (0..256).map(|_| std::sync::Mutex::new(())).collect(),
        }
    }
}

impl PartitionLocks {
    /// Locks the stripe of `(table, partition key)`.
    pub fn lock(&self, table: u128, pk: &[Vec<u8>]) -> std::sync::MutexGuard<'_, ()> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        table.hash(&mut h);
        pk.hash(&mut h);
        let i = (h.finish() as usize) % self.stripes.len();
        self.stripes[i].lock().unwrap_or_else(|p| p.into_inner())
    }
}
