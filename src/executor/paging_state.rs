//! The paging state of a SELECT on a user table: where the next page resumes (partition,
//! slice, storage cursor) and how many rows were returned, tagged with the statement's
//! fingerprint so a state from another query is refused.

use crate::error::QueryError;
use bytes::{BufMut, Bytes, BytesMut};

/// Where a paged SELECT resumes.
#[derive(Debug, Clone, Default)]
pub(crate) struct PagingState {
    /// The statement's fingerprint.
    pub(crate) fingerprint: u64,
    /// 1: partition keys; 2: token scan.
    pub(crate) mode: u8,
    /// Rows returned by the pages before.
    pub(crate) returned: u32,
    /// Partition keys: the key to resume in.
    pub(crate) pk_index: u32,
    /// Partition keys: the clustering slice to resume in.
    pub(crate) slice_index: u32,
    /// Rows already returned from the partition resumed in (PER PARTITION LIMIT).
    pub(crate) in_partition: u32,
    /// The storage cursor to resume at, if inside a slice or scan.
    pub(crate) cursor: Option<Vec<u8>>,
    /// Token scan: the partition the last page ended in.
    pub(crate) last_pk: Option<Vec<Vec<u8>>>,
}

const PAGING_MAGIC: &[u8; 3] = b"rgp";

impl PagingState {
    /// The state as sent to the client.
    pub(crate) fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        b.put_slice(PAGING_MAGIC);
        b.put_u64(self.fingerprint);
        b.put_u8(self.mode);
        b.put_u32(self.returned);
        b.put_u32(self.pk_index);
        b.put_u32(self.slice_index);
        b.put_u32(self.in_partition);
        match &self.last_pk {
            Some(pk) => {
                b.put_u16(pk.len() as u16);
                for c in pk {
                    b.put_u32(c.len() as u32);
                    b.put_slice(c);
                }
            }
            None => b.put_u16(u16::MAX),
        }
        if let Some(c) = &self.cursor {
            b.put_slice(c);
        }
        b.freeze()
    }

    /// Reads a state the client sent back.
    ///
    /// # Errors
    /// ProtocolError for bytes this module did not produce.
    pub(crate) fn decode(b: &[u8]) -> Result<PagingState, QueryError> {
        let bad = || QueryError::Protocol("Invalid value for the paging state".into());
        let mut r = b;
        let take = |r: &mut &[u8], n: usize| -> Result<Vec<u8>, QueryError> {
            if r.len() < n {
                return Err(bad());
            }
            let (a, rest) = r.split_at(n);
            *r = rest;
            Ok(a.to_vec())
        };
        let u32_of = |v: Vec<u8>| u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
        if take(&mut r, 3)? != PAGING_MAGIC {
            return Err(bad());
        }
        let f = take(&mut r, 8)?;
        let fingerprint = u64::from_be_bytes([f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]]);
        let mode = take(&mut r, 1)?[0];
        let returned = u32_of(take(&mut r, 4)?);
        let pk_index = u32_of(take(&mut r, 4)?);
        let slice_index = u32_of(take(&mut r, 4)?);
        let in_partition = u32_of(take(&mut r, 4)?);
        let n = take(&mut r, 2)?;
        let n = u16::from_be_bytes([n[0], n[1]]);
        let last_pk = if n == u16::MAX {
            None
        } else {
            let mut pk = Vec::new();
            for _ in 0..n {
                let len = u32_of(take(&mut r, 4)?) as usize;
                pk.push(take(&mut r, len)?);
            }
            Some(pk)
        };
        let cursor = (!r.is_empty()).then(|| r.to_vec());
        if mode != 1 && mode != 2 {
            return Err(bad());
        }
        Ok(PagingState {
            fingerprint,
            mode,
            returned,
            pk_index,
            slice_index,
            in_partition,
            cursor,
            last_pk,
        })
    }
}
