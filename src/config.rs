//! Server settings: defaults, the `--config` TOML file (every setting a top-level key) and CLI overrides.

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The default CQL native-protocol port.
pub const DEFAULT_PORT: u16 = 9042;

/// The default metrics address (ScyllaDB's Prometheus port).
pub const DEFAULT_METRICS_LISTEN: &str = "127.0.0.1:9180";

/// Cassandra's default superuser name and password (`cassandra`/`cassandra`).
pub const DEFAULT_SUPERUSER: &str = "cassandra";

/// When an acknowledged write is made durable (Cassandra's `commitlog_sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CommitlogSync {
    /// Written to the OS before the ack; fsynced in the background (Cassandra's default).
    #[default]
    Periodic,
    /// Fsynced before the ack, grouped across concurrent writers.
    Batch,
}

/// Who may connect (Cassandra's `authenticator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, serde::Serialize)]
pub enum Authenticator {
    /// Anyone connects without credentials (the embedded quick start).
    #[default]
    AllowAllAuthenticator,
    /// SASL PLAIN user name and password, checked against the roles' bcrypt hashes.
    PasswordAuthenticator,
}

/// What a logged-in role may do (Cassandra's `authorizer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, serde::Serialize)]
pub enum Authorizer {
    /// Every statement is allowed.
    #[default]
    AllowAllAuthorizer,
    /// Permissions granted with GRANT are enforced on every statement.
    CassandraAuthorizer,
}

/// A secret setting: deserialised as a plain string, never printed by `Debug`.
#[derive(Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself; keep it out of logs.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"<redacted>\"")
    }
}

