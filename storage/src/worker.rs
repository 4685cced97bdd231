//! Storage's background threads, behind one abstraction (after fjall's `BackgroundWorker`):
//! an [`Activity`] says what a thread does one step at a time and when its next step is
//! due; [`Workers`] starts each on its own named thread at the background priority, wakes it
//! through its [`Signal`], and stops and joins them all when the store closes.
//!
//! An activity holds only the handles its work needs (a `Database`, the open tables, the split
//! queue), never the store itself: the store owns its workers, not the other way round.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::priority::{self, Background};

/// What a background thread does.
pub(crate) trait Activity: Send + 'static {
    /// The thread's name.
    fn name(&self) -> String;

    /// Whether the thread runs at the store's background priority (see [`crate::priority`]).
    fn lowered(&self) -> bool {
        true
    }

    /// When the first step is due.
    fn first(&self) -> Next {
        Next::Now
    }

    /// Does one step of work and says when the next one is due. A long step checks
    /// [`Signal::stopped`] now and then and gives up when it says so.
    fn step(&mut self, signal: &Signal) -> Next;
}

/// When an activity's next step is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// At once.
    Now,
    /// After this long, or sooner when its [`Signal`] wakes it.
    After(Duration),
    /// Never: the thread ends.
    Done,
}

/// Wakes the threads of an activity early, or stops them; cheap to clone. Several threads
/// may share one (a pool taking jobs from one queue): each wake lets one of them through.
#[derive(Clone, Default)]
pub(crate) struct Signal(Arc<Shared>);

/// What the threads sharing a [`Signal`] see.
#[derive(Default)]
struct Shared {
    flags: Mutex<Flags>,
    /// Notified when a flag changes.
    changed: Condvar,
}

/// A signal's state.
#[derive(Default)]
struct Flags {
    stopped: bool,
    /// Wakes not yet taken by a sleeping thread.
    wakes: usize,
}

impl Signal {
    /// Wakes one sleeping thread (or the next one to sleep).
    pub(crate) fn wake(&self) {
        let mut state = self.lock();
        state.wakes = state.wakes.saturating_add(1);
        drop(state);
        self.0.changed.notify_one();
    }

    /// Tells every thread to stop.
    pub(crate) fn stop(&self) {
        self.lock().stopped = true;
        self.0.changed.notify_all();
    }

    /// Whether the threads were told to stop.
    pub(crate) fn stopped(&self) -> bool {
        self.lock().stopped
    }

    /// Sleeps until woken, stopped or `timeout` passed; returns false once stopped.
    fn sleep(&self, timeout: Duration) -> bool {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.lock();
        loop {
            if state.stopped {
                return false;
            }
            if state.wakes > 0 {
                state.wakes -= 1;
                return true;
            }
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => timeout,
            };
            if left.is_zero() {
                return true;
            }
            state = self
                .0
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn lock(&self) -> MutexGuard<'_, Flags> {
        self.0.flags.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The background threads of one store.
pub(crate) struct Workers {
    /// The priority of every thread whose activity is [`Activity::lowered`].
    priority: Background,
    threads: Mutex<Vec<(Signal, JoinHandle<()>)>>,
}

impl Workers {
    /// No threads yet; those started run at `priority` when lowered.
    pub(crate) fn new(priority: Background) -> Workers {
        Workers {
            priority,
            threads: Mutex::new(Vec::new()),
        }
    }

    /// Starts `activity` on a thread of its own; returns the signal that wakes or stops it.
    pub(crate) fn start(&self, activity: impl Activity) -> std::io::Result<Signal> {
        let signal = Signal::default();
        self.start_with(signal.clone(), activity)?;
        Ok(signal)
    }

    /// Starts `activity` on a thread of its own, woken and stopped by `signal` (which other
    /// threads may share).
    pub(crate) fn start_with(
        &self,
        signal: Signal,
        activity: impl Activity,
    ) -> std::io::Result<()> {
        let (priority, theirs) = (self.priority, signal.clone());
        let handle = std::thread::Builder::new()
            .name(activity.name())
            .spawn(move || run(activity, &theirs, priority))?;
        let mut threads = self.lock();
        // Threads that ended by themselves (a finished build) need no joining.
        threads.retain(|(_, thread)| !thread.is_finished());
        threads.push((signal, handle));
        Ok(())
    }

    /// Stops every thread and waits for each to end.
    pub(crate) fn stop(&self) {
        let threads = std::mem::take(&mut *self.lock());
        for (signal, _) in &threads {
            signal.stop();
        }
        let me = std::thread::current().id();
        for (_, thread) in threads {
            // A thread cannot join itself (no activity holds the store, so none drops it).
            if thread.thread().id() != me {
                let _ = thread.join();
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(Signal, JoinHandle<()>)>> {
        self.threads.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A worker thread's life: lowered once, then the activity's steps as they fall due, until
/// it is done or told to stop.
fn run(mut activity: impl Activity, signal: &Signal, priority: Background) {
    if activity.lowered() {
        priority::lower_current_thread(priority);
    }
    let mut next = activity.first();
    loop {
        let go_on = match next {
            Next::Now => !signal.stopped(),
            Next::After(wait) => signal.sleep(wait),
            Next::Done => false,
        };
        if !go_on {
            return;
        }
        next = activity.step(signal);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts its steps; done after `limit`.
    struct Counter {
        steps: Arc<AtomicUsize>,
        limit: usize,
        every: Duration,
    }

    impl Activity for Counter {
        fn name(&self) -> String {
            "storage-test".into()
        }

        fn first(&self) -> Next {
            Next::After(self.every)
        }

        fn step(&mut self, _signal: &Signal) -> Next {
            let n = self.steps.fetch_add(1, Ordering::SeqCst) + 1;
            if n >= self.limit {
                Next::Done
            } else {
                Next::After(self.every)
            }
        }
    }

    fn counter(limit: usize, every: Duration) -> (Counter, Arc<AtomicUsize>) {
        let steps = Arc::new(AtomicUsize::new(0));
        let counter = Counter {
            steps: steps.clone(),
            limit,
            every,
        };
        (counter, steps)
    }

    #[test]
    fn a_wake_runs_the_next_step_early_and_stop_ends_the_thread_at_once() {
        let workers = Workers::new(Background::default());
        let (activity, steps) = counter(usize::MAX, Duration::from_secs(3600));
        let signal = workers.start(activity).expect("start");
        signal.wake();
        let deadline = Instant::now() + Duration::from_secs(10);
        while steps.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(steps.load(Ordering::SeqCst), 1, "woken once, stepped once");
        let started = Instant::now();
        workers.stop();
        assert!(signal.stopped());
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not a full wait"
        );
        assert_eq!(steps.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn an_activity_runs_until_done() {
        let workers = Workers::new(Background::default());
        let (activity, steps) = counter(3, Duration::from_millis(1));
        workers.start(activity).expect("start");
        let deadline = Instant::now() + Duration::from_secs(10);
        while steps.load(Ordering::SeqCst) < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        workers.stop();
        assert_eq!(steps.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_wake_before_the_sleep_is_not_lost() {
        let signal = Signal::default();
        signal.wake();
        let started = Instant::now();
        assert!(signal.sleep(Duration::from_secs(3600)));
        assert!(started.elapsed() < Duration::from_secs(10));
        signal.stop();
        assert!(!signal.sleep(Duration::from_secs(3600)));
    }
}
