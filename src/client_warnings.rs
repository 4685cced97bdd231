//! Warnings for the client, as Cassandra's `ClientWarn`: code on a request's path raises them
//! with [`warn`], and [`capture`] around the request collects them for the response's
//! envelope. A request runs on one thread from start to end (inline, on a read thread or on
//! the blocking pool), so the collector is that thread's.

use std::cell::RefCell;

thread_local! {
    static CAPTURED: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Puts the collector that was there back when a capture ends, even by a panic.
struct Restore(Option<Vec<String>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let outer = self.0.take();
        CAPTURED.with(|c| c.replace(outer));
    }
}

/// Runs `request`, returning what it returned and the warnings it raised.
pub fn capture<R>(request: impl FnOnce() -> R) -> (R, Vec<String>) {
    let restore = Restore(CAPTURED.with(|c| c.replace(Some(Vec::new()))));
    let result = request();
    let warnings = CAPTURED.with(|c| c.take()).unwrap_or_default();
    drop(restore);
    (result, warnings)
}

/// Raises a warning for the client of the request running on this thread (also logged, as
/// Cassandra does). Outside [`capture`] it is only logged.
pub fn warn(message: String) {
    tracing::warn!(%message, "client warning");
    CAPTURED.with(|c| {
        if let Some(list) = c.borrow_mut().as_mut() {
            if !list.contains(&message) {
                list.push(message);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_belong_to_the_request_that_raised_them() {
        warn("before any request".into());
        let ((), outer) = capture(|| {
            warn("one".into());
            let ((), inner) = capture(|| warn("inner".into()));
            assert_eq!(inner, vec!["inner".to_string()]);
            warn("two".into());
            warn("one".into());
        });
        assert_eq!(outer, vec!["one".to_string(), "two".to_string()]);
        let (n, none) = capture(|| 5);
        assert_eq!((n, none), (5, Vec::new()));
    }
}
