//! Stored cells (live, expiring, tombstone), their on-disk value format and Cassandra's
//! reconciliation rules.
//!
//! Every fjall value in a table keyspace is one [`StoredCell`]:
//! `kind u8 ‖ timestamp i64 BE ‖ (expiring: ttl u32 BE ‖ expires_at i64 BE | tombstone:
//! deleted_at i64 BE) ‖ value bytes (live and expiring only)`. Times are seconds since the
//! Unix epoch; write timestamps are microseconds, as in Cassandra.

use std::cmp::Ordering;

use crate::StorageError;

const KIND_LIVE: u8 = 0;
const KIND_EXPIRING: u8 = 1;
const KIND_TOMBSTONE: u8 = 2;
/// The most bytes an encoded cell has before its value (kind, timestamp, TTL, expiry).
const ENCODED_HEADER_MAX: usize = 1 + 8 + 8 + 8;

/// One stored version of a cell, row marker or deletion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoredCell {
    /// A live value without TTL.
    Live { timestamp: i64, value: Vec<u8> },
    /// A live value that expires at `expires_at` (seconds).
    Expiring {
        timestamp: i64,
        ttl: u32,
        expires_at: i64,
        value: Vec<u8>,
    },
    /// A deletion: shadows data with a timestamp ≤ `timestamp`.
    Tombstone { timestamp: i64, deleted_at: i64 },
}

impl StoredCell {
    /// A live cell, expiring when `ttl` is set and non-zero.
    pub(crate) fn live(timestamp: i64, ttl: Option<u32>, now: i64, value: Vec<u8>) -> Self {
        match ttl {
            Some(ttl) if ttl > 0 => StoredCell::Expiring {
                timestamp,
                ttl,
                expires_at: now.saturating_add(i64::from(ttl)),
                value,
            },
            _ => StoredCell::Live { timestamp, value },
        }
    }

    pub(crate) fn timestamp(&self) -> i64 {
        match self {
            StoredCell::Live { timestamp, .. }
            | StoredCell::Expiring { timestamp, .. }
            | StoredCell::Tombstone { timestamp, .. } => *timestamp,
        }
    }

    /// The value when the cell is live at `now`.
    pub(crate) fn live_value(&self, now: i64) -> Option<&[u8]> {
        match self {
            StoredCell::Live { value, .. } => Some(value),
            StoredCell::Expiring {
                value, expires_at, ..
            } if *expires_at > now => Some(value),
            _ => None,
        }
    }

    /// The value, moved out, when the cell is live at `now`.
    pub(crate) fn into_live_value(self, now: i64) -> Option<Vec<u8>> {
        match self {
            StoredCell::Live { value, .. } => Some(value),
            StoredCell::Expiring {
                value, expires_at, ..
            } if expires_at > now => Some(value),
            _ => None,
        }
    }

    /// Remaining TTL seconds of a live expiring cell.
    pub(crate) fn ttl_remaining(&self, now: i64) -> Option<u32> {
        match self {
            StoredCell::Expiring { expires_at, .. } => {
                u32::try_from(expires_at.saturating_sub(now).max(0)).ok()
            }
            _ => None,
        }
    }

    /// Cassandra's reconciliation (`Cells.resolveRegular`): does `self` win over `other`?
    ///
    /// Higher timestamp wins. On a tie, independently of the clock (CASSANDRA-14592): an
    /// expiring cell or tombstone beats a regular live cell, a tombstone beats an expiring
    /// cell, then the later local deletion (or expiry) time wins, then the greater value.
    pub(crate) fn wins_over(&self, other: &StoredCell) -> bool {
        self.reconcile_order(other) == Ordering::Greater
    }

    fn reconcile_order(&self, other: &StoredCell) -> Ordering {
        let rank = |c: &StoredCell| match c {
            StoredCell::Live { .. } => (0, 0),
            StoredCell::Expiring { expires_at, .. } => (1, *expires_at),
            StoredCell::Tombstone { deleted_at, .. } => (2, *deleted_at),
        };
        fn value(c: &StoredCell) -> Option<&Vec<u8>> {
            match c {
                StoredCell::Live { value, .. } | StoredCell::Expiring { value, .. } => Some(value),
                StoredCell::Tombstone { .. } => None,
            }
        }
        self.timestamp()
            .cmp(&other.timestamp())
            .then_with(|| rank(self).cmp(&rank(other)))
            .then_with(|| value(self).cmp(&value(other)))
    }

