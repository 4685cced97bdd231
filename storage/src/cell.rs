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

    /// Remaining TTL seconds of a live expiring cell.
    pub(crate) fn ttl_remaining(&self, now: i64) -> Option<u32> {
        match self {
            StoredCell::Expiring { expires_at, .. } => {
                u32::try_from((expires_at - now).max(0)).ok()
            }
            _ => None,
        }
    }

    /// When a dead cell (tombstone, or expired) stopped being live; `None` while live.
    pub(crate) fn dead_since(&self, now: i64) -> Option<i64> {
        match self {
            StoredCell::Tombstone { deleted_at, .. } => Some(*deleted_at),
            StoredCell::Expiring { expires_at, .. } if *expires_at <= now => Some(*expires_at),
            _ => None,
        }
    }

    /// Cassandra's reconciliation: does `self` win over `other`?
    ///
    /// Higher timestamp wins; on a tie a dead cell (tombstone or expired) beats a live one,
    /// two dead ones keep the later deletion, two live ones keep the greater value, then the
    /// longer-lived one.
    pub(crate) fn wins_over(&self, other: &StoredCell, now: i64) -> bool {
        self.reconcile_order(other, now) == Ordering::Greater
    }

    fn reconcile_order(&self, other: &StoredCell, now: i64) -> Ordering {
        let by_ts = self.timestamp().cmp(&other.timestamp());
        if by_ts != Ordering::Equal {
            return by_ts;
        }
        match (self.dead_since(now), other.dead_since(now)) {
            (Some(_), None) => Ordering::Greater,
            (None, Some(_)) => Ordering::Less,
            (Some(a), Some(b)) => a.cmp(&b),
            (None, None) => {
                let expiry = |c: &StoredCell| match c {
                    StoredCell::Expiring { expires_at, .. } => *expires_at,
                    _ => i64::MAX,
                };
                let value = |c: &StoredCell| c.live_value(now).map(<[u8]>::to_vec);
                value(self)
                    .cmp(&value(other))
                    .then_with(|| expiry(self).cmp(&expiry(other)))
            }
        }
    }

    /// The on-disk bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32);
        match self {
            StoredCell::Live { timestamp, value } => {
                out.push(KIND_LIVE);
                out.extend_from_slice(&timestamp.to_be_bytes());
                out.extend_from_slice(value);
            }
            StoredCell::Expiring {
                timestamp,
                ttl,
                expires_at,
                value,
            } => {
                out.push(KIND_EXPIRING);
                out.extend_from_slice(&timestamp.to_be_bytes());
                out.extend_from_slice(&ttl.to_be_bytes());
                out.extend_from_slice(&expires_at.to_be_bytes());
                out.extend_from_slice(value);
            }
            StoredCell::Tombstone {
                timestamp,
                deleted_at,
            } => {
                out.push(KIND_TOMBSTONE);
                out.extend_from_slice(&timestamp.to_be_bytes());
                out.extend_from_slice(&deleted_at.to_be_bytes());
            }
        }
        out
    }

    /// Parses on-disk bytes.
    pub(crate) fn decode(bytes: &[u8]) -> Result<StoredCell, StorageError> {
        let bad = || StorageError::corrupt("truncated cell");
        let (&kind, rest) = bytes.split_first().ok_or_else(bad)?;
        let (ts, rest) = rest.split_first_chunk::<8>().ok_or_else(bad)?;
        let timestamp = i64::from_be_bytes(*ts);
        match kind {
            KIND_LIVE => Ok(StoredCell::Live {
                timestamp,
                value: rest.to_vec(),
            }),
            KIND_EXPIRING => {
                let (ttl, rest) = rest.split_first_chunk::<4>().ok_or_else(bad)?;
                let (exp, rest) = rest.split_first_chunk::<8>().ok_or_else(bad)?;
                Ok(StoredCell::Expiring {
                    timestamp,
                    ttl: u32::from_be_bytes(*ttl),
                    expires_at: i64::from_be_bytes(*exp),
                    value: rest.to_vec(),
                })
            }
            KIND_TOMBSTONE => {
                let exp = rest.first_chunk::<8>().ok_or_else(bad)?;
                Ok(StoredCell::Tombstone {
                    timestamp,
                    deleted_at: i64::from_be_bytes(*exp),
                })
            }
            _ => Err(StorageError::corrupt(format!("unknown cell kind {kind}"))),
        }
    }
}

/// A live cell as a read returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        assert!(live(2, b"a").wins_over(&live(1, b"z"), 0));
        assert!(tomb(2).wins_over(&live(2, b"z"), 0));
        assert!(!live(2, b"z").wins_over(&tomb(2), 0));
        assert!(live(3, b"a").wins_over(&tomb(2), 0));
        assert!(live(2, b"b").wins_over(&live(2, b"a"), 0));
        let expired = StoredCell::live(2, Some(10), 0, b"z".to_vec());
        assert!(expired.wins_over(&live(2, b"z"), 50));
        assert!(!expired.wins_over(&live(2, b"zz"), 5));
    }

    #[test]
    fn cell_bytes_round_trip_and_reject_garbage() {
        for c in [
            live(-5, b"xy"),
            tomb(7),
            StoredCell::live(1, Some(3), 10, vec![1]),
        ] {
            assert_eq!(StoredCell::decode(&c.encode()).unwrap(), c);
        }
        assert!(StoredCell::decode(&[]).is_err());
        assert!(StoredCell::decode(&[9; 9]).is_err());
        assert!(StoredCell::decode(&[1, 0, 0]).is_err());
    }
}
