//! The schema the null server keeps: keyspaces and tables created through CQL, so that
//! prepared statements get the right bind and result metadata and the drivers' schema
//! queries see them. No row is ever kept.

use cql::ast::{CreateKeyspace, CreateTable, OptionValue, QualifiedName};
use cql::types::DataType;
use std::collections::BTreeMap;
use std::sync::RwLock;

/// A column's role in its table, as `system_schema.columns` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A partition key column.
    PartitionKey,
    /// A clustering column.
    Clustering,
    /// A static column.
    Static,
    /// A regular column.
    Regular,
}

impl Kind {
    /// The name `system_schema.columns.kind` gives it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::PartitionKey => "partition_key",
            Kind::Clustering => "clustering",
            Kind::Static => "static",
            Kind::Regular => "regular",
        }
    }
}

/// A column of a table.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    /// Its name.
    pub(crate) name: String,
    /// Its type.
    pub(crate) data_type: DataType,
    /// Its role.
    pub(crate) kind: Kind,
    /// Its position among the key columns of its kind (-1 for the others).
    pub(crate) position: i32,
}

/// A table: its columns in `CREATE TABLE` order.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    /// Its keyspace.
    pub(crate) keyspace: String,
    /// Its name.
    pub(crate) name: String,
    /// Its columns.
    pub(crate) columns: Vec<Column>,
}

impl Table {
    /// The column named `name`.
    pub(crate) fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The partition key columns, in key order.
    pub(crate) fn partition_key(&self) -> impl Iterator<Item = &Column> {
        let mut key: Vec<&Column> = self
            .columns
            .iter()
            .filter(|c| c.kind == Kind::PartitionKey)
            .collect();
        key.sort_by_key(|c| c.position);
        key.into_iter()
    }

    /// How many columns make the primary key.
    pub(crate) fn primary_key_len(&self) -> usize {
        self.columns
            .iter()
            .filter(|c| matches!(c.kind, Kind::PartitionKey | Kind::Clustering))
            .count()
    }
}

/// A keyspace: its replication options and tables.
#[derive(Debug, Clone, Default)]
pub(crate) struct Keyspace {
    /// `replication`, as `system_schema.keyspaces` shows it.
    pub(crate) replication: Vec<(String, String)>,
    /// Its tables by name.
    pub(crate) tables: BTreeMap<String, Table>,
}

/// Why a schema change was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SchemaError {
    /// The keyspace does not exist.
    NoKeyspace(String),
    /// The keyspace or table exists already.
    Exists {
        /// The keyspace.
        keyspace: String,
        /// The table (empty for the keyspace itself).
        table: String,
    },
    /// A key column is not declared.
    UnknownKeyColumn(String),
}

/// Every keyspace, behind one lock (schema changes are rare).
#[derive(Default)]
pub(crate) struct Catalog {
    keyspaces: RwLock<BTreeMap<String, Keyspace>>,
}

fn option_text(v: &OptionValue) -> String {
    match v {
        OptionValue::String(s) | OptionValue::Constant(s) | OptionValue::Identifier(s) => s.clone(),
        OptionValue::Map(_) => String::new(),
    }
}

impl Catalog {
    /// Runs `f` on the keyspaces.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&BTreeMap<String, Keyspace>) -> T) -> T {
        f(&self.keyspaces.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The table `name` (in `default` when it names no keyspace).
    pub(crate) fn table(&self, name: &QualifiedName, default: Option<&str>) -> Option<Table> {
        let keyspace = name.keyspace.as_deref().or(default)?;
        self.read(|k| k.get(keyspace)?.tables.get(&name.name).cloned())
    }

    /// Creates a keyspace; `Ok(false)` when it existed and `IF NOT EXISTS` was given.
    pub(crate) fn create_keyspace(&self, ks: &CreateKeyspace) -> Result<bool, SchemaError> {
        let mut keyspaces = self.keyspaces.write().unwrap_or_else(|p| p.into_inner());
        if keyspaces.contains_key(&ks.name) {
            return if ks.if_not_exists {
                Ok(false)
            } else {
                Err(SchemaError::Exists {
                    keyspace: ks.name.clone(),
                    table: String::new(),
                })
            };
        }
        let mut replication = Vec::new();
        for (key, value) in &ks.options {
            if let ("replication", OptionValue::Map(entries)) = (key.as_str(), value) {
                for (k, v) in entries {
                    let (k, mut v) = (option_text(k), option_text(v));
                    if k == "class" && !v.contains('.') {
                        v = format!("org.apache.cassandra.locator.{v}");
                    }
                    replication.push((k, v));
                }
            }
        }
        keyspaces.insert(
            ks.name.clone(),
            Keyspace {
                replication,
                tables: BTreeMap::new(),
            },
        );
        Ok(true)
    }

    /// Drops a keyspace; whether it existed.
    pub(crate) fn drop_keyspace(&self, name: &str) -> bool {
        let mut keyspaces = self.keyspaces.write().unwrap_or_else(|p| p.into_inner());
        keyspaces.remove(name).is_some()
    }

    /// Creates a table; `Ok(false)` when it existed and `IF NOT EXISTS` was given.
    pub(crate) fn create_table(
        &self,
        create: &CreateTable,
        default: Option<&str>,
    ) -> Result<(String, bool), SchemaError> {
        let keyspace = create
            .name
            .keyspace
            .as_deref()
            .or(default)
            .unwrap_or_default()
            .to_string();
        let mut keyspaces = self.keyspaces.write().unwrap_or_else(|p| p.into_inner());
        let Some(ks) = keyspaces.get_mut(&keyspace) else {
            return Err(SchemaError::NoKeyspace(keyspace));
        };
        if ks.tables.contains_key(&create.name.name) {
            return if create.if_not_exists {
                Ok((keyspace, false))
            } else {
                Err(SchemaError::Exists {
                    keyspace,
                    table: create.name.name.clone(),
                })
            };
        }
        for key in create.partition_key.iter().chain(&create.clustering_key) {
            if !create.columns.iter().any(|c| &c.name == key) {
                return Err(SchemaError::UnknownKeyColumn(key.clone()));
            }
        }
        let position = |keys: &[String], name: &str| keys.iter().position(|k| k == name);
        let columns = create
            .columns
            .iter()
            .map(|c| {
                let (kind, at) = if let Some(i) = position(&create.partition_key, &c.name) {
                    (Kind::PartitionKey, i as i32)
                } else if let Some(i) = position(&create.clustering_key, &c.name) {
                    (Kind::Clustering, i as i32)
                } else if c.is_static {
                    (Kind::Static, -1)
                } else {
                    (Kind::Regular, -1)
                };
                Column {
                    name: c.name.clone(),
                    data_type: c.data_type.clone(),
                    kind,
                    position: at,
                }
            })
            .collect();
        let table = Table {
            keyspace: keyspace.clone(),
            name: create.name.name.clone(),
            columns,
        };
        ks.tables.insert(create.name.name.clone(), table);
        Ok((keyspace, true))
    }

    /// Drops a table; whether it existed.
    pub(crate) fn drop_table(&self, keyspace: &str, name: &str) -> bool {
        let mut keyspaces = self.keyspaces.write().unwrap_or_else(|p| p.into_inner());
        keyspaces
            .get_mut(keyspace)
            .is_some_and(|ks| ks.tables.remove(name).is_some())
    }
}
