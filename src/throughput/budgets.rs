//! Budgets per physical partition, as Cosmos DB divides a table's provisioned throughput:
//! each physical partition of a table gets an equal share of its RU/s (of its keyspace's when
//! the table shares the keyspace's throughput), at most `max_ru_per_physical_partition`. A
//! share is a token bucket holding up to one second of it. A request is admitted while its
//! partition's bucket is not empty, and pays its charge once it has run (the bucket may go
//! below zero); the next requests then wait for the bucket to refill.
//!
//! A partition is named by its table and the token its range ends at; how many partitions a
//! table has is asked of a [`PartitionCount`]: the store on a single node, the groups in a
//! cluster (where each group's leader keeps its budget).

use crate::schema::Catalog;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use storage::{Storage, TableId};

/// How many physical partitions a table has.
pub trait PartitionCount {
    /// The count for `table`, `None` when it is unknown.
    fn partitions(&self, table: TableId) -> Option<usize>;
}

impl PartitionCount for Storage {
    fn partitions(&self, table: TableId) -> Option<usize> {
        self.partition_of(table, 0).ok().map(|p| p.count)
    }
}

impl<F: Fn(TableId) -> Option<usize>> PartitionCount for F {
    fn partitions(&self, table: TableId) -> Option<usize> {
        self(table)
    }
}

/// How many seconds of consumption a bucket remembers (the last minute).
const WINDOW: usize = 60;

/// Where a table's throughput comes from.
#[derive(Debug, Clone)]
enum Limit {
    /// Its own RU/s.
    Own(u32),
    /// Its keyspace's RU/s, shared with these tables.
    Shared(u32, Arc<[TableId]>),
}

/// One physical partition's bucket and what it consumed.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    updated: Instant,
    /// RU consumed per second, by second since the budgets started (`WINDOW` of them).
    consumed: [(u64, f64); WINDOW],
}

impl Bucket {
    fn new(rate: f64, now: Instant) -> Bucket {
        Bucket {
            tokens: rate,
            updated: now,
            consumed: [(u64::MAX, 0.0); WINDOW],
        }
    }

    fn refill(&mut self, rate: f64, now: Instant) {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(rate);
        self.updated = now;
    }

    fn consumed_since(&self, since: u64) -> f64 {
        self.consumed
            .iter()
            .filter(|(s, _)| *s != u64::MAX && *s >= since)
            .map(|(_, ru)| ru)
            .sum()
    }
}

/// What the views show of one physical partition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartitionUse {
    /// Its share of the throughput, RU/s.
    pub budget: f64,
    /// RU consumed in the last second.
    pub last_second: f64,
    /// RU consumed in the last minute.
    pub last_minute: f64,
}

/// The node's budgets.
#[derive(Debug)]
pub struct Budgets {
    started: Instant,
    max_per_partition: f64,
    /// How long a request over budget may wait for it (server-side retry).
    retry_max: Duration,
    /// True when some table has a throughput (the rest of the path is skipped otherwise).
    any: AtomicBool,
    limits: RwLock<Arc<HashMap<TableId, Limit>>>,
    /// By table and the end token of the partition's range.
    buckets: Mutex<HashMap<(TableId, i64), Bucket>>,
}

impl Budgets {
    /// Budgets with `max_per_partition` RU/s at most for one physical partition, and requests
    /// over budget waiting up to `retry_max` for it.
    pub fn new(max_per_partition: u32, retry_max: Duration) -> Budgets {
        Budgets {
            started: Instant::now(),
            max_per_partition: f64::from(max_per_partition.max(1)),
            retry_max,
            any: AtomicBool::new(false),
            limits: RwLock::default(),
            buckets: Mutex::default(),
        }
    }

    /// The most RU/s one physical partition may have.
    pub fn max_per_partition(&self) -> f64 {
        self.max_per_partition
    }

    /// Takes the throughput of every table from `catalog` (called whenever it changes).
    pub fn refresh(&self, catalog: &Catalog) {
        let mut limits = HashMap::new();
        for ks in catalog.keyspaces.values() {
            let ids = |own: bool| {
                ks.tables
                    .values()
                    .filter(move |t| t.params.throughput.is_some() == own)
                    .map(|t| crate::schema::table_id(t))
            };
            for t in ks.tables.values() {
                if let Some(own) = t.params.throughput {
                    limits.insert(crate::schema::table_id(t), Limit::Own(own.limit()));
                }
            }
            if let Some(shared) = ks.params.throughput {
                let sharing: Arc<[TableId]> = ids(false).collect();
                for id in sharing.iter() {
                    limits.insert(*id, Limit::Shared(shared.limit(), sharing.clone()));
                }
            }
        }
        self.any.store(!limits.is_empty(), Ordering::Relaxed);
        *self.limits.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(limits);
    }

    /// Whether `table` has a throughput.
    pub fn limits(&self, table: TableId) -> bool {
        self.any.load(Ordering::Relaxed)
            && self
                .limits
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(&table)
    }

