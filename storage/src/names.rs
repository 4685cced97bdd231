//! The names storage gives things in fjall: each physical partition's keyspace, and the
//! prefixes of the meta keys storage keeps about each table.

use crate::TableId;

/// Prefix of every meta key storage itself owns (server keys must not start with `\0`).
pub(crate) const STORAGE_META_PREFIX: &[u8] = b"\0storage\0";

/// The prefix of `table`'s meta keys of one `kind` (`ring`, `stats`, `content`):
/// `\0storage\0{kind}\0{table}\0`.
pub(crate) fn table_meta_prefix(kind: &str, table: TableId) -> Vec<u8> {
    let mut k = STORAGE_META_PREFIX.to_vec();
    k.extend_from_slice(kind.as_bytes());
    k.push(0);
    k.extend_from_slice(format!("{table}").as_bytes());
    k.push(0);
    k
}

/// The keyspace name of physical partition `id` of `table`.
pub(crate) fn keyspace_name(table: TableId, id: u64) -> String {
    format!("t{table}_p{id}")
}

/// Parses a keyspace name made by [`keyspace_name`].
pub(crate) fn parse_keyspace_name(name: &str) -> Option<(TableId, u64)> {
    let rest = name.strip_prefix('t')?;
    let (table, id) = rest.split_once("_p")?;
    Some((
        TableId(u128::from_str_radix(table, 16).ok()?),
        id.parse().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyspace_names_round_trip() {
        assert_eq!(
            parse_keyspace_name(&keyspace_name(TableId(0xabc), 17)),
            Some((TableId(0xabc), 17))
        );
        assert_eq!(parse_keyspace_name("system_meta"), None);
    }
}
