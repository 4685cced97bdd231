//! Resources that permissions are granted on (Cassandra's `DataResource` and `RoleResource`)
//! and the permission each statement needs (Cassandra's `checkAccess`/`authorize`).

use crate::error::QueryError;
use crate::schema::{self, Catalog};
use cql::ast::{Permission, QualifiedName, Resource, Statement};
use cql::types::DataType;
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
    /// `ALL FUNCTIONS` (`functions`).
    AllFunctions,
    /// `ALL FUNCTIONS IN KEYSPACE ks` (`functions/ks`).
    FunctionsIn(String),
    /// `FUNCTION ks.f(int, text)` (`functions/ks/f[int^text]`): a function or an aggregate.
    Function {
        /// Its keyspace.
        keyspace: String,
        /// Its name.
        name: String,
        /// Its argument types as CQL prints them (not frozen).
        args: Vec<String>,
    },
}

const DATA_PERMISSIONS: &[Permission] = &[
    Permission::Create,
    Permission::Alter,
    Permission::Drop,
    Permission::Select,
    Permission::Modify,
    Permission::Authorize,
    Permission::Unmask,
    Permission::SelectMasked,
];
const TABLE_PERMISSIONS: &[Permission] = &[
    Permission::Alter,
    Permission::Drop,
    Permission::Select,
    Permission::Modify,
    Permission::Authorize,
    Permission::Unmask,
    Permission::SelectMasked,
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
const FUNCTIONS_PERMISSIONS: &[Permission] = &[
    Permission::Create,
    Permission::Alter,
    Permission::Drop,
    Permission::Authorize,
    Permission::Execute,
];
const FUNCTION_PERMISSIONS: &[Permission] = &[
    Permission::Alter,
    Permission::Drop,
    Permission::Authorize,
    Permission::Execute,
];

impl AuthResource {
    /// The function resource of a function or aggregate `keyspace.name(arg_types)`.
    pub fn function(keyspace: &str, name: &str, arg_types: &[DataType]) -> AuthResource {
        AuthResource::Function {
            keyspace: keyspace.to_string(),
            name: name.to_string(),
            args: arg_types.iter().map(|t| t.unfrozen().to_string()).collect(),
        }
    }

    /// The stored name, as in `system_auth.role_permissions.resource`.
    pub fn name(&self) -> String {
        match self {
            AuthResource::AllKeyspaces => "data".into(),
            AuthResource::Keyspace(ks) => format!("data/{ks}"),
            AuthResource::Table(ks, t) => format!("data/{ks}/{t}"),
            AuthResource::AllRoles => "roles".into(),
            AuthResource::Role(r) => format!("roles/{r}"),
            AuthResource::AllFunctions => "functions".into(),
            AuthResource::FunctionsIn(ks) => format!("functions/{ks}"),
            AuthResource::Function {
                keyspace,
                name,
                args,
            } => format!("functions/{keyspace}/{name}[{}]", args.join("^")),
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
            ("functions", None, None) => AuthResource::AllFunctions,
            ("functions", Some(ks), None) => AuthResource::FunctionsIn(ks.into()),
            ("functions", Some(ks), Some(f)) => {
                let (name, args) = f.strip_suffix(']')?.split_once('[')?;
                AuthResource::Function {
                    keyspace: ks.into(),
                    name: name.into(),
                    args: if args.is_empty() {
                        Vec::new()
                    } else {
                        args.split('^').map(str::to_string).collect()
                    },
                }
            }
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
            AuthResource::Function { keyspace, .. } => {
                Some(AuthResource::FunctionsIn(keyspace.clone()))
            }
            AuthResource::FunctionsIn(_) => Some(AuthResource::AllFunctions),
            AuthResource::AllKeyspaces | AuthResource::AllRoles | AuthResource::AllFunctions => {
                None
            }
        }
    }

    /// The permissions that can be granted on this kind of resource.
    pub fn applicable(&self) -> &'static [Permission] {
        match self {
            AuthResource::AllKeyspaces | AuthResource::Keyspace(_) => DATA_PERMISSIONS,
            AuthResource::Table(..) => TABLE_PERMISSIONS,
            AuthResource::AllRoles => ALL_ROLES_PERMISSIONS,
            AuthResource::Role(_) => ROLE_PERMISSIONS,
            AuthResource::AllFunctions | AuthResource::FunctionsIn(_) => FUNCTIONS_PERMISSIONS,
            AuthResource::Function { .. } => FUNCTION_PERMISSIONS,
        }
    }

    /// Cassandra's class name for the resource kind, used in error messages.
    fn kind_name(&self) -> &'static str {
        match self {
            AuthResource::AllKeyspaces | AuthResource::Keyspace(_) | AuthResource::Table(..) => {
                "DataResource"
            }
            AuthResource::AllRoles | AuthResource::Role(_) => "RoleResource",
            AuthResource::AllFunctions
            | AuthResource::FunctionsIn(_)
            | AuthResource::Function { .. } => "FunctionResource",
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
            Resource::AllFunctions => AuthResource::AllFunctions,
            Resource::AllFunctionsInKeyspace(ks) => AuthResource::FunctionsIn(ks.clone()),
            Resource::Function { name, args } => {
                // FunctionResource.functionFromCql: the keyspace defaults to the session's.
                let ks = name.keyspace.as_deref().or(keyspace).ok_or_else(|| {
                    QueryError::invalid(
                        "In this context function name must be explicitly qualified by a keyspace",
                    )
                })?;
                AuthResource::function(ks, &name.name, args)
            }
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
            AuthResource::AllFunctions => true,
            AuthResource::FunctionsIn(ks) => catalog.keyspaces.contains_key(ks),
            AuthResource::Function {
                keyspace,
                name,
                args,
            } => catalog.keyspaces.get(keyspace).is_some_and(|k| {
                let same = |types: &[DataType]| {
                    types.len() == args.len()
                        && types
                            .iter()
                            .zip(args)
                            .all(|(t, a)| t.unfrozen().to_string() == *a)
                };
                k.functions_named(name).any(|f| same(&f.arg_types))
                    || k.aggregates_named(name).any(|a| same(&a.arg_types))
            }),
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
            AuthResource::AllFunctions => f.write_str("<all functions>"),
            AuthResource::FunctionsIn(ks) => write!(f, "<all functions in {ks}>"),
            AuthResource::Function {
                keyspace,
                name,
                args,
            } => write!(f, "<function {keyspace}.{name}({})>", args.join(", ")),
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
    let functions_in = |name: &QualifiedName| -> Option<(String, &schema::Keyspace)> {
        let ks = name.keyspace.as_deref().or(session_keyspace)?;
        Some((ks.to_string(), catalog.keyspaces.get(ks)?))
    };
    let creating = |name: &QualifiedName, replace: bool, types: &[DataType], aggregate: bool| {
        let Some((ks, k)) = functions_in(name) else {
            return Vec::new();
        };
        let exists = if aggregate {
            k.aggregate(&name.name, types).is_some()
        } else {
            k.function(&name.name, types).is_some()
        };
        if replace && exists {
            vec![(
                Permission::Alter,
                AuthResource::function(&ks, &name.name, types),
            )]
        } else {
            vec![(Permission::Create, AuthResource::FunctionsIn(ks))]
        }
    };
    let dropping = |name: &QualifiedName, types: Option<&[DataType]>, aggregate: bool| {
        let Some((ks, k)) = functions_in(name) else {
            return Vec::new();
        };
        let found: Vec<Vec<DataType>> = if aggregate {
            k.aggregates_named(&name.name)
                .map(|a| a.arg_types.clone())
                .collect()
        } else {
            k.functions_named(&name.name)
                .map(|f| f.arg_types.clone())
                .collect()
        };
        let chosen = match types {
            Some(t) => found
                .into_iter()
                .find(|f| schema::functions::types_match(f, t)),
            None if found.len() == 1 => found.into_iter().next(),
            None => None,
        };
        match chosen {
            Some(t) => vec![(
                Permission::Drop,
                AuthResource::function(&ks, &name.name, &t),
            )],
            None => Vec::new(),
        }
    };
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
        // CreateFunctionStatement.authorize: ALTER on a function OR REPLACE replaces, else
        // CREATE on the keyspace's functions.
        Statement::CreateFunction(s) => {
            let types: Vec<DataType> = s.args.iter().map(|(_, t)| t.clone()).collect();
            creating(&s.name, s.or_replace, &types, false)
        }
        Statement::CreateAggregate(s) => creating(&s.name, s.or_replace, &s.arg_types, true),
        // DropFunctionStatement.authorize: DROP on the function dropped.
        Statement::DropFunction(s) => dropping(&s.name, s.arg_types.as_deref(), false),
        Statement::DropAggregate(s) => dropping(&s.name, s.arg_types.as_deref(), true),
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
