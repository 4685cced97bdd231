//! The `ringdb` command line: serve CQL (the default) or run an admin subcommand.

use anyhow::Context;
use clap::{Parser, Subcommand};
use ringdb::config::Config;
use std::net::SocketAddr;
use std::path::PathBuf;

/// jemalloc: the request path allocates many small buffers on one thread and frees them on
/// another (the response writer), where glibc's allocator fell to its slow paths.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// A Cassandra-compatible database server.
#[derive(Debug, Parser)]
#[command(name = "ringdb", version, about)]
struct Cli {
    /// Address to listen on (default 127.0.0.1:9042).
    #[arg(long, global = true)]
    listen: Option<SocketAddr>,
    /// Data directory (default ./data).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// TOML file with settings (every setting a top-level key).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Address of the Prometheus metrics endpoint (default 127.0.0.1:9180; "" for none).
    #[arg(long, global = true)]
    metrics_listen: Option<String>,
    /// Log level or filter (error, warn, info, debug, trace).
    #[arg(long, global = true)]
    log_level: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve CQL (what ringdb does with no subcommand).
    Serve,
    /// Print the effective configuration.
    ShowConfig,
    /// Print every table's physical partitions (token ranges, sizes, states): from a running
    /// server with `--server ADDR`, otherwise from the data directory of a stopped server.
    Partitions {
        /// Address of a running ringdb.
        #[arg(long)]
        server: Option<SocketAddr>,
    },
    /// List the cluster's nodes as a running server sees them: up or down, addresses,
    /// physical partitions led and held, bytes.
    Status {
        /// Address of a running ringdb (its CQL port).
        #[arg(long, default_value = "127.0.0.1:9042")]
        server: SocketAddr,
    },
    /// Print each table's physical partitions, bytes, logical partitions and local latencies,
    /// as `nodetool tablestats`, from a running server.
    Tablestats {
        /// `KEYSPACE` or `KEYSPACE.TABLE` (default: every table).
        table: Option<String>,
        /// Address of a running ringdb (its CQL port).
        #[arg(long, default_value = "127.0.0.1:9042")]
        server: SocketAddr,
    },
    /// Write every table's (or the named ones') memtables to disk on a running node.
    Flush {
        /// `KEYSPACE` or `KEYSPACE.TABLE` (default: every table).
        table: Option<String>,
        /// The node's metrics address.
        #[arg(long, default_value = "127.0.0.1:9180")]
        metrics: SocketAddr,
    },
    /// Compact every table's (or the named ones') physical partitions on a running node.
    Compact {
        /// `KEYSPACE` or `KEYSPACE.TABLE` (default: every table).
        table: Option<String>,
        /// The node's metrics address.
        #[arg(long, default_value = "127.0.0.1:9180")]
        metrics: SocketAddr,
    },
    /// Snapshot a running node's data directory into `snapshots/NAME` (flushed, hard-linked).
    Snapshot {
        /// The snapshot's name.
        name: String,
        /// The node's metrics address.
        #[arg(long, default_value = "127.0.0.1:9180")]
        metrics: SocketAddr,
    },
    /// Remove the rows a running node stores of token ranges it holds no replica of (kept
    /// after their replicas moved away, see `clear_moved_replicas`), as `nodetool cleanup`.
    Cleanup {
        /// The node's metrics address.
        #[arg(long, default_value = "127.0.0.1:9180")]
        metrics: SocketAddr,
    },
    /// Put the snapshot NAME back into the data directory (`--data-dir`) of a stopped node.
    Restore {
        /// The snapshot's name.
        name: String,
    },
    /// Take a live node out of the cluster: its physical partitions' replicas move to the
    /// other nodes, then it leaves. Shows the progress; returns once it has left.
    Decommission {
        /// The CQL address of the node to decommission.
        #[arg(long, default_value = "127.0.0.1:9042")]
        server: SocketAddr,
    },
    /// Remove a dead node from the cluster: its replicas are made again on the live nodes
    /// from the other replicas. Shows the progress; returns once it is removed.
    Removenode {
        /// The dead node's host id (`ringdb status` lists them).
        host_id: uuid::Uuid,
        /// The CQL address of any live node.
        #[arg(long, default_value = "127.0.0.1:9042")]
        server: SocketAddr,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let mut config = match &cli.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    if let Some(listen) = cli.listen {
        config.listen = listen;
    }
    if let Some(metrics) = cli.metrics_listen {
        config.metrics_listen = metrics;
    }
    if let Some(dir) = cli.data_dir {
        config.data_dir = dir;
    }
    if let Some(level) = cli.log_level {
        config.log_level = level;
    }
    // A bare level keeps the storage engine's own chatter at warn, and the Raft library's
    // and the RPC crate's per-group retries quiet (a peer down is one line from liveness, not
    // one per group and retry); a level with directives is taken as given.
    let directives = if config.log_level.contains(['=', ',']) {
        config.log_level.clone()
    } else {
        format!(
            "{},lsm_tree=warn,fjall=warn,openraft=error,openraft::replication=off,tarpc=off",
            config.log_level
        )
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&directives)
        .with_context(|| format!("invalid --log-level {:?}", config.log_level))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();

    match cli.command.unwrap_or(Command::Serve) {
        Command::ShowConfig => {
            println!("{config:#?}");
            Ok(())
        }
        Command::Partitions { server: Some(addr) } => {
            ringdb::admin::partitions_from_server(addr)?;
            Ok(())
        }
        Command::Status { server } => {
            ringdb::admin::status_from_server(server)?;
            Ok(())
        }
        Command::Flush { table, metrics } => {
            let param = table.as_deref().map(|t| ("table", t));
            ringdb::admin_operations::run(metrics, "flush", param)?;
            Ok(())
        }
        Command::Compact { table, metrics } => {
            let param = table.as_deref().map(|t| ("table", t));
            ringdb::admin_operations::run(metrics, "compact", param)?;
            Ok(())
        }
        Command::Snapshot { name, metrics } => {
            ringdb::admin_operations::run(metrics, "snapshot", Some(("name", &name)))?;
            Ok(())
        }
        Command::Cleanup { metrics } => {
            ringdb::admin_operations::run(metrics, "cleanup", None)?;
            Ok(())
        }
        Command::Restore { name } => {
            let files = ringdb::snapshots::restore(&config.data_dir, &name)?;
            println!(
                "restored snapshot {name} into {}: {files} files",
                config.data_dir.display()
            );
            Ok(())
        }
        Command::Tablestats { table, server } => {
            ringdb::admin_tablestats::tablestats(server, table.as_deref())?;
            Ok(())
        }
        Command::Decommission { server } => {
            ringdb::admin_leave::decommission(server)?;
            Ok(())
        }
        Command::Removenode { host_id, server } => {
            ringdb::admin_leave::removenode(server, host_id)?;
            Ok(())
        }
        Command::Partitions { server: None } => {
            ringdb::admin::partitions_from_dir(config)?;
            Ok(())
        }
        Command::Serve => {
            config.validate().map_err(anyhow::Error::msg)?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(config.worker_threads())
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            runtime.block_on(ringdb::server::serve(config))?;
            Ok(())
        }
    }
}
