//! Authentication, roles and permissions, as Cassandra's `PasswordAuthenticator`,
//! `CassandraRoleManager` and `CassandraAuthorizer` do them.
//!
//! - [`password`]: bcrypt hashes and the SASL PLAIN token.
//! - [`roles`]: [`AuthState`] (roles, memberships, grants) and its file `auth.json`.
//! - [`permissions`]: the resources grants apply to and what each statement needs.
//! - [`statements`]: CREATE/ALTER/DROP ROLE and USER, GRANT/REVOKE, LIST.
//!
//! Every request is checked against the current [`AuthState`] (an `Arc` swapped on each
//! change), so a GRANT or REVOKE takes effect on sessions that are already open. Passwords are
//! never stored or logged; only their salted bcrypt hashes are kept.

pub mod password;
pub mod permissions;
pub mod roles;
pub mod statements;

pub use permissions::AuthResource;
pub use roles::{AuthState, Role};

use crate::config::{Authenticator, Authorizer, Config, DEFAULT_SUPERUSER};
use crate::context::SessionContext;
use crate::error::QueryError;
use crate::schema::Catalog;
use cql::ast::{Permission, Statement};
use cql::response::ResultBody;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use tracing::{info, warn};

/// The class name sent in AUTHENTICATE (drivers pick their SASL mechanism from it).
pub const PASSWORD_AUTHENTICATOR: &str = "org.apache.cassandra.auth.PasswordAuthenticator";

/// Why the security state could not be opened or changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// `auth.json` could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Hashing a password failed (the random source).
    #[error("password hashing failed: {0}")]
    Hash(String),
}

/// Replicates changes to roles and permissions through the cluster's metadata group (so
/// roles and password hashes reach other nodes only that way).
pub trait AuthLog: Send + Sync {
    /// The version of the replicated state; read before the state a change is planned on.
    fn version(&self) -> u64;

    /// Replicates `next` in place of the state of version `expected`. Blocks until this node
    /// has installed it; false when another change got in first (the caller plans again).
    ///
    /// # Errors
    /// Unavailable without a majority of the metadata group.
    fn propose(&self, expected: u64, next: &AuthState) -> Result<bool, QueryError>;
}

/// The node's authenticator, authorizer and role store.
pub struct Auth {
    authenticator: Authenticator,
    authorizer: Authorizer,
    dir: PathBuf,
    state: RwLock<Arc<AuthState>>,
    /// Serialises changes so each is persisted before the next starts.
    writes: Mutex<()>,
    /// The cluster's log of changes, once the cluster started.
    log: std::sync::OnceLock<Arc<dyn AuthLog>>,
}

impl Auth {
    /// Loads the roles from `config.data_dir`; on first start (no role at all) creates the
    /// superuser from `superuser_name`/`superuser_password`.
    ///
    /// # Errors
    /// When `auth.json` is unreadable or cannot be written.
    pub fn open(config: &Config) -> Result<Auth, AuthError> {
        let dir = config.data_dir.clone();
        let io = |source| AuthError::Io {
            path: dir.clone(),
            source,
        };
        let loaded = roles::load(&dir).map_err(io)?;
        let password_auth = config.authenticator == Authenticator::PasswordAuthenticator;
        let default_password = config.superuser_password.expose() == DEFAULT_SUPERUSER;
        let state = match loaded {
            Some(state) if !state.roles.is_empty() => state,
            _ => {
                let mut state = AuthState::default();
                let name = config.superuser_name.clone();
                state.roles.insert(
                    name.clone(),
                    Role {
                        name: name.clone(),
                        is_superuser: true,
                        can_login: true,
                        salted_hash: Some(password::hash(config.superuser_password.expose())?),
                        ..Role::default()
                    },
                );
                roles::save(&dir, &state).map_err(io)?;
                info!(role = %name, "created the default superuser role");
                state
            }
        };
        if password_auth {
            // Only the configured superuser's own hash is checked; a later ALTER ROLE clears the
            // warning.
            let still_default = default_password
                && state
                    .role(&config.superuser_name)
                    .and_then(|r| r.salted_hash.as_deref())
                    .is_some_and(|h| password::verify(DEFAULT_SUPERUSER, h));
            if still_default {
                warn!(
                    role = %config.superuser_name,
                    "the superuser role has the default password; change it with ALTER ROLE ... WITH PASSWORD"
                );
            }
        }
        Ok(Auth {
            authenticator: config.authenticator,
            authorizer: config.authorizer,
            dir,
            state: RwLock::new(Arc::new(state)),
            writes: Mutex::new(()),
            log: std::sync::OnceLock::new(),
        })
    }

