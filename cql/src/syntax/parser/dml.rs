//! `insertStatement`, `updateStatement`, `deleteStatement` and `batchStatement`.

use nom::branch::alt;
use nom::combinator::opt;
use nom::multi::{many0, separated_list0, separated_list1};
use nom::Parser;

use super::common::{
    comma, eq, ident, ident_list, if_not_exists, kw, kws, lparen, qualified_name, rparen, sym,
};
use super::expr::{
    condition_predicate, field_suffix, int_value, literal, marker, term, where_clause,
};
use super::{Input, PResult};
use crate::ast::{
    Assignment, Batch, BatchType, Condition, Conditions, Delete, DeleteTarget, Expr, Insert,
    InsertValues, Literal, Statement, Update, Using,
};
use crate::syntax::lexer::TokenKind;

/// `INSERT INTO ...`.
pub(crate) fn insert(i: Input<'_>) -> PResult<'_, Insert> {
    let (i, _) = kws(&["insert", "into"])(i)?;
    let (i, table) = qualified_name(i)?;
    let (i, (columns, values, default_unset)) = alt((
        |i| {
            let (i, columns) = ident_list(i)?;
            let (i, _) = kw("values")(i)?;
            let (i, _) = lparen(i)?;
            let (i, values) = separated_list1(comma, term).parse(i)?;
            let (i, _) = rparen(i)?;
            Ok((i, (columns, InsertValues::Values(values), false)))
        },
        |i| {
            let (i, _) = kw("json")(i)?;
            let (i, value) = alt((json_string, marker)).parse(i)?;
            let (i, default) = opt(|i| {
                let (i, _) = kw("default")(i)?;
                alt((kw("null").map(|_| false), kw("unset").map(|_| true))).parse(i)
            })
            .parse(i)?;
            Ok((
                i,
                (
                    Vec::new(),
                    InsertValues::Json(value),
                    default.unwrap_or(false),
                ),
            ))
        },
    ))
    .parse(i)?;
    let (i, if_not_exists) = if_not_exists(i)?;
    let (i, using) = using_clause(i)?;
    Ok((
        i,
        Insert {
            table,
            columns,
            values,
            default_unset,
            if_not_exists,
            using,
        },
    ))
}

fn json_string(i: Input<'_>) -> PResult<'_, Expr> {
    match i.peek() {
        Some(t) if t.kind == TokenKind::String => literal.map(Expr::Literal).parse(i),
        _ => i.expected(super::Expected::Other("STRING_LITERAL")),
    }
}

/// `usingClause`, optional: `USING TTL t AND TIMESTAMP ts`.
pub(crate) fn using_clause(i: Input<'_>) -> PResult<'_, Using> {
    let Ok((mut i, _)) = kw("using")(i) else {
        return Ok((i, Using::default()));
    };
    let mut using = Using::default();
    loop {
        // A repeated option replaces the earlier one, as in Cassandra's grammar;
        // `timestamp_first` follows the options that stay.
        if let Ok((r, _)) = kw("ttl")(i) {
            let (r, v) = int_value(r)?;
            using.ttl = Some(v);
            using.timestamp_first = using.timestamp.is_some();
            i = r;
        } else {
            let (r, _) = kw("timestamp")(i)?;
            let (r, v) = int_value(r)?;
            using.timestamp = Some(v);
            using.timestamp_first = false;
            i = r;
        }
        match kw("and")(i) {
            Ok((r, _)) => i = r,
            Err(_) => return Ok((i, using)),
        }
    }
}

/// `UPDATE ...`.
pub(crate) fn update(i: Input<'_>) -> PResult<'_, Update> {
    let (i, _) = kw("update")(i)?;
    let (i, table) = qualified_name(i)?;
    let (i, using) = using_clause(i)?;
    let (i, _) = kw("set")(i)?;
    let (i, assignments) = separated_list1(comma, assignment).parse(i)?;
    let (i, _) = kw("where")(i)?;
    let (i, where_clause) = where_clause(i)?;
    let (i, conditions) = conditions(i)?;
    Ok((
        i,
        Update {
            table,
            using,
            assignments,
            where_clause,
            conditions,
        },
    ))
}

/// `columnOperation`.
fn assignment(i: Input<'_>) -> PResult<'_, Assignment> {
    let (i, column) = ident(i)?;
    match i.peek().map(|t| t.kind) {
        Some(TokenKind::PlusEq) => {
            let (i, value) = term(i.advance(1))?;
            Ok((i, Assignment::Add { column, value }))
        }
        Some(TokenKind::MinusEq) => {
            let (i, value) = term(i.advance(1))?;
            Ok((i, Assignment::Subtract { column, value }))
        }
        Some(TokenKind::LBracket) => {
            let (i, key) = term(i.advance(1))?;
            let (i, _) = sym(TokenKind::RBracket, "]")(i)?;
            let (i, _) = eq(i)?;
            let (i, value) = term(i)?;
            Ok((i, Assignment::SetElement { column, key, value }))
        }
        Some(TokenKind::Dot) => {
            let (i, field) = field_suffix(i)?;
            let (i, _) = eq(i)?;
            let (i, value) = term(i)?;
            Ok((
                i,
                Assignment::SetField {
                    column,
                    field,
                    value,
                },
            ))
        }
        _ => {
            let (i, _) = eq(i)?;
            normal_assignment(i, column)
        }
    }
}

/// `normalColumnOperation`: `c = v`, `c = c + v`, `c = c - v`, `c = v + c`, `c = c -5`.
fn normal_assignment(i: Input<'_>, column: String) -> PResult<'_, Assignment> {
    let self_ref = |i: Input<'_>| -> bool {
        let word = i
            .peek()
            .is_some_and(|t| matches!(t.kind, TokenKind::Ident | TokenKind::QuotedIdent));
        let follow = i.peek_nth(1).map(|t| (t.kind, t.text));
        let sign = match follow {
            Some((TokenKind::Plus | TokenKind::Minus, _)) => true,
            Some((TokenKind::Integer, text)) => text.starts_with('-'),
            _ => false,
        };
        word && sign
    };
    if self_ref(i) {
        let (r, other) = ident(i)?;
        if other != column {
            return i.fail(format!(
                "Only expressions of the form X = X +/- <value> are supported (got {column} = {other} ...)"
            ));
        }
        return match r.peek() {
            Some(t) if t.kind == TokenKind::Integer => Ok((
                r.advance(1),
                Assignment::Add {
                    column,
                    value: Expr::Literal(Literal::Integer(t.text.to_string())),
                },
            )),
            Some(t) if t.kind == TokenKind::Minus => {
                let (r, value) = term(r.advance(1))?;
                Ok((r, Assignment::Subtract { column, value }))
            }
            _ => {
                let (r, value) = term(r.advance(1))?;
                Ok((r, Assignment::Add { column, value }))
            }
        };
    }
    let (i, value) = term(i)?;
    if i.peek().is_some_and(|t| t.kind == TokenKind::Plus) {
        let plus = i;
        let (r, other) = ident(i.advance(1))?;
        if other != column {
            return plus.fail(format!(
                "Only expressions of the form X = <value> + X are supported (got {column} = ... + {other})"
            ));
        }
        return Ok((r, Assignment::Prepend { column, value }));
    }
    Ok((i, Assignment::Set { column, value }))
}

/// `IF EXISTS` or `IF cond AND ...`, optional.
fn conditions(i: Input<'_>) -> PResult<'_, Option<Conditions>> {
    opt(|i| {
        let (i, _) = kw("if")(i)?;
        alt((
            separated_list1(kw("and"), condition).map(Conditions::List),
            kw("exists").map(|_| Conditions::IfExists),
        ))
        .parse(i)
    })
    .parse(i)
}

/// `deleteOp`, also the left side of `columnCondition`.
fn target(i: Input<'_>) -> PResult<'_, DeleteTarget> {
    let (i, column) = ident(i)?;
    match i.peek().map(|t| t.kind) {
        Some(TokenKind::LBracket) => {
            let (i, key) = term(i.advance(1))?;
            let (i, _) = sym(TokenKind::RBracket, "]")(i)?;
            Ok((i, DeleteTarget::Element(column, key)))
        }
        Some(TokenKind::Dot) => {
            let (i, field) = field_suffix(i)?;
            Ok((i, DeleteTarget::Field(column, field)))
        }
        _ => Ok((i, DeleteTarget::Column(column))),
    }
}

/// `columnCondition`.
fn condition(i: Input<'_>) -> PResult<'_, Condition> {
    let (i, target) = target(i)?;
    let (i, (op, value)) = condition_predicate(i)?;
    Ok((i, Condition { target, op, value }))
}

/// `DELETE ...`.
pub(crate) fn delete(i: Input<'_>) -> PResult<'_, Delete> {
    let (i, _) = kw("delete")(i)?;
    let (i, columns) = separated_list0(comma, target).parse(i)?;
    let (i, _) = kw("from")(i)?;
    let (i, table) = qualified_name(i)?;
    let (i, timestamp) = opt(|i| {
        let (i, _) = kws(&["using", "timestamp"])(i)?;
        int_value(i)
    })
    .parse(i)?;
    let (i, _) = kw("where")(i)?;
    let (i, where_clause) = where_clause(i)?;
    let (i, conditions) = conditions(i)?;
    Ok((
        i,
        Delete {
            columns,
            table,
            using: Using {
                ttl: None,
                timestamp,
                timestamp_first: false,
            },
            where_clause,
            conditions,
        },
    ))
}

/// `BEGIN [UNLOGGED | COUNTER] BATCH ... APPLY BATCH`.
pub(crate) fn batch(i: Input<'_>) -> PResult<'_, Batch> {
    let (i, _) = kw("begin")(i)?;
    let (i, batch_type) = opt(alt((
        kw("unlogged").map(|_| BatchType::Unlogged),
        kw("counter").map(|_| BatchType::Counter),
    )))
    .parse(i)?;
    let (i, _) = kw("batch")(i)?;
    let (i, using) = using_clause(i)?;
    let (i, statements) = many0(|i| {
        let (i, s) = alt((
            insert.map(|s| Statement::Insert(Box::new(s))),
            update.map(|s| Statement::Update(Box::new(s))),
            delete.map(|s| Statement::Delete(Box::new(s))),
        ))
        .parse(i)?;
        let (i, _) = opt(sym(TokenKind::Semicolon, ";")).parse(i)?;
        Ok((i, s))
    })
    .parse(i)?;
    let (i, _) = kws(&["apply", "batch"])(i)?;
    Ok((
        i,
        Batch {
            batch_type: batch_type.unwrap_or(BatchType::Logged),
            using,
            statements,
        },
    ))
}