/// Every setting of a ringdb node. Each key of the TOML file has the same name.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address the CQL listener binds.
    pub listen: SocketAddr,
    /// Directory holding all data (created when missing).
    pub data_dir: PathBuf,
    /// Log filter (`info`, `debug`, `ringdb=trace`, ...).
    pub log_level: String,
    /// Cluster name reported in `system.local`; nodes of a cluster must agree on it (checked
    /// when they connect).
    pub cluster_name: String,
    /// Address the internode listener binds. Unset: the `listen` host, port 7000.
    pub internode_listen: Option<SocketAddr>,
    /// Other nodes' internode addresses. Empty (or only this node): start a new cluster;
    /// otherwise join theirs on first start.
    pub seeds: Vec<SocketAddr>,
    /// PEM certificate chain this node presents to peers; with `internode_tls_key_file` and
    /// `internode_tls_ca_file`, internode traffic is mutual TLS (each side checks the other's
    /// certificate against the CA, and a peer's certificate must name its IP address).
    pub internode_tls_cert_file: Option<PathBuf>,
    /// PEM private key of `internode_tls_cert_file`.
    pub internode_tls_key_file: Option<PathBuf>,
    /// PEM CA that signs every node's internode certificate.
    pub internode_tls_ca_file: Option<PathBuf>,
    /// Physical partitions a new table starts with in a cluster. 0, the default, is four per
    /// node at its creation, so every node leads some from the start.
    pub initial_physical_partitions: usize,
    /// Replica moves the balancer keeps in flight at once (its pacing: each move streams a
    /// physical partition's data to another node). 0 stops the balancer.
    pub max_concurrent_moves: usize,
    /// MiB a second a node sends range snapshots at, and imports the ones it receives at,
    /// over all its moves (as Cassandra's `stream_throughput_outbound`). 0 is unlimited.
    pub stream_throughput_mib_per_s: u64,
    /// Whether a replica that moves off this node has its rows removed at once (true), or
    /// keeps them until `ringdb cleanup` (false), as Cassandra keeps a range's data after it
    /// moves until `nodetool cleanup`.
    pub clear_moved_replicas: bool,
    /// Largest accepted frame body, in bytes; a larger frame gets a ProtocolError.
    pub max_frame_bytes: u32,
    /// Maximum simultaneous client connections.
    pub max_connections: usize,
    /// Maximum requests in flight on one connection (further frames wait to be read).
    pub max_requests_per_connection: usize,
    /// Seconds that in-flight requests get to finish on shutdown.
    pub shutdown_grace_seconds: u64,
    /// Requests executing at once across all connections; beyond it clients get Overloaded.
    pub max_concurrent_requests: usize,
    /// A read not answered within this many milliseconds gets ReadTimeout.
    pub read_request_timeout_ms: u64,
    /// A write not answered within this many milliseconds gets WriteTimeout.
    pub write_request_timeout_ms: u64,
    /// Any other request (DDL, ...) not answered within this many milliseconds times out.
    pub request_timeout_ms: u64,
    /// Durability policy for acknowledged writes.
    pub commitlog_sync: CommitlogSync,
    /// A physical partition larger than this splits in two.
    pub physical_partition_max_bytes: u64,
    /// A write that would take one logical partition past this size fails.
    pub logical_partition_max_bytes: u64,
    /// Largest bound value accepted, in bytes (Cassandra's `max_value_size`).
    pub max_value_bytes: u64,
    /// A batch over several partitions whose data passes this many KiB is refused ("Batch too
    /// large"), as Cassandra's `batch_size_fail_threshold` (default 50).
    pub batch_size_fail_threshold_kb: u64,
    /// A batch over several partitions whose data passes this many KiB gets a warning, as
    /// Cassandra's `batch_size_warn_threshold` (default 5).
    pub batch_size_warn_threshold_kb: u64,
    /// An unlogged batch over more partitions than this gets a warning, as Cassandra's
    /// `unlogged_batch_across_partitions_warn_threshold` (default 10).
    pub unlogged_batch_across_partitions_warn_threshold: u64,
    /// The most request units per second one physical partition may be given (Cosmos DB's
    /// 10,000): a table's provisioned throughput is divided among its physical partitions up
    /// to this, and raising it past `partitions × this` splits them.
    pub max_ru_per_physical_partition: u32,
    /// Server-side retry, as Cosmos DB's account option: a request over its partition's
    /// budget waits up to this many milliseconds for the budget to refill instead of being
    /// refused at once (0, the default: refused with Overloaded and its RetryAfterMs).
    pub throttle_retry_max_ms: u64,
    /// Storage block cache (decompressed blocks of the LSM tables), in MiB. 0, the default,
    /// sizes it to the memory the server may use ([`Config::block_cache_bytes`]): an eighth,
    /// at least 256 MiB. Point reads of a 10 M-row table (1.5 GB on disk) held in a 2 GiB
    /// cache had a p50 16% lower than in 256 MiB; with 32 MiB the 1 M-row mixed benchmark
    /// read most blocks from the file again (256 gave +10-15% throughput).
    pub block_cache_mb: u64,
    /// Item cache (single stored items by key, like Cassandra's row cache: point reads of
    /// one-item rows and writes' lookups of what they overwrite skip the LSM tree on a hit),
    /// in MiB; 0 turns it off. Unset, the default, sizes it to the memory the server may use
    /// ([`Config::item_cache_bytes`]): a sixteenth, at least 64 MiB.
    pub item_cache_mb: Option<u64>,
    /// Partitions of at most this many KiB (keys and values of their rows, statics and
    /// deletions) are kept whole in the item cache once read, so slices of them skip the LSM
    /// tree until their next write (like Cassandra's row cache); 0 turns it off. Default 16.
    pub partition_cache_max_kb: u64,
    /// Dynamic data masking (Cassandra 5.0's `dynamic_data_masking_enabled`): whether CREATE
    /// and ALTER TABLE may attach masks to columns (`MASKED WITH ...`). Masks already in the
    /// schema apply whatever this says. Default false, as in Cassandra.
    pub dynamic_data_masking_enabled: bool,
    /// Async worker threads that serve connections (framing, sessions and the cheap requests
    /// run inline on them). 0, the default, means half the cores the process may run on, at
    /// least one: the other half is left to storage's flush and compaction threads, the
    /// blocking pool (scans, DDL, first executions) and clients on the same machine. On two
    /// cores shared with the load generator, one thread served point reads 1.5x faster than
    /// two (two worker threads and the client kept waking and preempting each other).
    pub connection_threads: usize,
    /// Storage threads that flush memtables and compact tables (Cassandra's
    /// `concurrent_compactors`). 0, the default, is one per core, at most four (fjall's own
    /// choice) but at least three ([`MIN_AUTO_COMPACTION_THREADS`]). fjall's first thread keeps
    /// itself free for flushes by re-queueing every compaction message it receives, a busy
    /// loop while the others are all busy; with two threads that was whenever one compacted
    /// (13% of all CPU samples during saturated writes on two cores). A third thread takes
    /// the re-queued message instead: on two cores, writes/s +1 and +8%, the 50/50 mix +11
    /// and +16%, CPU per request -1 to -2 us, a 10 M-row bulk load unchanged. One thread has
    /// no such loop, but compaction then fell behind a 10 M-row load: 1.50x the raw size on
    /// disk instead of 1.41x, RSS 862 instead of 549 MB, point reads after it 23% slower.
    pub compaction_threads: usize,
    /// Nice value (0-19) of storage's background threads: fjall's flush and compaction
    /// workers, idle compaction and splits. 19 by default, the lowest priority, so that a
    /// thread answering requests never waits for a core behind a compaction (Cassandra runs
    /// its compaction threads at the lowest thread priority too); 0 runs them at the
    /// server's own priority. On two cores shared with the load generator, writes at a fixed
    /// 40 k/s had a p99 of 4.0 ms at 19 against 5.0 ms at 0 (mean of 9 alternating pairs,
    /// 7 of them lower at 19), with the same peak write rate.
    pub background_nice: i32,
    /// Whether storage's background threads also run under Linux's `SCHED_IDLE` policy
    /// (true by default). With a nice value alone, a request thread woken while a compaction
    /// runs on the other core could wait behind it for the load balancer; a core that runs
    /// only `SCHED_IDLE` threads counts as idle, so the request thread runs there at once.
    /// Background threads still get a small share of busy cores, and fjall's write stalls
    /// keep compaction from falling far behind. On two cores shared with the load generator,
    /// saturated writes 1.04-1.08x, idle CPU 0.22 -> 0.10-0.13 of a core (session 27).
    pub background_idle_policy: bool,
    /// Threads that answer cheap reads (prepared reads of named partitions) beside the
    /// connection threads, so reads use the cores the connection threads leave idle. Unset,
    /// the default, means the cores the process may run on minus `connection_threads` (one on
    /// two cores, none on one); 0 turns them off. See `read_offload_after_us` for when a read
    /// is handed over.
    pub read_threads: Option<usize>,
    /// A connection thread hands a read to a read thread only when the requests already
    /// buffered on that connection would take it at least this many microseconds to answer
    /// (their count times its moving average per request), 100 by default, and only when
    /// its reads take `read_offload_min_request_us` or more each. Below that the
    /// thread hop and the CPU taken from the clients cost more than they save: on two cores
    /// shared with the load generator, 10-row slices ran 1.1x faster at 100 than at 300 and
    /// 0.9x at 30, the 50/50 mix 1.05-1.17x at 100; point reads handed over at 100 lost 7%
    /// (at 50, on an earlier machine, 25%), and at 200 their bursts at half the peak rate
    /// woke the read thread (p99 1.08 -> 1.43 ms).
    pub read_offload_after_us: u64,
    /// Least time a connection's reads take each (the moving average over its inline reads,
    /// in microseconds), 4 by default, for its reads to be handed to a read thread: the hop
    /// costs both threads a wakeup and a queue, which a point read of ~3 us does not repay
    /// (handed over at `read_offload_after_us` = 100, point reads lost 7% where 10-row
    /// slices of ~9 us gained 10%). Writes do not count: averaged with them, the ~2 us reads
    /// of a 50/50 mix were handed over and the mix ran 1.15x slower.
    pub read_offload_min_request_us: u64,
    /// Work a connection must have buffered (microseconds, as `read_offload_after_us`) to hand
    /// a read over while no read is queued, 300 by default (never below
    /// `read_offload_after_us`): a read thread that ran dry sleeps, and waking it costs both
    /// threads a futex round trip, which the tail of a small burst does not repay.
    pub read_offload_wake_us: u64,
    /// A physical partition that has taken no write for this many milliseconds is flushed and
    /// compacted into one sorted run, once, when it has tables and is at most
    /// `idle_compaction_max_mb` on disk (0 turns this off; 1000 by default; larger trees only have
    /// their memtable flushed). fjall compacts
    /// only as writes arrive, so a loaded table kept its memtable and overlapping tables and
    /// every slice or scan merged them all: compacted, a 10-row slice of a loaded 500 k-row
    /// table cost ~15% less CPU. Trees held only in memory are left alone (a memtable answers
    /// point reads faster than a table).
    pub idle_compaction_after_ms: u64,
    /// Largest tree (MiB on disk) idle compaction rewrites, 2048 by default, and only when the
    /// file system has room for a second copy above `min_free_disk_mb`; larger ones only have
    /// their memtable flushed and are left to the leveled compaction (rewriting them whole
    /// competes with the reads for longer). Point reads of a 10 M-row table (1.5 GB) cost
    /// ~20 us of CPU as loaded and ~14 us once compacted (~15 s of one core).
    pub idle_compaction_max_mb: u64,
    /// Most MiB the storage journals (the commit log) may take on disk; past it the oldest
    /// memtables are flushed and their journal deleted, like Cassandra's
    /// `commitlog_total_space`. At least 64 (the default): fjall's own default, 512, left a
    /// 10 M-row load at 1.65x its raw size on disk, 64 at 1.41x, at the same load speed, and
    /// a restart replays less. Many tables written slowly flush smaller tables sooner.
    pub max_journal_mb: u64,
    /// Writes fail with WriteFailure while the data directory's file system has less free
    /// space than this many MiB (0 disables the check), so the store never fills the disk.
    pub min_free_disk_mb: u64,
    /// `AllowAllAuthenticator` (default) or `PasswordAuthenticator`.
    pub authenticator: Authenticator,
    /// `AllowAllAuthorizer` (default) or `CassandraAuthorizer` (needs `PasswordAuthenticator`).
    pub authorizer: Authorizer,
    /// The superuser role created on first start, when no role exists yet.
    pub superuser_name: String,
    /// Its password (only used on first start; change it later with `ALTER ROLE`).
    pub superuser_password: Secret,
    /// PEM certificate chain the server presents on TLS connections.
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) of `tls_cert_file`.
    pub tls_key_file: Option<PathBuf>,
    /// PEM CA certificates; when set, TLS clients must present a certificate signed by one.
    pub tls_client_ca_file: Option<PathBuf>,
    /// Address of an extra listener that speaks only TLS, beside the plain `listen` one.
    pub tls_listen: Option<SocketAddr>,
    /// Address of the Prometheus metrics endpoint (`/metrics`); empty turns it off.
    pub metrics_listen: String,
    /// The share of requests traced without asking (0.0 to 1.0), as `nodetool
    /// settraceprobability`.
    pub trace_probability: f64,
    /// Requests taking at least this many milliseconds are kept in `system_traces.sessions`
    /// (0: none).
    pub slow_query_log_ms: u64,
    /// Allows `CREATE FUNCTION` and `CREATE AGGREGATE` (Cassandra's
    /// `user_defined_functions_enabled`, off by default).
    pub user_defined_functions_enabled: bool,
    /// Lets functions in a language other than Lua (`LANGUAGE java`) into the schema; calling
    /// them still fails, since ringdb runs only Lua bodies.
    pub user_defined_functions_java_schema: bool,
    /// Whether `CREATE MATERIALIZED VIEW` is allowed (Cassandra's `materialized_views_enabled`,
    /// off by default as in Cassandra 4.1).
    pub materialized_views_enabled: bool,
    /// When true, the main `listen` port speaks only TLS.
    pub tls_only: bool,
    /// Seconds a client gets to complete the TLS handshake before it is disconnected.
    pub tls_handshake_timeout_seconds: u64,
}

