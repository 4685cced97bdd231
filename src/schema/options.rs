//! Keyspace replication and table options: validation, Cassandra's defaults and normalisation.

use super::throughput::Throughput;
use crate::error::QueryError;
use cql::ast::OptionValue;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Cassandra's maximum TTL: 20 years.
pub const MAX_TTL: i64 = 630_720_000;

/// The one datacenter of a ringdb node.
pub const DATA_CENTER: &str = "datacenter1";

const STRATEGY_PREFIX: &str = "org.apache.cassandra.locator.";
const COMPACTION_PREFIX: &str = "org.apache.cassandra.db.compaction.";
const COMPRESSION_PREFIX: &str = "org.apache.cassandra.io.compress.";

/// The text of a scalar option value (string, number, boolean or identifier).
pub(crate) fn option_text(v: &OptionValue) -> Option<String> {
    match v {
        OptionValue::String(s) | OptionValue::Constant(s) | OptionValue::Identifier(s) => {
            Some(s.clone())
        }
        OptionValue::Map(_) => None,
    }
}

/// A map option as text keys and values.
fn option_map(name: &str, v: &OptionValue) -> Result<BTreeMap<String, String>, QueryError> {
    let OptionValue::Map(entries) = v else {
        return Err(QueryError::Syntax(format!(
            "Invalid value for property '{name}'. It should be a map."
        )));
    };
    let mut out = BTreeMap::new();
    for (k, v) in entries {
        let (Some(k), Some(v)) = (option_text(k), option_text(v)) else {
            return Err(QueryError::Syntax(format!(
                "Invalid value for property '{name}': nested maps are not allowed"
            )));
        };
        out.insert(k, v);
    }
    Ok(out)
}

/// Replication and durability of a keyspace, as stored in `system_schema.keyspaces`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyspaceParams {
    /// Replication map with the fully-qualified strategy class under `class`.
    pub replication: BTreeMap<String, String>,
    /// `durable_writes`.
    pub durable_writes: bool,
    /// Throughput shared by the keyspace's tables that have none of their own.
    #[serde(default)]
    pub throughput: Option<Throughput>,
}

impl KeyspaceParams {
    /// Builds the params of keyspace `keyspace` from `WITH` options; `previous` supplies
    /// unchanged values on ALTER.
    ///
    /// # Errors
    /// SyntaxException for unknown properties, ConfigurationException for a bad replication.
    pub fn from_options(
        keyspace: &str,
        options: &[(String, OptionValue)],
        previous: Option<&KeyspaceParams>,
    ) -> Result<KeyspaceParams, QueryError> {
        check_unique(options)?;
        let mut replication = previous.map(|p| p.replication.clone());
        let mut durable_writes = previous.map(|p| p.durable_writes).unwrap_or(true);
        let throughput =
            Throughput::in_properties(options)?.or(previous.and_then(|p| p.throughput));
        for (name, value) in options {
            match name.to_ascii_lowercase().as_str() {
                name if Throughput::is_option(name) => {}
                "replication" => {
                    replication = Some(normalize_replication(
                        keyspace,
                        option_map(name, value)?,
                        previous.map(|p| &p.replication),
                    )?)
                }
                "durable_writes" => {
                    durable_writes = parse_bool(name, value)?;
                }
                other => {
                    return Err(QueryError::Syntax(format!("Unknown property '{other}'")));
                }
            }
        }
        let replication = replication.ok_or_else(|| {
            QueryError::Config("Missing mandatory option 'replication'".to_string())
        })?;
        Ok(KeyspaceParams {
            replication,
            durable_writes,
            throughput,
        })
    }

    /// Params of a node-local system keyspace.
    pub fn local() -> KeyspaceParams {
        KeyspaceParams {
            replication: BTreeMap::from([(
                "class".to_string(),
                format!("{STRATEGY_PREFIX}LocalStrategy"),
            )]),
            durable_writes: true,
            throughput: None,
        }
    }

    /// Params of a SimpleStrategy keyspace with factor `rf`.
    pub fn simple(rf: u32) -> KeyspaceParams {
        KeyspaceParams {
            replication: BTreeMap::from([
                (
                    "class".to_string(),
                    format!("{STRATEGY_PREFIX}SimpleStrategy"),
                ),
                ("replication_factor".to_string(), rf.to_string()),
            ]),
            durable_writes: true,
            throughput: None,
        }
    }
}