    /// The RU/s of each physical partition of `table`, or `None` when the table has no
    /// throughput.
    fn rate(&self, counts: &dyn PartitionCount, table: TableId) -> Option<f64> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        let limits = self
            .limits
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let (ru, partitions) = match limits.get(&table)? {
            Limit::Own(ru) => (*ru, counts.partitions(table).unwrap_or(1)),
            Limit::Shared(ru, tables) => {
                let all = tables
                    .iter()
                    .filter_map(|t| counts.partitions(*t))
                    .sum::<usize>();
                (*ru, all.max(1))
            }
        };
        Some((f64::from(ru) / partitions.max(1) as f64).min(self.max_per_partition))
    }

    /// Runs `f` on the bucket of the physical partition of `table` ending at `end`, refilled
    /// to now, with its rate; `None` when the table has no throughput.
    fn with_bucket<R>(
        &self,
        counts: &dyn PartitionCount,
        table: TableId,
        end: i64,
        f: impl FnOnce(&mut Bucket, f64, Instant) -> R,
    ) -> Option<R> {
        let rate = self.rate(counts, table)?;
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let bucket = buckets
            .entry((table, end))
            .or_insert_with(|| Bucket::new(rate, now));
        bucket.refill(rate, now);
        Some(f(bucket, rate, now))
    }

    /// How long a request over budget may wait for it (server-side retry).
    pub fn retry_max(&self) -> Duration {
        self.retry_max
    }

    /// Admits a request to the physical partition of `table` ending at `end`: `Err` with the
    /// milliseconds until its bucket refills when it is empty.
    ///
    /// # Errors
    /// The retry delay in milliseconds.
    pub fn admit(&self, counts: &dyn PartitionCount, table: TableId, end: i64) -> Result<(), u64> {
        let waiting = self.with_bucket(counts, table, end, |bucket, rate, _| {
            (bucket.tokens <= 0.0).then(|| ((-bucket.tokens / rate * 1000.0).ceil() as u64).max(1))
        });
        match waiting.flatten() {
            None => Ok(()),
            Some(wait_ms) => Err(wait_ms),
        }
    }

    /// Records `ru` spent on the physical partition of `table` ending at `end` (a table
    /// without throughput keeps no bucket).
    pub fn charge(&self, counts: &dyn PartitionCount, table: TableId, end: i64, ru: f64) {
        let second_of = |now: Instant| now.saturating_duration_since(self.started).as_secs();
        self.with_bucket(counts, table, end, |bucket, _, now| {
            let second = second_of(now);
            bucket.tokens -= ru;
            let slot = &mut bucket.consumed[(second % WINDOW as u64) as usize];
            if slot.0 != second {
                *slot = (second, 0.0);
            }
            slot.1 += ru;
        });
    }

    /// The budget and recent use of the physical partition of `table` ending at `end`;
    /// `None` when the table has no throughput.
    pub fn partition_use(
        &self,
        counts: &dyn PartitionCount,
        table: TableId,
        end: i64,
    ) -> Option<PartitionUse> {
        let budget = self.rate(counts, table)?;
        let second = Instant::now()
            .saturating_duration_since(self.started)
            .as_secs();
        let buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let (last_second, last_minute) = buckets
            .get(&(table, end))
            .map(|b| {
                (
                    b.consumed_since(second.saturating_sub(1)),
                    b.consumed_since(second.saturating_sub(WINDOW as u64 - 1)),
                )
            })
            .unwrap_or((0.0, 0.0));
        Some(PartitionUse {
            budget,
            last_second,
            last_minute,
        })
    }
}

/// Cosmos DB's message for a request over budget (its Java retry policy splits it on `,` and
/// `=` and reads `RetryAfterMs` untrimmed; its gocql sample reads the second field).
pub fn rate_is_large(retry_after_ms: u64) -> String {
    let activity = uuid::Uuid::new_v4();
    format!(
        "Request rate is large: ActivityID={activity}, RetryAfterMs={retry_after_ms}, \
         Additional details='Response status code does not indicate success: TooManyRequests \
         (429); Substatus: 3200; ActivityId: {activity}; Reason: (Message: Request rate is \
         large. More Request Units may be needed, so no changes were made. Please retry this \
         request later.)'"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_parses_as_microsofts_retry_policy_reads_it() {
        let m = rate_is_large(123);
        // Java: split on ',' then '='; the key trimmed, the value not.
        let retry = m.split(',').find_map(|t| {
            let kv: Vec<&str> = t.split('=').collect();
            (kv.len() == 2 && kv[0].trim() == "RetryAfterMs").then(|| kv[1].parse::<u64>())
        });
        assert_eq!(retry, Some(Ok(123)));
        // gocql: the second comma field.
        let second = m.split(',').nth(1).and_then(|f| f.split('=').nth(1));
        assert_eq!(second, Some("123"));
        assert!(m.starts_with("Request rate is large: ActivityID="));
        assert!(m.contains("TooManyRequests (429); Substatus: 3200; ActivityId: "));
    }

    #[test]
    fn a_bucket_refills_at_its_rate_up_to_one_second() {
        let now = Instant::now();
        let mut b = Bucket::new(100.0, now);
        b.tokens -= 250.0;
        b.refill(100.0, now + std::time::Duration::from_secs(1));
        assert!((b.tokens - (-50.0)).abs() < 1e-9);
        b.refill(100.0, now + std::time::Duration::from_secs(10));
        assert_eq!(b.tokens, 100.0);
    }
}