/// The smallest block cache `block_cache_mb = 0` picks, whatever the machine's memory.
pub const MIN_AUTO_BLOCK_CACHE_BYTES: u64 = 256 << 20;

/// The block cache for `block_cache_mb = 0`, given the memory the process may use (if known).
fn auto_block_cache_bytes(available: Option<u64>) -> u64 {
    available.map_or(MIN_AUTO_BLOCK_CACHE_BYTES, |b| {
        (b / 8).max(MIN_AUTO_BLOCK_CACHE_BYTES)
    })
}

/// The smallest item cache an unset `item_cache_mb` picks, whatever the machine's memory.
pub const MIN_AUTO_ITEM_CACHE_BYTES: u64 = 64 << 20;

/// The item cache for an unset `item_cache_mb`, given the memory the process may use.
fn auto_item_cache_bytes(available: Option<u64>) -> u64 {
    available.map_or(MIN_AUTO_ITEM_CACHE_BYTES, |b| {
        (b / 16).max(MIN_AUTO_ITEM_CACHE_BYTES)
    })
}

/// Most threads `read_threads` may ask for.
const MAX_READ_THREADS: usize = 64;

/// The fewest storage threads `compaction_threads = 0` starts: fjall's first thread spins
/// re-queueing compaction work while every other thread is busy, so two are not enough.
pub const MIN_AUTO_COMPACTION_THREADS: usize = 3;

