//! Row items: a row's simple cells stored inside its liveness item, merged cell by cell.
//!
//! A row costs a point read one lookup and a write one memtable insert when its liveness
//! marker and its simple cells are one item (the liveness key, whose value is the marker with
//! the cells appended) instead of one item per cell. The marker's value bytes (empty for a
//! plain marker) hold the cells in column order, each as `column u32 BE ‖ length u32 BE ‖
//! bytes`:
//! - a *plain* entry (the column's top bit clear) is a value with the marker's timestamp,
//!   TTL and expiry (what an INSERT writes);
//! - an *explicit* entry (top bit set) is a whole stored cell with its own timestamp, TTL or
//!   tombstone (what an UPDATE, a null or an older write leaves).
//!
//! A row written only by UPDATEs has no marker: its item's marker is [`unmarked`], an
//! expiring marker that was never live, and all its entries are explicit. Writes merge into
//! the item with Cassandra's per-cell rules ([`RowItem`]), under the partition's stripe.
//!
//! Tables whose content flag [`crate::content::SEPARATE_CELLS`] is set (data directories from
//! before row items, counter tables, and tables where a write found a row item past
//! [`MERGE_MAX`]) keep the older layout, one item per cell: a write there first *explodes* the
//! row's item into a plain marker and separate cell items ([`explode`]), so a row never holds
//! a column both in its item and as a separate item. In either layout a part of a row item
//! that is gone shadows nothing but itself, and the compaction filter may drop it ([`purge`]).

use crate::cell::StoredCell;
use crate::StorageError;

/// The largest row item (bytes of its entries) a write merges into. A row past it is not
/// rewritten whole for each small write: the write explodes it instead, and its table keeps
/// one item per cell from then on.
pub(crate) const MERGE_MAX: usize = 16 * 1024;

/// The column bit of an explicit entry.
const EXPLICIT: u32 = 0x8000_0000;

/// One entry of a row item's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry<'a> {
    /// A value with the marker's timestamp, TTL and expiry.
    Plain(&'a [u8]),
    /// A stored cell's encoding.
    Explicit(&'a [u8]),
}

fn push_entry(bundle: &mut Vec<u8>, column: u32, value: &[u8]) -> Result<(), StorageError> {
    let len = u32::try_from(value.len())
        .map_err(|_| StorageError::InvalidRequest("value longer than 4 GiB".into()))?;
    bundle.extend_from_slice(&column.to_be_bytes());
    bundle.extend_from_slice(&len.to_be_bytes());
    bundle.extend_from_slice(value);
    Ok(())
}

/// Appends one plain entry to a bundle's bytes. Entries must be appended in column order.
pub(crate) fn push(bundle: &mut Vec<u8>, column: u32, value: &[u8]) -> Result<(), StorageError> {
    if column & EXPLICIT != 0 {
        return Err(StorageError::InvalidRequest(format!(
            "column id {column} too large"
        )));
    }
    push_entry(bundle, column, value)
}

/// The (column, entry) pairs of a bundle's bytes.
pub(crate) fn cells(bytes: &[u8]) -> Cells<'_> {
    Cells { rest: bytes }
}

/// Iterator over a bundle's entries; yields an error once on truncated bytes.
pub(crate) struct Cells<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Cells<'a> {
    type Item = Result<(u32, Entry<'a>), StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let parsed = (|| {
            let (col, rest) = self.rest.split_first_chunk::<4>()?;
            let (len, rest) = rest.split_first_chunk::<4>()?;
            let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
            (rest.len() >= len).then(|| (u32::from_be_bytes(*col), &rest[..len], &rest[len..]))
        })();
        match parsed {
            Some((col, bytes, rest)) => {
                self.rest = rest;
                let entry = if col & EXPLICIT != 0 {
                    Entry::Explicit(bytes)
                } else {
                    Entry::Plain(bytes)
                };
                Some(Ok((col & !EXPLICIT, entry)))
            }
            None => {
                self.rest = &[];
                Some(Err(StorageError::corrupt("truncated row bundle")))
            }
        }
    }
}

/// True when the bundle bytes hold an explicit entry (a row merged from several writes).
#[cfg(test)]
pub(crate) fn has_explicit(bytes: &[u8]) -> bool {
    cells(bytes).any(|c| !matches!(c, Ok((_, Entry::Plain(_)))))
}

