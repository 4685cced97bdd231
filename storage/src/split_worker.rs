//! The split workers: background threads that run the splits waiting in the
//! [`crate::split_queue::SplitQueue`] (`max_concurrent_splits` of them). The first also saves
//! every physical partition's size statistics once no split ran for a few seconds (the
//! maintenance that keeps the counters a crash can lose to those seconds).

use std::time::{Duration, Instant};

use crate::split::Splitter;
use crate::worker::{Activity, Next, Signal, Workers};

/// How often the first worker saves size statistics while no split runs.
const STATS_EVERY: Duration = Duration::from_secs(5);

/// One split worker.
pub(crate) struct SplitWorker {
    /// Its number (0 saves the statistics).
    index: usize,
    splitter: Splitter,
    /// When it last ran a split or saved the statistics.
    quiet_since: Instant,
}

/// Starts `n` split workers (at least one) for `splitter`'s queue.
pub(crate) fn start(workers: &Workers, splitter: &Splitter, n: usize) -> std::io::Result<()> {
    for index in 0..n.max(1) {
        let worker = SplitWorker {
            index,
            splitter: splitter.clone(),
            quiet_since: Instant::now(),
        };
        workers.start_with(splitter.queue.signal().clone(), worker)?;
    }
    Ok(())
}

impl Activity for SplitWorker {
    fn name(&self) -> String {
        format!("storage-split-{}", self.index)
    }

    fn step(&mut self, _signal: &Signal) -> Next {
        let queue = &self.splitter.queue;
        if let Some((table, id)) = queue.take() {
            if let Err(e) = self.splitter.run_split(table, id, false) {
                tracing::error!(%table, id, "split failed: {e}");
            }
            queue.finished();
            self.quiet_since = Instant::now();
            return Next::Now;
        }
        // Woken by the next job, else when the statistics are due.
        if self.index > 0 {
            return Next::After(STATS_EVERY);
        }
        let quiet = self.quiet_since.elapsed();
        if quiet < STATS_EVERY {
            return Next::After(STATS_EVERY - quiet);
        }
        if let Err(e) = self.splitter.save_stats() {
            tracing::error!("saving partition statistics failed: {e}");
        }
        self.quiet_since = Instant::now();
        Next::After(STATS_EVERY)
    }
}