/// Most storage threads `compaction_threads` may ask for.
const MAX_COMPACTION_THREADS: usize = 64;

/// Most async worker threads `connection_threads` may ask for.
pub const MAX_CONNECTION_THREADS: usize = 1024;

impl Config {
    /// The number of async worker threads to start (`connection_threads` resolved).
    pub fn worker_threads(&self) -> usize {
        match self.connection_threads {
            0 => std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)),
            n => n,
        }
    }

    /// The number of read threads to start (`read_threads` resolved).
    pub fn read_threads(&self) -> usize {
        self.read_threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .saturating_sub(self.worker_threads())
        })
    }

    /// The block cache's size in bytes (`block_cache_mb` resolved): 0 means an eighth of the
    /// memory this process may use (its cgroup's limit, else the machine's RAM), at least
    /// [`MIN_AUTO_BLOCK_CACHE_BYTES`]; like Cassandra's heap, which defaults to a quarter.
    pub fn block_cache_bytes(&self) -> u64 {
        match self.block_cache_mb {
            0 => auto_block_cache_bytes(crate::host_memory::available_bytes()),
            mb => mb.saturating_mul(1 << 20),
        }
    }

    /// The item cache's size in bytes (`item_cache_mb` resolved): unset means a sixteenth of
    /// the memory this process may use, at least [`MIN_AUTO_ITEM_CACHE_BYTES`]; 0 is off.
    pub fn item_cache_bytes(&self) -> u64 {
        match self.item_cache_mb {
            None => auto_item_cache_bytes(crate::host_memory::available_bytes()),
            Some(mb) => mb.saturating_mul(1 << 20),
        }
    }

    /// The number of storage flush and compaction threads (`compaction_threads` resolved).
    pub fn storage_threads(&self) -> usize {
        match self.compaction_threads {
            0 => std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .clamp(MIN_AUTO_COMPACTION_THREADS, 4),
            n => n,
        }
    }
}