/// A keyspace's replicas as Cassandra's consistency levels count them (borrowed from its
/// [`KeyspaceParams`], nothing copied).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replicas<'a> {
    /// LocalStrategy (the node-local system keyspaces): the one node.
    Local,
    /// SimpleStrategy with this `replication_factor`, every replica in one datacenter.
    Simple(u32),
    /// NetworkTopologyStrategy: the replication map, a factor per datacenter (and `class`).
    PerDc(&'a BTreeMap<String, String>),
}

impl<'a> Replicas<'a> {
    /// Every replica of a partition, over all datacenters.
    pub fn total(&self) -> u32 {
        match self {
            Replicas::Local => 1,
            Replicas::Simple(rf) => *rf,
            Replicas::PerDc(_) => self
                .per_dc()
                .fold(0u32, |sum, (_, rf)| sum.saturating_add(rf)),
        }
    }

    /// The replicas in datacenter `dc` (SimpleStrategy's and LocalStrategy's are all in
    /// this node's one datacenter).
    pub fn in_dc(&self, dc: &str) -> u32 {
        match self {
            Replicas::Local | Replicas::Simple(_) => self.total(),
            Replicas::PerDc(_) => self
                .per_dc()
                .find(|(name, _)| *name == dc)
                .map_or(0, |(_, rf)| rf),
        }
    }

    /// NetworkTopologyStrategy's datacenters and their factors, by name (none for the
    /// other strategies).
    pub fn per_dc(&self) -> impl Iterator<Item = (&'a str, u32)> {
        let map = match self {
            Replicas::PerDc(map) => Some(*map),
            _ => None,
        };
        map.into_iter()
            .flat_map(|m| m.iter())
            .filter(|(k, _)| k.as_str() != "class")
            .map(|(k, v)| (k.as_str(), factor(v)))
    }
}

/// A stored replication factor (validated as a non-negative integer when it was set).
fn factor(v: &str) -> u32 {
    v.trim()
        .parse::<u64>()
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

impl KeyspaceParams {
    /// The keyspace's replicas, as consistency levels count them.
    pub fn replicas(&self) -> Replicas<'_> {
        let class = self.replication.get("class").map_or("", String::as_str);
        let short = class.strip_prefix(STRATEGY_PREFIX).unwrap_or(class);
        match short {
            "SimpleStrategy" => Replicas::Simple(
                self.replication
                    .get("replication_factor")
                    .map_or(0, |rf| factor(rf)),
            ),
            "NetworkTopologyStrategy" => Replicas::PerDc(&self.replication),
            _ => Replicas::Local,
        }
    }
}

fn parse_bool(name: &str, v: &OptionValue) -> Result<bool, QueryError> {
    match option_text(v).map(|s| s.to_ascii_lowercase()).as_deref() {
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        _ => Err(QueryError::Syntax(format!(
            "Invalid boolean value for property '{name}'"
        ))),
    }
}

/// Checks a `replication` map and gives it the form Cassandra stores (`class` fully
/// qualified, NetworkTopologyStrategy's `replication_factor` expanded), following Cassandra
/// 4.1's `prepareOptions`, `validateExpectedOptions` and `validateOptions`; `previous` is the
/// keyspace's replication before an ALTER.
fn normalize_replication(
    keyspace: &str,
    mut map: BTreeMap<String, String>,
    previous: Option<&BTreeMap<String, String>>,
) -> Result<BTreeMap<String, String>, QueryError> {
    let class = map
        .remove("class")
        .ok_or_else(|| QueryError::Config("Missing replication strategy class".to_string()))?;
    let short = class.strip_prefix(STRATEGY_PREFIX).unwrap_or(&class);
    match short {
        "SimpleStrategy" => {
            let rf = map.get("replication_factor").ok_or_else(|| {
                QueryError::Config(
                    "SimpleStrategy requires a replication_factor strategy option.".to_string(),
                )
            })?;
            check_replication_factor(rf)?;
            if let Some(other) = map.keys().find(|k| *k != "replication_factor") {
                return Err(QueryError::Config(format!(
                    "Unrecognized strategy option {{{other}}} passed to SimpleStrategy for keyspace {keyspace}"
                )));
            }
        }
        "NetworkTopologyStrategy" => {
            let mut previous = previous
                .into_iter()
                .flatten()
                .filter(|(k, _)| k.as_str() != "class");
            let mut replication = map.remove("replication_factor");
            if replication.is_none() && map.is_empty() {
                // A direct ALTER from SimpleStrategy keeps its factor.
                replication = previous
                    .find(|(k, _)| k.as_str() == "replication_factor")
                    .map(|(_, rf)| rf.clone());
            } else if replication.is_some() {
                // Expanding on ALTER keeps the factors the datacenters already had.
                for (dc, rf) in previous.filter(|(k, _)| k.as_str() != "replication_factor") {
                    map.entry(dc.clone()).or_insert_with(|| rf.clone());
                }
            }
            if let Some(rf) = replication {
                // Cassandra expands a default replication_factor to every known datacenter.
                check_replication_factor(&rf)?;
                map.entry(DATA_CENTER.to_string()).or_insert(rf);
            }
            // A datacenter with factor 0 is dropped from the map.
            map.retain(|_, rf| rf != "0");
            if map.is_empty() {
                return Err(QueryError::Config(
                    "Configuration for at least one datacenter must be present".to_string(),
                ));
            }
            // The one datacenter this node knows is the only one accepted.
            if let Some(dc) = map.keys().find(|dc| *dc != DATA_CENTER) {
                return Err(QueryError::Config(format!(
                    "Unrecognized strategy option {{{dc}}} passed to NetworkTopologyStrategy for keyspace {keyspace}"
                )));
            }
            for rf in map.values() {
                check_replication_factor(rf)?;
            }
        }
        "LocalStrategy" | "EverywhereStrategy" => {
            return Err(QueryError::Config(format!(
                "Unable to use given strategy class: {class} is reserved for internal use."
            )))
        }
        _ => {
            return Err(QueryError::Config(format!(
                "Unable to find replication strategy class '{}{short}'",
                if short.contains('.') {
                    ""
                } else {
                    STRATEGY_PREFIX
                }
            )))
        }
    }
    map.insert("class".to_string(), format!("{STRATEGY_PREFIX}{short}"));
    Ok(map)
}

