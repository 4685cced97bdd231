//! The table and operation the running request coordinates: noted by the executor as it runs
//! the plan, and recorded in the table's coordinator histogram (`system_views`'
//! `coordinator_*_latency`) with the request's own latency when it is answered, so that one
//! pair of clock reads times both.

use super::latency::Operation;
use std::cell::Cell;
use storage::TableId;

thread_local! {
    static NOTED: Cell<Option<(TableId, Operation)>> = const { Cell::new(None) };
}

/// Notes that the running request coordinates `op` on `table`.
pub fn note(table: TableId, op: Operation) {
    NOTED.with(|n| n.set(Some((table, op))));
}

/// What the running request noted, if anything; forgets it.
pub fn take() -> Option<(TableId, Operation)> {
    NOTED.with(Cell::take)
}