/// The stored cell of an entry of `marker`'s bundle.
pub(crate) fn cell_of(marker: &StoredCell, entry: Entry<'_>) -> Result<StoredCell, StorageError> {
    match entry {
        Entry::Plain(v) => Ok(with_value(marker, v.to_vec())),
        Entry::Explicit(bytes) => StoredCell::decode(bytes),
    }
}

/// The marker of a row item without a liveness marker (a row written only by UPDATEs): an
/// expiring marker with no TTL that expired before any time, so it is never live, loses to
/// every real marker and never carries plain entries.
pub(crate) fn unmarked(value: Vec<u8>) -> StoredCell {
    StoredCell::Expiring {
        timestamp: i64::MIN,
        ttl: 0,
        expires_at: i64::MIN,
        value,
    }
}

/// True for [`unmarked`]'s marker (real expiring markers have a TTL).
pub(crate) fn is_unmarked(marker: &StoredCell) -> bool {
    matches!(marker, StoredCell::Expiring { ttl: 0, .. })
}

/// The marker's bundle bytes (empty for tombstones, which never carry a bundle).
pub(crate) fn bytes_of(marker: &StoredCell) -> &[u8] {
    match marker {
        StoredCell::Live { value, .. } | StoredCell::Expiring { value, .. } => value,
        StoredCell::Tombstone { .. } => &[],
    }
}

/// True when the liveness item carries cells.
pub(crate) fn has_cells(marker: &StoredCell) -> bool {
    !bytes_of(marker).is_empty()
}

/// The marker with `value` as its bytes, keeping its timestamp, TTL and expiry.
pub(crate) fn with_value(marker: &StoredCell, value: Vec<u8>) -> StoredCell {
    match marker {
        StoredCell::Live { timestamp, .. } => StoredCell::Live {
            timestamp: *timestamp,
            value,
        },
        StoredCell::Expiring {
            timestamp,
            ttl,
            expires_at,
            ..
        } => StoredCell::Expiring {
            timestamp: *timestamp,
            ttl: *ttl,
            expires_at: *expires_at,
            value,
        },
        StoredCell::Tombstone { .. } => marker.clone(),
    }
}

/// Splits a liveness item into its plain marker and its cells: plain entries as stored cells
/// with the marker's timestamp, TTL and expiry, explicit ones as stored.
pub(crate) fn explode(
    marker: &StoredCell,
) -> Result<(StoredCell, Vec<(u32, StoredCell)>), StorageError> {
    let cells = cells(bytes_of(marker))
        .map(|c| c.and_then(|(col, entry)| Ok((col, cell_of(marker, entry)?))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((with_value(marker, Vec::new()), cells))
}

/// Since when (seconds) the single cell `cell` has been gone (expired or deleted); None for
/// a live cell with no expiry.
fn gone_at(cell: &StoredCell) -> Option<i64> {
    match cell {
        StoredCell::Live { .. } => None,
        StoredCell::Expiring { expires_at, .. } => Some(*expires_at),
        StoredCell::Tombstone { deleted_at, .. } => Some(*deleted_at),
    }
}

/// What compaction does with a stored item, given the purge horizon (now minus gc-grace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Purge {
    /// Nothing of it is past the horizon.
    Keep,
    /// All of it is.
    Remove,
    /// A liveness item with some parts past the horizon, without them.
    Replace(StoredCell),
}

/// What compaction does with the stored item `item` (a liveness item when `liveness`) at the
/// purge horizon `horizon`: a single cell goes once it has been gone longer than gc-grace; a
/// row item sheds its explicit entries (and its marker with the plain entries) as each does,
/// and goes once all of it has.
pub(crate) fn purge(
    item: &StoredCell,
    liveness: bool,
    horizon: i64,
) -> Result<Purge, StorageError> {
    let gone = |cell: &StoredCell| gone_at(cell).is_some_and(|at| at < horizon);
    if !liveness {
        return Ok(if gone(item) {
            Purge::Remove
        } else {
            Purge::Keep
        });
    }
    let mut row = RowItem::decode(item)?;
    let shed = row.shed(horizon);
    if row.marker.is_none() && row.cells.is_empty() {
        return Ok(Purge::Remove);
    }
    if !shed {
        return Ok(Purge::Keep);
    }
    Ok(Purge::Replace(row.encode()?))
}

/// A row item decoded: its marker (None for a row without one) and its simple cells.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RowItem {
    /// The liveness marker, with no value bytes.
    pub(crate) marker: Option<StoredCell>,
    /// The cells, in column order.
    pub(crate) cells: Vec<(u32, StoredCell)>,
}

