//! The requests answered and their latency histogram, by kind (`ringdb_cql_requests_total`
//! and `ringdb_cql_request_latency_seconds`): striped per thread, as the tables' histograms
//! (`super::latency`), so that the worker threads recording every request do not fight over
//! shared cache lines; summed into Prometheus's families at each scrape ([`Collector`]).

use super::latency::stripe_index;
use super::RequestClass;
use prometheus::core::{Collector, Desc};
use prometheus::proto;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The histogram's first upper bound: 50 µs; each next one doubles it.
const FIRST_BOUND_NS: u64 = 50_000;
/// Bounded buckets (50 µs to about 13 s), then `+Inf`.
const BOUNDS: usize = 19;
/// Stripes (threads record into `thread index % STRIPES`).
const STRIPES: usize = 4;
/// Request kinds.
const KINDS: usize = RequestClass::ALL.len();

/// One kind's counts in one stripe.
#[derive(Default)]
struct KindCounts {
    /// Per bucket (not cumulative); the last is `+Inf`.
    buckets: [AtomicU64; BOUNDS + 1],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

/// One stripe: every kind's counts, on cache lines of its own.
#[derive(Default)]
#[repr(align(64))]
struct Stripe {
    kinds: [KindCounts; KINDS],
}

/// The requests' counts and latencies by kind.
pub(super) struct RequestLatency {
    stripes: Vec<Stripe>,
    requests: Desc,
    latency: Desc,
}

/// The bucket of a request that took `ns`: the first whose upper bound is at least `ns`.
fn bucket_of(ns: u64) -> usize {
    if ns <= FIRST_BOUND_NS {
        return 0;
    }
    // The smallest i with FIRST_BOUND_NS << i >= ns.
    let ratio = (ns - 1) / FIRST_BOUND_NS;
    let i = (u64::BITS - ratio.leading_zeros()) as usize;
    i.min(BOUNDS)
}

/// The upper bound of bucket `i` in seconds (`i < BOUNDS`).
fn bound_secs(i: usize) -> f64 {
    (FIRST_BOUND_NS << i) as f64 / 1e9
}

impl RequestLatency {
    /// Empty counts.
    ///
    /// # Errors
    /// Only on a bug (a name or label Prometheus refuses).
    pub(super) fn new() -> Result<RequestLatency, prometheus::Error> {
        Ok(RequestLatency {
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
            requests: Desc::new(
                "ringdb_cql_requests_total".into(),
                "CQL requests (QUERY, PREPARE, EXECUTE, BATCH) answered, by what they do".into(),
                vec!["kind".into()],
                Default::default(),
            )?,
            latency: Desc::new(
                "ringdb_cql_request_latency_seconds".into(),
                "Time from a request's start to its answer, by what it does".into(),
                vec!["kind".into()],
                Default::default(),
            )?,
        })
    }

    /// Records one request of `class` that took `took`.
    pub(super) fn record(&self, class: RequestClass, took: Duration) {
        let Some(stripe) = self.stripes.get(stripe_index() % STRIPES) else {
            return;
        };
        let Some(kind) = stripe.kinds.get(class.index()) else {
            return;
        };
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        if let Some(b) = kind.buckets.get(bucket_of(ns)) {
            b.fetch_add(1, Ordering::Relaxed);
        }
        kind.count.fetch_add(1, Ordering::Relaxed);
        kind.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Requests of `class` answered so far.
    pub(super) fn count(&self, class: RequestClass) -> u64 {
        self.stripes
            .iter()
            .filter_map(|s| s.kinds.get(class.index()))
            .map(|k| k.count.load(Ordering::Relaxed))
            .sum()
    }

    /// (count, sum of ns, per-bucket counts) of `class` over the stripes.
    fn totals(&self, class: RequestClass) -> (u64, u64, [u64; BOUNDS + 1]) {
        let mut buckets = [0u64; BOUNDS + 1];
        let (mut count, mut sum) = (0u64, 0u64);
        for kind in self
            .stripes
            .iter()
            .filter_map(|s| s.kinds.get(class.index()))
        {
            for (total, b) in buckets.iter_mut().zip(&kind.buckets) {
                *total += b.load(Ordering::Relaxed);
            }
            count += kind.count.load(Ordering::Relaxed);
            sum = sum.wrapping_add(kind.sum_ns.load(Ordering::Relaxed));
        }
        (count, sum, buckets)
    }
}

fn kind_label(class: RequestClass) -> Vec<proto::LabelPair> {
    let mut pair = proto::LabelPair::default();
    pair.set_name("kind".into());
    pair.set_value(class.label().into());
    vec![pair]
}

fn family(
    desc: &Desc,
    kind: proto::MetricType,
    metrics: Vec<proto::Metric>,
) -> proto::MetricFamily {
    let mut f = proto::MetricFamily::default();
    f.set_name(desc.fq_name.clone());
    f.set_help(desc.help.clone());
    f.set_field_type(kind);
    f.set_metric(metrics);
    f
}

impl Collector for RequestLatency {
    fn desc(&self) -> Vec<&Desc> {
        vec![&self.requests, &self.latency]
    }

