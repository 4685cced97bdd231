//! The prepared-statement cache: ids are the MD5 of keyspace + query text, as Cassandra derives
//! them, so a driver re-preparing after an eviction or restart gets the same id back.

use crate::planner::CachedPlan;
use cql::ast::{QualifiedName, Statement};
use cql::response::ColumnSpec;
use cql::response::{SchemaChange, SchemaChangeTarget, SchemaChangeType};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, RwLock};

/// A prepared statement.
#[derive(Debug)]
pub struct PreparedStatement {
    /// The id handed to the client.
    pub id: [u8; 16],
    /// The query text.
    pub query: String,
    /// The session keyspace at PREPARE time.
    pub keyspace: Option<Arc<str>>,
    /// The parsed statement.
    pub statement: Statement,
    /// Bind-marker specs, in marker order.
    pub markers: Vec<ColumnSpec>,
    /// Result columns (empty for non-SELECT statements).
    pub result_columns: Vec<ColumnSpec>,
    /// Marker index of each partition-key component, when every one is a plain marker.
    pub pk_indexes: Vec<u16>,
    /// The plan of the last execution, reused while the schema is unchanged.
    pub(crate) plan: RwLock<Option<Arc<CachedPlan>>>,
}

impl PreparedStatement {
    /// The stored plan, if any (the caller checks it is still valid).
    pub(crate) fn cached_plan(&self) -> Option<Arc<CachedPlan>> {
        self.plan.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stores a fresh plan.
    pub(crate) fn set_cached_plan(&self, plan: Arc<CachedPlan>) {
        *self.plan.write().unwrap_or_else(|p| p.into_inner()) = Some(plan);
    }
}

/// The tables a statement reads or writes.
fn statement_tables(stmt: &Statement) -> Vec<QualifiedName> {
    match stmt {
        Statement::Select(s) => vec![s.table.clone()],
        Statement::Insert(s) => vec![s.table.clone()],
        Statement::Update(s) => vec![s.table.clone()],
        Statement::Delete(s) => vec![s.table.clone()],
        Statement::Batch(b) => b.statements.iter().flat_map(statement_tables).collect(),
        _ => Vec::new(),
    }
}

/// Cassandra's statement id: MD5 of the keyspace (when set) followed by the query text.
pub fn statement_id(keyspace: Option<&str>, query: &str) -> [u8; 16] {
    let mut ctx = md5::Context::new();
    if let Some(ks) = keyspace {
        ctx.consume(ks.as_bytes());
    }
    ctx.consume(query.as_bytes());
    ctx.compute().0
}

/// Statements by id (a fast hash: ids are MD5 digests), plus ids in insertion order for
/// eviction.
type Entries = (
    HashMap<[u8; 16], Arc<PreparedStatement>, foldhash::fast::RandomState>,
    VecDeque<[u8; 16]>,
);

/// A bounded map from id to prepared statement; the oldest entry is evicted first.
pub struct PreparedCache {
    capacity: usize,
    inner: RwLock<Entries>,
}

impl PreparedCache {
    /// A cache holding at most `capacity` statements.
    pub fn new(capacity: usize) -> PreparedCache {
        PreparedCache {
            capacity: capacity.max(1),
            inner: RwLock::new((HashMap::default(), VecDeque::new())),
        }
    }

    /// Looks an id up.
    pub fn get(&self, id: &[u8]) -> Option<Arc<PreparedStatement>> {
        let key: [u8; 16] = id.try_into().ok()?;
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner.0.get(&key).cloned()
    }

    /// Stores a statement, evicting the oldest when full.
    pub fn insert(&self, stmt: Arc<PreparedStatement>) {
        let mut inner = self.inner.write().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *inner;
        if map.insert(stmt.id, stmt.clone()).is_none() {
            order.push_back(stmt.id);
            while map.len() > self.capacity {
                match order.pop_front() {
                    Some(old) => {
                        map.remove(&old);
                    }
                    None => break,
                }
            }
        }
    }

    /// Drops every statement (after schema changes that alter result shapes).
    pub fn clear(&self) {
        let mut inner = self.inner.write().unwrap_or_else(|p| p.into_inner());
        inner.0.clear();
        inner.1.clear();
    }

    /// Drops the statements a schema change may have made stale (those on an altered or
    /// dropped table, type or keyspace), as Cassandra does; creations invalidate nothing, so
    /// concurrent DDL does not force every client to re-prepare.
    pub fn invalidate(&self, change: &SchemaChange) {
        if matches!(change.change_type, SchemaChangeType::Created) {
            return;
        }
        let (ks, table) = match &change.target {
            SchemaChangeTarget::Keyspace(ks) => (ks.as_str(), None),
            SchemaChangeTarget::Table { keyspace, name } => {
                (keyspace.as_str(), Some(name.as_str()))
            }
            // A changed type can change any of its keyspace's tables.
            SchemaChangeTarget::Type { keyspace, .. }
            | SchemaChangeTarget::Function { keyspace, .. }
            | SchemaChangeTarget::Aggregate { keyspace, .. } => (keyspace.as_str(), None),
        };
        let mut inner = self.inner.write().unwrap_or_else(|p| p.into_inner());
        let (map, order) = &mut *inner;
        map.retain(|_, p| {
            !statement_tables(&p.statement).iter().any(|t| {
                let t_ks = t.keyspace.as_deref().or(p.keyspace.as_deref());
                t_ks == Some(ks) && table.is_none_or(|name| name == t.name)
            })
        });
        order.retain(|id| map.contains_key(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_deterministic_and_keyspace_scoped() {
        let a = statement_id(Some("ks"), "SELECT * FROM t");
        assert_eq!(a, statement_id(Some("ks"), "SELECT * FROM t"));
        assert_ne!(a, statement_id(Some("ks2"), "SELECT * FROM t"));
        assert_ne!(a, statement_id(None, "SELECT * FROM t"));
    }
}
