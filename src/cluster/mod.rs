//! The cluster: nodes that find each other through seeds, talk over the internode transport,
//! keep cluster metadata in one Raft group and replicate each physical partition in its own.
//! The design is in `docs/cluster.md`.
//!
//! [`Cluster::start`] opens the Raft database, starts the metadata group, serves peers
//! ([`handler`]), creates or joins the cluster ([`join`]), watches peers ([`liveness`]) and
//! installs itself on the node as its [`crate::cluster_hooks::ClusterHooks`] ([`hooks`]).

pub mod balancer;
pub mod cas;
pub mod cleanup;
pub mod codec;
pub mod data_machine;
pub mod data_snapshot;
pub mod fences;
pub mod group_sizes;
pub mod groups;
pub mod handler;
pub mod hooks;
pub mod join;
pub mod leader_budgets;
mod leader_watch;
pub mod leaders;
pub mod liveness;
pub mod log_store;
pub mod meta_machine;
pub mod meta_state;
pub mod moves;
pub mod network;
pub mod propose;
pub mod quiet;
pub mod raft_types;
pub mod replica_read;
pub mod routing;
pub mod rpc;
pub mod shards;
pub mod snapshot_file;
pub mod splits;
pub mod stream_pace;
pub mod transfers;
pub mod transport;

use crate::node::Node;
use liveness::Liveness;
use log_store::RaftDb;
use meta_machine::{MetaMachine, MetaShared};
use raft_types::{Member, NodeId, Raft, META_GROUP};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::info;
use transport::{Identity, Transport};

/// Why the cluster could not start.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The Raft database or state could not be opened.
    #[error("raft storage: {0}")]
    Storage(String),
    /// openraft refused to start.
    #[error("raft: {0}")]
    Raft(String),
    /// The internode certificates could not be loaded.
    #[error("internode TLS: {0}")]
    Tls(String),
}

/// This node's part in the cluster.
pub struct Cluster {
    me: Member,
    node: Arc<Node>,
    transport: Transport,
    raft_config: Arc<openraft::Config>,
    /// The data groups' timing: as `raft_config`, but elections are started by
    /// [`quiet::watch`] from liveness, not by each group's own timer.
    data_raft_config: Arc<openraft::Config>,
    db: RaftDb,
    meta: Raft,
    meta_shared: Arc<MetaShared>,
    liveness: Liveness,
    runtime: tokio::runtime::Handle,
    /// The data groups this node runs.
    groups: groups::Groups,
    /// Where this node's groups were cut by splits.
    fences: Arc<fences::Fences>,
    /// The snapshot transfers of replica moves.
    transfers: Arc<transfers::Transfers>,
    /// The pace of those transfers.
    stream_pace: Arc<stream_pace::StreamPace>,
    /// Where Raft snapshots are written (`DATA_DIR/raft/snapshots`).
    snapshot_files: data_snapshot::SnapshotFiles,
    /// More than one member (kept by [`groups::reconcile`]): table data goes through the
    /// groups, else straight to the local store.
    has_peers: std::sync::atomic::AtomicBool,
    /// Set once a [`groups::reconcile`] has seen this node among the members: until then it
    /// neither knows the tables nor whether it has peers, and serves no CQL.
    member: tokio::sync::watch::Sender<bool>,
}

/// A node's id: the first 8 bytes of its host id.
pub fn node_id(host_id: uuid::Uuid) -> NodeId {
    let mut b = [0u8; 8];
    b.copy_from_slice(&host_id.as_bytes()[..8]);
    u64::from_be_bytes(b)
}

/// The Raft timing every group uses: heartbeats every 250 ms, elections after 1-2 s of
/// silence (failover well within 5 s); the metadata group keeps its whole log.
fn raft_config(cluster_name: &str) -> Result<openraft::Config, ClusterError> {
    openraft::Config {
        cluster_name: cluster_name.to_string(),
        heartbeat_interval: 250,
        election_timeout_min: 1000,
        election_timeout_max: 2000,
        snapshot_policy: openraft::SnapshotPolicy::Never,
        max_in_snapshot_log_to_keep: u64::MAX,
        ..Default::default()
    }
    .validate()
    .map_err(|e| ClusterError::Raft(e.to_string()))
}