    /// The on-disk bytes as a vector (tests compare [`StoredCell::encode_slice`] with it).
    #[cfg(test)]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let (header, len, value) = self.encoding();
        let mut out = Vec::with_capacity(len + value.len());
        out.extend_from_slice(&header[..len]);
        out.extend_from_slice(value);
        out
    }

    /// The on-disk bytes as a fjall slice, built in place: one allocation (none for a short
    /// cell) where encoding to a vector and converting would take two and a second copy.
    pub(crate) fn encode_slice(&self) -> fjall::Slice {
        let (header, len, value) = self.encoding();
        fjall::Slice::from(byteview::ByteView::fused(&header[..len], value))
    }

    /// The encoded header (its first `len` bytes) and the value bytes that follow it.
    fn encoding(&self) -> ([u8; ENCODED_HEADER_MAX], usize, &[u8]) {
        let mut header = [0; ENCODED_HEADER_MAX];
        let mut len = 0;
        let mut put = |bytes: &[u8]| {
            header[len..len + bytes.len()].copy_from_slice(bytes);
            len += bytes.len();
        };
        let value: &[u8] = match self {
            StoredCell::Live { timestamp, value } => {
                put(&[KIND_LIVE]);
                put(&timestamp.to_be_bytes());
                value
            }
            StoredCell::Expiring {
                timestamp,
                ttl,
                expires_at,
                value,
            } => {
                put(&[KIND_EXPIRING]);
                put(&timestamp.to_be_bytes());
                put(&ttl.to_be_bytes());
                put(&expires_at.to_be_bytes());
                value
            }
            StoredCell::Tombstone {
                timestamp,
                deleted_at,
            } => {
                put(&[KIND_TOMBSTONE]);
                put(&timestamp.to_be_bytes());
                put(&deleted_at.to_be_bytes());
                &[]
            }
        };
        (header, len, value)
    }

    /// True when `bytes` encode a live cell without TTL (checks the kind byte only).
    pub(crate) fn is_live_encoding(bytes: &[u8]) -> bool {
        bytes.first() == Some(&KIND_LIVE)
    }

    /// Parses on-disk bytes.
    pub(crate) fn decode(bytes: &[u8]) -> Result<StoredCell, StorageError> {
        Ok(CellView::parse(bytes)?.to_owned())
    }
}

/// A stored cell read in place: its header decoded, its value still in the stored bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CellView<'a> {
    timestamp: i64,
    kind: ViewKind,
    /// The value bytes (empty for a tombstone).
    value: &'a [u8],
}

/// What kind of cell a [`CellView`] is, with the fields of its header beyond the timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ViewKind {
    Live,
    Expiring { ttl: u32, expires_at: i64 },
    Tombstone { deleted_at: i64 },
}

impl<'a> CellView<'a> {
    /// Parses the header of on-disk bytes, borrowing the value.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<CellView<'a>, StorageError> {
        let bad = || StorageError::corrupt("truncated cell");
        let (&kind, rest) = bytes.split_first().ok_or_else(bad)?;
        let (ts, rest) = rest.split_first_chunk::<8>().ok_or_else(bad)?;
        let timestamp = i64::from_be_bytes(*ts);
        let (kind, value) = match kind {
            KIND_LIVE => (ViewKind::Live, rest),
            KIND_EXPIRING => {
                let (ttl, rest) = rest.split_first_chunk::<4>().ok_or_else(bad)?;
                let (exp, rest) = rest.split_first_chunk::<8>().ok_or_else(bad)?;
                let kind = ViewKind::Expiring {
                    ttl: u32::from_be_bytes(*ttl),
                    expires_at: i64::from_be_bytes(*exp),
                };
                (kind, rest)
            }
            KIND_TOMBSTONE => {
                let exp = rest.first_chunk::<8>().ok_or_else(bad)?;
                let deleted_at = i64::from_be_bytes(*exp);
                (ViewKind::Tombstone { deleted_at }, &[][..])
            }
            _ => return Err(StorageError::corrupt(format!("unknown cell kind {kind}"))),
        };
        Ok(CellView {
            timestamp,
            kind,
            value,
        })
    }

    /// The write timestamp.
    pub(crate) fn timestamp(&self) -> i64 {
        self.timestamp
    }

    /// The value bytes as stored, live or not (empty for a tombstone).
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.value
    }

    /// The value when the cell is live at `now`.
    pub(crate) fn live_value(&self, now: i64) -> Option<&'a [u8]> {
        match self.kind {
            ViewKind::Live => Some(self.value),
            ViewKind::Expiring { expires_at, .. } if expires_at > now => Some(self.value),
            _ => None,
        }
    }

    /// Remaining TTL seconds of a live expiring cell.
    pub(crate) fn ttl_remaining(&self, now: i64) -> Option<u32> {
        match self.kind {
            ViewKind::Expiring { expires_at, .. } => {
                u32::try_from(expires_at.saturating_sub(now).max(0)).ok()
            }
            _ => None,
        }
    }

    /// The owned cell (copies the value).
    pub(crate) fn to_owned(self) -> StoredCell {
        let timestamp = self.timestamp;
        match self.kind {
            ViewKind::Live => StoredCell::Live {
                timestamp,
                value: self.value.to_vec(),
            },
            ViewKind::Expiring { ttl, expires_at } => StoredCell::Expiring {
                timestamp,
                ttl,
                expires_at,
                value: self.value.to_vec(),
            },
            ViewKind::Tombstone { deleted_at } => StoredCell::Tombstone {
                timestamp,
                deleted_at,
            },
        }
    }
}

