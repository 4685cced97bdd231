//! Server settings: defaults, the `--config` TOML file (every setting a top-level key) and CLI overrides.

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The default CQL native-protocol port.
pub const DEFAULT_PORT: u16 = 9042;

/// When an acknowledged write is made durable (Cassandra's `commitlog_sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CommitlogSync {
    /// Written to the OS before the ack; fsynced in the background (Cassandra's default).
    #[default]
    Periodic,
    /// Fsynced before the ack, grouped across concurrent writers.
    Batch,
}

/// Every setting of a ringdb node. Each key of the TOML file has the same name.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address the CQL listener binds.
    pub listen: SocketAddr,
    /// Directory holding all data (created when missing).
    pub data_dir: PathBuf,
    /// Log filter (`info`, `debug`, `ringdb=trace`, ...).
    pub log_level: String,
    /// Cluster name reported in `system.local`.
    pub cluster_name: String,
    /// Largest accepted frame body, in bytes; a larger frame gets a ProtocolError.
    pub max_frame_bytes: u32,
    /// Maximum simultaneous client connections.
    pub max_connections: usize,
    /// Maximum requests in flight on one connection (further frames wait to be read).
    pub max_requests_per_connection: usize,
    /// Seconds that in-flight requests get to finish on shutdown.
    pub shutdown_grace_seconds: u64,
    /// Durability policy for acknowledged writes.
    pub commitlog_sync: CommitlogSync,
    /// A physical partition larger than this splits in two.
    pub physical_partition_max_bytes: u64,
    /// A write that would take one logical partition past this size fails.
    pub logical_partition_max_bytes: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            data_dir: PathBuf::from("data"),
            log_level: "info".to_string(),
            cluster_name: "Test Cluster".to_string(),
            max_frame_bytes: 256 * 1024 * 1024,
            max_connections: 4096,
            max_requests_per_connection: 1024,
            shutdown_grace_seconds: 5,
            commitlog_sync: CommitlogSync::Periodic,
            physical_partition_max_bytes: 30 * 1024 * 1024 * 1024,
            logical_partition_max_bytes: 20 * 1024 * 1024 * 1024,
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
    fn unknown_keys_are_rejected() {
        assert!(toml::from_str::<Config>("no_such_setting = 1").is_err());
    }
}
