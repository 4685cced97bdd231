//! The trace of the request running on this thread: events are added from anywhere on its
//! path (`event`), and cost nothing but a thread-local check when the request is not traced.

use std::cell::RefCell;
use std::time::{Instant, SystemTime};

/// One step of a traced request, as a `system_traces.events` row.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TraceEvent {
    /// When it happened (its timeuuid's time).
    pub at: SystemTime,
    /// What happened.
    pub activity: String,
    /// Microseconds since the request started.
    pub elapsed_us: i32,
    /// The thread it ran on.
    pub thread: String,
}

struct Recording {
    started: Instant,
    events: Vec<TraceEvent>,
}

/// Events a traced request keeps at most (a scan of many partitions stops adding there).
const MAX_EVENTS: usize = 1000;

thread_local! {
    static CURRENT: RefCell<Option<Recording>> = const { RefCell::new(None) };
}

/// Runs `f`, recording its events when `traced`; returns what `f` returned and the events.
pub fn capture<T>(traced: bool, f: impl FnOnce() -> T) -> (T, Option<Vec<TraceEvent>>) {
    if !traced {
        return (f(), None);
    }
    let outer = CURRENT.with(|c| {
        c.borrow_mut().replace(Recording {
            started: Instant::now(),
            events: Vec::new(),
        })
    });
    let out = f();
    let recorded = CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), outer));
    (out, recorded.map(|r| r.events))
}

/// Whether the request on this thread is traced.
pub fn active() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

/// Adds the event `activity()` to the trace of the request on this thread, if it is traced.
pub fn event(activity: impl FnOnce() -> String) {
    CURRENT.with(|c| {
        if let Some(r) = c.borrow_mut().as_mut() {
            if r.events.len() >= MAX_EVENTS {
                return;
            }
            let elapsed = r.started.elapsed().as_micros();
            let thread = std::thread::current()
                .name()
                .unwrap_or("ringdb-worker")
                .to_string();
            r.events.push(TraceEvent {
                at: SystemTime::now(),
                activity: activity(),
                elapsed_us: i32::try_from(elapsed).unwrap_or(i32::MAX),
                thread,
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_kept_only_while_traced() {
        event(|| "lost".into());
        let ((), events) = capture(true, || {
            assert!(active());
            event(|| "first".into());
            event(|| "second".into());
        });
        let events = events.expect("traced");
        assert_eq!(
            events
                .iter()
                .map(|e| e.activity.as_str())
                .collect::<Vec<_>>(),
            ["first", "second"]
        );
        assert!(events[0].elapsed_us <= events[1].elapsed_us);
        let ((), none) = capture(false, || event(|| panic!("not formatted when untraced")));
        assert!(none.is_none());
        assert!(!active());
    }
}
