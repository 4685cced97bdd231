//! Security statements: roles, users and permissions.

use std::fmt;

use super::{
    if_exists, if_not_exists, Comma, Ident, OptionValue, QualifiedName, StrLit, TypeSyntax,
};
use crate::types::DataType;

/// One option of `CREATE ROLE` / `ALTER ROLE` (and the password of `CREATE USER`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoleOption {
    /// `PASSWORD = 'secret'`.
    Password(String),
    /// `HASHED PASSWORD = 'hash'`.
    HashedPassword(String),
    /// `GENERATED PASSWORD`.
    GeneratedPassword,
    /// `SUPERUSER = true|false`.
    Superuser(bool),
    /// `LOGIN = true|false`.
    Login(bool),
    /// `OPTIONS = {...}`.
    Options(Vec<(OptionValue, OptionValue)>),
    /// `ACCESS TO ALL DATACENTERS`.
    AccessToAllDatacenters,
    /// `ACCESS TO DATACENTERS {'dc1', ...}`.
    AccessToDatacenters(Vec<String>),
    /// `ACCESS FROM ALL CIDRS`.
    AccessFromAllCidrs,
    /// `ACCESS FROM CIDRS {'region', ...}`.
    AccessFromCidrs(Vec<String>),
}

/// `CREATE ROLE [IF NOT EXISTS] name [WITH option AND ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRole {
    /// The role.
    pub name: String,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// The options.
    pub options: Vec<RoleOption>,
}

/// `ALTER ROLE [IF EXISTS] name [WITH option AND ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterRole {
    /// The role.
    pub name: String,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// The options.
    pub options: Vec<RoleOption>,
}

/// `DROP ROLE [IF EXISTS] name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropRole {
    /// The role.
    pub name: String,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

/// `CREATE USER [IF NOT EXISTS] name [WITH PASSWORD 'p'] [SUPERUSER | NOSUPERUSER]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateUser {
    /// The user (case kept as written).
    pub name: String,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// `WITH [HASHED|GENERATED] PASSWORD ...`: a password variant of [`RoleOption`].
    pub password: Option<RoleOption>,
    /// `SUPERUSER` (true) or `NOSUPERUSER` (false).
    pub superuser: Option<bool>,
}

/// `ALTER USER [IF EXISTS] name [WITH PASSWORD 'p'] [SUPERUSER | NOSUPERUSER]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterUser {
    /// The user.
    pub name: String,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// `WITH [HASHED|GENERATED] PASSWORD ...`.
    pub password: Option<RoleOption>,
    /// `SUPERUSER` (true) or `NOSUPERUSER` (false).
    pub superuser: Option<bool>,
}

/// `DROP USER [IF EXISTS] name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropUser {
    /// The user.
    pub name: String,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

/// `GRANT role TO grantee`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRole {
    /// The granted role.
    pub role: String,
    /// Who receives it.
    pub grantee: String,
}

/// `REVOKE role FROM revokee`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevokeRole {
    /// The revoked role.
    pub role: String,
    /// Who loses it.
    pub revokee: String,
}

/// A permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// `CREATE`.
    Create,
    /// `ALTER`.
    Alter,
    /// `DROP`.
    Drop,
    /// `SELECT`.
    Select,
    /// `MODIFY`.
    Modify,
    /// `AUTHORIZE`.
    Authorize,
    /// `DESCRIBE`.
    Describe,
    /// `EXECUTE`.
    Execute,
    /// `UNMASK`.
    Unmask,
    /// `SELECT_MASKED`.
    SelectMasked,
}

impl Permission {
    /// Every permission, with its CQL keyword.
    pub const ALL: [(Permission, &'static str); 10] = [
        (Permission::Create, "CREATE"),
        (Permission::Alter, "ALTER"),
        (Permission::Drop, "DROP"),
        (Permission::Select, "SELECT"),
        (Permission::Modify, "MODIFY"),
        (Permission::Authorize, "AUTHORIZE"),
        (Permission::Describe, "DESCRIBE"),
        (Permission::Execute, "EXECUTE"),
        (Permission::Unmask, "UNMASK"),
        (Permission::SelectMasked, "SELECT_MASKED"),
    ];

    /// The CQL keyword.
    pub fn keyword(self) -> &'static str {
        Permission::ALL
            .iter()
            .find(|(p, _)| *p == self)
            .map_or("", |(_, k)| k)
    }
}

