//! Read offload: threads that answer cheap reads beside the connection workers.
//!
//! A connection worker answers cheap requests inline (see `connection::dispatch`); on its own
//! it uses one core however many the machine has. Reads (which owe no journal flush) may
//! instead be handed to a read thread, which runs them in parallel and queues their responses
//! to the connection's writer. The worker hands over only while the read threads are short of
//! work ([`DEPTH`] reads waiting per thread) and only from a connection that has enough work
//! buffered to make the thread hop worth it (`read_offload_after_us`): a connection whose
//! requests arrive no faster than it answers them (say a client that is itself the
//! bottleneck) keeps every read inline and leaves the spare cores to others.

use crate::config::Config;
use crate::context::SessionContext;
use crate::executor::Known;
use crate::node::Node;
use crate::prepared::PreparedStatement;
use crate::session::Session;
use bytes::BytesMut;
use cql::request::Request;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;

/// Responses a read thread gathers for one connection before queueing them to its writer.
const BATCH: usize = 16;

/// Most bytes a read thread's new batch buffer starts with (see `run`).
const MAX_ROOM: usize = 64 * 1024;

/// Reads that may wait per read thread before connections run theirs inline again: enough to
/// keep the thread busy between two hand-overs, few enough that none waits long (4, 16 and 32
/// were no faster than 8 for slices or the 50/50 mix).
const DEPTH: usize = 8;

/// When a connection hands its reads over (see [`ReadOffload::wants`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct OffloadRule {
    /// Work buffered on the connection while reads are queued.
    pub after: Duration,
    /// Least cost per request (the connection's moving average).
    pub min_request: Duration,
    /// Work buffered on the connection while no read is queued (a read thread must be woken).
    pub wake: Duration,
}

/// One read handed to a read thread.
pub(crate) struct ReadJob {
    /// The node that runs it.
    pub node: Arc<Node>,
    /// The connection it came on (its writer gets the response).
    pub session: Arc<Session>,
    /// The session state the read runs with.
    pub ctx: SessionContext,
    /// The EXECUTE request.
    pub request: Request,
    /// Its prepared statement, looked up by the dispatch step.
    pub prepared: Arc<PreparedStatement>,
    /// The request's protocol version.
    pub version: u8,
    /// The request's stream id.
    pub stream: i16,
    /// The connection's in-flight slot, freed once the response is written.
    pub permit: OwnedSemaphorePermit,
    /// The node-wide request slot, freed once the read ran.
    pub slot: OwnedSemaphorePermit,
}

/// The read threads and the queue that feeds them.
pub struct ReadOffload {
    tx: Option<flume::Sender<Box<ReadJob>>>,
    /// Reads handed over and not yet answered.
    queued: Arc<AtomicUsize>,
    /// Most reads waiting for the read threads.
    limit: usize,
    /// Work a connection must have buffered before it hands a read over, in nanoseconds.
    after_ns: u64,
    /// Least moving average per request of a connection that hands reads over, in
    /// nanoseconds.
    min_request_ns: u64,
    /// Work a connection must have buffered to hand a read to idle read threads (none
    /// queued), which must then be woken, in nanoseconds.
    wake_ns: u64,
}

impl ReadOffload {
    /// Starts the read threads `config` asks for (`read_threads`, `read_offload_*_us`).
    ///
    /// # Errors
    /// When a thread cannot be started.
    pub fn from_config(config: &Config) -> std::io::Result<ReadOffload> {
        ReadOffload::start(
            config.read_threads(),
            OffloadRule {
                after: Duration::from_micros(config.read_offload_after_us),
                min_request: Duration::from_micros(config.read_offload_min_request_us),
                wake: Duration::from_micros(config.read_offload_wake_us),
            },
        )
    }

    /// Starts `threads` read threads (none: every read runs inline), taking reads while
    /// fewer than `DEPTH` per thread wait, from connections whose requests take
    /// `rule.min_request` or more each and with at least `rule.after` of work buffered
    /// (`rule.wake` while no read is queued).
    pub(crate) fn start(threads: usize, rule: OffloadRule) -> std::io::Result<ReadOffload> {
        let queued = Arc::new(AtomicUsize::new(0));
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let after_ns = ns(rule.after);
        let min_request_ns = ns(rule.min_request);
        let wake_ns = ns(rule.wake).max(after_ns);
        if threads == 0 {
            return Ok(ReadOffload {
                tx: None,
                queued,
                limit: 0,
                after_ns,
                min_request_ns,
                wake_ns,
            });
        }
        let (tx, rx) = flume::unbounded();
        for i in 0..threads {
            let rx = rx.clone();
            let queued = queued.clone();
            std::thread::Builder::new()
                .name(format!("ringdb-read-{i}"))
                .spawn(move || run(&rx, &queued))?;
        }
        Ok(ReadOffload {
            tx: Some(tx),
            queued,
            limit: threads.saturating_mul(DEPTH),
            after_ns,
            min_request_ns,
            wake_ns,
        })
    }

