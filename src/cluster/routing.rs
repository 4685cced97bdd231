//! Routing by token: which group of a table owns a partition, and which groups a token range
//! crosses, from the metadata group's map.

use super::meta_state::MetaState;
use super::raft_types::GroupInfo;
use storage::TableId;

pub use storage::token::partition_token;

/// The group of `table` that owns `token`: the first whose end is at or after it.
pub fn group_for(state: &MetaState, table: TableId, token: i64) -> Option<GroupInfo> {
    state
        .table_groups(table)
        .into_iter()
        .find(|g| g.end >= token)
        .cloned()
}

/// The groups of `table` in token order with the token range `(start, end]` each owns.
pub fn ranges_of(state: &MetaState, table: TableId) -> Vec<(i64, GroupInfo)> {
    let mut start = i64::MIN;
    state
        .table_groups(table)
        .into_iter()
        .map(|g| {
            let s = start;
            start = g.end;
            (s, g.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(ends: &[i64]) -> MetaState {
        let mut s = MetaState::default();
        for (i, end) in ends.iter().enumerate() {
            let id = i as u64 + 1;
            s.groups.insert(
                id,
                GroupInfo {
                    id,
                    table: TableId(7),
                    end: *end,
                    replicas: vec![1],
                    parent: None,
                },
            );
        }
        s
    }

    #[test]
    fn a_token_belongs_to_the_first_group_ending_at_or_after_it() {
        let s = state(&[-100, 0, i64::MAX]);
        let id = |t| group_for(&s, TableId(7), t).map(|g| g.id);
        assert_eq!(id(i64::MIN), Some(1));
        assert_eq!(id(-100), Some(1));
        assert_eq!(id(-99), Some(2));
        assert_eq!(id(0), Some(2));
        assert_eq!(id(1), Some(3));
        assert_eq!(id(i64::MAX), Some(3));
        assert_eq!(group_for(&s, TableId(8), 0), None);
        let starts: Vec<i64> = ranges_of(&s, TableId(7)).iter().map(|r| r.0).collect();
        assert_eq!(starts, vec![i64::MIN, -100, 0]);
    }
}
