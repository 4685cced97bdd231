//! The CQL abstract syntax tree.
//!
//! Data only: no parsing code lives here. Every node implements `Display`, printing canonical
//! CQL that parses back to an equal tree (identifiers are quoted only when needed, keywords are
//! upper-case, numbers keep their original text).

mod auth;
mod ddl;
mod describe;
mod dml;
mod expr;
mod function;
mod select;
mod view;

use std::fmt;

use crate::types::{write_identifier, DataType};

pub use auth::{
    AlterRole, AlterUser, CreateRole, CreateUser, DropRole, DropUser, GrantPermissions, GrantRole,
    ListPermissions, ListRoles, Permission, Permissions, Resource, RevokePermissions, RevokeRole,
    RoleOption,
};
pub use ddl::{
    AlterKeyspace, AlterTable, AlterTableOp, AlterType, AlterTypeOp, ColumnDef, ColumnMaskDef,
    CreateIndex, CreateKeyspace, CreateTable, CreateType, DropIndex, DropKeyspace, DropTable,
    DropType, IndexTarget, OptionValue, TableOptions,
};
pub use describe::{Describe, DescribeTarget};
pub use dml::{
    Assignment, Batch, BatchType, Condition, Conditions, Delete, DeleteTarget, Insert,
    InsertValues, Update, Using,
};
pub use expr::{BinaryOp, Expr, Literal, Operator, Relation};
pub use function::{CreateAggregate, CreateFunction, DropAggregate, DropFunction};
pub use select::{AnnOrdering, Select, Selector};
pub use view::{AlterView, CreateView, DropView};

/// One CQL statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// `SELECT ...`.
    Select(Box<Select>),
    /// `INSERT INTO ...`.
    Insert(Box<Insert>),
    /// `UPDATE ...`.
    Update(Box<Update>),
    /// `DELETE ...`.
    Delete(Box<Delete>),
    /// `BEGIN [UNLOGGED | COUNTER] BATCH ... APPLY BATCH`.
    Batch(Box<Batch>),
    /// `USE keyspace`.
    Use(String),
    /// `TRUNCATE [TABLE] name`.
    Truncate(QualifiedName),
    /// `CREATE KEYSPACE ...`.
    CreateKeyspace(CreateKeyspace),
    /// `ALTER KEYSPACE ...`.
    AlterKeyspace(AlterKeyspace),
    /// `DROP KEYSPACE ...`.
    DropKeyspace(DropKeyspace),
    /// `CREATE TABLE ...` (or `COLUMNFAMILY`).
    CreateTable(Box<CreateTable>),
    /// `ALTER TABLE ...`.
    AlterTable(AlterTable),
    /// `DROP TABLE ...`.
    DropTable(DropTable),
    /// `CREATE TYPE ...`.
    CreateType(CreateType),
    /// `ALTER TYPE ...`.
    AlterType(AlterType),
    /// `DROP TYPE ...`.
    DropType(DropType),
    /// `CREATE FUNCTION ...`.
    CreateFunction(Box<CreateFunction>),
    /// `DROP FUNCTION ...`.
    DropFunction(DropFunction),
    /// `CREATE AGGREGATE ...`.
    CreateAggregate(Box<CreateAggregate>),
    /// `DROP AGGREGATE ...`.
    DropAggregate(DropAggregate),
    /// `CREATE [CUSTOM] INDEX ...`.
    CreateIndex(CreateIndex),
    /// `DROP INDEX ...`.
    DropIndex(DropIndex),
    /// `CREATE MATERIALIZED VIEW ...`.
    CreateView(Box<CreateView>),
    /// `DROP MATERIALIZED VIEW ...`.
    DropView(DropView),
    /// `ALTER MATERIALIZED VIEW`.
    AlterView(AlterView),
    /// `DESCRIBE ...` / `DESC ...`.
    Describe(Describe),
    /// `CREATE ROLE ...`.
    CreateRole(CreateRole),
    /// `ALTER ROLE ...`.
    AlterRole(AlterRole),
    /// `DROP ROLE ...`.
    DropRole(DropRole),
    /// `CREATE USER ...`.
    CreateUser(CreateUser),
    /// `ALTER USER ...`.
    AlterUser(AlterUser),
    /// `DROP USER ...`.
    DropUser(DropUser),
    /// `GRANT role TO grantee`.
    GrantRole(GrantRole),
    /// `REVOKE role FROM revokee`.
    RevokeRole(RevokeRole),
    /// `GRANT permissions ON resource TO grantee`.
    GrantPermissions(GrantPermissions),
    /// `REVOKE permissions ON resource FROM revokee`.
    RevokePermissions(RevokePermissions),
    /// `LIST permissions [ON resource] [OF role] [NORECURSIVE]`.
    ListPermissions(ListPermissions),
    /// `LIST ROLES [OF role] [NORECURSIVE]`.
    ListRoles(ListRoles),
    /// `LIST USERS`.
    ListUsers,
    /// `LIST SUPERUSERS`.
    ListSuperusers,
    /// A statement that is recognised but not implemented (functions, aggregates, materialized
    /// views, triggers): the server answers it with a clean error.
    Unsupported(Unsupported),
}

