//! The split queue: physical partitions waiting for a split worker, and how many splits run,
//! so [`crate::Storage::wait_for_splits`] can wait for all of them.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::worker::Signal;
use crate::TableId;

#[derive(Default)]
struct State {
    queue: VecDeque<(TableId, u64)>,
    running: usize,
}

/// Queued splits, one job per physical partition: `(table, partition id)`.
#[derive(Default)]
pub(crate) struct SplitQueue {
    state: Mutex<State>,
    /// Notified when a split ends.
    idle: Condvar,
    /// Wakes a split worker for each job; stopped when the store closes.
    signal: Signal,
}

impl SplitQueue {
    /// The signal the split workers sleep on.
    pub(crate) fn signal(&self) -> &Signal {
        &self.signal
    }

    /// Queues a split of partition `id` of `table` and wakes a worker for it.
    pub(crate) fn push(&self, table: TableId, id: u64) {
        self.lock().queue.push_back((table, id));
        self.signal.wake();
    }

    /// The next queued split, counted as running until [`SplitQueue::finished`].
    pub(crate) fn take(&self) -> Option<(TableId, u64)> {
        let mut state = self.lock();
        let job = state.queue.pop_front()?;
        state.running += 1;
        Some(job)
    }

    /// A split taken from the queue ended.
    pub(crate) fn finished(&self) {
        self.lock().running -= 1;
        self.idle.notify_all();
    }

    /// Blocks until no split is queued or running (splits queued by the ones it waited for
    /// included).
    pub(crate) fn wait_idle(&self) {
        let mut state = self.lock();
        while !(state.queue.is_empty() && state.running == 0) {
            state = self.idle.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
