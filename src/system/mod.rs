//! The node's system keyspaces: their table definitions and the rows drivers read on connect
//! (`system.local`, `system.peers*`, `system_schema.*`, `system_virtual_schema.*`), generated
//! from the catalog on every read.

mod definitions;
mod node_views;
mod ring_tables;
mod rows;
mod trace_tables;

pub use node_views::{describes_node, NodeView, ThreadPool};
pub use rows::{rows_for, ClusterView, NodeInfo, Sources};

use crate::schema::{Catalog, Keyspace, KeyspaceParams, TableParams};
use cql::ast::Statement;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The CQL version advertised in SUPPORTED and `system.local` (Cassandra 4.1).
pub const CQL_VERSION: &str = "3.4.6";

pub use crate::schema::DATA_CENTER;
/// The one rack of a ringdb node.
pub const RACK: &str = "rack1";
/// The Cassandra release ringdb presents as (drivers choose features from it; must start with '4').
pub const RELEASE_VERSION: &str = "4.1.5";
/// The partitioner class name (Spark matches it exactly).
pub const PARTITIONER: &str = "org.apache.cassandra.dht.Murmur3Partitioner";

/// True for the tables that show the cluster (`system.local`, `system.peers*`,
/// `system_views.cluster_nodes`, `physical_partitions`, `moves`): only they need its view.
pub fn describes_cluster(table: &crate::schema::Table) -> bool {
    matches!(
        (table.keyspace.as_str(), table.name.as_str()),
        ("system", "local" | "peers" | "peers_v2")
            | (
                "system_views",
                "cluster_nodes" | "physical_partitions" | "moves" | "sstable_tasks"
            )
    )
}

/// True for keyspaces listed in `system_virtual_schema` rather than `system_schema`.
pub fn is_virtual_keyspace(name: &str) -> bool {
    definitions::SYSTEM_TABLES
        .iter()
        .any(|(ks, virt, _)| *ks == name && *virt)
}

/// Adds the system keyspaces and their tables to `catalog`.
///
/// # Errors
/// Only if a built-in definition fails to parse (a bug caught by the unit tests).
pub fn install(catalog: &mut Catalog) -> Result<(), String> {
    for (ks_name, _virtual, ddl) in definitions::SYSTEM_TABLES {
        let params = match *ks_name {
            "system_auth" => KeyspaceParams::simple(1),
            "system_distributed" => KeyspaceParams::simple(3),
            "system_traces" => KeyspaceParams::simple(2),
            _ => KeyspaceParams::local(),
        };
        let mut ks = Keyspace {
            name: ks_name.to_string(),
            params,
            tables: BTreeMap::new(),
            types: BTreeMap::new(),
            functions: BTreeMap::new(),
            aggregates: BTreeMap::new(),
        };
        let statements = cql::parse_statements(ddl).map_err(|e| format!("{ks_name}: {e}"))?;
        for stmt in statements {
            let Statement::CreateTable(create) = stmt else {
                return Err(format!("{ks_name}: not a CREATE TABLE"));
            };
            let mut table = crate::schema::build_system_table(catalog, ks_name, &create)
                .map_err(|e| format!("{ks_name}.{}: {e}", create.name.name))?;
            table.params = TableParams {
                gc_grace_seconds: 0,
                ..TableParams::default()
            };
            ks.tables.insert(table.name.clone(), Arc::new(table));
        }
        catalog.keyspaces.insert(ks_name.to_string(), ks);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_definitions_parse_and_have_reference_columns() {
        let mut catalog = Catalog::default();
        install(&mut catalog).expect("system tables parse");
        let local = catalog.table("system", "local").expect("system.local");
        assert!(local.column("host_id").is_some());
        assert_eq!(local.columns.len(), 20);
        let peers_v2 = catalog.table("system", "peers_v2").expect("peers_v2");
        assert_eq!(peers_v2.clustering().count(), 1);
        let columns = catalog.table("system_schema", "columns").expect("columns");
        assert_eq!(columns.clustering().count(), 2);
    }
}
