//! The security statements: CREATE/ALTER/DROP ROLE and USER, GRANT/REVOKE of roles and
//! permissions, LIST ROLES/USERS/SUPERUSERS/PERMISSIONS. Checks, their order and messages
//! follow Cassandra 4's statement classes (`validate`, then `checkAccess`, then `execute`).

use super::permissions::AuthResource;
use super::roles::{AuthState, Role};
use super::{password, Auth};
use crate::context::SessionContext;
use crate::error::QueryError;
use crate::schema::Catalog;
use bytes::Bytes;
use cql::ast::{OptionValue, Permission, Permissions, RoleOption, Statement};
use cql::response::{ColumnSpec, ResultBody, ResultMetadata, Rows};
use cql::types::{DataType, NativeType, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Runs one security statement.
///
/// # Errors
/// Invalid, Unauthorized or Syntax errors with Cassandra's messages.
pub fn execute(
    auth: &Auth,
    catalog: &Catalog,
    ctx: &SessionContext,
    stmt: &Statement,
) -> Result<ResultBody, QueryError> {
    let user = ctx.user.as_deref();
    match stmt {
        Statement::CreateRole(s) => {
            let opts = RoleOptions::parse(&s.options, auth)?;
            create_role(auth, user, &s.name, s.if_not_exists, opts)
        }
        Statement::CreateUser(s) => {
            let mut opts = RoleOptions::parse(s.password.as_slice(), auth)?;
            opts.login = Some(true);
            opts.superuser = Some(s.superuser.unwrap_or(false));
            create_role(auth, user, &s.name, s.if_not_exists, opts)
        }
        Statement::AlterRole(s) => {
            let opts = RoleOptions::parse(&s.options, auth)?;
            alter_role(auth, user, &s.name, s.if_exists, opts)
        }
        Statement::AlterUser(s) => {
            let mut opts = RoleOptions::parse(s.password.as_slice(), auth)?;
            opts.superuser = s.superuser;
            alter_role(auth, user, &s.name, s.if_exists, opts)
        }
        Statement::DropRole(s) => drop_role(auth, user, &s.name, s.if_exists),
        Statement::DropUser(s) => drop_role(auth, user, &s.name, s.if_exists),
        Statement::GrantRole(s) => grant_role(auth, user, &s.role, &s.grantee, true),
        Statement::RevokeRole(s) => grant_role(auth, user, &s.role, &s.revokee, false),
        Statement::GrantPermissions(s) => {
            let resource = AuthResource::from_ast(&s.resource, ctx.keyspace.as_deref())?;
            let perms = requested(&s.permissions, &resource)?;
            change_permissions(auth, user, catalog, &perms, &resource, &s.grantee, true)
        }
        Statement::RevokePermissions(s) => {
            let resource = AuthResource::from_ast(&s.resource, ctx.keyspace.as_deref())?;
            let perms = requested(&s.permissions, &resource)?;
            change_permissions(auth, user, catalog, &perms, &resource, &s.revokee, false)
        }
        Statement::ListPermissions(s) => {
            let resource = s
                .resource
                .as_ref()
                .map(|r| AuthResource::from_ast(r, ctx.keyspace.as_deref()))
                .transpose()?;
            let perms: Vec<Permission> = match &s.permissions {
                Permissions::All => Permission::ALL.iter().map(|(p, _)| *p).collect(),
                Permissions::List(list) => list.clone(),
            };
            list_permissions(
                auth,
                user,
                catalog,
                &perms,
                resource.as_ref(),
                s.of.as_deref(),
                s.recursive,
            )
        }
        Statement::ListRoles(s) => list_roles(auth, user, s.of.as_deref(), s.recursive, false),
        Statement::ListUsers => list_roles(auth, user, None, false, true),
        Statement::ListSuperusers => list_superusers(auth, user),
        _ => Err(QueryError::invalid("Not a security statement")),
    }
}

/// The options of CREATE/ALTER ROLE (and USER) after Cassandra's `RoleOptions.validate`.
#[derive(Default, Clone)]
struct RoleOptions {
    superuser: Option<bool>,
    login: Option<bool>,
    /// A bcrypt hash, computed from `PASSWORD` or given by `HASHED PASSWORD`.
    password_hash: Option<String>,
    /// Whether the password was given in clear (for "You aren't allowed to alter ...").
    has_password: bool,
    has_hashed_password: bool,
    options: Option<BTreeMap<String, String>>,
    datacenters: Option<Option<BTreeSet<String>>>,
}

const ROLE_MANAGER: &str = "org.apache.cassandra.auth.CassandraRoleManager";

impl RoleOptions {
    fn parse(options: &[RoleOption], auth: &Auth) -> Result<RoleOptions, QueryError> {
        let mut out = RoleOptions::default();
        let mut seen = BTreeSet::new();
        let mut clear_password = None;
        for option in options {
            let name = match option {
                RoleOption::Password(_) => "PASSWORD",
                RoleOption::HashedPassword(_) => "HASHED_PASSWORD",
                RoleOption::GeneratedPassword => "GENERATED_PASSWORD",
                RoleOption::Superuser(_) => "SUPERUSER",
                RoleOption::Login(_) => "LOGIN",
                RoleOption::Options(_) => "OPTIONS",
                RoleOption::AccessToAllDatacenters | RoleOption::AccessToDatacenters(_) => {
                    "ACCESS TO DATACENTERS"
                }
                RoleOption::AccessFromAllCidrs | RoleOption::AccessFromCidrs(_) => {
                    "ACCESS FROM CIDRS"
                }
            };
            if !seen.insert(name) {
                return Err(QueryError::Syntax(format!(
                    "Multiple definition for property '{name}'"
                )));
            }
            match option {
                RoleOption::Password(p) => {
                    if !auth.uses_passwords() {
                        return Err(unsupported_option("PASSWORD"));
                    }
                    out.has_password = true;
                    clear_password = Some(p.clone());
                }
                RoleOption::HashedPassword(h) => {
                    if !auth.uses_passwords() {
                        return Err(unsupported_option("HASHED_PASSWORD"));
                    }
                    if !password::is_bcrypt_hash(h) {
                        return Err(QueryError::invalid(
                            "Invalid hashed password value. Please use jBcrypt.",
                        ));
                    }
                    out.has_hashed_password = true;
                    out.password_hash = Some(h.clone());
                }
                RoleOption::GeneratedPassword => {
                    return Err(QueryError::invalid(
                        "GENERATED PASSWORD is not supported by ringdb",
                    ))
                }
                RoleOption::Superuser(b) => out.superuser = Some(*b),
                RoleOption::Login(b) => out.login = Some(*b),
                RoleOption::Options(map) => {
                    let mut m = BTreeMap::new();
                    for (k, v) in map {
                        m.insert(option_text(k), option_text(v));
                    }
                    out.options = Some(m);
                }
                RoleOption::AccessToAllDatacenters => out.datacenters = Some(None),
                RoleOption::AccessToDatacenters(dcs) => {
                    out.datacenters = Some(Some(dcs.iter().cloned().collect()))
                }
                RoleOption::AccessFromAllCidrs | RoleOption::AccessFromCidrs(_) => {
                    return Err(QueryError::invalid(
                        "CIDR authorization is not supported by ringdb",
                    ))
                }
            }
        }
        if out.has_password && out.has_hashed_password {
            return Err(QueryError::invalid(
                "Properties 'PASSWORD' and 'HASHED_PASSWORD' are mutually exclusive",
            ));
        }
        if let Some(p) = clear_password {
            // Hashing is slow on purpose; it happens before any lock is taken.
            out.password_hash =
                Some(password::hash(&p).map_err(|e| QueryError::Server(e.to_string()))?);
        }
        Ok(out)
    }

    fn is_empty(&self) -> bool {
        self.superuser.is_none()
            && self.login.is_none()
            && self.password_hash.is_none()
            && self.options.is_none()
            && self.datacenters.is_none()
    }

    /// The options a role may change on itself (Cassandra's `alterableOptions`).
    fn only_self_alterable(&self) -> Result<(), QueryError> {
        let denied = [
            ("SUPERUSER", self.superuser.is_some()),
            ("LOGIN", self.login.is_some()),
            ("OPTIONS", self.options.is_some()),
            ("ACCESS TO DATACENTERS", self.datacenters.is_some()),
        ];
        match denied.iter().find(|(_, set)| *set) {
            Some((name, _)) => Err(QueryError::Unauthorized(format!(
                "You aren't allowed to alter {name}"
            ))),
            None => Ok(()),
        }
    }

    fn apply(self, role: &mut Role) {
        if let Some(b) = self.superuser {
            role.is_superuser = b;
        }
        if let Some(b) = self.login {
            role.can_login = b;
        }
        if let Some(h) = self.password_hash {
            role.salted_hash = Some(h);
        }
        if let Some(o) = self.options {
            role.options = o;
        }
        if let Some(d) = self.datacenters {
            role.datacenters = d;
        }
    }
}

fn unsupported_option(name: &str) -> QueryError {
    QueryError::invalid(format!("{ROLE_MANAGER} doesn't support {name}"))
}

fn option_text(v: &OptionValue) -> String {
    match v {
        OptionValue::String(s) | OptionValue::Constant(s) | OptionValue::Identifier(s) => s.clone(),
        other => other.to_string(),
    }
}

fn ensure_not_anonymous(user: Option<&str>) -> Result<&str, QueryError> {
    user.ok_or_else(|| {
        QueryError::Unauthorized(
            "You have to be logged in and not anonymous to perform this request".into(),
        )
    })
}

/// Cassandra's `ClientState.ensurePermission`: a no-op without `CassandraAuthorizer`.
fn check_permission(
    auth: &Auth,
    state: &AuthState,
    user: &str,
    permission: Permission,
    resource: &AuthResource,
) -> Result<(), QueryError> {
    if !auth.enforces_permissions() || state.has_permission(user, permission, resource) {
        return Ok(());
    }
    Err(QueryError::Unauthorized(format!(
        "User {user} has no {} permission on {resource} or any of its parents",
        permission.keyword()
    )))
}

fn create_role(
    auth: &Auth,
    user: Option<&str>,
    name: &str,
    if_not_exists: bool,
    opts: RoleOptions,
) -> Result<ResultBody, QueryError> {
    if name.is_empty() {
        return Err(QueryError::invalid("Role name can't be an empty string"));
    }
    let user = ensure_not_anonymous(user)?;
    auth.update(|state| {
        let exists = state.roles.contains_key(name);
        if exists && !if_not_exists {
            return Err(QueryError::invalid(format!("{name} already exists")));
        }
        check_permission(
            auth,
            state,
            user,
            Permission::Create,
            &AuthResource::AllRoles,
        )?;
        if opts.superuser == Some(true) && !state.is_super(user) {
            return Err(QueryError::Unauthorized(
                "Only superusers can create a role with superuser status".into(),
            ));
        }
        if exists {
            return Ok(());
        }
        let mut role = Role {
            name: name.to_string(),
            ..Role::default()
        };
        opts.clone().apply(&mut role);
        state.roles.insert(name.to_string(), role);
        if auth.enforces_permissions() {
            // The creator may alter, drop and grant the new role.
            let resource = AuthResource::Role(name.to_string());
            state
                .permissions
                .entry(user.to_string())
                .or_default()
                .entry(resource.name())
                .or_default()
                .extend(
                    resource
                        .applicable()
                        .iter()
                        .map(|p| p.keyword().to_string()),
                );
        }
        Ok(())
    })?;
    Ok(ResultBody::Void)
}

fn alter_role(
    auth: &Auth,
    user: Option<&str>,
    name: &str,
    if_exists: bool,
    opts: RoleOptions,
) -> Result<ResultBody, QueryError> {
    if opts.is_empty() {
        return Err(QueryError::invalid("ALTER [ROLE|USER] can't be empty"));
    }
    let user = ensure_not_anonymous(user)?;
    auth.update(|state| {
        if !state.roles.contains_key(name) {
            if if_exists {
                return Ok(());
            }
            return Err(QueryError::invalid(format!("{name} doesn't exist")));
        }
        let is_super = state.is_super(user);
        if opts.superuser.is_some() && state.roles_of(user, true).contains(name) {
            return Err(QueryError::Unauthorized(
                "You aren't allowed to alter your own superuser status or that of a role granted to you"
                    .into(),
            ));
        }
        if opts.superuser.is_some() && !is_super {
            return Err(QueryError::Unauthorized(
                "Only superusers are allowed to alter superuser status".into(),
            ));
        }
        if !is_super {
            if user == name {
                opts.only_self_alterable()?;
            } else {
                check_permission(
                    auth,
                    state,
                    user,
                    Permission::Alter,
                    &AuthResource::Role(name.to_string()),
                )?;
            }
        }
        if let Some(role) = state.roles.get_mut(name) {
            opts.clone().apply(role);
        }
        Ok(())
    })?;
    Ok(ResultBody::Void)
}

fn drop_role(
    auth: &Auth,
    user: Option<&str>,
    name: &str,
    if_exists: bool,
) -> Result<ResultBody, QueryError> {
    let user = ensure_not_anonymous(user)?;
    auth.update(|state| {
        let exists = state.roles.contains_key(name);
        if !exists && !if_exists {
            return Err(QueryError::invalid(format!("{name} doesn't exist")));
        }
        if user == name {
            return Err(QueryError::invalid(
                "Cannot DROP primary role for current login",
            ));
        }
        check_permission(
            auth,
            state,
            user,
            Permission::Drop,
            &AuthResource::Role(name.to_string()),
        )?;
        if exists && state.is_super(name) && !state.is_super(user) {
            return Err(QueryError::Unauthorized(
                "Only superusers can drop a role with superuser status".into(),
            ));
        }
        if !exists {
            return Ok(());
        }
        state.roles.remove(name);
        for role in state.roles.values_mut() {
            role.member_of.remove(name);
        }
        state.revoke_all(
            Some(name),
            Some(&AuthResource::Role(name.to_string()).name()),
        );
        Ok(())
    })?;
    Ok(ResultBody::Void)
}

fn grant_role(
    auth: &Auth,
    user: Option<&str>,
    role: &str,
    grantee: &str,
    grant: bool,
) -> Result<ResultBody, QueryError> {
    let user = ensure_not_anonymous(user)?;
    auth.update(|state| {
        for r in [role, grantee] {
            if !state.roles.contains_key(r) {
                return Err(QueryError::invalid(format!("{r} doesn't exist")));
            }
        }
        check_permission(
            auth,
            state,
            user,
            Permission::Authorize,
            &AuthResource::Role(role.to_string()),
        )?;
        if grant {
            if state.roles_of(grantee, true).contains(role) {
                return Err(QueryError::invalid(format!(
                    "{grantee} is a member of {role}"
                )));
            }
            if state.roles_of(role, true).contains(grantee) {
                return Err(QueryError::invalid(format!(
                    "{role} is a member of {grantee}"
                )));
            }
            if let Some(g) = state.roles.get_mut(grantee) {
                g.member_of.insert(role.to_string());
            }
        } else {
            let member = state
                .roles
                .get(grantee)
                .is_some_and(|g| g.member_of.contains(role));
            if !member {
                return Err(QueryError::invalid(format!(
                    "{grantee} is not a member of {role}"
                )));
            }
            if let Some(g) = state.roles.get_mut(grantee) {
                g.member_of.remove(role);
            }
        }
        Ok(())
    })?;
    Ok(ResultBody::Void)
}

/// The permissions a GRANT/REVOKE names that apply to `resource` (ALL means all of those).
fn requested(
    permissions: &Permissions,
    resource: &AuthResource,
) -> Result<Vec<Permission>, QueryError> {
    match permissions {
        Permissions::All => Ok(resource.applicable().to_vec()),
        Permissions::List(list) => resource.filter(list),
    }
}

fn change_permissions(
    auth: &Auth,
    user: Option<&str>,
    catalog: &crate::schema::Catalog,
    permissions: &[Permission],
    resource: &AuthResource,
    grantee: &str,
    grant: bool,
) -> Result<ResultBody, QueryError> {
    // Cassandra checks the login first (validate), the authorizer at execution.
    let user = ensure_not_anonymous(user)?;
    if !auth.enforces_permissions() {
        return Err(QueryError::invalid(format!(
            "{} operation is not supported by AllowAllAuthorizer",
            if grant { "GRANT" } else { "REVOKE" }
        )));
    }
    auth.update(|state| {
        if !state.roles.contains_key(grantee) {
            return Err(QueryError::invalid(format!("Role {grantee} doesn't exist")));
        }
        if !resource.exists(catalog, |r| state.roles.contains_key(r)) {
            return Err(QueryError::invalid(format!(
                "Resource {resource} doesn't exist"
            )));
        }
        check_permission(auth, state, user, Permission::Authorize, resource)?;
        for p in permissions {
            check_permission(auth, state, user, *p, resource)?;
        }
        let name = resource.name();
        if grant {
            state
                .permissions
                .entry(grantee.to_string())
                .or_default()
                .entry(name)
                .or_default()
                .extend(permissions.iter().map(|p| p.keyword().to_string()));
        } else if let Some(grants) = state.permissions.get_mut(grantee) {
            if let Some(set) = grants.get_mut(&name) {
                for p in permissions {
                    set.remove(p.keyword());
                }
                if set.is_empty() {
                    grants.remove(&name);
                }
            }
            if grants.is_empty() {
                state.permissions.remove(grantee);
            }
        }
        Ok(())
    })?;
    Ok(ResultBody::Void)
}

fn list_permissions(
    auth: &Auth,
    user: Option<&str>,
    catalog: &crate::schema::Catalog,
    permissions: &[Permission],
    resource: Option<&AuthResource>,
    of: Option<&str>,
    recursive: bool,
) -> Result<ResultBody, QueryError> {
    // Cassandra checks the login first (validate), the authorizer at execution.
    let user = ensure_not_anonymous(user)?;
    if !auth.enforces_permissions() {
        return Err(QueryError::invalid(
            "LIST PERMISSIONS operation is not supported by AllowAllAuthorizer",
        ));
    }
    let state = auth.state();
    if let Some(r) = resource {
        if !r.exists(catalog, |name| state.roles.contains_key(name)) {
            return Err(QueryError::invalid(format!("{r} doesn't exist")));
        }
    }
    if let Some(of) = of {
        if !state.roles.contains_key(of) {
            return Err(QueryError::invalid(format!("<role {of}> doesn't exist")));
        }
    }
    if !state.is_super(user) && !of.is_some_and(|g| state.roles_of(user, true).contains(g)) {
        return Err(QueryError::Unauthorized(format!(
            "You are not authorized to view {}'s permissions",
            of.unwrap_or("everyone")
        )));
    }
    let resources: Option<Vec<String>> = resource.map(|r| {
        if recursive {
            r.chain().iter().map(AuthResource::name).collect()
        } else {
            vec![r.name()]
        }
    });
    let roles: Vec<String> = match of {
        Some(g) => state.roles_of(g, true).into_iter().collect(),
        None => state.permissions.keys().cloned().collect(),
    };
    let mut details: Vec<(String, String, usize)> = Vec::new();
    for role in roles {
        let Some(grants) = state.permissions.get(&role) else {
            continue;
        };
        for (res, granted) in grants {
            if resources
                .as_ref()
                .is_some_and(|wanted| !wanted.contains(res))
            {
                continue;
            }
            for (ordinal, (p, keyword)) in Permission::ALL.iter().enumerate() {
                if permissions.contains(p) && granted.contains(*keyword) {
                    details.push((role.clone(), res.clone(), ordinal));
                }
            }
        }
    }
    details.sort();
    details.dedup();
    let columns = ["role", "username", "resource", "permission"]
        .map(|c| spec("permissions", c, DataType::Native(NativeType::Text)));
    let rows = details
        .into_iter()
        .map(|(role, res, ordinal)| {
            let shown = AuthResource::from_name(&res).map_or(res, |r| r.to_string());
            let keyword = Permission::ALL[ordinal].1;
            vec![
                cell(Value::Text(role.clone())),
                cell(Value::Text(role)),
                cell(Value::Text(shown)),
                cell(Value::Text(keyword.to_string())),
            ]
        })
        .collect();
    Ok(rows_or_void(columns.to_vec(), rows))
}

fn list_roles(
    auth: &Auth,
    user: Option<&str>,
    of: Option<&str>,
    recursive: bool,
    users: bool,
) -> Result<ResultBody, QueryError> {
    let user = ensure_not_anonymous(user)?;
    let state = auth.state();
    if let Some(of) = of {
        if !state.roles.contains_key(of) {
            return Err(QueryError::invalid(format!("<role {of}> doesn't exist")));
        }
    }
    let describe_all = !auth.enforces_permissions()
        || state.has_permission(user, Permission::Describe, &AuthResource::AllRoles);
    let names: BTreeSet<String> = match (describe_all, of) {
        (true, None) => state.roles.keys().cloned().collect(),
        (true, Some(g)) => state.roles_of(g, recursive),
        (false, None) => state.roles_of(user, recursive),
        (false, Some(g)) => {
            if state.roles_of(user, true).contains(g) {
                state.roles_of(g, recursive)
            } else {
                return Err(QueryError::Unauthorized(format!(
                    "You are not authorized to view roles granted to {g} "
                )));
            }
        }
    };
    let datacenters = |r: &Role| match &r.datacenters {
        None => "ALL".to_string(),
        Some(dcs) => dcs.iter().cloned().collect::<Vec<_>>().join(", "),
    };
    let text = |_: &str| DataType::Native(NativeType::Text);
    let boolean = DataType::Native(NativeType::Boolean);
    let (columns, rows): (Vec<ColumnSpec>, Vec<Vec<Option<Bytes>>>) = if users {
        let columns = vec![
            spec("users", "name", text("")),
            spec("users", "super", boolean.clone()),
            spec("users", "datacenters", text("")),
        ];
        let rows = names
            .iter()
            .filter_map(|n| state.role(n))
            .filter(|r| r.can_login)
            .map(|r| {
                vec![
                    cell(Value::Text(r.name.clone())),
                    cell(Value::Boolean(state.is_super(&r.name))),
                    cell(Value::Text(datacenters(r))),
                ]
            })
            .collect();
        (columns, rows)
    } else {
        let columns = vec![
            spec("roles", "role", text("")),
            spec("roles", "super", boolean.clone()),
            spec("roles", "login", boolean.clone()),
            spec(
                "roles",
                "options",
                DataType::Map(Box::new(text("")), Box::new(text(""))),
            ),
            spec("roles", "datacenters", text("")),
        ];
        let rows = names
            .iter()
            .filter_map(|n| state.role(n))
            .map(|r| {
                vec![
                    cell(Value::Text(r.name.clone())),
                    cell(Value::Boolean(r.is_superuser)),
                    cell(Value::Boolean(r.can_login)),
                    cell(Value::Map(
                        r.options
                            .iter()
                            .map(|(k, v)| (Value::Text(k.clone()), Value::Text(v.clone())))
                            .collect(),
                    )),
                    cell(Value::Text(datacenters(r))),
                ]
            })
            .collect();
        (columns, rows)
    };
    if names.is_empty() {
        return Ok(ResultBody::Void);
    }
    Ok(ResultBody::Rows(Rows {
        metadata: ResultMetadata {
            no_metadata: false,
            columns: columns.into(),
            paging_state: None,
        },
        rows,
    }))
}

fn list_superusers(auth: &Auth, user: Option<&str>) -> Result<ResultBody, QueryError> {
    let user = ensure_not_anonymous(user)?;
    let state = auth.state();
    check_permission(
        auth,
        &state,
        user,
        Permission::Describe,
        &AuthResource::AllRoles,
    )?;
    let rows = state
        .roles
        .keys()
        .filter(|r| state.is_super(r))
        .map(|r| vec![cell(Value::Text(r.clone()))])
        .collect();
    Ok(rows_or_void(
        vec![spec("roles", "role", DataType::Native(NativeType::Text))],
        rows,
    ))
}

fn spec(table: &str, name: &str, data_type: DataType) -> ColumnSpec {
    ColumnSpec {
        keyspace: "system_auth".into(),
        table: table.into(),
        name: name.into(),
        data_type,
    }
}

fn cell(v: Value) -> Option<Bytes> {
    Some(Bytes::from(v.to_bytes()))
}

/// Cassandra answers an empty listing with a VOID result, not empty rows.
fn rows_or_void(columns: Vec<ColumnSpec>, rows: Vec<Vec<Option<Bytes>>>) -> ResultBody {
    if rows.is_empty() {
        return ResultBody::Void;
    }
    ResultBody::Rows(Rows {
        metadata: ResultMetadata {
            no_metadata: false,
            columns: columns.into(),
            paging_state: None,
        },
        rows,
    })
}