impl RowItem {
    /// Decodes a stored liveness item (a plain marker, a bundle or a merged row).
    pub(crate) fn decode(stored: &StoredCell) -> Result<RowItem, StorageError> {
        let (marker, mut cells) = explode(stored)?;
        cells.sort_by_key(|(c, _)| *c);
        let marker = (!is_unmarked(stored)).then_some(marker);
        Ok(RowItem { marker, cells })
    }

    /// Drops the cells gone (expired or deleted) before `horizon`, and the marker if it is;
    /// returns whether anything went.
    pub(crate) fn shed(&mut self, horizon: i64) -> bool {
        let gone = |cell: &StoredCell| gone_at(cell).is_some_and(|at| at < horizon);
        let before = self.cells.len();
        self.cells.retain(|(_, c)| !gone(c));
        let marker_gone = self.marker.as_ref().is_some_and(gone);
        if marker_gone {
            self.marker = None;
        }
        marker_gone || self.cells.len() != before
    }

    /// Keeps `marker` when it wins over the current one; returns whether it did.
    pub(crate) fn merge_marker(&mut self, marker: StoredCell) -> bool {
        let wins = self.marker.as_ref().is_none_or(|old| marker.wins_over(old));
        if wins {
            self.marker = Some(marker);
        }
        wins
    }

    /// Keeps `cell` as column `col` when it wins over the current one; returns whether it did.
    pub(crate) fn merge_cell(&mut self, col: u32, cell: StoredCell) -> bool {
        match self.cells.binary_search_by_key(&col, |(c, _)| *c) {
            Ok(at) => {
                let wins = cell.wins_over(&self.cells[at].1);
                if wins {
                    self.cells[at].1 = cell;
                }
                wins
            }
            Err(at) => {
                self.cells.insert(at, (col, cell));
                true
            }
        }
    }

    /// The stored liveness item: cells with the marker's timestamp, TTL and expiry as plain
    /// entries, the rest explicit.
    pub(crate) fn encode(&self) -> Result<StoredCell, StorageError> {
        let mut bytes = Vec::new();
        for (col, cell) in &self.cells {
            if *col & EXPLICIT != 0 {
                return Err(StorageError::InvalidRequest(format!(
                    "column id {col} too large"
                )));
            }
            match (&self.marker, cell) {
                (Some(m), StoredCell::Live { value, .. } | StoredCell::Expiring { value, .. })
                    if shares_header(m, cell) =>
                {
                    push_entry(&mut bytes, *col, value)?;
                }
                _ => push_entry(&mut bytes, *col | EXPLICIT, &cell.encode_slice())?,
            }
        }
        Ok(match &self.marker {
            Some(m) => with_value(m, bytes),
            None => unmarked(bytes),
        })
    }
}

