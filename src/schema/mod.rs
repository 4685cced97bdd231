//! The schema catalog: keyspaces, tables, columns, user types and user functions, with their
//! persisted form.

mod column_mask;
mod ddl;
mod function_ddl;
pub mod functions;
pub mod index;
mod layout;
mod names;
mod options;
mod persist;
pub mod throughput;
mod views;
mod write_error;

pub(crate) use ddl::keyspace_of;
// For `function_ddl`, which reaches them through its parent.
pub use column_mask::ColumnMask;
pub use ddl::{apply_ddl, build_system_table, DdlOutcome};
use ddl::{change, user_keyspace};
pub use functions::{AggregateDef, FunctionDef};
pub use layout::{index_spec, layout_of, table_id};
pub use options::{KeyspaceParams, Replicas, TableParams, DATA_CENTER, MAX_TTL};
pub use persist::{catalog_from_json, load_catalog, save_catalog};
pub use write_error::write_error;

use cql::types::{DataType, UserType};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

/// Keyspaces that belong to the node itself; user DDL may not touch them.
pub const SYSTEM_KEYSPACES: &[&str] = &[
    "system",
    "system_schema",
    "system_auth",
    "system_distributed",
    "system_traces",
    "system_views",
    "system_virtual_schema",
];

/// True for a keyspace the node owns.
pub fn is_system_keyspace(name: &str) -> bool {
    SYSTEM_KEYSPACES.contains(&name)
}

/// The role a column plays in its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnKind {
    /// Part of the partition key.
    PartitionKey,
    /// Part of the clustering key.
    Clustering,
    /// A static column (one value per partition).
    Static,
    /// A regular column.
    Regular,
}

impl ColumnKind {
    /// The spelling of `system_schema.columns.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnKind::PartitionKey => "partition_key",
            ColumnKind::Clustering => "clustering",
            ColumnKind::Static => "static",
            ColumnKind::Regular => "regular",
        }
    }
}

/// Clustering order of a clustering column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ClusteringOrder {
    /// Ascending (the default).
    #[default]
    Asc,
    /// Descending.
    Desc,
}

/// One column of a table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Column {
    /// Column name, exactly as stored (case-sensitive).
    pub name: String,
    /// Storage id of the column, stable across renames.
    pub id: u32,
    /// Its type (UDTs resolved).
    #[serde(with = "type_text")]
    pub data_type: DataType,
    /// Partition key, clustering, static or regular.
    pub kind: ColumnKind,
    /// 0-based position among key columns of its kind; -1 otherwise.
    pub position: i32,
    /// Clustering order (meaningful for clustering columns only).
    #[serde(default)]
    pub order: ClusteringOrder,
    /// Its mask (`MASKED WITH ...`), if any (boxed: most columns have none, and reads walk
    /// the columns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask: Option<Box<ColumnMask>>,
}

impl Column {
    /// `system_schema.columns.clustering_order`: `asc`/`desc` for clustering columns, else `none`.
    pub fn clustering_order_text(&self) -> &'static str {
        match (self.kind, self.order) {
            (ColumnKind::Clustering, ClusteringOrder::Asc) => "asc",
            (ColumnKind::Clustering, ClusteringOrder::Desc) => "desc",
            _ => "none",
        }
    }
}

/// A column dropped from a table (kept for `system_schema.dropped_columns`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DroppedColumn {
    /// Name it had.
    pub name: String,
    /// Type it had, as CQL text.
    pub type_text: String,
    /// Regular or static.
    pub kind: ColumnKind,
    /// When it was dropped (ms since the epoch).
    pub dropped_time_ms: i64,
}

/// A table's definition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Table {
    /// Owning keyspace.
    pub keyspace: String,
    /// Table name.
    pub name: String,
    /// Table id (also names its storage).
    pub id: Uuid,
    /// All columns: partition key, clustering, then static and regular in creation order.
    pub columns: Vec<Column>,
    /// Table options.
    pub params: TableParams,
    /// Next unused column storage id.
    pub next_column_id: u32,
    /// Dropped columns.
    #[serde(default)]
    pub dropped: Vec<DroppedColumn>,
    /// Secondary indexes (`CREATE INDEX`).
    #[serde(default)]
    pub indexes: Vec<index::IndexDef>,
    /// Set when the table is a materialized view of another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<ViewDef>,
    /// The materialized views of this table, by name (in its keyspace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub views: Vec<String>,
}

