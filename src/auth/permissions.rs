//! Resources that permissions are granted on (Cassandra's `DataResource` and `RoleResource`)
//! and the permission each statement needs (Cassandra's `checkAccess`/`authorize`).

use crate::error::QueryError;
use crate::schema::{self, Catalog};
use cql::ast::{Permission, QualifiedName, Resource, Statement};
use std::fmt;

/// Something a permission is granted on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthResource {
    /// `ALL KEYSPACES` (`data`).
    AllKeyspaces,
    /// `KEYSPACE ks` (`data/ks`).
    Keyspace(String),
    /// `TABLE ks.t` (`data/ks/t`).
    Table(String, String),
    /// `ALL ROLES` (`roles`).
    AllRoles,
    /// `ROLE r` (`roles/r`).
    Role(String),
}

const DATA_PERMISSIONS: &[Permission] = &[
    Permission::Create,
    Permission::Alter,
    Permission::Drop,
    Permission::Select,
    Permission::Modify,
    Permission::Authorize,
];
const TABLE_PERMISSIONS: &[Permission] = &[
    Permission::Alter,
    Permission::Drop,
    Permission::Select,
    Permission::Modify,
    Permission::Authorize,
];
const ALL_ROLES_PERMISSIONS: &[Permission] = &[
    Permission::Create,
    Permission::Alter,
    Permission::Drop,
    Permission::Authorize,
    Permission::Describe,
];
const ROLE_PERMISSIONS: &[Permission] =
    &[Permission::Alter, Permission::Drop, Permission::Authorize];

impl AuthResource {
    /// The stored name, as in `system_auth.role_permissions.resource`.
    pub fn name(&self) -> String {
        match self {
            AuthResource::AllKeyspaces => "data".into(),
            AuthResource::Keyspace(ks) => format!("data/{ks}"),
            AuthResource::Table(ks, t) => format!("data/{ks}/{t}"),
            AuthResource::AllRoles => "roles".into(),
            AuthResource::Role(r) => format!("roles/{r}"),
        }
    }

    /// Parses a stored name back.
    pub fn from_name(name: &str) -> Option<AuthResource> {
        let mut parts = name.splitn(3, '/');
        Some(match (parts.next()?, parts.next(), parts.next()) {
            ("data", None, None) => AuthResource::AllKeyspaces,
            ("data", Some(ks), None) => AuthResource::Keyspace(ks.into()),
            ("data", Some(ks), Some(t)) => AuthResource::Table(ks.into(), t.into()),
            ("roles", None, None) => AuthResource::AllRoles,
            ("roles", Some(r), None) => AuthResource::Role(r.into()),
            _ => return None,
        })
    }

    /// The resource and its parents, most specific first (Cassandra's `Resources.chain`).
    pub fn chain(&self) -> Vec<AuthResource> {
        let mut out = vec![self.clone()];
        let mut cur = self.clone();
        while let Some(parent) = cur.parent() {
            out.push(parent.clone());
            cur = parent;
        }
        out
    }

    /// The enclosing resource.
    pub fn parent(&self) -> Option<AuthResource> {
        match self {
            AuthResource::Table(ks, _) => Some(AuthResource::Keyspace(ks.clone())),
            AuthResource::Keyspace(_) => Some(AuthResource::AllKeyspaces),
            AuthResource::Role(_) => Some(AuthResource::AllRoles),
            AuthResource::AllKeyspaces | AuthResource::AllRoles => None,
        }
    }

