//! `cqlStatement`: the top-level dispatch to each statement family's rule, plus the statements
//! too small for a family of their own (`USE`, `TRUNCATE`) and those recognised but not
//! implemented.

use nom::branch::alt;
use nom::combinator::opt;
use nom::Parser;

use super::common::{ident, kw, qualified_name};
use super::{auth, ddl, dml, function, select, view, Expected, Input, PResult};
use crate::ast::{Statement, Unsupported};
use crate::syntax::lexer::TokenKind;

/// `cqlStatement`.
pub(crate) fn statement(i: Input<'_>) -> PResult<'_, Statement> {
    alt((
        select::select.map(|s| Statement::Select(Box::new(s))),
        dml::insert.map(|s| Statement::Insert(Box::new(s))),
        dml::update.map(|s| Statement::Update(Box::new(s))),
        dml::delete.map(|s| Statement::Delete(Box::new(s))),
        dml::batch.map(|s| Statement::Batch(Box::new(s))),
        use_statement,
        truncate,
        function::function_statement,
        view::view_statement,
        unsupported,
        ddl::ddl_statement,
        ddl::describe.map(Statement::Describe),
        auth::auth_statement,
    ))
    .parse(i)
}

/// `USE keyspace`.
fn use_statement(i: Input<'_>) -> PResult<'_, Statement> {
    let (i, _) = kw("use")(i)?;
    let (i, ks) = ident(i)?;
    Ok((i, Statement::Use(ks)))
}

/// `TRUNCATE [TABLE] name`.
fn truncate(i: Input<'_>) -> PResult<'_, Statement> {
    let (i, _) = kw("truncate")(i)?;
    let (i, _) = opt(alt((kw("table"), kw("columnfamily")))).parse(i)?;
    let (i, name) = qualified_name(i)?;
    Ok((i, Statement::Truncate(name)))
}

/// Statements recognised by their first keywords but not implemented: the rest of the
/// statement (up to `;`) is kept as text.
fn unsupported(i: Input<'_>) -> PResult<'_, Statement> {
    const FORMS: &[&[&str]] = &[
        &["create", "trigger"],
        &["drop", "trigger"],
        &["add", "identity"],
        &["drop", "identity"],
    ];
    let Some(form) = FORMS.iter().find(|form| {
        form.iter()
            .enumerate()
            .all(|(n, w)| i.peek_nth(n).is_some_and(|t| t.is_keyword(w)))
    }) else {
        return i.expected(Expected::Other("statement"));
    };
    let kind = form
        .iter()
        .filter(|w| !matches!(**w, "or" | "replace"))
        .map(|w| w.to_ascii_uppercase())
        .collect::<Vec<_>>()
        .join(" ");
    let len = i
        .tokens
        .iter()
        .position(|t| t.kind == TokenKind::Semicolon)
        .unwrap_or(i.tokens.len());
    let rest = i.advance(len);
    let text = i.text_until(&rest).to_string();
    Ok((rest, Statement::Unsupported(Unsupported { kind, text })))
}