impl Statement {
    /// True for an INSERT, UPDATE or DELETE with an IF clause, or a BATCH holding one (a
    /// lightweight transaction).
    pub fn is_conditional(&self) -> bool {
        match self {
            Statement::Insert(i) => i.if_not_exists,
            Statement::Update(u) => u.conditions.is_some(),
            Statement::Delete(d) => d.conditions.is_some(),
            Statement::Batch(b) => b.statements.iter().any(Statement::is_conditional),
            _ => false,
        }
    }
}

/// A recognised but unsupported statement, kept as its source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// What it is, upper-case: `CREATE FUNCTION`, `DROP MATERIALIZED VIEW`, ...
    pub kind: String,
    /// The statement's text as written (without the trailing `;`).
    pub text: String,
}

/// A possibly keyspace-qualified name: `ks.t` or `t`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QualifiedName {
    /// The keyspace, when given.
    pub keyspace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl QualifiedName {
    /// A name without a keyspace.
    pub fn unqualified(name: impl Into<String>) -> Self {
        QualifiedName {
            keyspace: None,
            name: name.into(),
        }
    }

    /// A keyspace-qualified name.
    pub fn qualified(keyspace: impl Into<String>, name: impl Into<String>) -> Self {
        QualifiedName {
            keyspace: Some(keyspace.into()),
            name: name.into(),
        }
    }
}

/// A sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Order {
    /// `ASC`.
    Asc,
    /// `DESC`.
    Desc,
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Order::Asc => "ASC",
            Order::Desc => "DESC",
        })
    }
}

impl fmt::Display for QualifiedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(ks) = &self.keyspace {
            write!(f, "{}.", Ident(ks))?;
        }
        write!(f, "{}", Ident(&self.name))
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Select(s) => s.fmt(f),
            Statement::Insert(s) => s.fmt(f),
            Statement::Update(s) => s.fmt(f),
            Statement::Delete(s) => s.fmt(f),
            Statement::Batch(s) => s.fmt(f),
            Statement::Use(ks) => write!(f, "USE {}", Ident(ks)),
            Statement::Truncate(t) => write!(f, "TRUNCATE TABLE {t}"),
            Statement::CreateKeyspace(s) => s.fmt(f),
            Statement::AlterKeyspace(s) => s.fmt(f),
            Statement::DropKeyspace(s) => s.fmt(f),
            Statement::CreateTable(s) => s.fmt(f),
            Statement::AlterTable(s) => s.fmt(f),
            Statement::DropTable(s) => s.fmt(f),
            Statement::CreateType(s) => s.fmt(f),
            Statement::AlterType(s) => s.fmt(f),
            Statement::DropType(s) => s.fmt(f),
            Statement::CreateFunction(s) => s.fmt(f),
            Statement::DropFunction(s) => s.fmt(f),
            Statement::CreateAggregate(s) => s.fmt(f),
            Statement::DropAggregate(s) => s.fmt(f),
            Statement::CreateIndex(s) => s.fmt(f),
            Statement::DropIndex(s) => s.fmt(f),
            Statement::CreateView(s) => s.fmt(f),
            Statement::DropView(s) => s.fmt(f),
            Statement::AlterView(s) => s.fmt(f),
            Statement::Describe(s) => s.fmt(f),
            Statement::CreateRole(s) => s.fmt(f),
            Statement::AlterRole(s) => s.fmt(f),
            Statement::DropRole(s) => s.fmt(f),
            Statement::CreateUser(s) => s.fmt(f),
            Statement::AlterUser(s) => s.fmt(f),
            Statement::DropUser(s) => s.fmt(f),
            Statement::GrantRole(s) => s.fmt(f),
            Statement::RevokeRole(s) => s.fmt(f),
            Statement::GrantPermissions(s) => s.fmt(f),
            Statement::RevokePermissions(s) => s.fmt(f),
            Statement::ListPermissions(s) => s.fmt(f),
            Statement::ListRoles(s) => s.fmt(f),
            Statement::ListUsers => f.write_str("LIST USERS"),
            Statement::ListSuperusers => f.write_str("LIST SUPERUSERS"),
            Statement::Unsupported(s) => s.fmt(f),
        }
    }
}

