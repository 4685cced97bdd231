//! Row generation for the system tables, from node facts and the catalog.

use super::CQL_VERSION;
use super::{is_virtual_keyspace, DATA_CENTER, PARTITIONER, RACK, RELEASE_VERSION};
use crate::auth::AuthState;
use crate::cluster_hooks::{NodeStatus, Peer};
use crate::schema::{Catalog, Table};
use bytes::Bytes;
use cql::types::Value;
use std::collections::BTreeMap;
use std::net::IpAddr;
use uuid::Uuid;

/// Facts about this node that system tables report.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Stable host id (persisted in the data directory).
    pub host_id: Uuid,
    /// Address clients reach the node at.
    pub rpc_address: IpAddr,
    /// Native port.
    pub rpc_port: u16,
    /// Cluster name.
    pub cluster_name: String,
    /// The node's one token.
    pub token: i64,
    /// Start time in seconds since the epoch.
    pub gossip_generation: i32,
}

type NamedRow = Vec<(&'static str, Value)>;

/// What the system tables show of the cluster (empty for a node run without one).
#[derive(Debug, Default)]
pub struct ClusterView {
    /// The other members.
    pub peers: Vec<Peer>,
    /// This node's tokens (empty: its own host token).
    pub local_tokens: Vec<i64>,
    /// Every member with its state.
    pub nodes: Vec<NodeStatus>,
    /// Every table's groups (empty on a single node).
    pub placements: Vec<crate::cluster_hooks::Placement>,
    /// The replica moves in flight.
    pub moves: Vec<crate::cluster_hooks::MoveStatus>,
}

fn node_row(n: &NodeStatus) -> NamedRow {
    vec![
        ("host_id", Value::Uuid(n.host_id)),
        ("native_address", text(n.native.to_string())),
        ("internode_address", text(n.internode.to_string())),
        ("status", text(if n.up { "UP" } else { "DOWN" })),
        ("state", text(n.state)),
        (
            "groups_led",
            Value::Int(i32::try_from(n.groups_led).unwrap_or(i32::MAX)),
        ),
        (
            "groups_held",
            Value::Int(i32::try_from(n.groups_held).unwrap_or(i32::MAX)),
        ),
        (
            "bytes",
            Value::Bigint(i64::try_from(n.bytes).unwrap_or(i64::MAX)),
        ),
    ]
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn text_map(m: &BTreeMap<String, String>) -> Value {
    Value::Map(
        m.iter()
            .map(|(k, v)| (text(k.clone()), text(v.clone())))
            .collect(),
    )
}

fn text_list<S: AsRef<str>>(items: &[S]) -> Value {
    Value::List(items.iter().map(|s| text(s.as_ref())).collect())
}

/// What the system tables are generated from.
pub struct Sources<'a> {
    /// This node's facts.
    pub info: &'a NodeInfo,
    /// The cluster as this node sees it.
    pub cluster: &'a ClusterView,
    /// The schema.
    pub catalog: &'a Catalog,
    /// Roles and permissions.
    pub auth: &'a AuthState,
    /// The store.
    pub storage: &'a storage::Storage,
    /// The throughput budgets.
    pub budgets: &'a crate::throughput::Budgets,
    /// The node's own views' data.
    pub node: &'a super::NodeView,
    /// The traced requests (read for `system_traces` only).
    pub traces: &'a [crate::query_trace::TraceSession],
}

/// The rows of a system table, each in `table.columns` order, sorted by primary key;
/// `None` when the table holds no generated data.
pub fn rows_for(sources: &Sources<'_>, table: &Table) -> Vec<Vec<Option<Bytes>>> {
    let Sources {
        info,
        cluster,
        catalog,
        auth,
        storage,
        budgets,
        node,
        traces,
    } = *sources;
    use super::node_views as views;
    use crate::metrics::Operation::{Read, Scan, Write};
    let named: Vec<NamedRow> = match (table.keyspace.as_str(), table.name.as_str()) {
        ("system_views", "physical_partitions") => super::ring_tables::physical_partitions(
            catalog,
            storage,
            budgets,
            &cluster.placements,
            !cluster.peers.is_empty(),
        ),
        ("system", "size_estimates") => super::ring_tables::size_estimates(catalog, storage, false),
        ("system", "table_estimates") => super::ring_tables::size_estimates(catalog, storage, true),
        ("system_auth", "roles") => auth_roles(auth),
        ("system_auth", "role_members") => auth_role_members(auth),
        ("system_auth", "role_permissions") => auth_role_permissions(auth),
        ("system_auth", "resource_role_permissons_index") => auth_permissions_index(auth),
        ("system_auth", "network_permissions") => auth_network_permissions(auth),
        ("system", "local") => vec![local(info, catalog, &cluster.local_tokens)],
        ("system", "peers") => cluster.peers.iter().map(peer_row).collect(),
        ("system", "peers_v2") => cluster.peers.iter().map(peer_v2_row).collect(),
        ("system_views", "cluster_nodes") => cluster.nodes.iter().map(node_row).collect(),
        ("system_views", "moves") => super::ring_tables::moves(catalog, &cluster.moves),
        ("system_traces", "sessions") => super::trace_tables::sessions(traces),
        ("system_traces", "events") => super::trace_tables::events(traces),
        ("system_views", "settings") => views::settings(node),
        ("system_views", "clients") => views::clients(node),
        ("system_views", "caches") => views::caches(node),
        ("system_views", "thread_pools") => views::thread_pools(node),
        ("system_views", "sstable_tasks") => views::sstable_tasks(catalog, storage, &cluster.moves),
        ("system_views", "disk_usage") => views::disk_usage(catalog, storage),
        ("system_views", "max_partition_size") => views::max_partition_size(catalog, storage),
        ("system_views", "local_read_latency") => views::latency(node, true, Read),
        ("system_views", "local_write_latency") => views::latency(node, true, Write),
        ("system_views", "local_scan_latency") => views::latency(node, true, Scan),
        ("system_views", "coordinator_read_latency") => views::latency(node, false, Read),
        ("system_views", "coordinator_write_latency") => views::latency(node, false, Write),
        ("system_views", "coordinator_scan_latency") => views::latency(node, false, Scan),
        ("system_schema", "keyspaces") => schema_keyspaces(catalog, false),
        ("system_schema", "tables") => schema_tables(catalog),
        ("system_schema", "views") => schema_views(catalog),
        ("system_schema", "columns") => schema_columns(catalog, false),
        ("system_schema", "dropped_columns") => dropped_columns(catalog),
        ("system_schema", "column_masks") => column_masks(catalog),
        ("system_schema", "types") => schema_types(catalog),
        ("system_schema", "functions") => schema_functions(catalog),
        ("system_schema", "aggregates") => schema_aggregates(catalog),
        ("system_schema", "indexes") => schema_indexes(catalog),
        ("system_virtual_schema", "keyspaces") => schema_keyspaces(catalog, true),
        ("system_virtual_schema", "tables") => virtual_tables(catalog),
        ("system_virtual_schema", "columns") => schema_columns(catalog, true),
        _ => Vec::new(),
    };
    named
        .into_iter()
        .map(|row| {
            table
                .columns
                .iter()
                .map(|c| {
                    row.iter()
                        .find(|(n, _)| *n == c.name)
                        .map(|(_, v)| Bytes::from(v.to_bytes()))
                })
                .collect()
        })
        .collect()
}

fn local(info: &NodeInfo, catalog: &Catalog, tokens: &[i64]) -> NamedRow {
    let tokens: Vec<Value> = if tokens.is_empty() {
        vec![text(info.token.to_string())]
    } else {
        tokens.iter().map(|t| text(t.to_string())).collect()
    };
    vec![
        ("key", text("local")),
        ("bootstrapped", text("COMPLETED")),
        ("broadcast_address", Value::Inet(info.rpc_address)),
        ("broadcast_port", Value::Int(7000)),
        ("cluster_name", text(info.cluster_name.clone())),
        ("cql_version", text(CQL_VERSION)),
        ("data_center", text(DATA_CENTER)),
        ("gossip_generation", Value::Int(info.gossip_generation)),
        ("host_id", Value::Uuid(info.host_id)),
        ("listen_address", Value::Inet(info.rpc_address)),
        ("listen_port", Value::Int(7000)),
        ("native_protocol_version", text("4")),
        ("partitioner", text(PARTITIONER)),
        ("rack", text(RACK)),
        ("release_version", text(RELEASE_VERSION)),
        ("rpc_address", Value::Inet(info.rpc_address)),
        ("rpc_port", Value::Int(i32::from(info.rpc_port))),
        ("schema_version", Value::Uuid(catalog.version)),
        ("tokens", Value::Set(tokens)),
    ]
}

fn tokens(peer: &Peer) -> Value {
    Value::Set(peer.tokens.iter().map(|t| text(t.to_string())).collect())
}

fn peer_row(peer: &Peer) -> NamedRow {
    vec![
        ("peer", Value::Inet(peer.rpc_address)),
        ("data_center", text(DATA_CENTER)),
        ("host_id", Value::Uuid(peer.host_id)),
        ("preferred_ip", Value::Inet(peer.rpc_address)),
        ("rack", text(RACK)),
        ("release_version", text(RELEASE_VERSION)),
        ("rpc_address", Value::Inet(peer.rpc_address)),
        ("schema_version", Value::Uuid(peer.schema_version)),
        ("tokens", tokens(peer)),
    ]
}

fn peer_v2_row(peer: &Peer) -> NamedRow {
    vec![
        ("peer", Value::Inet(peer.rpc_address)),
        ("peer_port", Value::Int(7000)),
        ("data_center", text(DATA_CENTER)),
        ("host_id", Value::Uuid(peer.host_id)),
        ("native_address", Value::Inet(peer.rpc_address)),
        ("native_port", Value::Int(i32::from(peer.rpc_port))),
        ("preferred_ip", Value::Inet(peer.rpc_address)),
        ("preferred_port", Value::Int(7000)),
        ("rack", text(RACK)),
        ("release_version", text(RELEASE_VERSION)),
        ("schema_version", Value::Uuid(peer.schema_version)),
        ("tokens", tokens(peer)),
    ]
}

fn schema_keyspaces(catalog: &Catalog, virtual_ks: bool) -> Vec<NamedRow> {
    catalog
        .keyspaces
        .values()
        .filter(|ks| is_virtual_keyspace(&ks.name) == virtual_ks)
        .map(|ks| {
            if virtual_ks {
                vec![("keyspace_name", text(ks.name.clone()))]
            } else {
                vec![
                    ("keyspace_name", text(ks.name.clone())),
                    ("durable_writes", Value::Boolean(ks.params.durable_writes)),
                    ("replication", text_map(&ks.params.replication)),
                ]
            }
        })
        .collect()
}

fn tables(catalog: &Catalog, virtual_ks: bool) -> impl Iterator<Item = &Table> {
    catalog
        .keyspaces
        .values()
        .filter(move |ks| is_virtual_keyspace(&ks.name) == virtual_ks)
        .flat_map(|ks| ks.tables.values().map(|t| t.as_ref()))
}

fn schema_tables(catalog: &Catalog) -> Vec<NamedRow> {
    tables(catalog, false)
        .filter(|t| t.view.is_none())
        .map(table_row)
        .collect()
}

/// `system_schema.views`: a view's row holds its table options as a table's does (the row is
/// read by column name, so `table_name` and `flags` are left out), and its base.
fn schema_views(catalog: &Catalog) -> Vec<NamedRow> {
    tables(catalog, false)
        .filter_map(|t| {
            let v = t.view.as_ref()?;
            let mut row = table_row(t);
            row.extend([
                ("view_name", text(t.name.clone())),
                ("base_table_id", Value::Uuid(v.base_id)),
                ("base_table_name", text(v.base_table.clone())),
                ("include_all_columns", Value::Boolean(v.include_all_columns)),
                ("where_clause", text(v.where_clause.clone())),
            ]);
            Some(row)
        })
        .collect()
}

/// A table's `system_schema.tables` row.
fn table_row(t: &Table) -> NamedRow {
    let p = &t.params;
    let mut flags = vec![text("compound")];
    if t.is_counter() {
        flags.insert(0, text("counter"));
    }
    vec![
        ("keyspace_name", text(t.keyspace.clone())),
        ("table_name", text(t.name.clone())),
        (
            "additional_write_policy",
            text(p.additional_write_policy.clone()),
        ),
        (
            "bloom_filter_fp_chance",
            Value::Double(p.bloom_filter_fp_chance),
        ),
        ("caching", text_map(&p.caching)),
        ("cdc", Value::Boolean(p.cdc)),
        ("comment", text(p.comment.clone())),
        ("compaction", text_map(&p.compaction)),
        ("compression", text_map(&p.compression)),
        ("crc_check_chance", Value::Double(p.crc_check_chance)),
        ("dclocal_read_repair_chance", Value::Double(0.0)),
        ("default_time_to_live", Value::Int(p.default_time_to_live)),
        (
            "extensions",
            Value::Map(
                p.extensions
                    .iter()
                    .map(|(k, v)| (text(k.clone()), Value::Blob(v.clone())))
                    .chain(p.throughput.map(|t| {
                        let (name, value) = t.option();
                        (
                            text(name.to_string()),
                            Value::Blob(value.to_string().into_bytes()),
                        )
                    }))
                    .collect(),
            ),
        ),
        ("flags", Value::Set(flags)),
        ("gc_grace_seconds", Value::Int(p.gc_grace_seconds)),
        ("id", Value::Uuid(t.id)),
        ("max_index_interval", Value::Int(p.max_index_interval)),
        (
            "memtable_flush_period_in_ms",
            Value::Int(p.memtable_flush_period_in_ms),
        ),
        ("min_index_interval", Value::Int(p.min_index_interval)),
        ("read_repair", text(p.read_repair.clone())),
        ("read_repair_chance", Value::Double(0.0)),
        ("speculative_retry", text(p.speculative_retry.clone())),
    ]
}

fn schema_columns(catalog: &Catalog, virtual_ks: bool) -> Vec<NamedRow> {
    let mut out = Vec::new();
    for t in tables(catalog, virtual_ks) {
        let mut cols: Vec<_> = t.columns.iter().collect();
        cols.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        for c in cols {
            out.push(vec![
                ("keyspace_name", text(t.keyspace.clone())),
                ("table_name", text(t.name.clone())),
                ("column_name", text(c.name.clone())),
                ("clustering_order", text(c.clustering_order_text())),
                ("column_name_bytes", Value::Blob(c.name.as_bytes().to_vec())),
                ("kind", text(c.kind.as_str())),
                ("position", Value::Int(c.position)),
                ("type", text(c.data_type.to_string())),
            ]);
        }
    }
    out
}

/// `system_schema.column_masks` (Cassandra 5.0): a row per masked column, with the masking
/// function and its arguments after the column's value, as CQL types and literals.
fn column_masks(catalog: &Catalog) -> Vec<NamedRow> {
    let mut out = Vec::new();
    for t in tables(catalog, false) {
        let mut cols: Vec<_> = t.columns.iter().filter(|c| c.mask.is_some()).collect();
        cols.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        for c in cols {
            let Some(mask) = &c.mask else { continue };
            let types: Vec<String> = mask.arg_types.iter().map(ToString::to_string).collect();
            out.push(vec![
                ("keyspace_name", text(t.keyspace.clone())),
                ("table_name", text(t.name.clone())),
                ("column_name", text(c.name.clone())),
                ("function_keyspace", text("system")),
                ("function_name", text(mask.function.clone())),
                ("function_argument_types", text_list(&types)),
                (
                    "function_argument_values",
                    text_list(&mask.argument_texts()),
                ),
            ]);
        }
    }
    out
}

fn dropped_columns(catalog: &Catalog) -> Vec<NamedRow> {
    let mut out = Vec::new();
    for t in tables(catalog, false) {
        let mut dropped: Vec<_> = t.dropped.iter().collect();
        dropped.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        for d in dropped {
            out.push(vec![
                ("keyspace_name", text(t.keyspace.clone())),
                ("table_name", text(t.name.clone())),
                ("column_name", text(d.name.clone())),
                ("dropped_time", Value::Timestamp(d.dropped_time_ms)),
                ("kind", text(d.kind.as_str())),
                ("type", text(d.type_text.clone())),
            ]);
        }
    }
    out
}

/// `system_schema.indexes`: options hold `target` and, for a custom index, `class_name`
/// (Cassandra's `SchemaKeyspace.addIndexToSchemaMutation`).
fn schema_indexes(catalog: &Catalog) -> Vec<NamedRow> {
    let mut out = Vec::new();
    for t in tables(catalog, false) {
        let mut indexes: Vec<_> = t.indexes.iter().collect();
        indexes.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        for i in indexes {
            let mut options = BTreeMap::new();
            options.insert("target".to_string(), i.target_text());
            if let Some(class) = &i.class_name {
                options.insert("class_name".to_string(), class.clone());
            }
            for (k, v) in &i.options {
                options.insert(k.clone(), v.clone());
            }
            out.push(vec![
                ("keyspace_name", text(t.keyspace.clone())),
                ("table_name", text(t.name.clone())),
                ("index_name", text(i.name.clone())),
                ("kind", text(i.kind_text())),
                ("options", text_map(&options)),
            ]);
        }
    }
    out
}

fn schema_types(catalog: &Catalog) -> Vec<NamedRow> {
    catalog
        .keyspaces
        .values()
        .flat_map(|ks| ks.types.values())
        .map(|t| {
            let types: Vec<String> = t.field_types.iter().map(|t| t.to_string()).collect();
            vec![
                ("keyspace_name", text(t.keyspace.clone())),
                ("type_name", text(t.name.clone())),
                ("field_names", text_list(&t.field_names)),
                ("field_types", text_list(&types)),
            ]
        })
        .collect()
}

fn type_texts(types: &[cql::types::DataType]) -> Vec<String> {
    types.iter().map(ToString::to_string).collect()
}

/// `system_schema.functions`: one row per user function overload.
fn schema_functions(catalog: &Catalog) -> Vec<NamedRow> {
    catalog
        .keyspaces
        .values()
        .flat_map(|ks| ks.functions.values())
        .map(|f| {
            vec![
                ("keyspace_name", text(f.keyspace.clone())),
                ("function_name", text(f.name.clone())),
                ("argument_types", text_list(&type_texts(&f.arg_types))),
                ("argument_names", text_list(&f.arg_names)),
                ("body", text(f.body.clone())),
                (
                    "called_on_null_input",
                    Value::Boolean(f.called_on_null_input),
                ),
                ("language", text(f.language.clone())),
                ("return_type", text(f.return_type.to_string())),
            ]
        })
        .collect()
}

/// `system_schema.aggregates`: one row per user aggregate overload; `final_func` and
/// `initcond` null when absent.
fn schema_aggregates(catalog: &Catalog) -> Vec<NamedRow> {
    catalog
        .keyspaces
        .values()
        .flat_map(|ks| ks.aggregates.values())
        .map(|a| {
            let mut row = vec![
                ("keyspace_name", text(a.keyspace.clone())),
                ("aggregate_name", text(a.name.clone())),
                ("argument_types", text_list(&type_texts(&a.arg_types))),
                ("return_type", text(a.return_type.to_string())),
                ("state_func", text(a.state_func.clone())),
                ("state_type", text(a.state_type.to_string())),
            ];
            if let Some(f) = &a.final_func {
                row.push(("final_func", text(f.clone())));
            }
            if let Some(i) = &a.initcond {
                row.push(("initcond", text(i.clone())));
            }
            row
        })
        .collect()
}

/// `system_auth.roles`. `salted_hash` is always null: hashes never leave the server.
fn auth_roles(auth: &AuthState) -> Vec<NamedRow> {
    let mut roles: Vec<_> = auth.roles.values().collect();
    roles.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    roles
        .into_iter()
        .map(|r| {
            let mut row = vec![
                ("role", text(r.name.clone())),
                ("can_login", Value::Boolean(r.can_login)),
                ("is_superuser", Value::Boolean(r.is_superuser)),
            ];
            if !r.member_of.is_empty() {
                row.push((
                    "member_of",
                    Value::Set(r.member_of.iter().map(|m| text(m.clone())).collect()),
                ));
            }
            row
        })
        .collect()
}

fn auth_role_members(auth: &AuthState) -> Vec<NamedRow> {
    let mut pairs: Vec<(&str, &str)> = auth
        .roles
        .values()
        .flat_map(|r| {
            r.member_of
                .iter()
                .map(move |g| (g.as_str(), r.name.as_str()))
        })
        .collect();
    pairs.sort_by(|a, b| (a.0.as_bytes(), a.1.as_bytes()).cmp(&(b.0.as_bytes(), b.1.as_bytes())));
    pairs
        .into_iter()
        .map(|(role, member)| vec![("role", text(role)), ("member", text(member))])
        .collect()
}

fn auth_role_permissions(auth: &AuthState) -> Vec<NamedRow> {
    let mut out = Vec::new();
    for (role, grants) in &auth.permissions {
        for (resource, perms) in grants {
            out.push(vec![
                ("role", text(role.clone())),
                ("resource", text(resource.clone())),
                (
                    "permissions",
                    Value::Set(perms.iter().map(|p| text(p.clone())).collect()),
                ),
            ]);
        }
    }
    out
}

fn auth_permissions_index(auth: &AuthState) -> Vec<NamedRow> {
    let mut pairs: Vec<(&str, &str)> = auth
        .permissions
        .iter()
        .flat_map(|(role, grants)| grants.keys().map(move |res| (res.as_str(), role.as_str())))
        .collect();
    pairs.sort_by(|a, b| (a.0.as_bytes(), a.1.as_bytes()).cmp(&(b.0.as_bytes(), b.1.as_bytes())));
    pairs
        .into_iter()
        .map(|(resource, role)| vec![("resource", text(resource)), ("role", text(role))])
        .collect()
}

fn auth_network_permissions(auth: &AuthState) -> Vec<NamedRow> {
    auth.roles
        .values()
        .filter_map(|r| {
            let dcs = r.datacenters.as_ref()?;
            Some(vec![
                ("role", text(r.name.clone())),
                (
                    "dcs",
                    Value::Set(dcs.iter().map(|d| text(d.clone())).collect()),
                ),
            ])
        })
        .collect()
}

fn virtual_tables(catalog: &Catalog) -> Vec<NamedRow> {
    tables(catalog, true)
        .map(|t| {
            vec![
                ("keyspace_name", text(t.keyspace.clone())),
                ("table_name", text(t.name.clone())),
                ("comment", text(t.params.comment.clone())),
            ]
        })
        .collect()
}