    /// The authenticator class to announce after STARTUP; `None` when anyone may connect.
    pub fn authenticator_class(&self) -> Option<&'static str> {
        match self.authenticator {
            Authenticator::AllowAllAuthenticator => None,
            Authenticator::PasswordAuthenticator => Some(PASSWORD_AUTHENTICATOR),
        }
    }

    /// True when passwords are checked (and so `PASSWORD` is a supported role option).
    pub fn uses_passwords(&self) -> bool {
        self.authenticator == Authenticator::PasswordAuthenticator
    }

    /// True when grants are enforced (`CassandraAuthorizer`).
    pub fn enforces_permissions(&self) -> bool {
        self.authorizer == Authorizer::CassandraAuthorizer
    }

    /// The current roles and grants.
    pub fn state(&self) -> Arc<AuthState> {
        match self.state.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Checks a SASL PLAIN `AUTH_RESPONSE` token and returns the role that logged in. Slow on
    /// purpose (bcrypt): call it on the blocking pool.
    ///
    /// # Errors
    /// BadCredentials with Cassandra's messages.
    pub fn authenticate(&self, token: Option<&[u8]>) -> Result<String, QueryError> {
        let (user, pass) = password::decode_plain(token.unwrap_or_default())
            .map_err(QueryError::BadCredentials)?;
        let state = self.state();
        let bad = || {
            QueryError::BadCredentials(format!(
                "Provided username {user} and/or password are incorrect"
            ))
        };
        let Some(role) = state.role(&user) else {
            password::verify_dummy(&pass);
            return Err(bad());
        };
        match role.salted_hash.as_deref() {
            Some(hash) if password::verify(&pass, hash) => {}
            _ => {
                if role.salted_hash.is_none() {
                    password::verify_dummy(&pass);
                }
                return Err(bad());
            }
        }
        if !role.can_login {
            return Err(QueryError::BadCredentials(format!(
                "{user} is not permitted to log in"
            )));
        }
        if let Some(dcs) = &role.datacenters {
            if !dcs.contains(crate::system::DATA_CENTER) {
                return Err(QueryError::BadCredentials(format!(
                    "You do not have access to this datacenter ({})",
                    crate::system::DATA_CENTER
                )));
            }
        }
        Ok(role.name.clone())
    }

    /// Sends later changes through the cluster's log (once, when the cluster starts).
    pub fn attach_log(&self, log: Arc<dyn AuthLog>) {
        if self.log.set(log).is_err() {
            warn!("the auth log was attached twice; keeping the first");
        }
    }

    /// Installs a state replicated by the cluster (every node, in log order): persisted, then
    /// current.
    ///
    /// # Errors
    /// When persisting fails.
    pub fn install(&self, next: AuthState) -> Result<(), AuthError> {
        let _guard = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        roles::save(&self.dir, &next).map_err(|source| AuthError::Io {
            path: self.dir.clone(),
            source,
        })?;
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        Ok(())
    }

    /// Applies `change` to a copy of the state; when it succeeds the copy is persisted and
    /// becomes current. In a cluster the copy is replicated instead (planned again when
    /// another change got in first).
    ///
    /// # Errors
    /// Whatever `change` returns, or ServerError when persisting fails.
    pub fn update<T>(
        &self,
        mut change: impl FnMut(&mut AuthState) -> Result<T, QueryError>,
    ) -> Result<T, QueryError> {
        if let Some(log) = self.log.get() {
            for _ in 0..20 {
                let version = log.version();
                let mut next = (*self.state()).clone();
                let out = change(&mut next)?;
                if log.propose(version, &next)? {
                    return Ok(out);
                }
            }
            return Err(QueryError::Server(
                "Roles kept changing while this change was made; try again".into(),
            ));
        }
        let _guard = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = (*self.state()).clone();
        let out = change(&mut next)?;
        roles::save(&self.dir, &next).map_err(|e| {
            tracing::error!(error = %e, "saving roles failed");
            QueryError::Server("Could not persist the change to roles".into())
        })?;
        let mut current = self.state.write().unwrap_or_else(|p| p.into_inner());
        *current = Arc::new(next);
        Ok(out)
    }
}