fn check_replication_factor(rf: &str) -> Result<(), QueryError> {
    match rf.trim().parse::<i64>() {
        Ok(n) if n >= 0 => Ok(()),
        _ => Err(QueryError::Config(format!(
            "Replication factor must be non-negative integer; found {rf}"
        ))),
    }
}

/// Table options, with Cassandra 4.1's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TableParams {
    /// `bloom_filter_fp_chance`.
    pub bloom_filter_fp_chance: f64,
    /// `caching`.
    pub caching: BTreeMap<String, String>,
    /// `comment`.
    pub comment: String,
    /// `compaction` (class fully qualified).
    pub compaction: BTreeMap<String, String>,
    /// `compression` (class fully qualified).
    pub compression: BTreeMap<String, String>,
    /// `crc_check_chance`.
    pub crc_check_chance: f64,
    /// `default_time_to_live` in seconds (0 = none).
    pub default_time_to_live: i32,
    /// `extensions`.
    pub extensions: BTreeMap<String, Vec<u8>>,
    /// `gc_grace_seconds`.
    pub gc_grace_seconds: i32,
    /// `max_index_interval`.
    pub max_index_interval: i32,
    /// `memtable_flush_period_in_ms`.
    pub memtable_flush_period_in_ms: i32,
    /// `min_index_interval`.
    pub min_index_interval: i32,
    /// `read_repair`.
    pub read_repair: String,
    /// `speculative_retry`.
    pub speculative_retry: String,
    /// `additional_write_policy`.
    pub additional_write_policy: String,
    /// `cdc`.
    pub cdc: bool,
    /// Provisioned throughput (Cosmos DB's options); `None`: the keyspace's, or unlimited.
    pub throughput: Option<Throughput>,
}

impl Default for TableParams {
    fn default() -> Self {
        TableParams {
            bloom_filter_fp_chance: 0.01,
            caching: BTreeMap::from([
                ("keys".into(), "ALL".into()),
                ("rows_per_partition".into(), "NONE".into()),
            ]),
            comment: String::new(),
            compaction: BTreeMap::from([
                (
                    "class".into(),
                    format!("{COMPACTION_PREFIX}SizeTieredCompactionStrategy"),
                ),
                ("max_threshold".into(), "32".into()),
                ("min_threshold".into(), "4".into()),
            ]),
            compression: BTreeMap::from([
                ("chunk_length_in_kb".into(), "16".into()),
                ("class".into(), format!("{COMPRESSION_PREFIX}LZ4Compressor")),
            ]),
            crc_check_chance: 1.0,
            default_time_to_live: 0,
            extensions: BTreeMap::new(),
            gc_grace_seconds: 864_000,
            max_index_interval: 2048,
            memtable_flush_period_in_ms: 0,
            min_index_interval: 128,
            read_repair: "BLOCKING".into(),
            speculative_retry: "99p".into(),
            additional_write_policy: "99p".into(),
            cdc: false,
            throughput: None,
        }
    }
}