impl Cluster {
    /// Starts this node's part: the metadata group, the internode server on `listener`, and
    /// creating or joining the cluster (in the background when joining). `native` is the
    /// address clients reach this node's CQL listener at.
    ///
    /// # Errors
    /// When the Raft database or the metadata group cannot be opened.
    pub async fn start(
        node: Arc<Node>,
        listener: TcpListener,
        native: SocketAddr,
        shutdown: CancellationToken,
    ) -> Result<Arc<Cluster>, ClusterError> {
        let config = node.config().clone();
        let internode = listener
            .local_addr()
            .map_err(|e| ClusterError::Storage(e.to_string()))?;
        let me = Member {
            id: node_id(node.info().host_id),
            host_id: node.info().host_id,
            internode,
            native,
        };
        let fsync = config.commitlog_sync == crate::config::CommitlogSync::Batch;
        let db = RaftDb::open(&config.data_dir.join("raft"), fsync)
            .map_err(|e| ClusterError::Storage(e.to_string()))?;
        let identity = Identity {
            cluster_name: config.cluster_name.clone(),
            node_id: me.id,
        };
        let (client_tls, server_tls) = match (
            &config.internode_tls_cert_file,
            &config.internode_tls_key_file,
            &config.internode_tls_ca_file,
        ) {
            (Some(cert), Some(key), Some(ca)) => (
                Some(
                    transport::ClientTls::from_pem_files(ca, Some((cert, key)))
                        .map_err(|e| ClusterError::Tls(e.to_string()))?,
                ),
                Some(
                    transport::ServerTls::from_pem_files(cert, key, Some(ca))
                        .map_err(|e| ClusterError::Tls(e.to_string()))?,
                ),
            ),
            _ => (None, None),
        };
        let transport = Transport::new(identity.clone(), client_tls);
        let raft_config = Arc::new(raft_config(&config.cluster_name)?);
        // A data group's snapshot is only a recorded position (the data is the store's), so
        // its log is purged as it grows; a replica too far behind gets the range's data.
        let data_raft_config = Arc::new(openraft::Config {
            enable_elect: false,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(20_000),
            max_in_snapshot_log_to_keep: 5_000,
            // The last chunk of a range's data is answered once the whole range is imported
            // (at `stream_throughput_mib_per_s`): 5 minutes, a move's deadline, is 7 GB at
            // the default pace. A dead receiver is seen by liveness and its move rolled back.
            install_snapshot_timeout: 300_000,
            // Data groups never elect on a timer (`quiet`): the timeout only sets the lease
            // followers grant their leader, which a leadership hand-over waits out.
            election_timeout_min: 300,
            election_timeout_max: 400,
            ..(*raft_config).clone()
        });
        let snapshot_files =
            data_snapshot::SnapshotFiles::new(config.data_dir.join("raft").join("snapshots"))
                .map_err(|e| ClusterError::Storage(e.to_string()))?;
        let (machine, meta_shared) =
            MetaMachine::open(node.clone(), db.clone(), snapshot_files.clone())
                .map_err(|e| ClusterError::Storage(e.to_string()))?;
        let meta = Raft::new(
            me.id,
            raft_config.clone(),
            network::GroupNetwork::new(META_GROUP, transport.clone()),
            db.group(META_GROUP),
            machine,
        )
        .await
        .map_err(|e| ClusterError::Raft(e.to_string()))?;
        leader_watch::watch(
            &meta,
            META_GROUP,
            leader_watch::counter(node.metrics(), META_GROUP),
        );
        let cluster = Arc::new(Cluster {
            me: me.clone(),
            node: node.clone(),
            transport,
            raft_config,
            data_raft_config,
            db,
            meta,
            meta_shared,
            liveness: Liveness::default(),
            runtime: tokio::runtime::Handle::current(),
            groups: groups::Groups::default(),
            fences: Arc::default(),
            transfers: Arc::default(),
            stream_pace: Arc::new(stream_pace::StreamPace::new(
                config.stream_throughput_mib_per_s,
            )),
            snapshot_files,
            has_peers: std::sync::atomic::AtomicBool::new(false),
            member: tokio::sync::watch::Sender::new(false),
        });
        let handler = Arc::new(handler::ClusterHandler::new(&cluster));
        let tls = server_tls.is_some();
        tokio::spawn(transport::serve(
            listener,
            identity,
            handler,
            server_tls,
            shutdown.clone(),
        ));
        info!(node = me.id, %internode, tls, seeds = ?config.seeds, "internode listener started");
        join::start_or_join(&cluster, &config.seeds).await;
        tokio::spawn(liveness::watch(cluster.clone(), shutdown.clone()));
        tokio::spawn(groups::keep(cluster.clone(), shutdown.clone()));
        tokio::spawn(splits::watch(cluster.clone(), shutdown.clone()));
        tokio::spawn(quiet::watch(cluster.clone(), shutdown.clone()));
        tokio::spawn(moves::drive(cluster.clone(), shutdown.clone()));
        tokio::spawn(balancer::watch(cluster.clone(), shutdown.clone()));
        node.attach_cluster(Arc::new(hooks::NodeHooks::new(&cluster)));
        cluster.wait_until_member(&shutdown).await;
        node.auth()
            .attach_log(Arc::new(hooks::AuthHooks::new(&cluster)));
        Ok(cluster)
    }

