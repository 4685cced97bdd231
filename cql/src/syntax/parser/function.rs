//! `createFunctionStatement`, `dropFunctionStatement`, `createAggregateStatement` and
//! `dropAggregateStatement` from Cassandra's `Parser.g`.

use nom::branch::alt;
use nom::Parser;

use super::common::{
    comma, data_type, ident, if_exists, if_not_exists, kw, kws, lparen, opt_kw, peek_is,
    qualified_name, rparen,
};
use super::expr::term;
use super::{Expected, Input, PResult};
use crate::ast::{CreateAggregate, CreateFunction, DropAggregate, DropFunction, Statement};
use crate::syntax::lexer::{unescape_string, TokenKind};
use crate::types::DataType;

/// Every function and aggregate statement.
pub(crate) fn function_statement(i: Input<'_>) -> PResult<'_, Statement> {
    alt((
        create_function.map(|s| Statement::CreateFunction(Box::new(s))),
        drop_function.map(Statement::DropFunction),
        create_aggregate.map(|s| Statement::CreateAggregate(Box::new(s))),
        drop_aggregate.map(Statement::DropAggregate),
    ))
    .parse(i)
}

/// `CREATE [OR REPLACE] <word>`, giving `or_replace`.
fn create_or_replace<'a>(word: &'static str) -> impl Fn(Input<'a>) -> PResult<'a, bool> {
    move |i| {
        let (i, _) = kw("create")(i)?;
        let (i, or_replace) = opt_kw("or")(i)?;
        let i = if or_replace { kw("replace")(i)?.0 } else { i };
        let (i, _) = kw(word)(i)?;
        Ok((i, or_replace))
    }
}

/// A string literal (`'...'` or `$$...$$`), unescaped.
fn string(i: Input<'_>) -> PResult<'_, String> {
    match i.peek() {
        Some(t) if t.kind == TokenKind::String => Ok((i.advance(1), unescape_string(t.text))),
        _ => i.expected(Expected::Other("STRING_LITERAL")),
    }
}

/// `(` items separated by commas `)`, possibly empty.
fn paren_list<'a, T>(
    item: impl Fn(Input<'a>) -> PResult<'a, T>,
) -> impl Fn(Input<'a>) -> PResult<'a, Vec<T>> {
    move |i| {
        let (mut i, _) = lparen(i)?;
        let mut items = Vec::new();
        if !peek_is(&i, TokenKind::RParen) {
            loop {
                let (r, x) = item(i)?;
                items.push(x);
                i = r;
                if !peek_is(&i, TokenKind::Comma) {
                    break;
                }
                i = comma(i)?.0;
            }
        }
        let (i, _) = rparen(i)?;
        Ok((i, items))
    }
}

fn arg(i: Input<'_>) -> PResult<'_, (String, DataType)> {
    let (i, name) = ident(i)?;
    let (i, t) = data_type(i)?;
    Ok((i, (name, t)))
}

fn create_function(i: Input<'_>) -> PResult<'_, CreateFunction> {
    let (i, or_replace) = create_or_replace("function")(i)?;
    let (i, if_not_exists) = if_not_exists(i)?;
    let (i, name) = qualified_name(i)?;
    let (i, args) = paren_list(arg)(i)?;
    let (i, called_on_null_input) = alt((
        kw("called").map(|_| true),
        kws(&["returns", "null"]).map(|_| false),
    ))
    .parse(i)?;
    let (i, _) = kws(&["on", "null", "input", "returns"])(i)?;
    let (i, return_type) = data_type(i)?;
    let (i, _) = kw("language")(i)?;
    let (i, language) = ident(i)?;
    let (i, _) = kw("as")(i)?;
    let (i, body) = string(i)?;
    Ok((
        i,
        CreateFunction {
            name,
            or_replace,
            if_not_exists,
            args,
            called_on_null_input,
            return_type,
            language: language.to_ascii_lowercase(),
            body,
        },
    ))
}

fn opt_types(i: Input<'_>) -> PResult<'_, Option<Vec<DataType>>> {
    if peek_is(&i, TokenKind::LParen) {
        let (i, types) = paren_list(data_type)(i)?;
        Ok((i, Some(types)))
    } else {
        Ok((i, None))
    }
}

fn drop_function(i: Input<'_>) -> PResult<'_, DropFunction> {
    let (i, _) = kws(&["drop", "function"])(i)?;
    let (i, if_exists) = if_exists(i)?;
    let (i, name) = qualified_name(i)?;
    let (i, arg_types) = opt_types(i)?;
    Ok((
        i,
        DropFunction {
            name,
            if_exists,
            arg_types,
        },
    ))
}

fn create_aggregate(i: Input<'_>) -> PResult<'_, CreateAggregate> {
    let (i, or_replace) = create_or_replace("aggregate")(i)?;
    let (i, if_not_exists) = if_not_exists(i)?;
    let (i, name) = qualified_name(i)?;
    let (i, arg_types) = paren_list(data_type)(i)?;
    let (i, _) = kw("sfunc")(i)?;
    let (i, state_func) = ident(i)?;
    let (i, _) = kw("stype")(i)?;
    let (i, state_type) = data_type(i)?;
    let (i, final_func) = if opt_kw("finalfunc")(i)?.1 {
        let (i, _) = kw("finalfunc")(i)?;
        let (i, g) = ident(i)?;
        (i, Some(g))
    } else {
        (i, None)
    };
    let (i, initcond) = if opt_kw("initcond")(i)?.1 {
        let (i, _) = kw("initcond")(i)?;
        let (i, t) = term(i)?;
        (i, Some(t))
    } else {
        (i, None)
    };
    Ok((
        i,
        CreateAggregate {
            name,
            or_replace,
            if_not_exists,
            arg_types,
            state_func,
            state_type,
            final_func,
            initcond,
        },
    ))
}

fn drop_aggregate(i: Input<'_>) -> PResult<'_, DropAggregate> {
    let (i, _) = kws(&["drop", "aggregate"])(i)?;
    let (i, if_exists) = if_exists(i)?;
    let (i, name) = qualified_name(i)?;
    let (i, arg_types) = opt_types(i)?;
    Ok((
        i,
        DropAggregate {
            name,
            if_exists,
            arg_types,
        },
    ))
}

#[cfg(test)]
mod tests {
    use crate::ast::Statement;
    use crate::syntax::parse_statements;

    fn one(cql: &str) -> Statement {
        let mut v = parse_statements(cql).expect("parses");
        assert_eq!(v.len(), 1);
        v.remove(0)
    }

    #[test]
    fn create_function_with_dollar_body_round_trips() {
        let s = one(
            "CREATE OR REPLACE FUNCTION IF NOT EXISTS ks.plus(a int, b int) \
             RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua AS $$ return a + b $$",
        );
        let Statement::CreateFunction(f) = &s else {
            panic!("not a function: {s:?}")
        };
        assert!(f.or_replace && f.if_not_exists && !f.called_on_null_input);
        assert_eq!(f.args.len(), 2);
        assert_eq!(f.language, "lua");
        assert_eq!(f.body, " return a + b ");
        assert_eq!(one(&s.to_string()), s);
    }

    #[test]
    fn create_function_called_on_null_without_args() {
        let s = one("CREATE FUNCTION f() CALLED ON NULL INPUT RETURNS text LANGUAGE java AS 'x'");
        let Statement::CreateFunction(f) = &s else {
            panic!("not a function: {s:?}")
        };
        assert!(f.called_on_null_input && !f.or_replace && f.args.is_empty());
        assert_eq!(one(&s.to_string()), s);
    }

    #[test]
    fn drop_function_with_and_without_types() {
        for cql in [
            "DROP FUNCTION ks.f",
            "DROP FUNCTION IF EXISTS f(int, list<text>)",
            "DROP FUNCTION f()",
        ] {
            let s = one(cql);
            assert!(matches!(s, Statement::DropFunction(_)), "{cql}");
            assert_eq!(one(&s.to_string()), s);
        }
    }

    #[test]
    fn aggregate_statements_round_trip() {
        for cql in [
            "CREATE AGGREGATE ks.total(int) SFUNC plus STYPE int FINALFUNC fin INITCOND 0",
            "CREATE OR REPLACE AGGREGATE IF NOT EXISTS a(int, text) SFUNC s STYPE list<int>",
            "CREATE AGGREGATE a(int) SFUNC s STYPE map<text, int> INITCOND {}",
            "DROP AGGREGATE IF EXISTS ks.total(int)",
            "DROP AGGREGATE total",
        ] {
            let s = one(cql);
            assert_eq!(one(&s.to_string()), s, "{cql}");
        }
    }

    #[test]
    fn missing_null_input_clause_is_a_syntax_error() {
        assert!(
            parse_statements("CREATE FUNCTION f(a int) RETURNS int LANGUAGE lua AS 'x'").is_err()
        );
    }
}