impl Config {
    /// The internode address: `internode_listen`, else the `listen` host with port 7000.
    pub fn internode_address(&self) -> SocketAddr {
        self.internode_listen
            .unwrap_or_else(|| SocketAddr::new(self.listen.ip(), DEFAULT_INTERNODE_PORT))
    }
}

/// The internode port when `internode_listen` is unset (Cassandra's `storage_port`).
pub const DEFAULT_INTERNODE_PORT: u16 = 7000;

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            data_dir: PathBuf::from("data"),
            log_level: "info,lsm_tree=warn,fjall=warn".to_string(),
            cluster_name: "Test Cluster".to_string(),
            internode_listen: None,
            seeds: Vec::new(),
            initial_physical_partitions: 0,
            max_concurrent_moves: 2,
            stream_throughput_mib_per_s: 24,
            clear_moved_replicas: true,
            internode_tls_cert_file: None,
            internode_tls_key_file: None,
            internode_tls_ca_file: None,
            max_frame_bytes: 256 * 1024 * 1024,
            max_connections: 4096,
            max_requests_per_connection: 1024,
            shutdown_grace_seconds: 5,
            max_concurrent_requests: 4096,
            read_request_timeout_ms: 5000,
            write_request_timeout_ms: 2000,
            request_timeout_ms: 10000,
            commitlog_sync: CommitlogSync::Periodic,
            physical_partition_max_bytes: 30 * 1024 * 1024 * 1024,
            logical_partition_max_bytes: 20 * 1024 * 1024 * 1024,
            max_value_bytes: 256 * 1024 * 1024,
            batch_size_fail_threshold_kb: 50,
            batch_size_warn_threshold_kb: 5,
            unlogged_batch_across_partitions_warn_threshold: 10,
            max_ru_per_physical_partition: 10_000,
            throttle_retry_max_ms: 0,
            block_cache_mb: 0,
            item_cache_mb: None,
            partition_cache_max_kb: 16,
            dynamic_data_masking_enabled: false,
            max_journal_mb: 64,
            compaction_threads: 0,
            background_nice: 19,
            background_idle_policy: true,
            read_threads: None,
            read_offload_after_us: 100,
            read_offload_min_request_us: 4,
            read_offload_wake_us: 300,
            idle_compaction_after_ms: 1000,
            idle_compaction_max_mb: 2048,
            connection_threads: 0,
            min_free_disk_mb: 128,
            authenticator: Authenticator::AllowAllAuthenticator,
            authorizer: Authorizer::AllowAllAuthorizer,
            superuser_name: DEFAULT_SUPERUSER.to_string(),
            superuser_password: Secret::new(DEFAULT_SUPERUSER),
            tls_cert_file: None,
            tls_key_file: None,
            tls_client_ca_file: None,
            tls_listen: None,
            metrics_listen: DEFAULT_METRICS_LISTEN.to_string(),
            trace_probability: 0.0,
            slow_query_log_ms: 0,
            user_defined_functions_enabled: false,
            user_defined_functions_java_schema: false,
            materialized_views_enabled: false,
            tls_only: false,
            tls_handshake_timeout_seconds: 10,
        }
    }
}

