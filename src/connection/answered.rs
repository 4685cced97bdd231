//! Answers made on the connection's reader task and not yet handed to the writer: batched so
//! that their writes share one journal flush and their frames one socket write.

use super::writer::COALESCE_BYTES;
use crate::node::Node;
use crate::planner::Inline;
use crate::session::Session;
use bytes::BytesMut;
use tracing::warn;

/// Requests answered inline before their responses are handed to the writer even if more
/// frames are buffered: bounds the wait of the first answer of a burst (its latency) while
/// still sharing one journal flush and one socket write among many. With one connection
/// thread the writer task runs only once the reader has worked through what is buffered or
/// yields (see [`FLUSH_EVERY_READS`]; before reads yielded, an strace showed one socket write
/// per drained burst either way), so for writes this mostly sets how often the journal is
/// written: 64 instead of 16 took 2.9% less CPU per write and 6.6% less at half rate (p99
/// 0.91x) in one `--baseline` A/B, throughput 1.005x (session 24).
pub(crate) const FLUSH_EVERY_ANSWERS: usize = 64;

/// Reads answered inline, with no write among them, before their responses go out while more
/// frames are buffered: the reader hands them to the writer and yields, so the writer sends
/// them before the rest of the burst is worked through. The client then reads the first
/// answers of a burst while the server answers the rest, instead of all of them after it. At
/// half of peak point reads (124 k/s, latte's bursts of ~60 per connection every
/// millisecond), medians of 5 alternating pairs: p99 1.30 -> 1.21 ms and p50 0.58 -> 0.56 ms;
/// every 8 did as well (1.25 -> 1.16 ms) with twice the socket writes (saturated point reads
/// then took 13% more CPU per read, at the same throughput), every 4 no better (session 28).
/// Groups with a write keep [`FLUSH_EVERY_ANSWERS`]: each early flush would also write the
/// journal, and every 16 with a yield for them too left the half-rate write p99 where it was
/// (three `--baseline` A/Bs: 0.76x, 0.99x, 1.00x; CPU per write 0.97-1.03x, session 29).
pub(crate) const FLUSH_EVERY_READS: usize = 16;

/// Responses answered on the reader task, not yet handed to the writer.
/// Their writes share one journal flush (group commit), made before any is acknowledged.
#[derive(Default)]
pub(crate) struct Answered {
    pub(crate) frames: BytesMut,
    pub(crate) permits: Vec<tokio::sync::OwnedSemaphorePermit>,
    /// Writes among them whose journal entries still sit in fjall's buffer.
    pub(crate) journal_flush_owed: bool,
    /// How long inline requests take to run.
    pub(crate) run_times: RunTimes,
    /// Bytes the next batch's buffer starts with: the last batch's size (bounded) plus room
    /// for the answer that passes the bound. Grown answer by answer from nothing, each batch's
    /// buffer was reallocated and copied ~10 times (a tenth of a 10-row slice's CPU). It is
    /// taken only when the next answer comes, so an idle connection holds no buffer (nor room
    /// for the batch's request slots, whose count the hand-over bounds).
    pub(crate) room: usize,
}

/// Moving averages of how long a connection's inline requests take to run, in nanoseconds.
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct RunTimes {
    /// Over every inline request: what the connection's buffered work costs.
    pub(crate) all_ns: u64,
    /// Over inline reads alone: whether a read repays a hand-over to a read thread. It
    /// depends on what a read costs, not on the writes beside it: a 50/50 mix of ~2 us
    /// item-cache reads and ~7 us writes averages above `read_offload_min_request_us`, yet
    /// its reads cost less than the hop (the mix ran 1.15x faster with its reads kept inline,
    /// session 25).
    pub(crate) read_ns: u64,
}

impl RunTimes {
    /// Adds one inline request of `kind` that ran for `took_ns` (weight 1/16).
    pub(crate) fn record(&mut self, kind: Inline, took_ns: u64) {
        let avg = |a: u64| a - a / 16 + took_ns / 16;
        self.all_ns = avg(self.all_ns);
        if kind == Inline::Read {
            self.read_ns = avg(self.read_ns);
        }
    }
}

impl Answered {
    /// Flushes the journal if a write needs it, then hands what was answered to the writer.
    /// When the flush fails nothing is acknowledged: the connection closes, so the client
    /// treats those writes as failed, never as done.
    #[must_use]
    pub(crate) fn flush(&mut self, session: &Session, node: &Node) -> bool {
        if std::mem::take(&mut self.journal_flush_owed) {
            if let Err(e) = node.shards().sync() {
                warn!(error = %e, "journal flush failed; closing the connection unacknowledged");
                self.frames.clear();
                self.permits.clear();
                return false;
            }
        }
        if !self.permits.is_empty() || !self.frames.is_empty() {
            self.room = self.frames.len().min(COALESCE_BYTES) + 4096;
            session.send_batch(
                std::mem::take(&mut self.frames),
                std::mem::take(&mut self.permits),
            );
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_count_in_the_buffered_work_but_not_in_what_a_read_costs() {
        let mut times = RunTimes::default();
        for _ in 0..200 {
            times.record(Inline::Read, 2_000);
            times.record(Inline::Write, 7_000);
        }
        // Both averages converge (within the 1/16 weighting's rounding).
        assert!(
            (1_800..=2_000).contains(&times.read_ns),
            "reads alone: {}",
            times.read_ns
        );
        assert!(
            (4_000..=4_800).contains(&times.all_ns),
            "every request: {}",
            times.all_ns
        );
        let before = times.read_ns;
        times.record(Inline::Write, 1_000_000);
        assert_eq!(times.read_ns, before, "a write leaves the read average");
        assert!(times.all_ns > 60_000, "but not the buffered work's");
    }
}