/// True for the statements [`execute`] runs.
pub fn is_auth_statement(stmt: &Statement) -> bool {
    matches!(
        stmt,
        Statement::CreateRole(_)
            | Statement::AlterRole(_)
            | Statement::DropRole(_)
            | Statement::CreateUser(_)
            | Statement::AlterUser(_)
            | Statement::DropUser(_)
            | Statement::GrantRole(_)
            | Statement::RevokeRole(_)
            | Statement::GrantPermissions(_)
            | Statement::RevokePermissions(_)
            | Statement::ListPermissions(_)
            | Statement::ListRoles(_)
            | Statement::ListUsers
            | Statement::ListSuperusers
    )
}

/// Checks that the session's role may run `stmt` (with `CassandraAuthorizer`; every statement
/// passes with `AllowAllAuthorizer`). Security statements check their own access when run.
///
/// # Errors
/// Unauthorized with Cassandra's message, e.g.
/// `User bob has no SELECT permission on <table ks.t> or any of its parents`.
pub fn authorize(
    auth: &Auth,
    catalog: &Catalog,
    ctx: &SessionContext,
    stmt: &Statement,
) -> Result<(), QueryError> {
    if !auth.enforces_permissions() || is_auth_statement(stmt) {
        return Ok(());
    }
    let Some(user) = ctx.user.as_deref() else {
        return Err(QueryError::Unauthorized("You have not logged in".into()));
    };
    let needed = permissions::required(stmt, catalog, ctx.keyspace.as_deref());
    if needed.is_empty() {
        return Ok(());
    }
    let state = auth.state();
    for (permission, resource) in needed {
        if !state.has_permission(user, permission, &resource) {
            return Err(QueryError::Unauthorized(format!(
                "User {user} has no {} permission on {resource} or any of its parents",
                permission.keyword()
            )));
        }
    }
    Ok(())
}

/// Checks EXECUTE on each user function a planned statement calls (`functions`, from
/// `Plan::user_functions`); native functions need none, as in Cassandra.
///
/// # Errors
/// Unauthorized with Cassandra's message for the first function not granted.
pub fn authorize_calls(
    auth: &Auth,
    ctx: &SessionContext,
    functions: &[AuthResource],
) -> Result<(), QueryError> {
    if functions.is_empty() || !auth.enforces_permissions() {
        return Ok(());
    }
    let Some(user) = ctx.user.as_deref() else {
        return Err(QueryError::Unauthorized("You have not logged in".into()));
    };
    let state = auth.state();
    for f in functions {
        if !state.has_permission(user, Permission::Execute, f) {
            return Err(QueryError::Unauthorized(format!(
                "User {user} has no EXECUTE permission on {f} or any of its parents"
            )));
        }
    }
    Ok(())
}

/// Runs a security statement (see [`is_auth_statement`]).
///
/// # Errors
/// Invalid, Unauthorized or Syntax errors with Cassandra's messages.
pub fn execute(
    auth: &Auth,
    catalog: &Catalog,
    ctx: &SessionContext,
    stmt: &Statement,
) -> Result<ResultBody, QueryError> {
    statements::execute(auth, catalog, ctx, stmt)
}