/// `ALL [PERMISSIONS]` or a list of permissions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permissions {
    /// `ALL PERMISSIONS`.
    All,
    /// `SELECT, MODIFY, ...`.
    List(Vec<Permission>),
}

/// What a permission applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    /// `ALL KEYSPACES`.
    AllKeyspaces,
    /// `KEYSPACE ks`.
    Keyspace(String),
    /// `[TABLE] ks.t`.
    Table(QualifiedName),
    /// `ALL TABLES IN KEYSPACE ks`.
    AllTablesInKeyspace(String),
    /// `ALL ROLES`.
    AllRoles,
    /// `ROLE r`.
    Role(String),
    /// `ALL FUNCTIONS`.
    AllFunctions,
    /// `ALL FUNCTIONS IN KEYSPACE ks`.
    AllFunctionsInKeyspace(String),
    /// `FUNCTION ks.f(int, text)`.
    Function {
        /// The function.
        name: QualifiedName,
        /// Its argument types.
        args: Vec<DataType>,
    },
    /// `ALL MBEANS`.
    AllMBeans,
    /// `MBEAN 'name'`.
    MBean(String),
    /// `MBEANS 'pattern'`.
    MBeans(String),
}

/// `GRANT permissions ON resource TO grantee`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantPermissions {
    /// The permissions.
    pub permissions: Permissions,
    /// The resource.
    pub resource: Resource,
    /// The role receiving them.
    pub grantee: String,
}

/// `REVOKE permissions ON resource FROM revokee`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevokePermissions {
    /// The permissions.
    pub permissions: Permissions,
    /// The resource.
    pub resource: Resource,
    /// The role losing them.
    pub revokee: String,
}

/// `LIST permissions [ON resource] [OF role] [NORECURSIVE]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPermissions {
    /// The permissions listed.
    pub permissions: Permissions,
    /// `ON resource`.
    pub resource: Option<Resource>,
    /// `OF role`.
    pub of: Option<String>,
    /// False with `NORECURSIVE`.
    pub recursive: bool,
}

/// `LIST ROLES [OF role] [NORECURSIVE]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRoles {
    /// `OF role`.
    pub of: Option<String>,
    /// False with `NORECURSIVE`.
    pub recursive: bool,
}

struct StrSet<'a>(&'a [String]);

impl fmt::Display for StrSet<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<_> = self.0.iter().map(|s| StrLit(s)).collect();
        write!(f, "{{{}}}", Comma(&items))
    }
}

impl fmt::Display for RoleOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RoleOption::Password(p) => write!(f, "PASSWORD = {}", StrLit(p)),
            RoleOption::HashedPassword(p) => write!(f, "HASHED PASSWORD = {}", StrLit(p)),
            RoleOption::GeneratedPassword => f.write_str("GENERATED PASSWORD"),
            RoleOption::Superuser(b) => write!(f, "SUPERUSER = {b}"),
            RoleOption::Login(b) => write!(f, "LOGIN = {b}"),
            RoleOption::Options(map) => write!(f, "OPTIONS = {}", OptionValue::Map(map.clone())),
            RoleOption::AccessToAllDatacenters => f.write_str("ACCESS TO ALL DATACENTERS"),
            RoleOption::AccessToDatacenters(dcs) => {
                write!(f, "ACCESS TO DATACENTERS {}", StrSet(dcs))
            }
            RoleOption::AccessFromAllCidrs => f.write_str("ACCESS FROM ALL CIDRS"),
            RoleOption::AccessFromCidrs(c) => write!(f, "ACCESS FROM CIDRS {}", StrSet(c)),
        }
    }
}

fn write_role_options(f: &mut fmt::Formatter<'_>, options: &[RoleOption]) -> fmt::Result {
    for (i, o) in options.iter().enumerate() {
        f.write_str(if i == 0 { " WITH " } else { " AND " })?;
        write!(f, "{o}")?;
    }
    Ok(())
}

