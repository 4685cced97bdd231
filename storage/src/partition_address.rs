//! A partition's address: its token and the key prefix every stored item of it starts with,
//! from its partition-key components.

use crate::{key, token, StorageError, TableLayout};

/// The serialized key, token and key prefix of a partition.
pub(crate) struct PartitionAddress {
    pub(crate) token: i64,
    pub(crate) prefix: Vec<u8>,
}

/// The address of the partition with key `components` (protocol-serialized) in a table laid
/// out as `layout`.
///
/// # Errors
/// [`StorageError::InvalidRequest`] for the wrong number of components, an empty key or a
/// component too long for a composite key.
pub(crate) fn address(
    layout: &TableLayout,
    components: &[impl AsRef<[u8]>],
) -> Result<PartitionAddress, StorageError> {
    if components.len() != layout.partition_key.len() {
        return Err(StorageError::InvalidRequest(format!(
            "{} partition key components for a {}-column partition key",
            components.len(),
            layout.partition_key.len()
        )));
    }
    if components.len() > 1 && components.iter().any(|c| c.as_ref().len() > 0xffff) {
        return Err(StorageError::InvalidRequest(
            "partition key component longer than 65535 bytes".into(),
        ));
    }
    let address = |serialized: &[u8]| {
        if serialized.is_empty() {
            return Err(StorageError::InvalidRequest("key may not be empty".into()));
        }
        let token = token::token(serialized);
        Ok(PartitionAddress {
            token,
            prefix: key::partition_prefix(token, serialized),
        })
    };
    match components {
        // A one-column key serializes as itself: no copy, no list of parts.
        [single] => address(single.as_ref()),
        _ => {
            let parts: Vec<&[u8]> = components.iter().map(AsRef::as_ref).collect();
            address(&token::serialize_partition_key(&parts))
        }
    }
}