/// Cassandra rejects a property given twice.
fn check_unique(properties: &[(String, OptionValue)]) -> Result<(), QueryError> {
    let mut seen = std::collections::HashSet::new();
    for (name, _) in properties {
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err(QueryError::Syntax(format!(
                "Multiple definition for property {}",
                name.to_ascii_lowercase()
            )));
        }
    }
    Ok(())
}

fn parse_num<T: std::str::FromStr>(name: &str, v: &OptionValue) -> Result<T, QueryError> {
    option_text(v)
        .and_then(|s| s.trim().parse::<T>().ok())
        .ok_or_else(|| QueryError::Syntax(format!("Invalid value for property '{name}'")))
}

impl TableParams {
    /// Applies `WITH` properties on top of `self`.
    ///
    /// # Errors
    /// SyntaxException for unknown properties or malformed values, ConfigurationException
    /// for values out of range.
    pub fn apply(&mut self, properties: &[(String, OptionValue)]) -> Result<(), QueryError> {
        check_unique(properties)?;
        if let Some(t) = Throughput::in_properties(properties)? {
            self.throughput = Some(t);
        }
        for (name, value) in properties {
            let lname = name.to_ascii_lowercase();
            match lname.as_str() {
                name if Throughput::is_option(name) => {}
                "bloom_filter_fp_chance" => {
                    let v: f64 = parse_num(name, value)?;
                    if !(v > 0.0 && v <= 1.0) {
                        return Err(QueryError::Config(format!(
                            "bloom_filter_fp_chance must be larger than 0.0 and less than or equal to 1.0 (got {v})"
                        )));
                    }
                    self.bloom_filter_fp_chance = v;
                }
                "caching" => self.caching = option_map(name, value)?,
                "comment" => {
                    self.comment = option_text(value).ok_or_else(|| {
                        QueryError::Syntax("Invalid value for property 'comment'".into())
                    })?
                }
                "compaction" => {
                    let mut m = option_map(name, value)?;
                    let class = m.remove("class").ok_or_else(|| {
                        QueryError::Config(
                            "Missing sub-option 'class' for the 'compaction' option.".into(),
                        )
                    })?;
                    let class = if class.contains('.') {
                        class
                    } else {
                        format!("{COMPACTION_PREFIX}{class}")
                    };
                    m.insert("class".into(), class);
                    self.compaction = m;
                }
                "compression" => {
                    let mut m = option_map(name, value)?;
                    if let Some(class) = m
                        .remove("class")
                        .or_else(|| m.remove("sstable_compression"))
                    {
                        let class = if class.contains('.') || class.is_empty() {
                            class
                        } else {
                            format!("{COMPRESSION_PREFIX}{class}")
                        };
                        m.insert("class".into(), class);
                    }
                    if let Some(v) = m.remove("enabled") {
                        if v.eq_ignore_ascii_case("false") {
                            m = BTreeMap::from([("enabled".into(), "false".into())]);
                        }
                    }
                    if m.contains_key("class") && !m.contains_key("chunk_length_in_kb") {
                        m.insert("chunk_length_in_kb".into(), "16".into());
                    }
                    // An empty map names no compressor: Cassandra shows it as disabled.
                    if m.is_empty() {
                        m.insert("enabled".into(), "false".into());
                    }
                    self.compression = m;
                }
                "crc_check_chance" => self.crc_check_chance = parse_num(name, value)?,
                "default_time_to_live" => {
                    let v: i32 = parse_num(name, value)?;
                    if v < 0 {
                        return Err(QueryError::Config(format!(
                            "default_time_to_live must be greater than or equal to 0 (got {v})"
                        )));
                    }
                    if i64::from(v) > MAX_TTL {
                        return Err(QueryError::Config(format!(
                            "default_time_to_live must be less than or equal to {} (got {v})",
                            MAX_TTL
                        )));
                    }
                    self.default_time_to_live = v;
                }
                "gc_grace_seconds" => {
                    let v: i32 = parse_num(name, value)?;
                    if v < 0 {
                        return Err(QueryError::Config(format!(
                            "gc_grace_seconds must be greater than or equal to 0 (got {v})"
                        )));
                    }
                    self.gc_grace_seconds = v;
                }
                "max_index_interval" => self.max_index_interval = parse_num(name, value)?,
                "memtable_flush_period_in_ms" => {
                    self.memtable_flush_period_in_ms = parse_num(name, value)?
                }
                "min_index_interval" => self.min_index_interval = parse_num(name, value)?,
                "read_repair" => {
                    self.read_repair = option_text(value).unwrap_or_default().to_uppercase()
                }
                "speculative_retry" => {
                    self.speculative_retry = option_text(value).unwrap_or_default()
                }
                "additional_write_policy" => {
                    self.additional_write_policy = option_text(value).unwrap_or_default()
                }
                "cdc" => self.cdc = parse_bool(name, value)?,
                "extensions" => {
                    let m = option_map(name, value)?;
                    self.extensions = m.into_iter().map(|(k, v)| (k, v.into_bytes())).collect();
                }
                // Accepted and ignored, as Cassandra 4 does for these legacy options.
                "read_repair_chance" | "dclocal_read_repair_chance" | "memtable" => {}
                "id" => {}
                _ => return Err(QueryError::Syntax(format!("Unknown property '{lname}'"))),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replication(entries: &[(&str, &str)]) -> Vec<(String, OptionValue)> {
        let map = entries
            .iter()
            .map(|(k, v)| {
                (
                    OptionValue::String(k.to_string()),
                    OptionValue::String(v.to_string()),
                )
            })
            .collect();
        vec![("replication".to_string(), OptionValue::Map(map))]
    }

    fn config_error(r: Result<KeyspaceParams, QueryError>) -> String {
        match r {
            Err(QueryError::Config(m)) => m,
            other => panic!("ConfigurationException expected, got {other:?}"),
        }
    }

    #[test]
    fn network_topology_accepts_only_this_datacenter() {
        let opts = replication(&[
            ("class", "NetworkTopologyStrategy"),
            ("datacenter1", "3"),
            ("dc2", "1"),
        ]);
        assert_eq!(
            config_error(KeyspaceParams::from_options("ks", &opts, None)),
            "Unrecognized strategy option {dc2} passed to NetworkTopologyStrategy for keyspace ks"
        );
        let opts = replication(&[("class", "NetworkTopologyStrategy"), ("datacenter1", "3")]);
        let p = KeyspaceParams::from_options("ks", &opts, None).expect("datacenter1");
        assert_eq!(
            p.replication.get("datacenter1").map(String::as_str),
            Some("3")
        );
        assert_eq!(p.replicas().total(), 3);
        assert_eq!(p.replicas().in_dc(DATA_CENTER), 3);
    }

    #[test]
    fn network_topology_drops_zero_factors_then_needs_a_datacenter() {
        // Cassandra removes the zero factors before it validates the names.
        let opts = replication(&[
            ("class", "NetworkTopologyStrategy"),
            ("datacenter1", "2"),
            ("dc2", "0"),
        ]);
        let p = KeyspaceParams::from_options("ks", &opts, None).expect("dc2 dropped");
        assert_eq!(p.replication.len(), 2, "{:?}", p.replication);
        let opts = replication(&[("class", "NetworkTopologyStrategy"), ("datacenter1", "0")]);
        assert_eq!(
            config_error(KeyspaceParams::from_options("ks", &opts, None)),
            "Configuration for at least one datacenter must be present"
        );
    }

    #[test]
    fn network_topology_expands_a_replication_factor() {
        let opts = replication(&[
            ("class", "NetworkTopologyStrategy"),
            ("replication_factor", "2"),
        ]);
        let p = KeyspaceParams::from_options("ks", &opts, None).expect("expanded");
        assert_eq!(p.replicas().in_dc(DATA_CENTER), 2);
        assert!(!p.replication.contains_key("replication_factor"));
        // A direct ALTER from SimpleStrategy keeps its factor.
        let simple = KeyspaceParams::simple(3);
        let opts = replication(&[("class", "NetworkTopologyStrategy")]);
        let p = KeyspaceParams::from_options("ks", &opts, Some(&simple)).expect("altered");
        assert_eq!(p.replicas().in_dc(DATA_CENTER), 3);
    }

    #[test]
    fn simple_strategy_names_the_keyspace_for_an_unknown_option() {
        let opts = replication(&[
            ("class", "SimpleStrategy"),
            ("replication_factor", "1"),
            ("datacenter1", "1"),
        ]);
        assert_eq!(
            config_error(KeyspaceParams::from_options("ks", &opts, None)),
            "Unrecognized strategy option {datacenter1} passed to SimpleStrategy for keyspace ks"
        );
        let p = KeyspaceParams::simple(3);
        assert_eq!(p.replicas(), Replicas::Simple(3));
        assert_eq!(KeyspaceParams::local().replicas().total(), 1);
    }
}
