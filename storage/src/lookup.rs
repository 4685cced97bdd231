//! Where a read's single-item lookups come from: a snapshot, the items published at a
//! sequence number, or the item cache in front of them.

use fjall::{AbstractTree, Database, Keyspace, Readable, Snapshot};

use crate::item_cache::ItemCache;
use crate::stripes::Stripes;
use crate::StorageError;

/// Where a read's single-item lookups come from.
pub(crate) trait Lookup: Copy {
    /// The item stored at `key` in `ks`, as this source sees it.
    fn lookup(self, ks: &Keyspace, key: &[u8]) -> Result<Option<fjall::Slice>, StorageError>;
}

/// One consistent snapshot: for reads of several items or ranges.
impl Lookup for &Snapshot {
    fn lookup(self, ks: &Keyspace, key: &[u8]) -> Result<Option<fjall::Slice>, StorageError> {
        Ok(Readable::get(self, ks, key)?)
    }
}

/// Items as published at a sequence number (a write batch is published whole, so none is
/// seen in part), read without registering a snapshot. Only for a single lookup that re-reads
/// a miss through a snapshot: an unregistered read may miss a version that compaction dropped
/// for a newer one meanwhile, but never sees a wrong one.
#[derive(Clone, Copy)]
pub(crate) struct Published(pub(crate) fjall::SeqNo);

impl Lookup for Published {
    fn lookup(self, ks: &Keyspace, key: &[u8]) -> Result<Option<fjall::Slice>, StorageError> {
        Ok(AbstractTree::get(&ks.tree, key, self.0).map_err(fjall::Error::from)?)
    }
}

/// The item cache in front of the newest published items: a miss takes the partition's
/// write-lock stripe, reads the item at the newest published sequence number and caches it
/// (see `crate::item_cache`). Only for a single lookup, as [`Published`].
#[derive(Clone, Copy)]
pub(crate) struct Cached<'a> {
    pub(crate) db: &'a Database,
    pub(crate) cache: &'a ItemCache,
    pub(crate) stripes: &'a Stripes,
    /// The partition's id in the item cache.
    pub(crate) part: u64,
    /// The partition's write-lock stripe.
    pub(crate) stripe: usize,
}

impl Lookup for Cached<'_> {
    fn lookup(self, ks: &Keyspace, key: &[u8]) -> Result<Option<fjall::Slice>, StorageError> {
        if !self.cache.enabled() {
            // Nothing to fill: no stripe to take.
            return Published(self.db.visible_seqno()).lookup(ks, key);
        }
        if let Some(v) = self.cache.get_unlocked(self.part, key, self.stripe) {
            return Ok(Some(v));
        }
        let _stripe = self.stripes.lock(1 << self.stripe);
        let v = Published(self.db.visible_seqno()).lookup(ks, key)?;
        if let Some(v) = &v {
            self.cache.before_fill();
            self.cache.put(self.part, key, v);
        }
        Ok(v)
    }
}
