//! A fjall compaction filter that purges expired cells and tombstones past gc-grace.
//!
//! fjall asks for a filter factory per keyspace by name when it opens or creates the keyspace
//! (before the server has told storage about its tables), so the factory looks the table's
//! `gc_grace_seconds` and clustering up in a shared registry at compaction time; an unknown
//! table keeps everything.
//!
//! What is purged, once `deleted_at` (tombstones) or the expiry time (TTL cells) is more than
//! `gc_grace_seconds` in the past:
//! - cell tombstones and expired cells, row liveness markers and collection elements:
//!   each shadows only its own key (the write path never stores a losing cell), so removing
//!   it cannot resurrect anything older. A row item (`crate::bundle`) without a live
//!   marker sheds its explicit entries as each goes, and is purged once its marker and all
//!   of them are; no separate item of the row holds one of its columns, so it too shadows
//!   nothing else (a row item with a live marker is kept whole). As in Cassandra, a write with an older
//!   timestamp arriving after gc-grace is then accepted.
//!
//! Kept for now: partition deletions, range tombstones, row deletions and whole-collection
//! deletions. Each shadows *other* keys, which may sit in SSTables this compaction does not
//! see, so dropping it could resurrect them. (Purging them needs the shadowed cells removed
//! first, e.g. by a major compaction that drops cells covered by a tombstone it has seen.)
//! Purged items become fjall tombstones, so older versions of the same key stay hidden.
//! Size cells and size counters are not decreased by purges.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use cql::types::DataType;
use fjall::compaction::filter::{CompactionFilter, Context, Factory, ItemAccessor, Verdict};

use crate::cell::StoredCell;
use crate::clock::Clock;
use crate::key::{self, ItemPath, KeyReader, Order};
use crate::names::parse_keyspace_name;
use crate::{bundle, TableId, TableLayout};

#[derive(Clone)]
struct GcTable {
    gc_grace_seconds: u32,
    clustering: Vec<(DataType, Order)>,
}

type Tables = Arc<RwLock<HashMap<TableId, GcTable>>>;

/// What fjall's `with_compaction_filter_factories` takes.
type Assigner = Arc<dyn Fn(&str) -> Option<Arc<dyn Factory>> + Send + Sync>;

/// gc-grace and clustering per table, shared with the compaction filters.
#[derive(Clone)]
pub(crate) struct GcRegistry {
    tables: Tables,
    clock: Option<Clock>,
    /// Key and value bytes of the items compactions have read (tombstones aside).
    compacted: Arc<AtomicU64>,
}

impl GcRegistry {
    pub(crate) fn new(clock: Option<Clock>) -> GcRegistry {
        GcRegistry {
            tables: Arc::default(),
            clock,
            compacted: Arc::default(),
        }
    }

    /// Key and value bytes of the items compactions have read so far (each version of a
    /// key that a compaction merges counts; tombstones do not).
    pub(crate) fn bytes_compacted(&self) -> u64 {
        self.compacted.load(Ordering::Relaxed)
    }

    pub(crate) fn register(&self, table: TableId, layout: &TableLayout) {
        let entry = GcTable {
            gc_grace_seconds: layout.gc_grace_seconds,
            clustering: layout.clustering.clone(),
        };
        self.tables
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(table, entry);
    }

    pub(crate) fn unregister(&self, table: TableId) {
        self.tables
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&table);
    }

    /// The per-keyspace factory assigner to install in fjall's builder.
    pub(crate) fn assigner(&self) -> Assigner {
        let registry = self.clone();
        Arc::new(move |name: &str| {
            let (table, _) = parse_keyspace_name(name)?;
            Some(Arc::new(GcFactory {
                registry: registry.clone(),
                table,
            }) as Arc<dyn Factory>)
        })
    }

    fn now(&self) -> i64 {
        crate::clock::now(self.clock.as_ref())
    }
}

struct GcFactory {
    registry: GcRegistry,
    table: TableId,
}

impl std::panic::RefUnwindSafe for GcFactory {}

impl Factory for GcFactory {
    fn name(&self) -> &str {
        "ringdb-gc-grace"
    }

    fn make_filter(&self, _ctx: &Context) -> Box<dyn CompactionFilter> {
        let table = self
            .registry
            .tables
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&self.table)
            .cloned();
        Box::new(GcFilter {
            table,
            now: self.registry.now(),
            read: 0,
            compacted: self.registry.compacted.clone(),
        })
    }
}

struct GcFilter {
    table: Option<GcTable>,
    now: i64,
    /// Bytes read by this compaction, added to `compacted` when it ends.
    read: u64,
    compacted: Arc<AtomicU64>,
}

impl Drop for GcFilter {
    fn drop(&mut self) {
        self.compacted.fetch_add(self.read, Ordering::Relaxed);
    }
}

impl CompactionFilter for GcFilter {
    fn filter_item(
        &mut self,
        item: ItemAccessor<'_>,
        _ctx: &Context,
    ) -> fjall::compaction::filter::CompactionFilterResult {
        let Some(table) = &self.table else {
            self.read += item.key().len() as u64;
            return Ok(Verdict::Keep);
        };
        // Most items are live cells: their first byte says so, before any key is parsed.
        let value = item.value()?;
        self.read += (item.key().len() + value.len()) as u64;
        if StoredCell::is_live_encoding(&value) {
            return Ok(Verdict::Keep);
        }
        let Some(path) = purgeable_path(table, item.key()) else {
            return Ok(Verdict::Keep);
        };
        let Ok(cell) = StoredCell::decode(&value) else {
            return Ok(Verdict::Keep);
        };
        let grace = i64::from(table.gc_grace_seconds);
        let horizon = self.now.saturating_sub(grace);
        match bundle::purge(&cell, path == ItemPath::Liveness, horizon) {
            Ok(bundle::Purge::Remove) => Ok(Verdict::Remove),
            Ok(bundle::Purge::Replace(kept)) => Ok(Verdict::ReplaceValue(kept.encode_slice())),
            Ok(bundle::Purge::Keep) | Err(_) => Ok(Verdict::Keep),
        }
    }
}

/// The path of `key` when it is a single-key item (a cell, a liveness marker, a collection
/// element).
fn purgeable_path(table: &GcTable, key: &[u8]) -> Option<ItemPath> {
    let Ok((_, _, rest)) = key::split_partition_prefix(key) else {
        return None;
    };
    let path = match rest.split_first() {
        Some((&key::SECTION_STATIC, item)) => item,
        Some((&key::SECTION_ROWS, row)) => {
            let mut reader = KeyReader::new(row, false);
            if key::decode_clustering_from(&table.clustering, &mut reader).is_err() {
                return None;
            }
            match reader.remaining().split_first() {
                Some((&key::CLUSTERING_END, item)) => item,
                _ => return None,
            }
        }
        _ => return None,
    };
    ItemPath::decode(path).ok().filter(|p| {
        matches!(
            p,
            ItemPath::Liveness | ItemPath::Cell(_) | ItemPath::Complex(_, Some(_))
        )
    })
}