    /// This node as a member.
    pub fn me(&self) -> &Member {
        &self.me
    }

    /// The metadata group's Raft handle.
    pub fn meta(&self) -> &Raft {
        &self.meta
    }

    /// The metadata group's voters.
    pub fn meta_voters(&self) -> Vec<raft_types::NodeId> {
        self.meta
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .voter_ids()
            .collect()
    }

    /// The metadata state (members, groups).
    pub fn meta_state(&self) -> &MetaShared {
        &self.meta_shared
    }

    /// The metadata state, shared (for closures that outlive a borrow).
    pub fn meta_state_arc(&self) -> Arc<MetaShared> {
        self.meta_shared.clone()
    }

    /// The node this cluster serves.
    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }

    /// The internode transport.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// What liveness knows of the peers.
    pub fn liveness(&self) -> &Liveness {
        &self.liveness
    }

    /// The runtime the cluster's tasks run on (blocking callers enter it).
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }

    /// The Raft handle of `group` when this node holds a replica of it.
    pub fn group(&self, group: raft_types::GroupId) -> Option<Raft> {
        if group == META_GROUP {
            return Some(self.meta.clone());
        }
        self.groups.get(group)
    }

    /// Where this node's groups were cut by splits.
    pub fn fences(&self) -> &Arc<fences::Fences> {
        &self.fences
    }

    /// The pace of this node's snapshot transfers.
    pub fn stream_pace(&self) -> &Arc<stream_pace::StreamPace> {
        &self.stream_pace
    }

    /// Where this node's range snapshots are written.
    pub fn snapshot_files(&self) -> &data_snapshot::SnapshotFiles {
        &self.snapshot_files
    }

    /// The snapshot transfers of replica moves.
    pub fn transfers(&self) -> &Arc<transfers::Transfers> {
        &self.transfers
    }

    /// Waits until this node is a member whose groups were reconciled once (a joining node:
    /// until it is admitted and has the metadata up to its admission), or `shutdown`. CQL is
    /// served after: a node that answered before would be a cluster of one, with no tables
    /// or with tables it would write to its own store only (acknowledged writes that a
    /// replica snapshot would later replace).
    async fn wait_until_member(&self, shutdown: &CancellationToken) {
        let mut member = self.member.subscribe();
        let started = std::time::Instant::now();
        loop {
            if *member.borrow_and_update() {
                if started.elapsed() > Duration::from_millis(100) {
                    info!(node = self.me.id, waited = ?started.elapsed(), "a member of the cluster: serving CQL");
                }
                return;
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                changed = member.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(Duration::from_secs(5)) => {
                    info!(node = self.me.id, waited = ?started.elapsed(), "not yet a member of the cluster: CQL waits");
                }
            }
        }
    }

    /// True when the cluster has more than one member.
    pub fn has_peers(&self) -> bool {
        self.has_peers.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The metadata group's Raft timing.
    pub fn raft_config(&self) -> &Arc<openraft::Config> {
        &self.raft_config
    }

    /// The data groups' Raft timing (no elections by timer: see [`quiet`]).
    pub fn data_raft_config(&self) -> &Arc<openraft::Config> {
        &self.data_raft_config
    }

    /// The Raft database.
    pub fn raft_db(&self) -> &RaftDb {
        &self.db
    }

    /// What this node holds and leads, and its bytes of table data.
    pub fn local_stats(&self) -> rpc::NodeStats {
        let me = self.me.id;
        let held = self.meta_shared.with(|s| {
            s.groups
                .values()
                .filter(|g| g.replicas.contains(&me))
                .count()
        });
        let led = leaders::led_here(self).len();
        let catalog = self.node.catalog();
        let bytes: u64 = catalog
            .keyspaces
            .values()
            .filter(|k| !crate::schema::is_system_keyspace(&k.name))
            .flat_map(|k| k.tables.values())
            .filter_map(|t| {
                self.node
                    .storage()
                    .physical_partitions(crate::schema::table_id(t))
                    .ok()
            })
            .flatten()
            .map(|p| p.bytes)
            .sum();
        rpc::NodeStats {
            bytes,
            groups_held: u32::try_from(held).unwrap_or(u32::MAX),
            groups_led: u32::try_from(led).unwrap_or(u32::MAX),
        }
    }

    /// Stops every group (shutdown).
    pub async fn stop(&self) {
        for (_, raft) in self.groups.all() {
            let _ = raft.shutdown().await;
        }
        if let Err(e) = self.meta.shutdown().await {
            tracing::warn!(error = %e, "stopping the metadata group");
        }
        if let Err(e) = self.db.sync() {
            tracing::warn!(error = %e, "syncing the raft log");
        }
    }
}