    /// The permissions that can be granted on this kind of resource.
    pub fn applicable(&self) -> &'static [Permission] {
        match self {
            AuthResource::AllKeyspaces | AuthResource::Keyspace(_) => DATA_PERMISSIONS,
            AuthResource::Table(..) => TABLE_PERMISSIONS,
            AuthResource::AllRoles => ALL_ROLES_PERMISSIONS,
            AuthResource::Role(_) => ROLE_PERMISSIONS,
        }
    }

    /// Cassandra's class name for the resource kind, used in error messages.
    fn kind_name(&self) -> &'static str {
        match self {
            AuthResource::AllKeyspaces | AuthResource::Keyspace(_) | AuthResource::Table(..) => {
                "DataResource"
            }
            AuthResource::AllRoles | AuthResource::Role(_) => "RoleResource",
        }
    }

    /// Resolves a `GRANT`/`REVOKE`/`LIST` resource; an unqualified table takes the session's
    /// keyspace (Cassandra's `maybeCorrectResource`).
    ///
    /// # Errors
    /// Invalid for resources ringdb does not have (functions, MBeans) or a table without a
    /// keyspace.
    pub fn from_ast(resource: &Resource, keyspace: Option<&str>) -> Result<Self, QueryError> {
        Ok(match resource {
            Resource::AllKeyspaces => AuthResource::AllKeyspaces,
            Resource::Keyspace(ks) => AuthResource::Keyspace(ks.clone()),
            Resource::Table(name) => {
                let ks = name.keyspace.as_deref().or(keyspace).ok_or_else(|| {
                    QueryError::invalid(
                        "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename",
                    )
                })?;
                AuthResource::Table(ks.to_string(), name.name.clone())
            }
            Resource::AllRoles => AuthResource::AllRoles,
            Resource::Role(r) => AuthResource::Role(r.clone()),
            other => {
                return Err(QueryError::invalid(format!(
                    "Permissions on {other} are not supported by ringdb"
                )))
            }
        })
    }

    /// True when the keyspace, table or role exists.
    pub fn exists(&self, catalog: &Catalog, role_exists: impl Fn(&str) -> bool) -> bool {
        match self {
            AuthResource::AllKeyspaces | AuthResource::AllRoles => true,
            AuthResource::Keyspace(ks) => catalog.keyspaces.contains_key(ks),
            AuthResource::Table(ks, t) => catalog.table(ks, t).is_some(),
            AuthResource::Role(r) => role_exists(r),
        }
    }

    /// Keeps the requested permissions that apply here; none applying is the SyntaxError
    /// Cassandra's grammar raises.
    ///
    /// # Errors
    /// Syntax when no requested permission applies to this resource.
    pub fn filter(&self, requested: &[Permission]) -> Result<Vec<Permission>, QueryError> {
        let kept: Vec<Permission> = requested
            .iter()
            .copied()
            .filter(|p| self.applicable().contains(p))
            .collect();
        if kept.is_empty() {
            return Err(QueryError::Syntax(format!(
                "Resource type {} does not support any of the requested permissions",
                self.kind_name()
            )));
        }
        Ok(kept)
    }
}

impl fmt::Display for AuthResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthResource::AllKeyspaces => f.write_str("<all keyspaces>"),
            AuthResource::Keyspace(ks) => write!(f, "<keyspace {ks}>"),
            AuthResource::Table(ks, t) => write!(f, "<table {ks}.{t}>"),
            AuthResource::AllRoles => f.write_str("<all roles>"),
            AuthResource::Role(r) => write!(f, "<role {r}>"),
        }
    }
}

