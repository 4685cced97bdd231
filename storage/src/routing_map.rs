//! The routing map: which physical partition owns which token range of a table, as it is
//! persisted.
//!
//! A [`RoutingMap`] lists ranges `(start, end]` sorted by `end`; the first starts at
//! [`MIN_TOKEN`] and the last ends at [`MAX_TOKEN`], so they tile the ring (tokens are never
//! MIN). It also records a split in progress (`split`) and the partitions that still hold
//! keys outside their range (`garbage`: the moved half of a finished split, to be trimmed).
//! [`crate::ring_store`] keeps it in the meta keyspace, one version per change;
//! [`crate::ring_recovery`] brings it and the keyspaces back in agreement on open.

use crate::token::{MAX_TOKEN, MIN_TOKEN};
use crate::StorageError;

/// The first byte of an encoded map.
const MAP_FORMAT: u8 = 1;

/// One range of the routing map; it starts where the previous one ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RangeEntry {
    pub(crate) end: i64,
    pub(crate) id: u64,
    pub(crate) oversized: bool,
}

/// A split in progress: the tokens of `source` above `at` are being copied into `upper`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PendingSplit {
    pub(crate) source: u64,
    pub(crate) upper: u64,
    pub(crate) at: i64,
}

/// The persisted routing map of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RoutingMap {
    pub(crate) version: u64,
    pub(crate) next_id: u64,
    pub(crate) ranges: Vec<RangeEntry>,
    pub(crate) split: Option<PendingSplit>,
    /// Partitions holding keys outside their range (to be trimmed).
    pub(crate) garbage: Vec<u64>,
}

impl RoutingMap {
    /// A fresh table: one partition (id 0) owning the whole ring.
    pub(crate) fn initial() -> RoutingMap {
        RoutingMap {
            version: 0,
            next_id: 1,
            ranges: vec![RangeEntry {
                end: MAX_TOKEN,
                id: 0,
                oversized: false,
            }],
            split: None,
            garbage: Vec::new(),
        }
    }

    /// The index of the range owning `token`.
    pub(crate) fn index(&self, token: i64) -> usize {
        self.ranges
            .partition_point(|r| r.end < token)
            .min(self.ranges.len() - 1)
    }

    /// The key range `[lo, hi)` holding the tokens of range `i` (`None`: unbounded).
    pub(crate) fn key_bounds(&self, i: usize) -> (Vec<u8>, Option<Vec<u8>>) {
        token_key_bounds(self.start(i), self.ranges[i].end)
    }

    /// Exclusive start of range `i`.
    pub(crate) fn start(&self, i: usize) -> i64 {
        if i == 0 {
            MIN_TOKEN
        } else {
            self.ranges[i - 1].end
        }
    }

    /// The map as stored.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = vec![MAP_FORMAT];
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.next_id.to_be_bytes());
        out.extend_from_slice(&(self.ranges.len() as u32).to_be_bytes());
        for r in &self.ranges {
            out.extend_from_slice(&r.end.to_be_bytes());
            out.extend_from_slice(&r.id.to_be_bytes());
            out.push(u8::from(r.oversized));
        }
        match &self.split {
            None => out.push(0),
            Some(s) => {
                out.push(1);
                for v in [s.source, s.upper, s.at as u64] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
            }
        }
        out.extend_from_slice(&(self.garbage.len() as u32).to_be_bytes());
        for g in &self.garbage {
            out.extend_from_slice(&g.to_be_bytes());
        }
        out
    }

    /// A map as [`RoutingMap::encode`] stored it, validated.
    ///
    /// # Errors
    /// [`StorageError::Corrupt`] for a truncated map, an unknown format or ranges that do not
    /// tile the ring.
    pub(crate) fn decode(bytes: &[u8]) -> Result<RoutingMap, StorageError> {
        let mut r = Reader(bytes);
        if r.take::<1>()?[0] != MAP_FORMAT {
            return Err(StorageError::corrupt("routing map format"));
        }
        let version = r.u64()?;
        let next_id = r.u64()?;
        let n = r.u32()?;
        let mut ranges = Vec::new();
        for _ in 0..n {
            let end = r.u64()? as i64;
            let id = r.u64()?;
            let oversized = r.take::<1>()?[0] != 0;
            ranges.push(RangeEntry { end, id, oversized });
        }
        let split = match r.take::<1>()?[0] {
            0 => None,
            _ => Some(PendingSplit {
                source: r.u64()?,
                upper: r.u64()?,
                at: r.u64()? as i64,
            }),
        };
        let n = r.u32()?;
        let garbage = (0..n).map(|_| r.u64()).collect::<Result<_, _>>()?;
        let map = RoutingMap {
            version,
            next_id,
            ranges,
            split,
            garbage,
        };
        map.validate()?;
        Ok(map)
    }

    /// The ranges tile the ring: non-empty, strictly increasing ends, the last at MAX.
    pub(crate) fn validate(&self) -> Result<(), StorageError> {
        let tiles = self.ranges.last().is_some_and(|r| r.end == MAX_TOKEN)
            && self.ranges.windows(2).all(|w| w[0].end < w[1].end)
            && self.ranges.first().is_some_and(|r| r.end > MIN_TOKEN);
        if tiles {
            Ok(())
        } else {
            Err(StorageError::corrupt("routing map does not tile the ring"))
        }
    }
}

/// The key range `[lo, hi)` holding the tokens `(start, end]` (`None`: unbounded).
pub(crate) fn token_key_bounds(start: i64, end: i64) -> (Vec<u8>, Option<Vec<u8>>) {
    let lo = if start == MIN_TOKEN {
        Vec::new()
    } else {
        crate::key::encode_token(start + 1).to_vec()
    };
    let hi = (end != MAX_TOKEN).then(|| crate::key::encode_token(end + 1).to_vec());
    (lo, hi)
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], StorageError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or_else(|| StorageError::corrupt("truncated routing map"))?;
        self.0 = rest;
        Ok(*head)
    }
    fn u64(&mut self) -> Result<u64, StorageError> {
        Ok(u64::from_be_bytes(self.take()?))
    }
    fn u32(&mut self) -> Result<u32, StorageError> {
        Ok(u32::from_be_bytes(self.take()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_round_trips_and_validates() {
        let mut map = RoutingMap::initial();
        map.ranges.insert(
            0,
            RangeEntry {
                end: -5,
                id: 3,
                oversized: true,
            },
        );
        map.split = Some(PendingSplit {
            source: 3,
            upper: 5,
            at: -100,
        });
        map.garbage = vec![9];
        assert_eq!(RoutingMap::decode(&map.encode()).unwrap(), map);
        assert_eq!(map.index(i64::MIN + 1), 0);
        assert_eq!(map.index(-5), 0);
        assert_eq!(map.index(-4), 1);
        assert_eq!(map.index(i64::MAX), 1);
        assert_eq!(map.start(1), -5);
        let mut bad = map.clone();
        bad.ranges[1].end = 7;
        assert!(RoutingMap::decode(&bad.encode()).is_err());
        assert!(RoutingMap::decode(&map.encode()[..10]).is_err());
    }
}
