//! The system tables drivers read when they connect and refresh their metadata
//! (`system.local`, `system.peers`, `system_schema.*`, ...): a one-node ring owning every
//! token, and the schema the catalog keeps.

use crate::catalog::Catalog;
use crate::synthetic::{text_collection, text_map};
use cql::types::{DataType, NativeType};
use std::net::Ipv4Addr;

/// What the node says of itself.
pub(crate) struct Identity {
    /// The address clients reach it at.
    pub(crate) address: Ipv4Addr,
    /// Its port.
    pub(crate) port: u16,
}

/// A system table's columns and rows.
pub(crate) struct VirtualTable {
    /// Column names and types.
    pub(crate) columns: Vec<(&'static str, DataType)>,
    /// Serialized cells, one per column.
    pub(crate) rows: Vec<Vec<Option<Vec<u8>>>>,
}

/// Columns as (name, CQL type).
type Columns = &'static [(&'static str, &'static str)];

/// The system tables that hold no rows here: (keyspace, table, columns as (name, CQL type)).
const EMPTY_TABLES: &[(&str, &str, Columns)] = &[
    (
        "system",
        "peers",
        &[
            ("peer", "inet"),
            ("data_center", "text"),
            ("host_id", "uuid"),
            ("preferred_ip", "inet"),
            ("rack", "text"),
            ("release_version", "text"),
            ("rpc_address", "inet"),
            ("schema_version", "uuid"),
            ("tokens", "set<text>"),
        ],
    ),
    (
        "system",
        "peers_v2",
        &[
            ("peer", "inet"),
            ("peer_port", "int"),
            ("data_center", "text"),
            ("host_id", "uuid"),
            ("native_address", "inet"),
            ("native_port", "int"),
            ("preferred_ip", "inet"),
            ("preferred_port", "int"),
            ("rack", "text"),
            ("release_version", "text"),
            ("schema_version", "uuid"),
            ("tokens", "set<text>"),
        ],
    ),
    (
        "system_schema",
        "types",
        &[
            ("keyspace_name", "text"),
            ("type_name", "text"),
            ("field_names", "list<text>"),
            ("field_types", "list<text>"),
        ],
    ),
    (
        "system_schema",
        "views",
        &[
            ("keyspace_name", "text"),
            ("view_name", "text"),
            ("base_table_id", "uuid"),
            ("base_table_name", "text"),
            ("include_all_columns", "boolean"),
            ("where_clause", "text"),
        ],
    ),
    (
        "system_schema",
        "indexes",
        &[
            ("keyspace_name", "text"),
            ("table_name", "text"),
            ("index_name", "text"),
            ("kind", "text"),
            ("options", "map<text, text>"),
        ],
    ),
    (
        "system_schema",
        "triggers",
        &[
            ("keyspace_name", "text"),
            ("table_name", "text"),
            ("trigger_name", "text"),
            ("options", "map<text, text>"),
        ],
    ),
    (
        "system_schema",
        "functions",
        &[
            ("keyspace_name", "text"),
            ("function_name", "text"),
            ("argument_types", "list<text>"),
            ("argument_names", "list<text>"),
            ("body", "text"),
            ("called_on_null_input", "boolean"),
            ("language", "text"),
            ("return_type", "text"),
        ],
    ),
    (
        "system_schema",
        "aggregates",
        &[
            ("keyspace_name", "text"),
            ("aggregate_name", "text"),
            ("argument_types", "list<text>"),
            ("final_func", "text"),
            ("initcond", "text"),
            ("return_type", "text"),
            ("state_func", "text"),
            ("state_type", "text"),
        ],
    ),
    (
        "system_schema",
        "dropped_columns",
        &[
            ("keyspace_name", "text"),
            ("table_name", "text"),
            ("column_name", "text"),
            ("type", "text"),
        ],
    ),
    (
        "system_virtual_schema",
        "keyspaces",
        &[("keyspace_name", "text")],
    ),
    (
        "system_virtual_schema",
        "tables",
        &[
            ("keyspace_name", "text"),
            ("table_name", "text"),
            ("comment", "text"),
        ],
    ),
    (
        "system_virtual_schema",
        "columns",
        &[
            ("keyspace_name", "text"),
            ("table_name", "text"),
            ("column_name", "text"),
            ("clustering_order", "text"),
            ("column_name_bytes", "blob"),
            ("kind", "text"),
            ("position", "int"),
            ("type", "text"),
        ],
    ),
];

const HOST_ID: [u8; 16] = [
    0x6e, 0x75, 0x6c, 0x6c, 0x72, 0x69, 0x40, 0x67, 0x80, 0x64, 0x62, 0, 0, 0, 0, 1,
];
const SCHEMA_VERSION: [u8; 16] = [
    0x6e, 0x75, 0x6c, 0x6c, 0x73, 0x63, 0x40, 0x68, 0x80, 0x65, 0x6d, 0, 0, 0, 0, 1,
];

fn n(t: NativeType) -> DataType {
    DataType::Native(t)
}
fn text() -> DataType {
    n(NativeType::Text)
}
fn set_of_text() -> DataType {
    DataType::Set(Box::new(text()))
}
fn map_of_text() -> DataType {
    DataType::Map(Box::new(text()), Box::new(text()))
}
fn s(v: &str) -> Option<Vec<u8>> {
    Some(v.as_bytes().to_vec())
}
fn int(v: i32) -> Option<Vec<u8>> {
    Some(v.to_be_bytes().to_vec())
}

/// The table `keyspace.table` of the system keyspaces; `None` when there is none such.
pub(crate) fn table(
    catalog: &Catalog,
    me: &Identity,
    keyspace: &str,
    table: &str,
) -> Option<VirtualTable> {
    use NativeType::{Boolean, Double, Inet, Int, Uuid};
    let empty = |columns: Vec<(&'static str, DataType)>| VirtualTable {
        columns,
        rows: Vec::new(),
    };
    let ip = Some(me.address.octets().to_vec());
    Some(match (keyspace, table) {
        ("system", "local") => VirtualTable {
            columns: vec![
                ("key", text()),
                ("bootstrapped", text()),
                ("broadcast_address", n(Inet)),
                ("broadcast_port", n(Int)),
                ("cluster_name", text()),
                ("cql_version", text()),
                ("data_center", text()),
                ("host_id", n(Uuid)),
                ("listen_address", n(Inet)),
                ("listen_port", n(Int)),
                ("native_protocol_version", text()),
                ("partitioner", text()),
                ("rack", text()),
                ("release_version", text()),
                ("rpc_address", n(Inet)),
                ("rpc_port", n(Int)),
                ("schema_version", n(Uuid)),
                ("tokens", set_of_text()),
            ],
            rows: vec![vec![
                s("local"),
                s("COMPLETED"),
                ip.clone(),
                int(7000),
                s("nullserver"),
                s("3.4.6"),
                s("datacenter1"),
                Some(HOST_ID.to_vec()),
                ip.clone(),
                int(7000),
                s("4"),
                s("org.apache.cassandra.dht.Murmur3Partitioner"),
                s("rack1"),
                s("4.1.0"),
                ip,
                int(i32::from(me.port)),
                Some(SCHEMA_VERSION.to_vec()),
                Some(text_collection(["0"])),
            ]],
        },
        ("system_schema", "keyspaces") => {
            let rows = catalog.read(|keyspaces| {
                keyspaces
                    .iter()
                    .map(|(name, ks)| {
                        let replication =
                            ks.replication.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                        vec![s(name), Some(vec![1]), Some(text_map(replication))]
                    })
                    .collect()
            });
            VirtualTable {
                columns: vec![
                    ("keyspace_name", text()),
                    ("durable_writes", n(Boolean)),
                    ("replication", map_of_text()),
                ],
                rows,
            }
        }
        ("system_schema", "tables") => {
            let rows = catalog.read(|keyspaces| {
                let mut rows = Vec::new();
                for (name, ks) in keyspaces {
                    for (i, table) in ks.tables.keys().enumerate() {
                        let mut id = HOST_ID;
                        id[12..].copy_from_slice(&(i as u32).to_be_bytes());
                        rows.push(vec![
                            s(name),
                            s(table),
                            Some(0.01f64.to_be_bytes().to_vec()),
                            Some(text_map([("keys", "ALL"), ("rows_per_partition", "NONE")])),
                            s(""),
                            Some(text_map([])),
                            Some(text_map([])),
                            Some(1.0f64.to_be_bytes().to_vec()),
                            int(0),
                            Some(text_collection(["compound"])),
                            int(864_000),
                            Some(id.to_vec()),
                            s("99p"),
                        ]);
                    }
                }
                rows
            });
            VirtualTable {
                columns: vec![
                    ("keyspace_name", text()),
                    ("table_name", text()),
                    ("bloom_filter_fp_chance", n(Double)),
                    ("caching", map_of_text()),
                    ("comment", text()),
                    ("compaction", map_of_text()),
                    ("compression", map_of_text()),
                    ("crc_check_chance", n(Double)),
                    ("default_time_to_live", n(Int)),
                    ("flags", set_of_text()),
                    ("gc_grace_seconds", n(Int)),
                    ("id", n(Uuid)),
                    ("speculative_retry", text()),
                ],
                rows,
            }
        }
        ("system_schema", "columns") => {
            let rows = catalog.read(|keyspaces| {
                let mut rows = Vec::new();
                for (name, ks) in keyspaces {
                    for (table, t) in &ks.tables {
                        for c in &t.columns {
                            rows.push(vec![
                                s(name),
                                s(table),
                                s(&c.name),
                                s("none"),
                                Some(c.name.as_bytes().to_vec()),
                                s(c.kind.name()),
                                int(c.position),
                                s(&c.data_type.to_string()),
                            ]);
                        }
                    }
                }
                rows
            });
            VirtualTable {
                columns: vec![
                    ("keyspace_name", text()),
                    ("table_name", text()),
                    ("column_name", text()),
                    ("clustering_order", text()),
                    ("column_name_bytes", n(NativeType::Blob)),
                    ("kind", text()),
                    ("position", n(Int)),
                    ("type", text()),
                ],
                rows,
            }
        }
        _ => {
            let (_, _, columns) = EMPTY_TABLES
                .iter()
                .find(|(k, t, _)| *k == keyspace && *t == table)?;
            let columns = columns
                .iter()
                .map(|(name, t)| Some((*name, cql::parse_data_type(t).ok()?)))
                .collect::<Option<Vec<_>>>()?;
            empty(columns)
        }
    })
}

/// Whether `keyspace` is one of the system keyspaces (its tables are answered here).
pub(crate) fn is_system(keyspace: &str) -> bool {
    matches!(
        keyspace,
        "system"
            | "system_schema"
            | "system_virtual_schema"
            | "system_auth"
            | "system_distributed"
            | "system_traces"
            | "system_views"
    )
}