/// The permissions a data statement needs, on which resources. Statements whose keyspace or
/// table does not exist need nothing here: execution then reports them as Cassandra does
/// (validation runs before authorization there).
pub fn required(
    stmt: &Statement,
    catalog: &Catalog,
    session_keyspace: Option<&str>,
) -> Vec<(Permission, AuthResource)> {
    let table = |name: &QualifiedName| -> Option<AuthResource> {
        let ks = name.keyspace.as_deref().or(session_keyspace)?;
        catalog.table(ks, &name.name)?;
        Some(AuthResource::Table(ks.to_string(), name.name.clone()))
    };
    let keyspace = |name: Option<&str>| -> Option<AuthResource> {
        let ks = name.or(session_keyspace)?;
        catalog
            .keyspaces
            .contains_key(ks)
            .then(|| AuthResource::Keyspace(ks.to_string()))
    };
    let on = |p: Permission, r: Option<AuthResource>| r.map(|r| (p, r)).into_iter().collect();
    match stmt {
        Statement::Select(s) => match table(&s.table) {
            // The system tables drivers read on connect stay readable for every logged-in
            // role; system_auth is guarded like any other keyspace.
            Some(AuthResource::Table(ks, _)) if is_readable_system_keyspace(&ks) => Vec::new(),
            t => on(Permission::Select, t),
        },
        Statement::Insert(s) => {
            let mut out = on(Permission::Modify, table(&s.table));
            if s.if_not_exists {
                out.extend(on(Permission::Select, table(&s.table)));
            }
            out
        }
        Statement::Update(s) => {
            let mut out = on(Permission::Modify, table(&s.table));
            if s.conditions.is_some() {
                out.extend(on(Permission::Select, table(&s.table)));
            }
            out
        }
        Statement::Delete(s) => {
            let mut out = on(Permission::Modify, table(&s.table));
            if s.conditions.is_some() {
                out.extend(on(Permission::Select, table(&s.table)));
            }
            out
        }
        Statement::Batch(b) => b
            .statements
            .iter()
            .flat_map(|s| required(s, catalog, session_keyspace))
            .collect(),
        Statement::Truncate(name) => on(Permission::Modify, table(name)),
        Statement::CreateKeyspace(_) => vec![(Permission::Create, AuthResource::AllKeyspaces)],
        Statement::AlterKeyspace(s) => on(Permission::Alter, keyspace(Some(&s.name))),
        Statement::DropKeyspace(s) => on(Permission::Drop, keyspace(Some(&s.name))),
        Statement::CreateTable(s) => on(Permission::Create, keyspace(s.name.keyspace.as_deref())),
        Statement::AlterTable(s) => on(Permission::Alter, table(&s.name)),
        Statement::AlterView(s) => on(Permission::Alter, table(&s.name)),
        Statement::DropTable(s) => on(Permission::Drop, table(&s.name)),
        Statement::CreateType(s) => on(Permission::Create, keyspace(s.name.keyspace.as_deref())),
        Statement::AlterType(s) => on(Permission::Alter, keyspace(s.name.keyspace.as_deref())),
        Statement::DropType(s) => on(Permission::Drop, keyspace(s.name.keyspace.as_deref())),
        // Cassandra asks CREATE/DROP on the keyspace's functions resource, which this auth
        // model does not have; the keyspace (its parent) stands in for it.
        Statement::CreateFunction(s) => {
            on(Permission::Create, keyspace(s.name.keyspace.as_deref()))
        }
        Statement::CreateAggregate(s) => {
            on(Permission::Create, keyspace(s.name.keyspace.as_deref()))
        }
        Statement::DropFunction(s) => on(Permission::Drop, keyspace(s.name.keyspace.as_deref())),
        Statement::DropAggregate(s) => on(Permission::Drop, keyspace(s.name.keyspace.as_deref())),
        Statement::CreateIndex(s) => on(Permission::Alter, table(&s.table)),
        // DropIndexStatement.authorize: ALTER on the indexed table.
        Statement::DropIndex(s) => {
            let indexed = s
                .name
                .keyspace
                .as_deref()
                .or(session_keyspace)
                .and_then(|ks| schema::index::find_index(catalog, ks, &s.name.name))
                .map(|(t, _)| AuthResource::Table(t.keyspace.clone(), t.name.clone()));
            on(Permission::Alter, indexed)
        }
        _ => Vec::new(),
    }
}

/// System keyspaces every logged-in role may read (Cassandra's `READABLE_SYSTEM_RESOURCES`,
/// widened to whole keyspaces since ringdb's system tables hold nothing secret).
fn is_readable_system_keyspace(ks: &str) -> bool {
    schema::is_system_keyspace(ks) && ks != "system_auth"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_chains_go_up() {
        for r in [
            AuthResource::AllKeyspaces,
            AuthResource::Keyspace("ks".into()),
            AuthResource::Table("ks".into(), "t".into()),
            AuthResource::AllRoles,
            AuthResource::Role("r".into()),
        ] {
            assert_eq!(AuthResource::from_name(&r.name()), Some(r.clone()));
        }
        let t = AuthResource::Table("ks".into(), "t".into());
        assert_eq!(t.to_string(), "<table ks.t>");
        let chain: Vec<String> = t.chain().iter().map(|r| r.name()).collect();
        assert_eq!(chain, ["data/ks/t", "data/ks", "data"]);
    }

    #[test]
    fn inapplicable_permissions_are_filtered() {
        let t = AuthResource::Table("ks".into(), "t".into());
        assert_eq!(
            t.filter(&[Permission::Create, Permission::Select])
                .expect("ok"),
            [Permission::Select]
        );
        assert!(t.filter(&[Permission::Describe]).is_err());
        assert!(AuthResource::AllRoles
            .filter(&[Permission::Describe])
            .is_ok());
    }
}