    fn collect(&self) -> Vec<proto::MetricFamily> {
        let mut counters = Vec::new();
        let mut histograms = Vec::new();
        for class in RequestClass::ALL {
            let (count, sum_ns, buckets) = self.totals(class);
            let mut counter = proto::Counter::default();
            counter.set_value(count as f64);
            let mut m = proto::Metric::from_label(kind_label(class));
            m.set_counter(counter);
            counters.push(m);

            let mut h = proto::Histogram::default();
            h.set_sample_count(count);
            h.set_sample_sum(sum_ns as f64 / 1e9);
            let mut cumulative = 0u64;
            let bounded = buckets.iter().take(BOUNDS).enumerate().map(|(i, n)| {
                cumulative += n;
                let mut b = proto::Bucket::default();
                b.set_cumulative_count(cumulative);
                b.set_upper_bound(bound_secs(i));
                b
            });
            h.set_bucket(bounded.collect());
            let mut m = proto::Metric::from_label(kind_label(class));
            m.set_histogram(h);
            histograms.push(m);
        }
        vec![
            family(&self.requests, proto::MetricType::COUNTER, counters),
            family(&self.latency, proto::MetricType::HISTOGRAM, histograms),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_prometheus_upper_bounds() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(50_000), 0);
        assert_eq!(bucket_of(50_001), 1);
        assert_eq!(bucket_of(100_000), 1);
        assert_eq!(bucket_of(100_001), 2);
        assert_eq!(bucket_of(FIRST_BOUND_NS << 18), 18);
        assert_eq!(bucket_of((FIRST_BOUND_NS << 18) + 1), BOUNDS);
        assert_eq!(bucket_of(u64::MAX), BOUNDS);
        assert!((bound_secs(0) - 0.000_05).abs() < 1e-12);
        assert!((bound_secs(1) - 0.000_1).abs() < 1e-12);
    }

    #[test]
    fn counts_from_every_thread_add_up() {
        let r = std::sync::Arc::new(RequestLatency::new().expect("descs"));
        let threads: Vec<_> = (0..6)
            .map(|t| {
                let r = r.clone();
                std::thread::spawn(move || {
                    for i in 0..100u64 {
                        r.record(RequestClass::Write, Duration::from_micros(40 + t * 100 + i));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(r.count(RequestClass::Write), 600);
        assert_eq!(r.count(RequestClass::Read), 0);
        let families = r.collect();
        let write = families[1]
            .get_metric()
            .iter()
            .find(|m| m.get_label()[0].value() == "write")
            .expect("write");
        let histogram = write.get_histogram();
        assert_eq!(histogram.get_sample_count(), 600);
        let buckets = histogram.get_bucket();
        assert_eq!(buckets.len(), BOUNDS);
        assert!(buckets
            .windows(2)
            .all(|w| w[0].cumulative_count() <= w[1].cumulative_count()));
        assert_eq!(buckets[BOUNDS - 1].cumulative_count(), 600);
        // 40-50 µs land in the first bucket (50 µs is its upper bound): the first thread's 11.
        assert_eq!(buckets[0].cumulative_count(), 11);
    }
}