/// Keeps grants in step with the schema after a DDL statement succeeded: the creator of a
/// keyspace or table gets every permission on it (with `CassandraAuthorizer`), and the grants
/// on a dropped keyspace or table go away, as in Cassandra.
pub fn after_ddl(auth: &Auth, ctx: &SessionContext, stmt: &Statement, result: &ResultBody) {
    if !matches!(result, ResultBody::SchemaChange(_)) {
        return;
    }
    let keyspace_of = |name: &cql::ast::QualifiedName| {
        name.keyspace
            .clone()
            .or_else(|| ctx.keyspace.as_deref().map(str::to_string))
            .unwrap_or_default()
    };
    let (created, dropped) = match stmt {
        Statement::CreateKeyspace(s) => (Some(AuthResource::Keyspace(s.name.clone())), None),
        Statement::CreateTable(s) => (
            Some(AuthResource::Table(
                keyspace_of(&s.name),
                s.name.name.clone(),
            )),
            None,
        ),
        Statement::DropKeyspace(s) => {
            let functions = AuthResource::FunctionsIn(s.name.clone());
            if let Err(e) = auth.update(|state| {
                state.revoke_all(None, Some(&functions.name()));
                Ok(())
            }) {
                warn!(error = %e, "dropping a keyspace's function grants failed");
            }
            (None, Some(AuthResource::Keyspace(s.name.clone())))
        }
        Statement::CreateFunction(s) => {
            let types: Vec<_> = s.args.iter().map(|(_, t)| t.clone()).collect();
            let f = AuthResource::function(&keyspace_of(&s.name), &s.name.name, &types);
            (Some(f), None)
        }
        Statement::CreateAggregate(s) => {
            let f = AuthResource::function(&keyspace_of(&s.name), &s.name.name, &s.arg_types);
            (Some(f), None)
        }
        Statement::DropFunction(cql::ast::DropFunction {
            name, arg_types, ..
        })
        | Statement::DropAggregate(cql::ast::DropAggregate {
            name, arg_types, ..
        }) => {
            let ks = keyspace_of(name);
            match arg_types {
                Some(types) => (None, Some(AuthResource::function(&ks, &name.name, types))),
                None => {
                    // Every overload of the name went (DROP FUNCTION without types drops
                    // the only one there was).
                    let overloads = format!("functions/{ks}/{}[", name.name);
                    if let Err(e) = auth.update(|state| {
                        for grants in state.permissions.values_mut() {
                            grants.retain(|r, _| !r.starts_with(&overloads));
                        }
                        state.permissions.retain(|_, grants| !grants.is_empty());
                        Ok(())
                    }) {
                        warn!(error = %e, "dropping a function's grants failed");
                    }
                    return;
                }
            }
        }
        Statement::DropTable(s) => (
            None,
            Some(AuthResource::Table(
                keyspace_of(&s.name),
                s.name.name.clone(),
            )),
        ),
        _ => return,
    };
    let creator = ctx.user.as_deref().filter(|_| auth.enforces_permissions());
    let has_grants = |resource: &AuthResource| {
        let name = resource.name();
        let below = format!("{name}/");
        auth.state()
            .permissions
            .values()
            .any(|grants| grants.keys().any(|k| *k == name || k.starts_with(&below)))
    };
    let nothing_to_do = creator.is_none()
        && !created.as_ref().is_some_and(has_grants)
        && !dropped.as_ref().is_some_and(has_grants);
    if nothing_to_do {
        return;
    }
    let result = auth.update(|state| {
        if let Some(resource) = &dropped {
            state.revoke_all(None, Some(&resource.name()));
        }
        if let Some(resource) = &created {
            // A re-created keyspace or table must not inherit the old one's grants.
            state.revoke_all(None, Some(&resource.name()));
        }
        if let (Some(resource), Some(user)) = (&created, creator) {
            if state.roles.contains_key(user) {
                let perms = state
                    .permissions
                    .entry(user.to_string())
                    .or_default()
                    .entry(resource.name())
                    .or_default();
                perms.extend(
                    resource
                        .applicable()
                        .iter()
                        .map(|p| p.keyword().to_string()),
                );
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        warn!(error = %e, "updating grants after a schema change failed");
    }
}
