//! The roles and their grants: what `system_auth.roles`, `role_members` and `role_permissions`
//! hold in Cassandra, kept as one value that is replaced as a whole (copy on write) and stored
//! in `auth.json` in the data directory, written atomically like the schema.

use super::permissions::AuthResource;
use cql::ast::Permission;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

const FILE_NAME: &str = "auth.json";

/// One role (a user is a role that can log in).
#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Role {
    /// Its name, case as created.
    pub name: String,
    /// `SUPERUSER = true`.
    pub is_superuser: bool,
    /// `LOGIN = true`.
    pub can_login: bool,
    /// The bcrypt hash of its password, if it has one.
    pub salted_hash: Option<String>,
    /// Roles granted to it directly.
    pub member_of: BTreeSet<String>,
    /// `OPTIONS = {...}`.
    pub options: BTreeMap<String, String>,
    /// `ACCESS TO DATACENTERS {...}`; `None` is all datacenters.
    pub datacenters: Option<BTreeSet<String>>,
}

impl std::fmt::Debug for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Role")
            .field("name", &self.name)
            .field("is_superuser", &self.is_superuser)
            .field("can_login", &self.can_login)
            .field("member_of", &self.member_of)
            .finish_non_exhaustive()
    }
}

/// Every role and every granted permission.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct AuthState {
    /// Roles by name.
    pub roles: BTreeMap<String, Role>,
    /// Granted permissions: role → resource name (`data/ks/t`) → permission keywords.
    pub permissions: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

impl AuthState {
    /// The role called `name`.
    pub fn role(&self, name: &str) -> Option<&Role> {
        self.roles.get(name)
    }

    /// `name` and the roles granted to it: directly when `recursive` is false (Cassandra's
    /// `getRoles(role, false)`), transitively otherwise. Empty when the role does not exist.
    pub fn roles_of(&self, name: &str, recursive: bool) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let Some(role) = self.roles.get(name) else {
            return out;
        };
        out.insert(role.name.clone());
        let mut todo: Vec<&str> = role.member_of.iter().map(String::as_str).collect();
        while let Some(next) = todo.pop() {
            if !self.roles.contains_key(next) || !out.insert(next.to_string()) {
                continue;
            }
            if recursive {
                if let Some(r) = self.roles.get(next) {
                    todo.extend(r.member_of.iter().map(String::as_str));
                }
            }
        }
        out
    }

    /// True when `name` or a role granted to it is a superuser.
    pub fn is_super(&self, name: &str) -> bool {
        self.roles_of(name, true)
            .iter()
            .any(|r| self.roles.get(r).is_some_and(|r| r.is_superuser))
    }

    /// Direct members of `role` (the `role_members` table).
    pub fn members_of(&self, role: &str) -> Vec<&str> {
        self.roles
            .values()
            .filter(|r| r.member_of.contains(role))
            .map(|r| r.name.as_str())
            .collect()
    }

    /// The permissions `user` holds on exactly `resource`, through any of its roles.
    /// Superusers hold every permission that applies to the resource.
    pub fn permissions_on(&self, user: &str, resource: &AuthResource) -> Vec<Permission> {
        if self.is_super(user) {
            return resource.applicable().to_vec();
        }
        let name = resource.name();
        let mut out = Vec::new();
        for role in self.roles_of(user, true) {
            if let Some(granted) = self.permissions.get(&role).and_then(|m| m.get(&name)) {
                for p in granted.iter().filter_map(|p| parse_permission(p)) {
                    if !out.contains(&p) {
                        out.push(p);
                    }
                }
            }
        }
        out
    }

    /// True when `user` holds `permission` on `resource` or one of its parents.
    pub fn has_permission(
        &self,
        user: &str,
        permission: Permission,
        resource: &AuthResource,
    ) -> bool {
        resource
            .chain()
            .iter()
            .any(|r| self.permissions_on(user, r).contains(&permission))
    }

    /// Drops every grant held by `role` and every grant on the resource named `resource`
    /// and on the resources below it.
    pub fn revoke_all(&mut self, role: Option<&str>, resource: Option<&str>) {
        if let Some(role) = role {
            self.permissions.remove(role);
        }
        if let Some(resource) = resource {
            let below = format!("{resource}/");
            for grants in self.permissions.values_mut() {
                grants.retain(|name, _| name != resource && !name.starts_with(&below));
            }
            self.permissions.retain(|_, grants| !grants.is_empty());
        }
    }
}

/// The permission spelled `keyword` (`SELECT`, ...).
pub fn parse_permission(keyword: &str) -> Option<Permission> {
    Permission::ALL
        .iter()
        .find(|(_, k)| k.eq_ignore_ascii_case(keyword))
        .map(|(p, _)| *p)
}

/// Reads `auth.json`; a data directory without one has no roles yet.
///
/// # Errors
/// When the file exists but cannot be read or parsed (never silently discarded).
pub fn load(dir: &Path) -> std::io::Result<Option<AuthState>> {
    let path = dir.join(FILE_NAME);
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `auth.json` durably (temporary file, fsync, rename, fsync of the directory).
///
/// # Errors
/// Any I/O failure; the previous file is then still intact.
pub fn save(dir: &Path, state: &AuthState) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(state).map_err(std::io::Error::other)?;
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    {
        let mut f = File::create(&tmp)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // The file holds password hashes: readable by the server's user only.
            f.set_permissions(fs::Permissions::from_mode(0o600))?;
        }
        f.write_all(&bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, dir.join(FILE_NAME))?;
    File::open(dir)?.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str, member_of: &[&str]) -> Role {
        Role {
            name: name.into(),
            member_of: member_of.iter().map(|s| s.to_string()).collect(),
            ..Role::default()
        }
    }

    fn state() -> AuthState {
        let mut s = AuthState::default();
        for r in [
            role("alice", &["reader"]),
            role("reader", &["base"]),
            role("base", &[]),
            role("admin", &[]),
        ] {
            s.roles.insert(r.name.clone(), r);
        }
        s
    }

    #[test]
    fn roles_are_inherited_transitively() {
        let s = state();
        let all: Vec<_> = s.roles_of("alice", true).into_iter().collect();
        assert_eq!(all, ["alice", "base", "reader"]);
        let direct: Vec<_> = s.roles_of("alice", false).into_iter().collect();
        assert_eq!(direct, ["alice", "reader"]);
        assert!(s.roles_of("nobody", true).is_empty());
        assert_eq!(s.members_of("reader"), ["alice"]);
    }

    #[test]
    fn permissions_follow_roles_and_resource_parents() {
        let mut s = state();
        s.permissions.entry("base".into()).or_default().insert(
            "data/ks".into(),
            ["SELECT".to_string()].into_iter().collect(),
        );
        let table = AuthResource::Table("ks".into(), "t".into());
        assert!(s.has_permission("alice", Permission::Select, &table));
        assert!(!s.has_permission("alice", Permission::Modify, &table));
        assert!(!s.has_permission("admin", Permission::Select, &table));
        s.roles.get_mut("admin").expect("admin").is_superuser = true;
        assert!(s.has_permission("admin", Permission::Modify, &table));
        s.revoke_all(None, Some("data/ks"));
        assert!(!s.has_permission("alice", Permission::Select, &table));
    }

    #[test]
    fn state_round_trips_through_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(load(dir.path()).expect("load").is_none());
        let s = state();
        save(dir.path(), &s).expect("save");
        assert_eq!(load(dir.path()).expect("load"), Some(s));
    }
}