fn write_user_tail(
    f: &mut fmt::Formatter<'_>,
    password: &Option<RoleOption>,
    superuser: Option<bool>,
) -> fmt::Result {
    match password {
        Some(RoleOption::Password(p)) => write!(f, " WITH PASSWORD {}", StrLit(p))?,
        Some(RoleOption::HashedPassword(p)) => write!(f, " WITH HASHED PASSWORD {}", StrLit(p))?,
        Some(RoleOption::GeneratedPassword) => f.write_str(" WITH GENERATED PASSWORD")?,
        _ => {}
    }
    match superuser {
        Some(true) => f.write_str(" SUPERUSER"),
        Some(false) => f.write_str(" NOSUPERUSER"),
        None => Ok(()),
    }
}

impl fmt::Display for CreateRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CREATE ROLE{} {}",
            if_not_exists(self.if_not_exists),
            Ident(&self.name)
        )?;
        write_role_options(f, &self.options)
    }
}

impl fmt::Display for AlterRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ALTER ROLE{} {}",
            if_exists(self.if_exists),
            Ident(&self.name)
        )?;
        write_role_options(f, &self.options)
    }
}

impl fmt::Display for DropRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DROP ROLE{} {}",
            if_exists(self.if_exists),
            Ident(&self.name)
        )
    }
}

impl fmt::Display for CreateUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CREATE USER{} {}",
            if_not_exists(self.if_not_exists),
            StrLit(&self.name)
        )?;
        write_user_tail(f, &self.password, self.superuser)
    }
}

impl fmt::Display for AlterUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ALTER USER{} {}",
            if_exists(self.if_exists),
            StrLit(&self.name)
        )?;
        write_user_tail(f, &self.password, self.superuser)
    }
}

impl fmt::Display for DropUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DROP USER{} {}",
            if_exists(self.if_exists),
            StrLit(&self.name)
        )
    }
}

impl fmt::Display for GrantRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GRANT {} TO {}", Ident(&self.role), Ident(&self.grantee))
    }
}

impl fmt::Display for RevokeRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "REVOKE {} FROM {}",
            Ident(&self.role),
            Ident(&self.revokee)
        )
    }
}

impl fmt::Display for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Permissions::All => f.write_str("ALL PERMISSIONS"),
            Permissions::List(list) => {
                let words: Vec<_> = list.iter().map(|p| p.keyword()).collect();
                f.write_str(&words.join(", "))
            }
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::AllKeyspaces => f.write_str("ALL KEYSPACES"),
            Resource::Keyspace(ks) => write!(f, "KEYSPACE {}", Ident(ks)),
            Resource::Table(t) => write!(f, "TABLE {t}"),
            Resource::AllTablesInKeyspace(ks) => {
                write!(f, "ALL TABLES IN KEYSPACE {}", Ident(ks))
            }
            Resource::AllRoles => f.write_str("ALL ROLES"),
            Resource::Role(r) => write!(f, "ROLE {}", Ident(r)),
            Resource::AllFunctions => f.write_str("ALL FUNCTIONS"),
            Resource::AllFunctionsInKeyspace(ks) => {
                write!(f, "ALL FUNCTIONS IN KEYSPACE {}", Ident(ks))
            }
            Resource::Function { name, args } => {
                let types: Vec<_> = args.iter().map(TypeSyntax).collect();
                write!(f, "FUNCTION {name}({})", Comma(&types))
            }
            Resource::AllMBeans => f.write_str("ALL MBEANS"),
            Resource::MBean(m) => write!(f, "MBEAN {}", StrLit(m)),
            Resource::MBeans(m) => write!(f, "MBEANS {}", StrLit(m)),
        }
    }
}

impl fmt::Display for GrantPermissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GRANT {} ON {} TO {}",
            self.permissions,
            self.resource,
            Ident(&self.grantee)
        )
    }
}

impl fmt::Display for RevokePermissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "REVOKE {} ON {} FROM {}",
            self.permissions,
            self.resource,
            Ident(&self.revokee)
        )
    }
}

impl fmt::Display for ListPermissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LIST {}", self.permissions)?;
        if let Some(r) = &self.resource {
            write!(f, " ON {r}")?;
        }
        if let Some(of) = &self.of {
            write!(f, " OF {}", Ident(of))?;
        }
        if !self.recursive {
            f.write_str(" NORECURSIVE")?;
        }
        Ok(())
    }
}

impl fmt::Display for ListRoles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LIST ROLES")?;
        if let Some(of) = &self.of {
            write!(f, " OF {}", Ident(of))?;
        }
        if !self.recursive {
            f.write_str(" NORECURSIVE")?;
        }
        Ok(())
    }
}
