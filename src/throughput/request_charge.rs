//! The request units one request spent, collected as Cassandra collects client warnings: the
//! shards add to the running request's tally ([`add`]), and [`capture`] around the request
//! returns it for the response's `RequestCharge` (a request runs on one thread).

use std::cell::Cell;

thread_local! {
    static TALLY: Cell<Option<f64>> = const { Cell::new(None) };
}

/// Puts the tally that was there back when a capture ends, even by a panic.
struct Restore(Option<f64>);

impl Drop for Restore {
    fn drop(&mut self) {
        TALLY.with(|t| t.set(self.0));
    }
}

/// Runs `request`, returning what it returned and the request units it spent.
pub fn capture<R>(request: impl FnOnce() -> R) -> (R, f64) {
    let restore = Restore(TALLY.with(|t| t.replace(Some(0.0))));
    let result = request();
    let spent = TALLY.with(Cell::get).unwrap_or(0.0);
    drop(restore);
    (result, spent)
}

/// Adds `ru` to the running request's tally (nothing outside [`capture`]).
pub fn add(ru: f64) {
    TALLY.with(|t| {
        if let Some(sum) = t.get() {
            t.set(Some(sum + ru));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_belong_to_the_request_that_spent_them() {
        add(100.0);
        let ((), outer) = capture(|| {
            add(1.0);
            let ((), inner) = capture(|| add(5.0));
            assert_eq!(inner, 5.0);
            add(2.5);
        });
        assert_eq!(outer, 3.5);
        assert_eq!(capture(|| ()).1, 0.0);
    }
}
