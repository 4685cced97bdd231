//! Roles, users and permissions (`createRoleStatement`, `grantPermissionsStatement`, ...).

use nom::branch::alt;
use nom::combinator::opt;
use nom::multi::{separated_list0, separated_list1};
use nom::Parser;

use super::common::{
    comma, data_type, eq, ident, if_exists, if_not_exists, kw, kws, lparen, opt_kw, option_map,
    qualified_name, rparen, sym,
};
use super::{Expected, Input, PResult};
use crate::ast::{
    AlterRole, AlterUser, CreateRole, CreateUser, DropRole, DropUser, GrantPermissions, GrantRole,
    ListPermissions, ListRoles, Permission, Permissions, Resource, RevokePermissions, RevokeRole,
    RoleOption, Statement,
};
use crate::syntax::lexer::{unescape_quoted_ident, unescape_string, TokenKind};

use super::common::is_reserved;

/// Every security statement.
pub(crate) fn auth_statement(i: Input<'_>) -> PResult<'_, Statement> {
    alt((
        create_role.map(Statement::CreateRole),
        alter_role.map(Statement::AlterRole),
        drop_role.map(Statement::DropRole),
        create_user.map(Statement::CreateUser),
        alter_user.map(Statement::AlterUser),
        drop_user.map(Statement::DropUser),
        grant_permissions.map(Statement::GrantPermissions),
        revoke_permissions.map(Statement::RevokePermissions),
        grant_role.map(Statement::GrantRole),
        revoke_role.map(Statement::RevokeRole),
        list_roles.map(Statement::ListRoles),
        kws(&["list", "users"]).map(|_| Statement::ListUsers),
        kws(&["list", "superusers"]).map(|_| Statement::ListSuperusers),
        list_permissions.map(Statement::ListPermissions),
    ))
    .parse(i)
}

fn string(i: Input<'_>) -> PResult<'_, String> {
    match i.peek() {
        Some(t) if t.kind == TokenKind::String => Ok((i.advance(1), unescape_string(t.text))),
        _ => i.expected(Expected::Other("STRING_LITERAL")),
    }
}

fn boolean(i: Input<'_>) -> PResult<'_, bool> {
    match i.peek() {
        Some(t) if t.kind == TokenKind::Boolean => {
            Ok((i.advance(1), t.text.eq_ignore_ascii_case("true")))
        }
        _ => i.expected(Expected::Other("BOOLEAN")),
    }
}

/// `roleName`: identifier (lower-cased), quoted name or string (both exact).
fn role_name(i: Input<'_>) -> PResult<'_, String> {
    alt((ident, string)).parse(i)
}

/// `username`: a word (case kept) or a string.
fn username(i: Input<'_>) -> PResult<'_, String> {
    match i.peek() {
        Some(t) if t.kind == TokenKind::Ident && !is_reserved(t.text) => {
            Ok((i.advance(1), t.text.to_string()))
        }
        Some(t) if t.kind == TokenKind::QuotedIdent => {
            Ok((i.advance(1), unescape_quoted_ident(t.text)))
        }
        _ => string(i),
    }
}

fn string_set(i: Input<'_>) -> PResult<'_, Vec<String>> {
    let (i, _) = sym(TokenKind::LBrace, "{")(i)?;
    let (i, items) = separated_list1(comma, string).parse(i)?;
    let (i, _) = sym(TokenKind::RBrace, "}")(i)?;
    Ok((i, items))
}

/// `roleOption`.
fn role_option(i: Input<'_>) -> PResult<'_, RoleOption> {
    alt((
        |i| {
            let (i, _) = kw("password")(i)?;
            let (i, _) = eq(i)?;
            string.map(RoleOption::Password).parse(i)
        },
        kws(&["generated", "password"]).map(|_| RoleOption::GeneratedPassword),
        |i| {
            let (i, _) = kws(&["hashed", "password"])(i)?;
            let (i, _) = eq(i)?;
            string.map(RoleOption::HashedPassword).parse(i)
        },
        |i| {
            let (i, _) = kw("options")(i)?;
            let (i, _) = eq(i)?;
            option_map.map(RoleOption::Options).parse(i)
        },
        |i| {
            let (i, _) = kw("superuser")(i)?;
            let (i, _) = eq(i)?;
            boolean.map(RoleOption::Superuser).parse(i)
        },
        |i| {
            let (i, _) = kw("login")(i)?;
            let (i, _) = eq(i)?;
            boolean.map(RoleOption::Login).parse(i)
        },
        kws(&["access", "to", "all", "datacenters"]).map(|_| RoleOption::AccessToAllDatacenters),
        |i| {
            let (i, _) = kws(&["access", "to", "datacenters"])(i)?;
            string_set.map(RoleOption::AccessToDatacenters).parse(i)
        },
        kws(&["access", "from", "all", "cidrs"]).map(|_| RoleOption::AccessFromAllCidrs),
        |i| {
            let (i, _) = kws(&["access", "from", "cidrs"])(i)?;
            string_set.map(RoleOption::AccessFromCidrs).parse(i)
        },
    ))
    .parse(i)
}

fn role_options(i: Input<'_>) -> PResult<'_, Vec<RoleOption>> {
    opt(|i| {
        let (i, _) = kw("with")(i)?;
        separated_list1(kw("and"), role_option).parse(i)
    })
    .map(Option::unwrap_or_default)
    .parse(i)
}

fn create_role(i: Input<'_>) -> PResult<'_, CreateRole> {
    let (i, _) = kws(&["create", "role"])(i)?;
    let (i, if_not_exists) = if_not_exists(i)?;
    let (i, name) = role_name(i)?;
    let (i, options) = role_options(i)?;
    Ok((
        i,
        CreateRole {
            name,
            if_not_exists,
            options,
        },
    ))
}

fn alter_role(i: Input<'_>) -> PResult<'_, AlterRole> {
    let (i, _) = kws(&["alter", "role"])(i)?;
    let (i, if_exists) = if_exists(i)?;
    let (i, name) = role_name(i)?;
    let (i, options) = role_options(i)?;
    Ok((
        i,
        AlterRole {
            name,
            if_exists,
            options,
        },
    ))
}

fn drop_role(i: Input<'_>) -> PResult<'_, DropRole> {
    let (i, _) = kws(&["drop", "role"])(i)?;
    let (i, if_exists) = if_exists(i)?;
    let (i, name) = role_name(i)?;
    Ok((i, DropRole { name, if_exists }))
}

/// `[WITH userPassword] [SUPERUSER | NOSUPERUSER]`.
fn user_tail(i: Input<'_>) -> PResult<'_, (Option<RoleOption>, Option<bool>)> {
    let (i, password) = opt(|i| {
        let (i, _) = kw("with")(i)?;
        alt((
            |i| {
                let (i, _) = kw("password")(i)?;
                string.map(RoleOption::Password).parse(i)
            },
            |i| {
                let (i, _) = kws(&["hashed", "password"])(i)?;
                string.map(RoleOption::HashedPassword).parse(i)
            },
            kws(&["generated", "password"]).map(|_| RoleOption::GeneratedPassword),
        ))
        .parse(i)
    })
    .parse(i)?;
    let (i, superuser) = opt(alt((
        kw("superuser").map(|_| true),
        kw("nosuperuser").map(|_| false),
    )))
    .parse(i)?;
    Ok((i, (password, superuser)))
}

fn create_user(i: Input<'_>) -> PResult<'_, CreateUser> {
    let (i, _) = kws(&["create", "user"])(i)?;
    let (i, if_not_exists) = if_not_exists(i)?;
    let (i, name) = username(i)?;
    let (i, (password, superuser)) = user_tail(i)?;
    Ok((
        i,
        CreateUser {
            name,
            if_not_exists,
            password,
            superuser,
        },
    ))
}

fn alter_user(i: Input<'_>) -> PResult<'_, AlterUser> {
    let (i, _) = kws(&["alter", "user"])(i)?;
    let (i, if_exists) = if_exists(i)?;
    let (i, name) = username(i)?;
    let (i, (password, superuser)) = user_tail(i)?;
    Ok((
        i,
        AlterUser {
            name,
            if_exists,
            password,
            superuser,
        },
    ))
}

fn drop_user(i: Input<'_>) -> PResult<'_, DropUser> {
    let (i, _) = kws(&["drop", "user"])(i)?;
    let (i, if_exists) = if_exists(i)?;
    let (i, name) = username(i)?;
    Ok((i, DropUser { name, if_exists }))
}

/// `permission [PERMISSION]`.
fn permission(i: Input<'_>) -> PResult<'_, Permission> {
    let Some(t) = i.peek() else {
        return i.expected(Expected::Other("permission"));
    };
    let Some((p, _)) = Permission::ALL.iter().find(|(_, k)| t.is_keyword(k)) else {
        return i.expected(Expected::Other("permission"));
    };
    let (i, _) = opt_kw("permission")(i.advance(1))?;
    Ok((i, *p))
}

/// `permissionOrAll`.
fn permissions(i: Input<'_>) -> PResult<'_, Permissions> {
    alt((
        |i| {
            let (i, _) = kw("all")(i)?;
            let (i, _) = opt_kw("permissions")(i)?;
            Ok((i, Permissions::All))
        },
        separated_list1(comma, permission).map(Permissions::List),
    ))
    .parse(i)
}

/// `resource`.
fn resource(i: Input<'_>) -> PResult<'_, Resource> {
    let keyspace = |i| {
        let (i, _) = kw("keyspace")(i)?;
        ident(i)
    };
    alt((
        kws(&["all", "keyspaces"]).map(|_| Resource::AllKeyspaces),
        |i| {
            let (i, _) = kws(&["all", "tables", "in"])(i)?;
            keyspace.map(Resource::AllTablesInKeyspace).parse(i)
        },
        kws(&["all", "roles"]).map(|_| Resource::AllRoles),
        |i| {
            let (i, _) = kws(&["all", "functions", "in"])(i)?;
            keyspace.map(Resource::AllFunctionsInKeyspace).parse(i)
        },
        kws(&["all", "functions"]).map(|_| Resource::AllFunctions),
        kws(&["all", "mbeans"]).map(|_| Resource::AllMBeans),
        keyspace.map(Resource::Keyspace),
        |i| {
            let (i, _) = kw("role")(i)?;
            role_name.map(Resource::Role).parse(i)
        },
        |i| {
            let (i, _) = kw("function")(i)?;
            let (i, name) = qualified_name(i)?;
            let (i, _) = lparen(i)?;
            let (i, args) = separated_list0(comma, data_type).parse(i)?;
            let (i, _) = rparen(i)?;
            Ok((i, Resource::Function { name, args }))
        },
        |i| {
            let (i, _) = kw("mbean")(i)?;
            string.map(Resource::MBean).parse(i)
        },
        |i| {
            let (i, _) = kw("mbeans")(i)?;
            string.map(Resource::MBeans).parse(i)
        },
        |i| {
            let (i, _) = opt(alt((kw("table"), kw("columnfamily")))).parse(i)?;
            qualified_name.map(Resource::Table).parse(i)
        },
    ))
    .parse(i)
}

fn grant_permissions(i: Input<'_>) -> PResult<'_, GrantPermissions> {
    let (i, _) = kw("grant")(i)?;
    let (i, permissions) = permissions(i)?;
    let (i, _) = kw("on")(i)?;
    let (i, resource) = resource(i)?;
    let (i, _) = kw("to")(i)?;
    let (i, grantee) = role_name(i)?;
    Ok((
        i,
        GrantPermissions {
            permissions,
            resource,
            grantee,
        },
    ))
}

fn revoke_permissions(i: Input<'_>) -> PResult<'_, RevokePermissions> {
    let (i, _) = kw("revoke")(i)?;
    let (i, permissions) = permissions(i)?;
    let (i, _) = kw("on")(i)?;
    let (i, resource) = resource(i)?;
    let (i, _) = kw("from")(i)?;
    let (i, revokee) = role_name(i)?;
    Ok((
        i,
        RevokePermissions {
            permissions,
            resource,
            revokee,
        },
    ))
}

fn grant_role(i: Input<'_>) -> PResult<'_, GrantRole> {
    let (i, _) = kw("grant")(i)?;
    let (i, role) = role_name(i)?;
    let (i, _) = kw("to")(i)?;
    let (i, grantee) = role_name(i)?;
    Ok((i, GrantRole { role, grantee }))
}

fn revoke_role(i: Input<'_>) -> PResult<'_, RevokeRole> {
    let (i, _) = kw("revoke")(i)?;
    let (i, role) = role_name(i)?;
    let (i, _) = kw("from")(i)?;
    let (i, revokee) = role_name(i)?;
    Ok((i, RevokeRole { role, revokee }))
}

/// `[OF role] [NORECURSIVE]`.
fn of_recursive(i: Input<'_>) -> PResult<'_, (Option<String>, bool)> {
    let (i, of) = opt(|i| {
        let (i, _) = kw("of")(i)?;
        role_name(i)
    })
    .parse(i)?;
    let (i, norecursive) = opt_kw("norecursive")(i)?;
    Ok((i, (of, !norecursive)))
}

fn list_roles(i: Input<'_>) -> PResult<'_, ListRoles> {
    let (i, _) = kws(&["list", "roles"])(i)?;
    let (i, (of, recursive)) = of_recursive(i)?;
    Ok((i, ListRoles { of, recursive }))
}

fn list_permissions(i: Input<'_>) -> PResult<'_, ListPermissions> {
    let (i, _) = kw("list")(i)?;
    let (i, permissions) = permissions(i)?;
    let (i, resource) = opt(|i| {
        let (i, _) = kw("on")(i)?;
        resource(i)
    })
    .parse(i)?;
    let (i, (of, recursive)) = of_recursive(i)?;
    Ok((
        i,
        ListPermissions {
            permissions,
            resource,
            of,
            recursive,
        },
    ))
}