/// What makes a table a materialized view (`system_schema.views`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewDef {
    /// The base table, in the view's keyspace.
    pub base_table: String,
    /// The base table's id.
    pub base_id: Uuid,
    /// `SELECT *`.
    pub include_all_columns: bool,
    /// The WHERE clause, as CQL.
    pub where_clause: String,
    /// Its restrictions on the base's primary key columns besides `IS NOT NULL`: a base row
    /// is in the view only when it meets every one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<ViewFilter>,
}

/// One restriction of a view's WHERE clause on a primary key column of its base: `column op
/// values` (one value, or the list of an `IN`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewFilter {
    /// The base column.
    pub column: String,
    /// The operator: `=`, `<`, `<=`, `>`, `>=` or `IN`.
    pub op: String,
    /// The values, protocol-serialized.
    pub values: Vec<Vec<u8>>,
}

impl Table {
    /// Partition-key columns by position.
    pub fn partition_key(&self) -> impl Iterator<Item = &Column> {
        self.key_columns(ColumnKind::PartitionKey)
    }

    /// Clustering columns by position.
    pub fn clustering(&self) -> impl Iterator<Item = &Column> {
        self.key_columns(ColumnKind::Clustering)
    }

    /// The columns of a key kind by position (0, 1, ... as CREATE TABLE numbers them),
    /// found without allocating: statements bind keys through this on every request.
    fn key_columns(&self, kind: ColumnKind) -> impl Iterator<Item = &Column> {
        (0..).map_while(move |p| {
            self.columns
                .iter()
                .find(|c| c.kind == kind && c.position == p)
        })
    }

    /// Looks a column up by exact name.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// True when the table holds counters.
    pub fn is_counter(&self) -> bool {
        self.columns.iter().any(|c| c.data_type.is_counter())
    }

    /// Columns in `SELECT *` order: partition key, clustering, then static and regular
    /// columns together in name order (Cassandra's `Columns.selectOrderIterator`).
    pub fn select_star_order(&self) -> Vec<&Column> {
        let mut out: Vec<&Column> = self.partition_key().collect();
        out.extend(self.clustering());
        let mut statics: Vec<&Column> = self
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Static)
            .collect();
        statics.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        let mut regular: Vec<&Column> = self
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Regular)
            .collect();
        regular.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        out.extend(statics);
        out.extend(regular);
        out
    }
}

/// A user-defined type's definition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TypeDef {
    /// Owning keyspace.
    pub keyspace: String,
    /// Type name.
    pub name: String,
    /// Field names, in order.
    pub field_names: Vec<String>,
    /// Field types, in order (as parsed; UDT references resolved on use).
    #[serde(with = "type_list_text")]
    pub field_types: Vec<DataType>,
}

/// A keyspace and what it holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Keyspace {
    /// Keyspace name.
    pub name: String,
    /// Replication and durable_writes.
    pub params: KeyspaceParams,
    /// Tables by name.
    pub tables: BTreeMap<String, Arc<Table>>,
    /// User types by name.
    pub types: BTreeMap<String, Arc<TypeDef>>,
    /// User-defined functions by [`functions::signature_key`] (`name(int, text)`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub functions: BTreeMap<String, Arc<FunctionDef>>,
    /// User-defined aggregates by [`functions::signature_key`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub aggregates: BTreeMap<String, Arc<AggregateDef>>,
}

/// Every keyspace the node knows, plus the schema version.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Catalog {
    /// User keyspaces (system keyspaces are generated, not stored).
    pub keyspaces: BTreeMap<String, Keyspace>,
    /// Changes with every DDL statement.
    pub version: Uuid,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            keyspaces: BTreeMap::new(),
            version: Uuid::new_v4(),
        }
    }
}

impl Catalog {
    /// Every table of the user keyspaces (the system keyspaces left out).
    pub fn user_tables(&self) -> impl Iterator<Item = &Table> {
        self.keyspaces
            .values()
            .filter(|k| !is_system_keyspace(&k.name))
            .flat_map(|k| k.tables.values().map(|t| t.as_ref()))
    }

    /// Looks a table up.
    pub fn table(&self, keyspace: &str, name: &str) -> Option<&Arc<Table>> {
        self.keyspaces.get(keyspace)?.tables.get(name)
    }

    /// Resolves a parsed type in `keyspace`: fills in UDT fields (recursively) and checks that
    /// every referenced type exists.
    ///
    /// # Errors
    /// `Unknown type ks.name` when a referenced UDT does not exist.
    pub fn resolve_type(&self, keyspace: &str, ty: &DataType) -> Result<DataType, String> {
        self.resolve_type_depth(keyspace, ty, 0)
    }