    /// True when a connection whose requests take `request_ns` each (a moving average) and
    /// have `buffered_ns` of work waiting should hand its next read over: the read threads
    /// have room, the connection enough work to keep it busy (more when the read threads have
    /// run dry and a hand-over must wake one), and its requests cost enough to repay the hop.
    pub(crate) fn wants(&self, request_ns: u64, buffered_ns: u64) -> bool {
        if self.tx.is_none() || request_ns < self.min_request_ns || buffered_ns < self.after_ns {
            return false;
        }
        let queued = self.queued.load(Ordering::Relaxed);
        queued < self.limit && (queued > 0 || buffered_ns >= self.wake_ns)
    }

    /// Hands `job` to a read thread; gives it back when there is none (the caller then runs
    /// it inline).
    pub(crate) fn offer(&self, job: Box<ReadJob>) -> Result<(), Box<ReadJob>> {
        let Some(tx) = &self.tx else {
            return Err(job);
        };
        self.queued.fetch_add(1, Ordering::Relaxed);
        // Counted before it leaves: a send fails only once every read thread is gone.
        job.node.count_read_handed_over();
        match tx.send(job) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.queued.fetch_sub(1, Ordering::Relaxed);
                Err(e.into_inner())
            }
        }
    }
}

/// Responses answered for one connection, not yet queued to its writer.
struct Pending {
    session: Arc<Session>,
    frames: BytesMut,
    permits: Vec<OwnedSemaphorePermit>,
}

impl Pending {
    /// Queues the batch to its connection's writer; `room` becomes its size (bounded).
    fn flush_into(self, room: &mut usize) {
        *room = self.frames.len().min(MAX_ROOM);
        self.session.send_batch(self.frames, self.permits);
    }
}

/// A read thread: runs reads until the node (the sender) is gone, queueing each connection's
/// responses in batches while more reads wait.
fn run(rx: &flume::Receiver<Box<ReadJob>>, queued: &AtomicUsize) {
    let mut pending: Option<Pending> = None;
    // A new batch's buffer starts with the room the last one took: grown from nothing,
    // each batch of 10-row slices was reallocated and copied ~7 times.
    let mut room = 0;
    loop {
        let job = match rx.try_recv() {
            Ok(job) => job,
            Err(_) => {
                if let Some(p) = pending.take() {
                    p.flush_into(&mut room);
                }
                match rx.recv() {
                    Ok(job) => job,
                    Err(_) => return,
                }
            }
        };
        let ReadJob {
            node,
            session,
            ctx,
            request,
            prepared,
            version,
            stream,
            permit,
            slot,
        } = *job;
        let answer =
            crate::executor::execute_caught(&node, &ctx, request, Known::Prepared(prepared));
        drop(slot);
        let p = match pending.take() {
            Some(p) if Arc::ptr_eq(&p.session, &session) => p,
            other => {
                if let Some(p) = other {
                    p.flush_into(&mut room);
                }
                Pending {
                    session,
                    frames: BytesMut::with_capacity(room),
                    permits: Vec::with_capacity(BATCH),
                }
            }
        };
        let mut p = p;
        p.session.encode_into(
            version,
            stream,
            &answer.response,
            &answer.envelope,
            &mut p.frames,
        );
        p.permits.push(permit);
        queued.fetch_sub(1, Ordering::Relaxed);
        if p.permits.len() >= BATCH {
            p.flush_into(&mut room);
        } else {
            pending = Some(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_over_only_enough_work_of_costly_requests() {
        let us = Duration::from_micros;
        let rule = |after, min_request, wake| OffloadRule {
            after: us(after),
            min_request: us(min_request),
            wake: us(wake),
        };
        let offload = ReadOffload::start(1, rule(100, 4, 300)).expect("read thread");
        // With no read queued, a backlog of 300 us or more of requests costing 4 us or more
        // each (the read thread must be woken).
        assert!(offload.wants(5_000, 300_000));
        assert!(
            !offload.wants(5_000, 299_000),
            "too little buffered to wake the read thread"
        );
        // While reads are queued, 100 us is enough.
        offload.queued.fetch_add(1, Ordering::Relaxed);
        assert!(offload.wants(5_000, 100_000));
        assert!(!offload.wants(5_000, 99_000), "too little buffered");
        assert!(
            !offload.wants(3_000, 1_000_000),
            "requests too cheap to repay the hop"
        );
        offload.queued.store(DEPTH, Ordering::Relaxed);
        assert!(
            !offload.wants(5_000, 1_000_000),
            "the read thread has enough waiting"
        );
        let none = ReadOffload::start(0, rule(0, 0, 0)).expect("no read thread");
        assert!(
            !none.wants(u64::MAX, u64::MAX),
            "no read thread to hand over to"
        );
    }
}