/// A live cell as a read returns it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CellValue {
    /// The protocol-serialized value (a counter is an 8-byte big-endian i64).
    pub value: Vec<u8>,
    /// The write timestamp in microseconds (`writetime()`).
    pub timestamp: i64,
    /// Seconds left before the cell expires (`ttl()`), `None` without TTL.
    pub ttl: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(ts: i64, v: &[u8]) -> StoredCell {
        StoredCell::Live {
            timestamp: ts,
            value: v.to_vec(),
        }
    }

    fn tomb(ts: i64) -> StoredCell {
        StoredCell::Tombstone {
            timestamp: ts,
            deleted_at: 100,
        }
    }

    #[test]
    fn reconcile_follows_cassandra() {
        assert!(live(2, b"a").wins_over(&live(1, b"z")));
        assert!(tomb(2).wins_over(&live(2, b"z")));
        assert!(!live(2, b"z").wins_over(&tomb(2)));
        assert!(live(3, b"a").wins_over(&tomb(2)));
        assert!(live(2, b"b").wins_over(&live(2, b"a")));
        // Whatever the clock says, expiring beats regular and loses to a tombstone on a tie.
        let expiring = StoredCell::live(2, Some(10), 0, b"a".to_vec());
        assert!(expiring.wins_over(&live(2, b"zz")));
        assert!(tomb(2).wins_over(&expiring));
    }

    #[test]
    fn cell_bytes_round_trip_and_reject_garbage() {
        for c in [
            live(-5, b"xy"),
            tomb(7),
            StoredCell::live(1, Some(3), 10, vec![1]),
            // past a slice's 20 inline bytes
            live(i64::MAX, &[0xab; 100]),
            StoredCell::live(i64::MIN, Some(u32::MAX), i64::MAX, vec![7; 300]),
        ] {
            assert_eq!(StoredCell::decode(&c.encode()).unwrap(), c);
            assert_eq!(&*c.encode_slice(), c.encode().as_slice());
        }
        assert!(StoredCell::decode(&[]).is_err());
        assert!(StoredCell::decode(&[9; 9]).is_err());
        assert!(StoredCell::decode(&[1, 0, 0]).is_err());
    }

    #[test]
    fn a_view_reads_the_cell_in_place() {
        let expiring = StoredCell::live(4, Some(30), 100, b"v".to_vec());
        let bytes = expiring.encode();
        let view = CellView::parse(&bytes).unwrap();
        assert_eq!(view.timestamp(), 4);
        assert_eq!(view.live_value(129), Some(&b"v"[..]));
        assert_eq!(view.ttl_remaining(110), Some(20));
        assert_eq!(view.live_value(130), None, "expired at 130");
        assert_eq!(view.to_owned(), expiring);
        let plain = live(9, b"xyz").encode();
        let view = CellView::parse(&plain).unwrap();
        assert_eq!(
            (view.live_value(i64::MAX), view.ttl_remaining(0)),
            (Some(&b"xyz"[..]), None)
        );
        let dead = tomb(3).encode();
        let view = CellView::parse(&dead).unwrap();
        assert_eq!((view.timestamp(), view.live_value(0)), (3, None));
        assert_eq!(view.to_owned(), tomb(3));
        assert!(CellView::parse(&dead[..12]).is_err());
    }
}