/// A configuration file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML for this schema.
    #[error("invalid config file {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Box<toml::de::Error>,
    },
}

impl Config {
    /// Loads a TOML file; keys that are absent keep their defaults.
    ///
    /// # Errors
    /// When the file cannot be read or holds unknown keys or wrongly typed values.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.to_path_buf(),
            source: Box::new(source),
        })
    }

    /// Every setting as `system_views.settings` shows it: (name, value), by name; passwords
    /// redacted, unset settings left out.
    pub fn settings(&self) -> Vec<(String, String)> {
        let Ok(table) = toml::Table::try_from(self) else {
            return Vec::new();
        };
        let mut out: Vec<(String, String)> = table
            .into_iter()
            .map(|(name, value)| {
                let shown = if name.contains("password") {
                    "<redacted>".to_string()
                } else {
                    match value {
                        toml::Value::String(s) => s,
                        other => other.to_string(),
                    }
                };
                (name, shown)
            })
            .collect();
        out.sort();
        out
    }

    /// The metrics endpoint's address; `None` when `metrics_listen` is empty (or invalid,
    /// which [`Config::validate`] refuses).
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics_listen.parse().ok()
    }

    /// Checks settings that only make sense together (auth and TLS).
    ///
    /// # Errors
    /// A message naming the conflicting keys.
    pub fn validate(&self) -> Result<(), String> {
        if self.cluster_name.is_empty() {
            return Err("cluster_name can't be empty".into());
        }
        if !(0.0..=1.0).contains(&self.trace_probability) {
            return Err(format!(
                "trace_probability is {}; it must be between 0.0 and 1.0",
                self.trace_probability
            ));
        }
        if !self.metrics_listen.is_empty() && self.metrics_address().is_none() {
            return Err(format!(
                "metrics_listen is {:?}: an address (host:port), or empty for none",
                self.metrics_listen
            ));
        }
        let internode_tls = [
            self.internode_tls_cert_file.is_some(),
            self.internode_tls_key_file.is_some(),
            self.internode_tls_ca_file.is_some(),
        ];
        if internode_tls.iter().any(|b| *b) && !internode_tls.iter().all(|b| *b) {
            return Err("internode TLS needs internode_tls_cert_file, internode_tls_key_file and internode_tls_ca_file together".into());
        }
        if self.authenticator == Authenticator::AllowAllAuthenticator
            && self.authorizer == Authorizer::CassandraAuthorizer
        {
            return Err("AllowAllAuthenticator can't be used with CassandraAuthorizer: set authenticator = \"PasswordAuthenticator\"".into());
        }
        if self.superuser_name.is_empty() {
            return Err("superuser_name can't be empty".into());
        }
        if self.connection_threads > MAX_CONNECTION_THREADS {
            return Err(format!(
                "connection_threads is {}; at most {MAX_CONNECTION_THREADS} (0 = half the cores)",
                self.connection_threads
            ));
        }
        if self.compaction_threads > MAX_COMPACTION_THREADS {
            return Err(format!(
                "compaction_threads is {}; at most {MAX_COMPACTION_THREADS} (0 = storage's default)",
                self.compaction_threads
            ));
        }
        if !(0..=19).contains(&self.background_nice) {
            return Err(format!(
                "background_nice is {}; it must be 0 (the server's priority) to 19 (the lowest)",
                self.background_nice
            ));
        }
        if let Some(n) = self.read_threads.filter(|&n| n > MAX_READ_THREADS) {
            return Err(format!(
                "read_threads is {n}; at most {MAX_READ_THREADS} (0 = none)"
            ));
        }
        let has_cert = self.tls_cert_file.is_some() || self.tls_key_file.is_some();
        let wants_tls = self.tls_only || self.tls_listen.is_some();
        if wants_tls && (self.tls_cert_file.is_none() || self.tls_key_file.is_none()) {
            return Err("tls_only and tls_listen need both tls_cert_file and tls_key_file".into());
        }
        if has_cert && !wants_tls {
            return Err("tls_cert_file/tls_key_file are set but no listener uses TLS: set tls_listen or tls_only = true".into());
        }
        if self.tls_client_ca_file.is_some() && !wants_tls {
            return Err("tls_client_ca_file is set but no listener uses TLS".into());
        }
        if self.tls_listen.is_some() && self.tls_listen == Some(self.listen) {
            return Err(
                "tls_listen must differ from listen (use tls_only to make the main port TLS)"
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_keys_override_defaults() {
        let c: Config = toml::from_str(
            "listen = \"127.0.0.1:9999\"\nphysical_partition_max_bytes = 1048576\ncommitlog_sync = \"batch\"",
        )
        .expect("valid toml");
        assert_eq!(c.listen.port(), 9999);
        assert_eq!(c.physical_partition_max_bytes, 1 << 20);
        assert_eq!(c.commitlog_sync, CommitlogSync::Batch);
        assert_eq!(c.logical_partition_max_bytes, 20 << 30);
    }

    #[test]
    fn security_keys_parse_and_the_password_is_not_printed() {
        let c: Config = toml::from_str(
            "authenticator = \"PasswordAuthenticator\"\nauthorizer = \"CassandraAuthorizer\"\nsuperuser_name = \"admin\"\nsuperuser_password = \"s3cret\"\ntls_cert_file = \"c.pem\"\ntls_key_file = \"k.pem\"\ntls_listen = \"127.0.0.1:9142\"",
        )
        .expect("valid toml");
        assert_eq!(c.authenticator, Authenticator::PasswordAuthenticator);
        assert_eq!(c.authorizer, Authorizer::CassandraAuthorizer);
        assert_eq!(c.superuser_password.expose(), "s3cret");
        assert!(!format!("{c:?}").contains("s3cret"));
        assert!(c.validate().is_ok());
    }

    #[test]
    fn block_cache_defaults_to_an_eighth_of_memory_and_a_setting_wins() {
        assert_eq!(auto_block_cache_bytes(Some(24 << 30)), 3 << 30);
        assert_eq!(auto_block_cache_bytes(Some(1 << 30)), 256 << 20);
        assert_eq!(auto_block_cache_bytes(None), 256 << 20);
        let c = Config::default();
        assert_eq!(
            c.block_cache_bytes(),
            auto_block_cache_bytes(crate::host_memory::available_bytes())
        );
        let c: Config = toml::from_str("block_cache_mb = 32").expect("toml");
        assert_eq!(c.block_cache_bytes(), 32 << 20);
    }

    #[test]
    fn item_cache_defaults_to_a_sixteenth_of_memory_and_zero_turns_it_off() {
        assert_eq!(auto_item_cache_bytes(Some(24 << 30)), 1536 << 20);
        assert_eq!(auto_item_cache_bytes(Some(512 << 20)), 64 << 20);
        assert_eq!(auto_item_cache_bytes(None), 64 << 20);
        assert_eq!(
            Config::default().item_cache_bytes(),
            auto_item_cache_bytes(crate::host_memory::available_bytes())
        );
        let c: Config = toml::from_str("item_cache_mb = 100").expect("toml");
        assert_eq!(c.item_cache_bytes(), 100 << 20);
        let c: Config = toml::from_str("item_cache_mb = 0").expect("toml");
        assert_eq!(c.item_cache_bytes(), 0);
    }

    #[test]
    fn connection_threads_default_to_half_the_cores_and_are_bounded() {
        let c = Config::default();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(c.worker_threads(), (cores / 2).max(1));
        let c: Config = toml::from_str("connection_threads = 3").expect("toml");
        assert_eq!(c.worker_threads(), 3);
        assert!(c.validate().is_ok());
        let c: Config = toml::from_str("connection_threads = 100000").expect("toml");
        assert!(c.validate().is_err());
    }

    #[test]
    fn read_threads_default_to_the_cores_left_and_are_bounded() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let c = Config::default();
        assert_eq!(c.read_threads(), cores - c.worker_threads());
        let c: Config = toml::from_str("read_threads = 0").expect("toml");
        assert_eq!(c.read_threads(), 0);
        assert!(c.validate().is_ok());
        let c: Config = toml::from_str("read_threads = 65").expect("toml");
        assert!(c.validate().is_err());
        let c: Config = toml::from_str("read_offload_after_us = 50").expect("toml");
        assert_eq!(c.read_offload_after_us, 50);
    }

    #[test]
    fn compaction_threads_are_bounded() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            Config::default().storage_threads(),
            cores.clamp(MIN_AUTO_COMPACTION_THREADS, 4)
        );
        assert!(Config::default().storage_threads() >= 3);
        let c: Config = toml::from_str("compaction_threads = 2").expect("toml");
        assert_eq!(c.storage_threads(), 2);
        assert!(c.validate().is_ok());
        let c: Config = toml::from_str("compaction_threads = 65").expect("toml");
        assert!(c.validate().is_err());
    }

    #[test]
    fn background_nice_is_a_nice_value() {
        assert_eq!(Config::default().background_nice, 19);
        assert!(Config::default().background_idle_policy);
        let c: Config = toml::from_str("background_idle_policy = false").expect("toml");
        assert!(!c.background_idle_policy && c.validate().is_ok());
        let c: Config = toml::from_str("background_nice = 0").expect("toml");
        assert!(c.validate().is_ok());
        for bad in ["background_nice = 20", "background_nice = -1"] {
            let c: Config = toml::from_str(bad).expect("toml");
            assert!(c.validate().is_err(), "{bad}");
        }
    }

    #[test]
    fn inconsistent_security_settings_are_rejected() {
        let c: Config = toml::from_str("authorizer = \"CassandraAuthorizer\"").expect("toml");
        assert!(c.validate().is_err());
        let c: Config = toml::from_str("tls_only = true").expect("toml");
        assert!(c.validate().is_err());
        let c: Config =
            toml::from_str("tls_cert_file = \"c.pem\"\ntls_key_file = \"k.pem\"").expect("toml");
        assert!(c.validate().is_err());
        assert!(Config::default().validate().is_ok());
    }

    #[test]
    fn unknown_keys_are_rejected() {
        assert!(toml::from_str::<Config>("no_such_setting = 1").is_err());
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod example_tests;
