//! `Node`: the state one ringdb process shares across connections (configuration, catalog,
//! storage and its shards, auth, prepared statements, the schema-event channel), with its
//! startup and shutdown. Plain state: statements run in `executor`, taking what they need.

use crate::cluster_hooks::ClusterHooks;
use crate::config::{CommitlogSync, Config};
use crate::prepared::PreparedCache;
use crate::schema::{self, Catalog};
use crate::shard::{LocalShards, Shards};
use crate::system::{self, NodeInfo};
use cql::response::Event;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use storage::{IdleCompaction, Storage, StorageOptions, SyncPolicy};
use tokio::sync::broadcast;
use tracing::info;
use uuid::Uuid;

/// Why the node could not start or stop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// The data directory or a node file could not be used.
    #[error("data directory {path}: {source}")]
    DataDir {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The storage engine failed.
    #[error("storage: {0}")]
    Storage(#[from] storage::StorageError),
    /// Anything else during startup.
    #[error("{0}")]
    Startup(String),
}

/// Shared state of the node.
pub struct Node {
    config: Config,
    info: NodeInfo,
    catalog: RwLock<Arc<Catalog>>,
    /// Serialises DDL so catalog updates and their persistence happen in order.
    ddl_lock: Mutex<()>,
    storage: Storage,
    events: broadcast::Sender<Event>,
    prepared: PreparedCache,
    /// Every read and write of table data goes through these.
    shards: LocalShards,
    /// Provisioned throughput: the budgets of the physical partitions.
    budgets: crate::throughput::Budgets,
    /// The Prometheus series.
    metrics: crate::metrics::Metrics,
    /// The open client connections.
    clients: crate::client_registry::ClientRegistry,
    /// Traced requests (`system_traces`).
    traces: crate::query_trace::Traces,
    auth: crate::auth::Auth,
    tls: Option<tokio_rustls::TlsAcceptor>,
    /// Node-wide request slots (`max_concurrent_requests`).
    request_slots: Arc<tokio::sync::Semaphore>,
    /// Reads handed to the read threads since the node started.
    reads_handed_over: AtomicU64,
    /// The cluster, once it has started (a node run in-process by tests has none).
    cluster: std::sync::OnceLock<Arc<dyn ClusterHooks>>,
    /// True while the cluster has other members: only then does a request look at it (one
    /// load on the single node's path).
    has_peers: std::sync::atomic::AtomicBool,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Reads the node's host id from `dir/host_id`, creating it on first start.
fn host_id(dir: &Path) -> std::io::Result<Uuid> {
    let path = dir.join("host_id");
    match std::fs::read_to_string(&path) {
        Ok(text) => Uuid::parse_str(text.trim())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let id = Uuid::new_v4();
            let tmp = dir.join("host_id.tmp");
            std::fs::write(&tmp, id.to_string())?;
            std::fs::File::open(&tmp)?.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            Ok(id)
        }
        Err(e) => Err(e),
    }
}

impl Node {
    /// Opens (or creates) the data directory: host id, catalog, storage.
    ///
    /// # Errors
    /// When the directory cannot be created or read, or storage fails to open.
    pub fn open(config: Config) -> Result<Node, NodeError> {
        config.validate().map_err(NodeError::Startup)?;
        let dir = config.data_dir.clone();
        let io = |source| NodeError::DataDir {
            path: dir.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let tls = match (&config.tls_cert_file, &config.tls_key_file) {
            (Some(cert), Some(key)) => Some(
                crate::tls::acceptor(cert, key, config.tls_client_ca_file.as_deref())
                    .map_err(|e| NodeError::Startup(e.to_string()))?,
            ),
            _ => None,
        };
        let auth =
            crate::auth::Auth::open(&config).map_err(|e| NodeError::Startup(e.to_string()))?;
        let host_id = host_id(&dir).map_err(io)?;
        let mut catalog = schema::load_catalog(&dir).map_err(io)?;
        let names: Vec<String> = catalog.keyspaces.keys().cloned().collect();
        for ks in &names {
            catalog.refresh_types(ks);
        }
        system::install(&mut catalog).map_err(NodeError::Startup)?;
        let sync = match config.commitlog_sync {
            CommitlogSync::Periodic => SyncPolicy::Periodic(Duration::from_secs(10)),
            CommitlogSync::Batch => SyncPolicy::Batch,
        };
        // Read once: sizing it reads the machine's memory and cgroup limit.
        let block_cache_bytes = config.block_cache_bytes();
        let item_cache_bytes = config.item_cache_bytes();
        let storage = Storage::open(
            dir.join("storage"),
            StorageOptions {
                sync,
                physical_partition_max_bytes: config.physical_partition_max_bytes,
                logical_partition_max_bytes: config.logical_partition_max_bytes,
                cache_bytes: Some(block_cache_bytes),
                item_cache_bytes,
                partition_cache_max_bytes: config.partition_cache_max_kb.saturating_mul(1 << 10),
                max_journal_bytes: Some(config.max_journal_mb.saturating_mul(1 << 20)),
                worker_threads: Some(config.storage_threads()),
                background_nice: config.background_nice,
                background_idle_policy: config.background_idle_policy,
                min_free_disk_bytes: config.min_free_disk_mb.saturating_mul(1 << 20),
                idle_compaction: (config.idle_compaction_after_ms > 0).then(|| IdleCompaction {
                    after: Duration::from_millis(config.idle_compaction_after_ms),
                    max_bytes: config.idle_compaction_max_mb.saturating_mul(1 << 20),
                }),
                ..StorageOptions::default()
            },
        )?;
        for ks in catalog.keyspaces.values() {
            if schema::is_system_keyspace(&ks.name) {
                continue;
            }
            for t in ks.tables.values() {
                storage.create_table(schema::table_id(t), schema::layout_of(t))?;
            }
        }
        let token = i64::from_be_bytes(
            host_id.as_bytes()[..8]
                .try_into()
                .map_err(|_| NodeError::Startup("host id too short".into()))?,
        );
        let token = if token == i64::MIN { 0 } else { token };
        let rpc_address = if config.listen.ip().is_unspecified() {
            std::net::IpAddr::from([127, 0, 0, 1])
        } else {
            config.listen.ip()
        };
        let info = NodeInfo {
            host_id,
            rpc_address,
            rpc_port: config.listen.port(),
            cluster_name: config.cluster_name.clone(),
            token,
            gossip_generation: (now_ms() / 1000) as i32,
        };
        let tables: usize = catalog
            .keyspaces
            .values()
            .filter(|k| !schema::is_system_keyspace(&k.name))
            .map(|k| k.tables.len())
            .sum();
        info!(
            %host_id,
            data_dir = %dir.display(),
            tables,
            block_cache_mib = block_cache_bytes >> 20,
            item_cache_mib = item_cache_bytes >> 20,
            "node opened"
        );
        let (events, _) = broadcast::channel(1024);
        let request_slots = Arc::new(tokio::sync::Semaphore::new(
            config.max_concurrent_requests.max(1),
        ));
        let budgets = crate::throughput::Budgets::new(
            config.max_ru_per_physical_partition,
            std::time::Duration::from_millis(config.throttle_retry_max_ms),
        );
        budgets.refresh(&catalog);
        let metrics = crate::metrics::Metrics::new()
            .map_err(|e| NodeError::Startup(format!("the metrics: {e}")))?;
        metrics.refresh(&catalog);
        Ok(Node {
            budgets,
            metrics,
            clients: crate::client_registry::ClientRegistry::default(),
            traces: crate::query_trace::Traces::default(),
            reads_handed_over: AtomicU64::new(0),
            cluster: std::sync::OnceLock::new(),
            has_peers: std::sync::atomic::AtomicBool::new(false),
            shards: LocalShards::new(storage.clone()),
            config,
            info,
            catalog: RwLock::new(Arc::new(catalog)),
            ddl_lock: Mutex::new(()),
            storage,
            events,
            prepared: PreparedCache::new(10_000),
            request_slots,
            auth,
            tls,
        })
    }

    /// The node's configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Facts about this node for the system tables.
    pub fn info(&self) -> &NodeInfo {
        &self.info
    }

    /// Reads answered on the read threads (`read_threads`) since the node started.
    pub fn reads_handed_over(&self) -> u64 {
        self.reads_handed_over.load(Ordering::Relaxed)
    }

    /// Counts one read handed to a read thread.
    pub(crate) fn count_read_handed_over(&self) {
        self.reads_handed_over.fetch_add(1, Ordering::Relaxed);
    }

    /// The storage engine, for what is not table data: ring statistics, administration,
    /// shutdown. Table data goes through [`Node::shards`].
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The physical partitions of every table: the executor's one way to table data.
    pub fn shards(&self) -> &dyn Shards {
        &self.shards
    }

    /// The shards a request at `level` goes through, metered for its request units
    /// (`crate::throughput`): the cluster's replicated groups when it has other members, else
    /// this node's store.
    pub fn shards_at(
        &self,
        level: cql::request::Consistency,
    ) -> crate::throughput::MeteredShards<'_> {
        use cql::request::Consistency;
        let inner = match self.cluster.get().filter(|_| self.has_peers()) {
            Some(c) => match c.shards_at(level) {
                Some(shards) => crate::shard::ShardsAt::Owned(shards),
                None => crate::shard::ShardsAt::Borrowed(&self.shards),
            },
            None => crate::shard::ShardsAt::Borrowed(&self.shards),
        };
        // In a cluster, the groups' leaders keep the budgets.
        let enforce = matches!(inner, crate::shard::ShardsAt::Borrowed(_));
        // Reads at SERIAL cost twice as much, and in a cluster every linearizable read does
        // (QUORUM and above: `crate::cluster::ClusterShards`).
        let linearizable = if enforce {
            matches!(level, Consistency::Serial | Consistency::LocalSerial)
        } else {
            !matches!(
                level,
                Consistency::One | Consistency::LocalOne | Consistency::Any
            )
        };
        let read_factor = if linearizable { 2.0 } else { 1.0 };
        crate::throughput::MeteredShards::new(
            inner,
            &self.storage,
            &self.budgets,
            &self.metrics,
            read_factor,
            enforce,
        )
    }

    /// The Prometheus series.
    pub fn metrics(&self) -> &crate::metrics::Metrics {
        &self.metrics
    }

    /// Traced requests (`system_traces`).
    pub fn traces(&self) -> &crate::query_trace::Traces {
        &self.traces
    }

    /// The open client connections.
    pub fn clients(&self) -> &crate::client_registry::ClientRegistry {
        &self.clients
    }

    /// Requests running now (holding one of the node-wide request slots).
    pub fn requests_in_flight(&self) -> usize {
        self.config
            .max_concurrent_requests
            .max(1)
            .saturating_sub(self.request_slots.available_permits())
    }

    /// The budgets of provisioned throughput.
    pub fn budgets(&self) -> &crate::throughput::Budgets {
        &self.budgets
    }

    /// Authentication, roles and permissions.
    pub fn auth(&self) -> &crate::auth::Auth {
        &self.auth
    }

    /// The TLS acceptor, when a certificate is configured.
    pub fn tls_acceptor(&self) -> Option<&tokio_rustls::TlsAcceptor> {
        self.tls.as_ref()
    }

    /// Claims one of the node-wide request slots; `None` when the node is saturated.
    pub fn try_start_request(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.request_slots.clone().try_acquire_owned().ok()
    }

    /// The prepared-statement cache.
    pub fn prepared(&self) -> &PreparedCache {
        &self.prepared
    }

    /// A consistent snapshot of the catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        match self.catalog.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Receives schema events from now on.
    pub fn subscribe_events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Publishes an event to registered connections.
    pub fn publish(&self, event: Event) {
        let _ = self.events.send(event);
    }

    /// Runs `change` on a copy of the catalog under the DDL lock; when it succeeds the copy is
    /// persisted and becomes current, with a new schema version.
    ///
    /// # Errors
    /// Whatever `change` returns, or a ServerError when persisting fails.
    pub fn update_catalog<T>(
        &self,
        change: impl FnOnce(&mut Catalog) -> Result<(T, bool), crate::error::QueryError>,
    ) -> Result<T, crate::error::QueryError> {
        let _guard = self.ddl_lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = (*self.catalog()).clone();
        let (out, changed) = change(&mut next)?;
        if changed {
            next.version = Uuid::new_v4();
            let mut persisted = next.clone();
            persisted
                .keyspaces
                .retain(|name, _| !schema::is_system_keyspace(name));
            schema::save_catalog(&self.config.data_dir, &persisted).map_err(|e| {
                tracing::error!(error = %e, "saving the schema failed");
                crate::error::QueryError::Server("Could not persist the schema change".into())
            })?;
            self.budgets.refresh(&next);
            self.metrics.refresh(&next);
            let mut current = self.catalog.write().unwrap_or_else(|p| p.into_inner());
            *current = Arc::new(next);
        }
        Ok(out)
    }

    /// Installs the cluster's hooks (once, at startup).
    pub fn attach_cluster(&self, hooks: Arc<dyn ClusterHooks>) {
        if self.cluster.set(hooks).is_err() {
            tracing::warn!("the cluster was attached twice; keeping the first");
        }
    }

    /// True while the cluster has members other than this node.
    pub fn has_peers(&self) -> bool {
        self.has_peers.load(Ordering::Relaxed)
    }

    /// Records whether the cluster has members other than this node (the cluster keeps it).
    pub fn set_has_peers(&self, has_peers: bool) {
        self.has_peers.store(has_peers, Ordering::Relaxed);
    }

    /// The cluster, when this node runs in one.
    pub fn cluster(&self) -> Option<&Arc<dyn ClusterHooks>> {
        self.cluster.get()
    }

    /// Installs a catalog replicated by the cluster's schema log (every node, the proposer
    /// included, in log order): the tables it creates or alters reach storage, the tables it
    /// no longer has are dropped, it is persisted and becomes current, and `change` goes to
    /// the prepared cache and the registered connections. The system keyspaces are this
    /// node's own and are kept.
    ///
    /// # Errors
    /// When storage or persisting fails (the entry must then not count as applied).
    pub fn install_catalog(
        &self,
        mut next: Catalog,
        change: Option<&cql::response::SchemaChange>,
    ) -> Result<(), NodeError> {
        let _guard = self.ddl_lock.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.catalog();
        next.keyspaces
            .retain(|name, _| !schema::is_system_keyspace(name));
        // Column types travel as CQL text: user types are resolved against the catalog again.
        let names: Vec<String> = next.keyspaces.keys().cloned().collect();
        for ks in &names {
            next.refresh_types(ks);
        }
        let persisted = next.clone();
        system::install(&mut next).map_err(NodeError::Startup)?;
        let tables = |c: &Catalog| -> std::collections::HashMap<uuid::Uuid, Arc<schema::Table>> {
            c.keyspaces
                .values()
                .filter(|k| !schema::is_system_keyspace(&k.name))
                .flat_map(|k| k.tables.values())
                .map(|t| (t.id, t.clone()))
                .collect()
        };
        let (before, after) = (tables(&current), tables(&next));
        for (id, t) in &after {
            let layout = schema::layout_of(t);
            let same = before
                .get(id)
                .is_some_and(|old| schema::layout_of(old) == layout);
            if !same {
                self.storage.create_table(schema::table_id(t), layout)?;
            }
        }
        for id in before.keys().filter(|id| !after.contains_key(id)) {
            self.storage.drop_table(storage::TableId(id.as_u128()))?;
        }
        schema::save_catalog(&self.config.data_dir, &persisted).map_err(|source| {
            NodeError::DataDir {
                path: self.config.data_dir.clone(),
                source,
            }
        })?;
        self.budgets.refresh(&next);
        self.metrics.refresh(&next);
        *self.catalog.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        if let Some(change) = change {
            self.prepared.invalidate(change);
            self.publish(Event::SchemaChange(change.clone()));
        }
        Ok(())
    }

    /// Current time in milliseconds since the epoch.
    pub fn now_ms(&self) -> i64 {
        now_ms()
    }

    /// Flushes storage for shutdown.
    ///
    /// # Errors
    /// When storage cannot persist.
    pub fn shutdown(&self) -> Result<(), NodeError> {
        self.storage.persist()?;
        Ok(())
    }
}
