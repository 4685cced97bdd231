//! Terms, selectors, constants and `WHERE` relations.
//!
//! Cassandra has two parallel expression grammars, `term` (values) and `unaliasedSelector`
//! (select items, which may name columns and pick fields/elements). They share one
//! implementation here, switched by [`Mode`].

use nom::branch::alt;
use nom::combinator::opt;
use nom::multi::{many0, separated_list0, separated_list1};
use nom::Parser;

use super::common::{
    comma, data_type, dot, ident, ident_list, kw, kws, lparen, peek_is, rparen, sym,
};
use super::{Expected, Input, PResult};
use crate::ast::{BinaryOp, Expr, Literal, Operator, QualifiedName, Relation};
use crate::syntax::lexer::{duration_unit, unescape_string, TokenKind};

/// Which expression grammar to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `term`: a value; identifiers are only function names.
    Term,
    /// `unaliasedSelector`: identifiers are columns, with `.field` and `[key]` modifiers.
    Selector,
}

/// `term`.
pub(crate) fn term(i: Input<'_>) -> PResult<'_, Expr> {
    expr(i, Mode::Term)
}

/// `unaliasedSelector`.
pub(crate) fn selector_expr(i: Input<'_>) -> PResult<'_, Expr> {
    expr(i, Mode::Selector)
}

fn expr(i: Input<'_>, mode: Mode) -> PResult<'_, Expr> {
    let _guard = i.nest()?;
    binary(
        i,
        &[
            (TokenKind::Plus, BinaryOp::Add),
            (TokenKind::Minus, BinaryOp::Sub),
        ],
        |i| {
            binary(
                i,
                &[
                    (TokenKind::Star, BinaryOp::Mul),
                    (TokenKind::Slash, BinaryOp::Div),
                    (TokenKind::Percent, BinaryOp::Rem),
                ],
                |i| group(i, mode),
            )
        },
    )
}

/// A left-associative chain `operand (op operand)*`; an operator whose right operand does not
/// parse is left unconsumed (so `c = [1] + c` can see the `+ c`).
fn binary<'a>(
    i: Input<'a>,
    ops: &[(TokenKind, BinaryOp)],
    operand: impl Fn(Input<'a>) -> PResult<'a, Expr>,
) -> PResult<'a, Expr> {
    let (mut i, mut left) = operand(i)?;
    loop {
        let Some(op) = i
            .peek()
            .and_then(|t| ops.iter().find(|(k, _)| *k == t.kind))
            .map(|(_, op)| *op)
        else {
            return Ok((i, left));
        };
        match operand(i.advance(1)) {
            Ok((rest, right)) => {
                left = Expr::Binary {
                    op,
                    left: Box::new(left),
                    right: Box::new(right),
                };
                i = rest;
            }
            Err(nom::Err::Error(_)) => return Ok((i, left)),
            Err(e) => return Err(e),
        }
    }
}

/// `termGroup` / `selectionGroup`: an optionally negated primary, with selector modifiers.
fn group(i: Input<'_>, mode: Mode) -> PResult<'_, Expr> {
    if peek_is(&i, TokenKind::Minus) {
        let _guard = i.nest()?;
        let (i, e) = group(i.advance(1), mode)?;
        return Ok((i, Expr::Negate(Box::new(e))));
    }
    let (mut i, mut e) = primary(i, mode)?;
    if mode == Mode::Selector {
        loop {
            if peek_is(&i, TokenKind::Dot) {
                let (rest, field) = ident(i.advance(1))?;
                e = Expr::FieldAccess {
                    expr: Box::new(e),
                    field,
                };
                i = rest;
            } else if peek_is(&i, TokenKind::LBracket) {
                let (rest, key) = term(i.advance(1))?;
                let (rest, _) = sym(TokenKind::RBracket, "]")(rest)?;
                e = Expr::ElementAccess {
                    expr: Box::new(e),
                    key: Box::new(key),
                };
                i = rest;
            } else {
                break;
            }
        }
    }
    Ok((i, e))
}

/// `simpleTerm` / `selectionGroupWithoutField`.
fn primary(i: Input<'_>, mode: Mode) -> PResult<'_, Expr> {
    let Some(t) = i.peek() else {
        return i.expected(Expected::Other("term"));
    };
    match t.kind {
        TokenKind::LBracket => {
            let (i, items) = separated_list0(comma, |i| expr(i, mode)).parse(i.advance(1))?;
            let (i, _) = sym(TokenKind::RBracket, "]")(i)?;
            Ok((i, Expr::List(items)))
        }
        TokenKind::LBrace => brace(i, mode),
        TokenKind::LParen => {
            if let Ok(hinted) = type_hint(i, mode) {
                return Ok(hinted);
            }
            let (i, items) = separated_list1(comma, |i| expr(i, mode)).parse(i.advance(1))?;
            let (i, _) = rparen(i)?;
            Ok((i, Expr::Tuple(items)))
        }
        TokenKind::QMark | TokenKind::Colon => marker(i),
        TokenKind::Ident | TokenKind::QuotedIdent => name_expr(i, mode),
        _ => literal.map(Expr::Literal).parse(i),
    }
}

/// `(type) value`.
fn type_hint(i: Input<'_>, mode: Mode) -> PResult<'_, Expr> {
    let _guard = i.nest()?;
    let (i, _) = lparen(i)?;
    let (i, ty) = data_type(i)?;
    let (i, _) = rparen(i)?;
    let (i, e) = primary(i, mode)?;
    Ok((
        i,
        Expr::TypeHint {
            ty,
            expr: Box::new(e),
        },
    ))
}

/// `{}`, `{a, b}`, `{k: v}` or `{field: v}`.
fn brace(i: Input<'_>, mode: Mode) -> PResult<'_, Expr> {
    let i = i.advance(1);
    let close = sym(TokenKind::RBrace, "}");
    if peek_is(&i, TokenKind::RBrace) {
        return Ok((i.advance(1), Expr::Set(Vec::new())));
    }
    let is_field = i
        .peek()
        .is_some_and(|t| matches!(t.kind, TokenKind::Ident | TokenKind::QuotedIdent))
        && i.peek_nth(1).is_some_and(|t| t.kind == TokenKind::Colon);
    if is_field {
        let field = |i| {
            let (i, name) = ident(i)?;
            let (i, _) = sym(TokenKind::Colon, ":")(i)?;
            let (i, v) = expr(i, mode)?;
            Ok((i, (name, v)))
        };
        let (i, fields) = separated_list1(comma, field).parse(i)?;
        let (i, _) = close(i)?;
        return Ok((i, Expr::UdtLiteral(fields)));
    }
    let (i, first) = expr(i, mode)?;
    if peek_is(&i, TokenKind::Colon) {
        let (mut i, v) = expr(i.advance(1), mode)?;
        let mut entries = vec![(first, v)];
        while peek_is(&i, TokenKind::Comma) {
            let (r, k) = expr(i.advance(1), mode)?;
            let (r, _) = sym(TokenKind::Colon, ":")(r)?;
            let (r, v) = expr(r, mode)?;
            entries.push((k, v));
            i = r;
        }
        let (i, _) = close(i)?;
        return Ok((i, Expr::Map(entries)));
    }
    let (i, rest) = many0(|i| {
        let (i, _) = comma(i)?;
        expr(i, mode)
    })
    .parse(i)?;
    let (i, _) = close(i)?;
    let mut items = vec![first];
    items.extend(rest);
    Ok((i, Expr::Set(items)))
}

/// `?` or `:name`.
pub(crate) fn marker(i: Input<'_>) -> PResult<'_, Expr> {
    match i.peek() {
        Some(t) if t.kind == TokenKind::QMark => Ok((i.advance(1), Expr::BindMarker(None))),
        Some(t) if t.kind == TokenKind::Colon => {
            let (i, name) = ident(i.advance(1))?;
            Ok((i, Expr::BindMarker(Some(name))))
        }
        _ => i.expected(Expected::Symbol("?")),
    }
}

/// `intValue`: an integer or a marker (`LIMIT`, `USING TTL`, ...).
pub(crate) fn int_value(i: Input<'_>) -> PResult<'_, Expr> {
    match i.peek() {
        Some(t) if t.kind == TokenKind::Integer => Ok((
            i.advance(1),
            Expr::Literal(Literal::Integer(t.text.to_string())),
        )),
        Some(t) if matches!(t.kind, TokenKind::QMark | TokenKind::Colon) => marker(i),
        _ => i.expected(Expected::Other("INTEGER")),
    }
}

/// A word at the start of an expression: `CAST(...)`, `count(*)`, a function call, or (in
/// selectors) a column.
fn name_expr(i: Input<'_>, mode: Mode) -> PResult<'_, Expr> {
    let Some(t) = i.peek() else {
        return i.expected(Expected::Other("term"));
    };
    let next = i.peek_nth(1).map(|n| n.kind);
    if t.kind == TokenKind::Ident && next == Some(TokenKind::LParen) {
        if t.is_keyword("cast") {
            let (r, _) = lparen(i.advance(1))?;
            let (r, e) = expr(r, mode)?;
            let (r, _) = kw("as")(r)?;
            let (r, to) = data_type(r)?;
            let (r, _) = rparen(r)?;
            return Ok((
                r,
                Expr::Cast {
                    expr: Box::new(e),
                    to,
                },
            ));
        }
        if t.is_keyword("count") && i.peek_nth(2).is_some_and(|s| s.kind == TokenKind::Star) {
            let (r, _) = sym(TokenKind::Star, "*")(i.advance(2))?;
            let (r, _) = rparen(r)?;
            return Ok((
                r,
                Expr::FunctionCall {
                    name: QualifiedName::unqualified("count"),
                    args: vec![Expr::Star],
                },
            ));
        }
    }
    let qualified_call =
        next == Some(TokenKind::Dot) && i.peek_nth(3).is_some_and(|t| t.kind == TokenKind::LParen);
    if next == Some(TokenKind::LParen) || qualified_call {
        let (r, name) = function_name(i)?;
        let (r, _) = lparen(r)?;
        let (r, args) = separated_list0(comma, |i| expr(i, mode)).parse(r)?;
        let (r, _) = rparen(r)?;
        return Ok((r, Expr::FunctionCall { name, args }));
    }
    if mode == Mode::Selector && !(t.kind == TokenKind::Ident && is_constant_word(t.text)) {
        let (r, c) = ident(i)?;
        return Ok((r, Expr::Column(c)));
    }
    literal.map(Expr::Literal).parse(i)
}

fn is_constant_word(w: &str) -> bool {
    ["null", "nan", "infinity"]
        .iter()
        .any(|k| w.eq_ignore_ascii_case(k))
}

/// `functionName`: `[ks.]name`, where `token` is allowed although reserved.
pub(crate) fn function_name(i: Input<'_>) -> PResult<'_, QualifiedName> {
    fn fname(i: Input<'_>) -> PResult<'_, String> {
        match i.peek() {
            Some(t) if t.is_keyword("token") => Ok((i.advance(1), "token".to_string())),
            _ => ident(i),
        }
    }
    let (i, first) = fname(i)?;
    if peek_is(&i, TokenKind::Dot) {
        let (i, name) = fname(i.advance(1))?;
        return Ok((i, QualifiedName::qualified(first, name)));
    }
    Ok((i, QualifiedName::unqualified(first)))
}

/// `constant` or `NULL`.
pub(crate) fn literal(i: Input<'_>) -> PResult<'_, Literal> {
    let Some(t) = i.peek() else {
        return i.expected(Expected::Other("constant"));
    };
    let text = t.text;
    let lit = match t.kind {
        TokenKind::String => Literal::String(unescape_string(text)),
        TokenKind::Integer => Literal::Integer(text.to_string()),
        TokenKind::Float => Literal::Float(text.to_string()),
        TokenKind::Boolean => Literal::Boolean(text.eq_ignore_ascii_case("true")),
        TokenKind::Uuid => match uuid::Uuid::parse_str(text) {
            Ok(u) => Literal::Uuid(u),
            Err(_) => return i.fail(format!("Invalid UUID {text}")),
        },
        TokenKind::Hex => match decode_hex(&text[2..]) {
            Some(bytes) => Literal::Blob(bytes),
            None => return i.fail(format!("Invalid hex literal {text}: odd number of digits")),
        },
        TokenKind::Duration => match parse_duration(text) {
            Some((months, days, nanos)) => Literal::Duration {
                months,
                days,
                nanos,
            },
            None => return i.fail(format!("Invalid duration {text}")),
        },
        TokenKind::NegNaN => Literal::NaN,
        TokenKind::NegInfinity => Literal::Infinity { negative: true },
        TokenKind::Ident if t.is_keyword("null") => Literal::Null,
        TokenKind::Ident if t.is_keyword("nan") => Literal::NaN,
        TokenKind::Ident if t.is_keyword("infinity") => Literal::Infinity { negative: false },
        _ => return i.expected(Expected::Other("constant")),
    };
    Ok((i.advance(1), lit))
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|n| u8::from_str_radix(hex.get(n..n + 2)?, 16).ok())
        .collect()
}

/// Converts duration text to Cassandra's (months, days, nanoseconds), or `None` on overflow.
pub(crate) fn parse_duration(text: &str) -> Option<(i32, i32, i64)> {
    const NANOS_PER: [(&str, i64); 7] = [
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("µs", 1_000),
        ("ns", 1),
    ];
    let (negative, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let (mut months, mut days, mut nanos) = (0i64, 0i64, 0i64);
    let add = |acc: &mut i64, n: i64, mul: i64| -> Option<()> {
        *acc = acc.checked_add(n.checked_mul(mul)?)?;
        Some(())
    };
    if let Some(iso) = body.strip_prefix('P') {
        let alt: Vec<&str> = iso.split(['-', 'T', ':']).collect();
        if alt.len() == 6 && iso.len() == 19 {
            let n: Vec<i64> = alt.iter().map(|p| p.parse().ok()).collect::<Option<_>>()?;
            add(&mut months, n[0], 12)?;
            add(&mut months, n[1], 1)?;
            add(&mut days, n[2], 1)?;
            add(&mut nanos, n[3], 3_600_000_000_000)?;
            add(&mut nanos, n[4], 60_000_000_000)?;
            add(&mut nanos, n[5], 1_000_000_000)?;
        } else {
            let mut in_time = false;
            let mut rest = iso;
            while !rest.is_empty() {
                if let Some(r) = rest.strip_prefix('T') {
                    in_time = true;
                    rest = r;
                    continue;
                }
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                let n: i64 = rest.get(..digits)?.parse().ok()?;
                let unit = rest[digits..].chars().next()?;
                match (unit, in_time) {
                    ('Y', false) => add(&mut months, n, 12)?,
                    ('M', false) => add(&mut months, n, 1)?,
                    ('W', false) => add(&mut days, n, 7)?,
                    ('D', false) => add(&mut days, n, 1)?,
                    ('H', true) => add(&mut nanos, n, 3_600_000_000_000)?,
                    ('M', true) => add(&mut nanos, n, 60_000_000_000)?,
                    ('S', true) => add(&mut nanos, n, 1_000_000_000)?,
                    _ => return None,
                }
                rest = &rest[digits + unit.len_utf8()..];
            }
        }
    } else {
        let mut rest = body;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let n: i64 = rest.get(..digits)?.parse().ok()?;
            let unit = duration_unit(&rest[digits..])?;
            match unit {
                "y" => add(&mut months, n, 12)?,
                "mo" => add(&mut months, n, 1)?,
                "w" => add(&mut days, n, 7)?,
                "d" => add(&mut days, n, 1)?,
                _ => {
                    let mul = NANOS_PER.iter().find(|(u, _)| *u == unit)?.1;
                    add(&mut nanos, n, mul)?;
                }
            }
            rest = &rest[digits + unit.len()..];
        }
    }
    if negative {
        (months, days, nanos) = (-months, -days, -nanos);
    }
    Some((
        i32::try_from(months).ok()?,
        i32::try_from(days).ok()?,
        nanos,
    ))
}

/// `relationType`.
fn relation_type(i: Input<'_>) -> PResult<'_, Operator> {
    let op = match i.peek().map(|t| t.kind) {
        Some(TokenKind::Eq) => Operator::Eq,
        Some(TokenKind::Lt) => Operator::Lt,
        Some(TokenKind::Le) => Operator::Le,
        Some(TokenKind::Gt) => Operator::Gt,
        Some(TokenKind::Ge) => Operator::Ge,
        Some(TokenKind::Ne) => Operator::Ne,
        _ => return i.expected(Expected::Other("relation operator")),
    };
    Ok((i.advance(1), op))
}

/// `singleColumnInValues`: `(t1, t2)`, `()` or a marker.
pub(crate) fn in_values(i: Input<'_>) -> PResult<'_, Expr> {
    if peek_is(&i, TokenKind::LParen) {
        let (i, items) = separated_list0(comma, term).parse(i.advance(1))?;
        let (i, _) = rparen(i)?;
        return Ok((i, Expr::List(items)));
    }
    marker(i)
}

/// `op term` after a column: comparison, `IN`, `CONTAINS [KEY]`, `LIKE` or `IS NOT NULL`.
fn column_predicate(i: Input<'_>) -> PResult<'_, (Operator, Expr)> {
    alt((
        (relation_type, term),
        (kw("in").map(|_| Operator::In), in_values),
        (
            kws(&["contains", "key"]).map(|_| Operator::ContainsKey),
            term,
        ),
        (kw("contains").map(|_| Operator::Contains), term),
        (kw("like").map(|_| Operator::Like), term),
        kws(&["is", "not", "null"]).map(|_| (Operator::IsNot, Expr::Literal(Literal::Null))),
    ))
    .parse(i)
}

/// `relation`.
pub(crate) fn relation(i: Input<'_>) -> PResult<'_, Relation> {
    let _guard = i.nest()?;
    alt((
        token_relation,
        multi_column_relation,
        single_relation,
        |i| {
            let (i, _) = lparen(i)?;
            let (i, r) = relation(i)?;
            let (i, _) = rparen(i)?;
            Ok((i, r))
        },
    ))
    .parse(i)
}

fn token_relation(i: Input<'_>) -> PResult<'_, Relation> {
    let (i, _) = kw("token")(i)?;
    let (i, columns) = ident_list(i)?;
    let (i, op) = relation_type(i)?;
    let (i, value) = term(i)?;
    Ok((i, Relation::Token { columns, op, value }))
}

fn multi_column_relation(i: Input<'_>) -> PResult<'_, Relation> {
    let (i, columns) = ident_list(i)?;
    let tuple_or_marker = |i| alt((marker, tuple_literal)).parse(i);
    let (i, (op, value)) = alt((
        (relation_type, tuple_or_marker),
        (
            kw("in").map(|_| Operator::In),
            alt((marker, |i| {
                let (i, _) = lparen(i)?;
                let (i, items) = separated_list0(comma, tuple_or_marker).parse(i)?;
                let (i, _) = rparen(i)?;
                Ok((i, Expr::List(items)))
            })),
        ),
    ))
    .parse(i)?;
    Ok((i, Relation::MultiColumn { columns, op, value }))
}

/// `tupleLiteral`: `(t1, t2, ...)`.
fn tuple_literal(i: Input<'_>) -> PResult<'_, Expr> {
    let (i, _) = lparen(i)?;
    let (i, items) = separated_list1(comma, term).parse(i)?;
    let (i, _) = rparen(i)?;
    Ok((i, Expr::Tuple(items)))
}

fn single_relation(i: Input<'_>) -> PResult<'_, Relation> {
    let (i, column) = ident(i)?;
    if peek_is(&i, TokenKind::LBracket) {
        let (i, key) = term(i.advance(1))?;
        let (i, _) = sym(TokenKind::RBracket, "]")(i)?;
        let (i, op) = relation_type(i)?;
        let (i, value) = term(i)?;
        return Ok((
            i,
            Relation::MapElement {
                column,
                key,
                op,
                value,
            },
        ));
    }
    let (i, (op, value)) = column_predicate(i)?;
    Ok((i, Relation::Simple { column, op, value }))
}

/// `whereClause`: relations joined by `AND`.
pub(crate) fn where_clause(i: Input<'_>) -> PResult<'_, Vec<Relation>> {
    separated_list1(kw("and"), relation).parse(i)
}

/// Operators allowed in an `IF` condition (`columnCondition`), with their value.
pub(crate) fn condition_predicate(i: Input<'_>) -> PResult<'_, (Operator, Expr)> {
    alt((
        (relation_type, term),
        (kw("in").map(|_| Operator::In), in_values),
        (
            kws(&["contains", "key"]).map(|_| Operator::ContainsKey),
            term,
        ),
        (kw("contains").map(|_| Operator::Contains), term),
    ))
    .parse(i)
}

/// Re-exported for `dml`: `.field` after a column.
pub(crate) fn field_suffix(i: Input<'_>) -> PResult<'_, String> {
    let (i, _) = dot(i)?;
    ident(i)
}

/// Re-exported for `select`: an optional `AS alias`.
pub(crate) fn alias(i: Input<'_>) -> PResult<'_, Option<String>> {
    opt(|i| {
        let (i, _) = kw("as")(i)?;
        ident(i)
    })
    .parse(i)
}
