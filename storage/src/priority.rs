//! Background threads at a lower CPU priority than the threads that answer requests.
//!
//! Flushes, compactions and splits are work that may lag a little; a request waiting for a
//! core is a client waiting. Cassandra runs its compaction threads at the lowest Java thread
//! priority for the same reason. On Linux the nice value is a per-thread attribute that a new
//! thread inherits from the thread that spawns it, so fjall's flush and compaction workers get
//! it by being started from a thread that lowered its own priority first.

/// The highest nice value (the lowest priority) Linux knows.
pub(crate) const MAX_NICE: i32 = 19;

/// The CPU priority of storage's background threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Background {
    /// Nice value, clamped to 0..=[`MAX_NICE`] (0: the creating thread's).
    pub(crate) nice: i32,
    /// Also run under Linux's `SCHED_IDLE` policy.
    ///
    /// The nice value alone weighs a thread in the share of a busy core. It does not stop
    /// a woken request thread from queueing behind a background thread: the kernel places a
    /// woken thread on an idle core, and a core running a nice-19 compaction is not idle. It
    /// then waits until the load balancer moves it (several milliseconds). A core that runs
    /// only `SCHED_IDLE` threads counts as idle when a thread wakes, so the request thread
    /// runs there at once. Such threads still get a small share of a busy core (a weight of
    /// 3, against 15 at nice 19 and 1024 at nice 0), so flushes and compactions are never
    /// stopped; fjall's own write stalls keep them from falling far behind. On two cores
    /// shared with the load generator, saturated writes ran 1.04-1.08x faster with it, the
    /// idle CPU fell from 0.22 to 0.10-0.13 of a core, and the connection thread was
    /// preempted 75 instead of 200 times a second (session 27).
    pub(crate) idle_policy: bool,
}

impl Background {
    /// Whether a thread at this priority runs below the thread that creates it.
    fn lowers(self) -> bool {
        self.nice.clamp(0, MAX_NICE) > 0 || self.idle_policy
    }
}

/// Lowers the calling thread's CPU priority to `priority`. Needs no privilege; a failure is
/// logged and the thread runs on at its priority (slower background work, never lost work).
pub(crate) fn lower_current_thread(priority: Background) {
    // The policy first: the library sets the nice value of a SCHED_IDLE thread to 0 with it,
    // which a thread already lowered may not do.
    if priority.idle_policy {
        if let Err(e) = set_idle_policy() {
            tracing::warn!("could not run a background thread under SCHED_IDLE: {e}");
        }
    }
    let nice = priority.nice.clamp(0, MAX_NICE);
    if nice > 0 {
        // `None` is `who = 0`: on Linux, with PRIO_PROCESS, the calling thread only.
        if let Err(e) = rustix::process::setpriority_process(None, nice) {
            tracing::warn!("could not lower a background thread's priority to nice {nice}: {e}");
        }
    }
}

/// Moves the calling thread to the `SCHED_IDLE` scheduling policy.
#[cfg(target_os = "linux")]
fn set_idle_policy() -> Result<(), thread_priority::Error> {
    use thread_priority::{NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy};
    thread_priority::set_thread_priority_and_policy(
        thread_priority::thread_native_id(),
        ThreadPriority::Min,
        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
    )
}

/// Other systems have no `SCHED_IDLE`: the nice value alone lowers the thread.
#[cfg(not(target_os = "linux"))]
fn set_idle_policy() -> Result<(), std::convert::Infallible> {
    Ok(())
}

/// Runs `f` on a new thread whose priority was first lowered to `priority`, and returns its
/// result: threads that `f` starts inherit that priority (Linux keeps the nice value and the
/// scheduling policy per thread, and a new thread starts with its creator's). With nothing
/// to lower, `f` runs on the calling thread.
pub(crate) fn run_lowered<T: Send>(
    priority: Background,
    f: impl FnOnce() -> T + Send,
) -> std::io::Result<T> {
    if !priority.lowers() {
        return Ok(f());
    }
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("storage-open".into())
            .spawn_scoped(scope, move || {
                lower_current_thread(priority);
                f()
            })?;
        handle
            .join()
            .map_err(|_| std::io::Error::other("storage open panicked"))
    })
}

