//! Background threads at a lower CPU priority than the threads that answer requests.
//!
//! Flushes, compactions and splits are work that may lag a little; a request waiting for a
//! core is a client waiting. Cassandra runs its compaction threads at the lowest Java thread
//! priority for the same reason. On Linux the nice value is a per-thread attribute that a new
//! thread inherits from the thread that spawns it, so fjall's flush and compaction workers get
//! it by being started from a thread that lowered its own priority first.

/// The highest nice value (the lowest priority) Linux knows.
pub(crate) const MAX_NICE: i32 = 19;

/// Lowers the calling thread's CPU priority to `nice` (clamped to 0..=[`MAX_NICE`]; 0 leaves
/// it as it is). Raising the nice value needs no privilege; a failure is logged and the
/// thread runs on at its priority (slower background work, never lost work).
pub(crate) fn lower_current_thread(nice: i32) {
    let nice = nice.clamp(0, MAX_NICE);
    if nice == 0 {
        return;
    }
    // `None` is `who = 0`: on Linux, with PRIO_PROCESS, the calling thread only.
    if let Err(e) = rustix::process::setpriority_process(None, nice) {
        tracing::warn!("could not lower a background thread's priority to nice {nice}: {e}");
    }
}

/// Runs `f` on a new thread whose priority was first lowered to `nice`, and returns its
/// result: threads that `f` starts inherit that priority. With nothing to lower (`nice` of 0
/// or below) `f` runs on the calling thread.
pub(crate) fn run_lowered<T: Send>(nice: i32, f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    if nice <= 0 {
        return Ok(f());
    }
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("storage-open".into())
            .spawn_scoped(scope, move || {
                lower_current_thread(nice);
                f()
            })?;
        handle
            .join()
            .map_err(|_| std::io::Error::other("storage open panicked"))
    })
}

/// The nice value in a `/proc/.../stat` file (tests and diagnostics).
#[cfg(test)]
fn nice_in(stat_path: &std::path::Path) -> Option<i32> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    // The command name may hold spaces: fields are counted from the last ')'. What follows
    // it starts with the state (field 3); the nice value is field 19.
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(16)?.parse().ok()
}

/// The calling thread's nice value.
#[cfg(test)]
fn current_nice() -> Option<i32> {
    nice_in(std::path::Path::new("/proc/thread-self/stat"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nice values of this process's threads named `name`.
    fn nice_of_threads(name: &str) -> Vec<i32> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir("/proc/self/task").expect("proc") {
            let path = entry.expect("entry").path();
            let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            if comm.trim_end() == name {
                out.extend(nice_in(&path.join("stat")));
            }
        }
        out
    }

    /// How many threads named `name` run at `nice`, waiting up to 10 s for `want` of them.
    fn threads_at(name: &str, nice: i32, want: usize) -> usize {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let n = nice_of_threads(name)
                .into_iter()
                .filter(|v| *v == nice)
                .count();
            if n >= want || std::time::Instant::now() >= deadline {
                return n;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[test]
    fn background_threads_run_at_the_lowered_priority_and_the_caller_keeps_its_own() {
        let before = current_nice();
        assert!(before.is_some());
        let dir = tempfile::tempdir().expect("tempdir");
        // A value no other test in this process uses, so other stores' threads cannot be
        // mistaken for these.
        let options = crate::StorageOptions {
            background_nice: 7,
            worker_threads: Some(2),
            ..crate::StorageOptions::default()
        };
        let storage = crate::Storage::open(dir.path(), options).expect("open");
        // A new thread names itself once it runs (split workers also lower their priority
        // then): wait for them.
        assert_eq!(
            threads_at("fjall:worker", 7, 2),
            2,
            "fjall workers at nice 7"
        );
        assert_eq!(
            threads_at("storage-split-0", 7, 1),
            1,
            "split worker at nice 7"
        );
        assert_eq!(
            current_nice(),
            before,
            "the opening thread keeps its priority"
        );
        drop(storage);
    }

    #[test]
    fn values_are_clamped() {
        let base = current_nice().expect("nice");
        assert_eq!(
            run_lowered(40, current_nice).expect("thread"),
            Some(MAX_NICE)
        );
        assert_eq!(run_lowered(-5, current_nice).expect("thread"), Some(base));
    }
}