/// True when `cell` has `marker`'s kind, timestamp, TTL and expiry (a plain entry keeps it).
fn shares_header(marker: &StoredCell, cell: &StoredCell) -> bool {
    match (marker, cell) {
        (StoredCell::Live { timestamp: a, .. }, StoredCell::Live { timestamp: b, .. }) => a == b,
        (
            StoredCell::Expiring {
                timestamp: a,
                ttl: ta,
                expires_at: ea,
                ..
            },
            StoredCell::Expiring {
                timestamp: b,
                ttl: tb,
                expires_at: eb,
                ..
            },
        ) => (a, ta, ea) == (b, tb, eb) && *ta > 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_round_trip_and_truncation_is_an_error() {
        let mut b = Vec::new();
        push(&mut b, 2, b"abc").unwrap();
        push(&mut b, 7, b"").unwrap();
        let got: Vec<_> = cells(&b).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            vec![(2, Entry::Plain(&b"abc"[..])), (7, Entry::Plain(&b""[..]))]
        );
        assert!(!has_explicit(&b));
        assert!(push(&mut b, EXPLICIT | 1, b"").is_err());
        let errors: Vec<_> = cells(&b[..b.len() - 1]).filter(Result::is_err).collect();
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn explode_gives_cells_the_markers_time_and_ttl() {
        let mut b = Vec::new();
        push(&mut b, 1, b"x").unwrap();
        let marker = StoredCell::Expiring {
            timestamp: 5,
            ttl: 10,
            expires_at: 99,
            value: b,
        };
        let (plain, cells) = explode(&marker).unwrap();
        assert!(!has_cells(&plain));
        assert_eq!(plain.timestamp(), 5);
        assert_eq!(
            cells,
            vec![(
                1,
                StoredCell::Expiring {
                    timestamp: 5,
                    ttl: 10,
                    expires_at: 99,
                    value: b"x".to_vec()
                }
            )]
        );
    }

    fn live(timestamp: i64, v: &str) -> StoredCell {
        StoredCell::Live {
            timestamp,
            value: v.as_bytes().to_vec(),
        }
    }

    #[test]
    fn row_items_merge_cell_by_cell_and_round_trip() {
        // An INSERT's row: plain entries only, as the older bundles.
        let mut row = RowItem::default();
        assert!(row.merge_marker(live(10, "")));
        assert!(row.merge_cell(2, live(10, "b")));
        assert!(row.merge_cell(1, live(10, "a")));
        let stored = row.encode().unwrap();
        assert!(!has_explicit(bytes_of(&stored)));
        assert_eq!(RowItem::decode(&stored).unwrap(), row);
        // An UPDATE and a null merge in as explicit entries; older cells lose.
        assert!(row.merge_cell(1, live(12, "u")));
        assert!(!row.merge_cell(2, live(9, "old")));
        let null = StoredCell::Tombstone {
            timestamp: 11,
            deleted_at: 100,
        };
        assert!(row.merge_cell(3, null.clone()));
        let stored = row.encode().unwrap();
        assert!(has_explicit(bytes_of(&stored)));
        let back = RowItem::decode(&stored).unwrap();
        assert_eq!(back, row);
        assert_eq!(back.cells[0], (1, live(12, "u")));
        assert_eq!(back.cells[2], (3, null));
        // A newer INSERT of column 2 alone: the older cells become explicit entries.
        let mut newer = back.clone();
        assert!(newer.merge_marker(live(20, "")));
        assert!(newer.merge_cell(2, live(20, "n")));
        let stored = newer.encode().unwrap();
        let plain: Vec<bool> = cells(bytes_of(&stored))
            .map(|c| matches!(c.unwrap().1, Entry::Plain(_)))
            .collect();
        assert_eq!(plain, vec![false, true, false]);
        // A row written by UPDATEs alone has no marker, and survives a round trip so.
        let mut updated = RowItem::default();
        updated.merge_cell(4, live(5, "x"));
        let stored = updated.encode().unwrap();
        assert!(is_unmarked(&stored));
        assert_eq!(stored.live_value(i64::MIN + 1), None, "never live itself");
        assert_eq!(RowItem::decode(&stored).unwrap(), updated);
        assert!(live(i64::MIN + 1, "").wins_over(&stored));
    }

    #[test]
    fn row_items_shed_what_is_past_the_horizon() {
        let expiring = |ts: i64, at: i64, v: &str| StoredCell::Expiring {
            timestamp: ts,
            ttl: 5,
            expires_at: at,
            value: v.as_bytes().to_vec(),
        };
        let mut row = RowItem::default();
        row.merge_marker(expiring(10, 100, ""));
        row.merge_cell(1, expiring(10, 100, "a"));
        let plain = row.encode().unwrap();
        assert_eq!(purge(&plain, true, 100).unwrap(), Purge::Keep);
        assert_eq!(purge(&plain, true, 101).unwrap(), Purge::Remove);
        row.merge_cell(2, expiring(11, 150, "b"));
        let two = row.encode().unwrap();
        assert_eq!(purge(&two, true, 120).unwrap(), {
            let mut left = RowItem::default();
            left.merge_cell(2, expiring(11, 150, "b"));
            Purge::Replace(left.encode().unwrap())
        });
        assert_eq!(purge(&two, true, 151).unwrap(), Purge::Remove);
        assert_eq!(purge(&two, false, 120).unwrap(), Purge::Remove, "one cell");
        row.merge_cell(3, live(12, "c"));
        assert_eq!(purge(&row.encode().unwrap(), true, 151).unwrap(), {
            let mut left = RowItem::default();
            left.merge_cell(3, live(12, "c"));
            Purge::Replace(left.encode().unwrap())
        });
        let mut updated = RowItem::default();
        let null = StoredCell::Tombstone {
            timestamp: 3,
            deleted_at: 40,
        };
        updated.merge_cell(1, null);
        updated.merge_cell(2, live(4, "x"));
        let stored = updated.encode().unwrap();
        assert_eq!(purge(&stored, true, 40).unwrap(), Purge::Keep);
        updated.cells.remove(0);
        assert_eq!(
            purge(&stored, true, 41).unwrap(),
            Purge::Replace(updated.encode().unwrap())
        );
    }
}