    fn resolve_type_depth(
        &self,
        keyspace: &str,
        ty: &DataType,
        depth: usize,
    ) -> Result<DataType, String> {
        // Cassandra nests tuples 32 deep; `frozen<>` adds no level.
        if depth > 32 {
            return Err("Type nesting is too deep".into());
        }
        let r = |t: &DataType| self.resolve_type_depth(keyspace, t, depth + 1);
        Ok(match ty {
            DataType::Native(_) => ty.clone(),
            // A marshal class with a CQL name is that type ('Int32Type' is int); others keep
            // Cassandra's full class names (a ReversedType's order is the table's business).
            DataType::Custom(class) => match cql::types::marshal::MarshalType::parse(class) {
                Ok(m) => {
                    let m = m.reversed().unwrap_or(&m);
                    match m.to_cql() {
                        Some(t) => r(&t)?,
                        None => DataType::Custom(m.to_string()),
                    }
                }
                Err(_) => ty.clone(),
            },
            DataType::List(t) => DataType::List(Box::new(r(t)?)),
            DataType::Set(t) => DataType::Set(Box::new(r(t)?)),
            // `VectorType.getInstance` freezes the element (a vector is one cell).
            DataType::Vector(t, n) => {
                let e = r(t)?;
                let e = if e.is_multi_cell() {
                    DataType::Frozen(Box::new(e))
                } else {
                    e
                };
                DataType::Vector(Box::new(e), *n)
            }
            DataType::Map(k, v) => DataType::Map(Box::new(r(k)?), Box::new(r(v)?)),
            DataType::Tuple(ts) => DataType::Tuple(ts.iter().map(r).collect::<Result<_, _>>()?),
            DataType::Frozen(t) => match self.resolve_type_depth(keyspace, t, depth)? {
                // A vector is already frozen (`RawVector.freeze` returns itself).
                v @ DataType::Vector(..) => v,
                inner => DataType::Frozen(Box::new(inner)),
            },
            DataType::Udt(u) => {
                let ks = u.keyspace.as_deref().unwrap_or(keyspace);
                let def = self
                    .keyspaces
                    .get(ks)
                    .and_then(|k| k.types.get(&u.name))
                    .ok_or_else(|| format!("Unknown type {ks}.{}", u.name))?;
                let mut fields = Vec::with_capacity(def.field_names.len());
                for (n, t) in def.field_names.iter().zip(&def.field_types) {
                    fields.push((n.clone(), r(t)?));
                }
                DataType::Udt(Box::new(UserType {
                    keyspace: Some(ks.to_string()),
                    name: u.name.clone(),
                    fields,
                }))
            }
        })
    }

    /// Re-resolves every column type of every table in `keyspace` (after a type changed).
    pub fn refresh_types(&mut self, keyspace: &str) {
        let Some(ks) = self.keyspaces.get(keyspace) else {
            return;
        };
        let mut updated = Vec::new();
        for (name, table) in &ks.tables {
            let mut t = (**table).clone();
            let mut changed = false;
            for c in &mut t.columns {
                if let Ok(resolved) = self.resolve_type(keyspace, &c.data_type) {
                    if resolved != c.data_type {
                        c.data_type = resolved;
                        changed = true;
                    }
                }
            }
            if changed {
                updated.push((name.clone(), Arc::new(t)));
            }
        }
        if let Some(ks) = self.keyspaces.get_mut(keyspace) {
            for (name, t) in updated {
                ks.tables.insert(name, t);
            }
        }
    }
}

/// Serde for a `DataType` as its CQL text.
mod type_text {
    use cql::types::DataType;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &DataType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::type_to_text(t))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DataType, D::Error> {
        let text = String::deserialize(d)?;
        cql::parse_data_type(&text).map_err(serde::de::Error::custom)
    }
}

/// Serde for a list of `DataType`s as CQL text.
mod type_list_text {
    use cql::types::DataType;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &[DataType], s: S) -> Result<S::Ok, S::Error> {
        let texts: Vec<String> = t.iter().map(super::type_to_text).collect();
        texts.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<DataType>, D::Error> {
        let texts = Vec::<String>::deserialize(d)?;
        texts
            .iter()
            .map(|t| cql::parse_data_type(t).map_err(serde::de::Error::custom))
            .collect()
    }
}

/// CQL text of a type for persistence: like `Display`, but UDTs keyspace-qualified so they
/// resolve again on load.
pub fn type_to_text(t: &DataType) -> String {
    t.to_string()
}