/// Field `n` (1-based, as `proc(5)` counts) of a `/proc/.../stat` file (tests and
/// diagnostics).
#[cfg(test)]
fn stat_field(stat_path: &std::path::Path, n: usize) -> Option<i32> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    // The command name may hold spaces: fields are counted from the last ')'. What follows
    // it starts with the state (field 3).
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(n.checked_sub(3)?)?.parse().ok()
}

/// The nice value and the scheduling policy in a `/proc/.../stat` file (fields 19 and 41).
#[cfg(test)]
fn priority_in(stat_path: &std::path::Path) -> Option<(i32, i32)> {
    Some((stat_field(stat_path, 19)?, stat_field(stat_path, 41)?))
}

/// The calling thread's nice value and scheduling policy.
#[cfg(test)]
fn current_priority() -> Option<(i32, i32)> {
    priority_in(std::path::Path::new("/proc/thread-self/stat"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux's number for the `SCHED_IDLE` policy in `/proc/.../stat`.
    const SCHED_IDLE: i32 = 5;

    /// Nice values and policies of this process's threads named `name`.
    fn priorities_of_threads(name: &str) -> Vec<(i32, i32)> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir("/proc/self/task").expect("proc") {
            let path = entry.expect("entry").path();
            let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            if comm.trim_end() == name {
                out.extend(priority_in(&path.join("stat")));
            }
        }
        out
    }

    /// How many threads named `name` run at `priority` (nice, policy), waiting up to 10 s
    /// for `want` of them.
    fn threads_at(name: &str, priority: (i32, i32), want: usize) -> usize {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let n = priorities_of_threads(name)
                .into_iter()
                .filter(|p| *p == priority)
                .count();
            if n >= want || std::time::Instant::now() >= deadline {
                return n;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[test]
    fn background_threads_run_at_the_lowered_priority_and_the_caller_keeps_its_own() {
        let before = current_priority();
        assert!(before.is_some());
        let dir = tempfile::tempdir().expect("tempdir");
        // A nice value no other test in this process uses, so other stores' threads cannot
        // be mistaken for these.
        let options = crate::StorageOptions {
            background_nice: 7,
            background_idle_policy: true,
            worker_threads: Some(2),
            ..crate::StorageOptions::default()
        };
        let storage = crate::Storage::open(dir.path(), options).expect("open");
        // A new thread names itself once it runs (split workers and the file reaper also
        // lower their priority then): wait for them.
        let lowered = (7, SCHED_IDLE);
        assert_eq!(
            threads_at("fjall:worker", lowered, 2),
            2,
            "fjall workers at nice 7 under SCHED_IDLE"
        );
        assert_eq!(
            threads_at("storage-split-0", lowered, 1),
            1,
            "split worker at nice 7 under SCHED_IDLE"
        );
        assert_eq!(
            current_priority(),
            before,
            "the opening thread keeps its priority"
        );
        drop(storage);
    }

    #[test]
    fn values_are_clamped() {
        let (base, policy) = current_priority().expect("priority");
        let nice = |nice| Background {
            nice,
            idle_policy: false,
        };
        assert_eq!(
            run_lowered(nice(40), current_priority).expect("thread"),
            Some((MAX_NICE, policy))
        );
        assert_eq!(
            run_lowered(nice(-5), current_priority).expect("thread"),
            Some((base, policy))
        );
    }

    #[test]
    fn the_idle_policy_alone_lowers_a_thread() {
        let (base, _) = current_priority().expect("priority");
        let idle = Background {
            nice: 0,
            idle_policy: true,
        };
        assert_eq!(
            run_lowered(idle, current_priority).expect("thread"),
            Some((base, SCHED_IDLE))
        );
    }
}