/// Prints an identifier, double-quoting it when it would not re-lex as the same unquoted name
/// (upper case, reserved keyword, or the boolean words `true`/`false`).
pub(crate) struct Ident<'a>(pub(crate) &'a str);

impl fmt::Display for Ident<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == "true" || self.0 == "false" {
            write!(f, "\"{}\"", self.0)
        } else {
            write_identifier(f, self.0)
        }
    }
}

/// Prints a string literal, `'it''s'`.
pub(crate) struct StrLit<'a>(pub(crate) &'a str);

impl fmt::Display for StrLit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}'", self.0.replace('\'', "''"))
    }
}

/// Prints a data type so that it parses back unchanged: unlike `DataType`'s own `Display`
/// (the `system_schema` spelling) it keeps UDT keyspaces and does not add `frozen<>` to tuples.
pub(crate) struct TypeSyntax<'a>(pub(crate) &'a DataType);

impl fmt::Display for TypeSyntax<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            DataType::Native(t) => f.write_str(t.name()),
            DataType::List(t) => write!(f, "list<{}>", TypeSyntax(t)),
            DataType::Set(t) => write!(f, "set<{}>", TypeSyntax(t)),
            DataType::Map(k, v) => write!(f, "map<{}, {}>", TypeSyntax(k), TypeSyntax(v)),
            DataType::Tuple(ts) => {
                f.write_str("tuple<")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    TypeSyntax(t).fmt(f)?;
                }
                f.write_str(">")
            }
            DataType::Udt(u) => {
                if let Some(ks) = &u.keyspace {
                    write!(f, "{}.", Ident(ks))?;
                }
                Ident(&u.name).fmt(f)
            }
            DataType::Frozen(t) => write!(f, "frozen<{}>", TypeSyntax(t)),
            DataType::Custom(class) => StrLit(class).fmt(f),
            DataType::Vector(t, n) => write!(f, "vector<{}, {n}>", TypeSyntax(t)),
        }
    }
}

/// Prints items separated by `", "`.
pub(crate) struct Comma<'a, T>(pub(crate) &'a [T]);

impl<T: fmt::Display> fmt::Display for Comma<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, item) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            item.fmt(f)?;
        }
        Ok(())
    }
}

/// Prints `name = value AND name = value ...` for `WITH` clauses.
pub(crate) struct Properties<'a>(pub(crate) &'a [(String, OptionValue)]);

impl fmt::Display for Properties<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, value)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" AND ")?;
            }
            write!(f, "{} = {value}", Ident(name))?;
        }
        Ok(())
    }
}

/// Prints ` IF EXISTS` when `flag` is set.
pub(crate) fn if_exists(flag: bool) -> &'static str {
    if flag {
        " IF EXISTS"
    } else {
        ""
    }
}

/// Prints ` IF NOT EXISTS` when `flag` is set.
pub(crate) fn if_not_exists(flag: bool) -> &'static str {
    if flag {
        " IF NOT EXISTS"
    } else {
        ""
    }
}
