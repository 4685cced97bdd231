//! Shared leaf rules that every statement family builds on: keywords and symbols, identifiers
//! and names, types and `WITH` properties.

use nom::branch::alt;
use nom::combinator::opt;
use nom::multi::separated_list1;
use nom::Parser;

use super::{Expected, Input, PResult};
use crate::ast::{OptionValue, QualifiedName};
use crate::syntax::lexer::{unescape_quoted_ident, unescape_string, TokenKind};
use crate::types::{DataType, NativeType, UserType};

/// Keywords that can never be unquoted identifiers: Cassandra's lexer keywords minus its
/// `unreserved_keyword` rule (a subset of [`crate::types::RESERVED_KEYWORDS`]).
const RESERVED: &[&str] = &[
    "add",
    "allow",
    "alter",
    "and",
    "apply",
    "asc",
    "authorize",
    "batch",
    "begin",
    "by",
    "columnfamily",
    "create",
    "delete",
    "desc",
    "describe",
    "drop",
    "entries",
    "execute",
    "from",
    "full",
    "grant",
    "if",
    "in",
    "index",
    "infinity",
    "insert",
    "into",
    "is",
    "keyspace",
    "limit",
    "materialized",
    "modify",
    "nan",
    "norecursive",
    "not",
    "null",
    "of",
    "on",
    "or",
    "order",
    "primary",
    "rename",
    "revoke",
    "schema",
    "select",
    "set",
    "table",
    "to",
    "token",
    "truncate",
    "unlogged",
    "update",
    "use",
    "using",
    "view",
    "where",
    "with",
];

/// True when `word` (any case) is a reserved keyword.
pub(crate) fn is_reserved(word: &str) -> bool {
    RESERVED.iter().any(|r| r.eq_ignore_ascii_case(word))
}

/// Matches the keyword `word` (case-insensitive, unquoted).
pub(crate) fn kw<'a>(word: &'static str) -> impl Fn(Input<'a>) -> PResult<'a, ()> {
    move |i: Input<'a>| match i.peek() {
        Some(t) if t.is_keyword(word) => Ok((i.advance(1), ())),
        _ => i.expected(Expected::Keyword(word)),
    }
}

/// Matches a sequence of keywords.
pub(crate) fn kws<'a>(words: &'static [&'static str]) -> impl Fn(Input<'a>) -> PResult<'a, ()> {
    move |mut i: Input<'a>| {
        for w in words {
            i = kw(w)(i)?.0;
        }
        Ok((i, ()))
    }
}

/// Matches an optional keyword, telling whether it was there.
pub(crate) fn opt_kw<'a>(word: &'static str) -> impl Fn(Input<'a>) -> PResult<'a, bool> {
    move |i: Input<'a>| opt(kw(word)).map(|o| o.is_some()).parse(i)
}

/// Matches one symbol token.
pub(crate) fn sym<'a>(
    kind: TokenKind,
    label: &'static str,
) -> impl Fn(Input<'a>) -> PResult<'a, ()> {
    move |i: Input<'a>| match i.peek() {
        Some(t) if t.kind == kind => Ok((i.advance(1), ())),
        _ => i.expected(Expected::Symbol(label)),
    }
}

/// `(`.
pub(crate) fn lparen(i: Input<'_>) -> PResult<'_, ()> {
    sym(TokenKind::LParen, "(")(i)
}

/// `)`.
pub(crate) fn rparen(i: Input<'_>) -> PResult<'_, ()> {
    sym(TokenKind::RParen, ")")(i)
}

/// `,`.
pub(crate) fn comma(i: Input<'_>) -> PResult<'_, ()> {
    sym(TokenKind::Comma, ",")(i)
}

/// `.`.
pub(crate) fn dot(i: Input<'_>) -> PResult<'_, ()> {
    sym(TokenKind::Dot, ".")(i)
}

/// `=`.
pub(crate) fn eq(i: Input<'_>) -> PResult<'_, ()> {
    sym(TokenKind::Eq, "=")(i)
}

/// True when the next token has this kind.
pub(crate) fn peek_is(i: &Input<'_>, kind: TokenKind) -> bool {
    i.peek().is_some_and(|t| t.kind == kind)
}

/// `ident`: an unquoted non-reserved word (lower-cased) or a quoted name (exact).
pub(crate) fn ident(i: Input<'_>) -> PResult<'_, String> {
    match i.peek() {
        Some(t) if t.kind == TokenKind::Ident && !is_reserved(t.text) => {
            Ok((i.advance(1), t.text.to_ascii_lowercase()))
        }
        Some(t) if t.kind == TokenKind::QuotedIdent => {
            Ok((i.advance(1), unescape_quoted_ident(t.text)))
        }
        _ => i.expected(Expected::Other("identifier")),
    }
}

/// A comma-separated, parenthesised list of identifiers: `(a, b)`.
pub(crate) fn ident_list(i: Input<'_>) -> PResult<'_, Vec<String>> {
    let (i, _) = lparen(i)?;
    let (i, list) = separated_list1(comma, ident).parse(i)?;
    let (i, _) = rparen(i)?;
    Ok((i, list))
}

/// `columnFamilyName` / `userTypeName` / `indexName`: `[ks.]name`.
pub(crate) fn qualified_name(i: Input<'_>) -> PResult<'_, QualifiedName> {
    let (i, first) = ident(i)?;
    if peek_is(&i, TokenKind::Dot) {
        let (i, _) = dot(i)?;
        let (i, name) = ident(i)?;
        return Ok((i, QualifiedName::qualified(first, name)));
    }
    Ok((i, QualifiedName::unqualified(first)))
}

/// `IF EXISTS`, optional.
pub(crate) fn if_exists(i: Input<'_>) -> PResult<'_, bool> {
    opt(kws(&["if", "exists"])).map(|o| o.is_some()).parse(i)
}

/// `IF NOT EXISTS`, optional.
pub(crate) fn if_not_exists(i: Input<'_>) -> PResult<'_, bool> {
    opt(kws(&["if", "not", "exists"]))
        .map(|o| o.is_some())
        .parse(i)
}

/// `comparatorType`: any CQL type.
pub(crate) fn data_type(i: Input<'_>) -> PResult<'_, DataType> {
    let guard = i.nest()?;
    let Some(t) = i.peek() else {
        return i.expected(Expected::Other("type"));
    };
    match t.kind {
        TokenKind::String => return Ok((i.advance(1), DataType::Custom(unescape_string(t.text)))),
        TokenKind::QuotedIdent => return udt(i),
        TokenKind::Ident => {}
        _ => return i.expected(Expected::Other("type")),
    }
    let word = t.text.to_ascii_lowercase();
    let generic = i.peek_nth(1).is_some_and(|n| n.kind == TokenKind::Lt);
    if generic {
        let lt = i.advance(2);
        let (rest, ty) = match word.as_str() {
            "frozen" => {
                // `frozen<` only marks the type inside, so it takes no nesting level of its
                // own (Cassandra nests tuples 32 deep, each `frozen<tuple<..>>`), unless it
                // wraps another `frozen<`: a chain of them still counts, and stays bounded.
                if !lt.peek().is_some_and(|t| t.is_keyword("frozen")) {
                    drop(guard);
                }
                data_type.map(|t| DataType::Frozen(Box::new(t))).parse(lt)?
            }
            "list" => data_type.map(|t| DataType::List(Box::new(t))).parse(lt)?,
            "set" => data_type.map(|t| DataType::Set(Box::new(t))).parse(lt)?,
            "map" => {
                let (r, k) = data_type(lt)?;
                let (r, _) = comma(r)?;
                let (r, v) = data_type(r)?;
                (r, DataType::Map(Box::new(k), Box::new(v)))
            }
            "tuple" => separated_list1(comma, data_type)
                .map(DataType::Tuple)
                .parse(lt)?,
            "vector" => {
                let (r, elem) = data_type(lt)?;
                let (r, _) = comma(r)?;
                let (r, dimension) = vector_dimension(r)?;
                (r, DataType::Vector(Box::new(elem), dimension))
            }
            _ => return udt(i),
        };
        let (rest, _) = sym(TokenKind::Gt, ">")(rest)?;
        return Ok((rest, ty));
    }
    if let Some(native) = NativeType::from_name(&word) {
        return Ok((i.advance(1), DataType::Native(native)));
    }
    udt(i)
}

/// A vector's dimension: an `INTEGER`, possibly negative, that must be positive (Cassandra's
/// `CQL3Type.Raw.Vector` refuses others with an InvalidRequest, not a syntax error).
fn vector_dimension(i: Input<'_>) -> PResult<'_, u32> {
    let neg = i.peek().is_some_and(|t| t.kind == TokenKind::Minus);
    let at = if neg { i.advance(1) } else { i };
    match at.peek() {
        Some(t) if t.kind == TokenKind::Integer => {
            let given = if neg {
                format!("-{}", t.text)
            } else {
                t.text.to_string()
            };
            match given.parse::<i64>() {
                Ok(n) if n <= 0 => i.invalid(format!(
                    "vectors may only have positive dimensions; given {given}"
                )),
                Ok(n) => match u32::try_from(n) {
                    Ok(d) if i32::try_from(d).is_ok() => Ok((at.advance(1), d)),
                    _ => at.fail(format!("Invalid vector dimension {given}")),
                },
                Err(_) => at.fail(format!("Invalid vector dimension {given}")),
            }
        }
        _ => at.expected(Expected::Other("INTEGER")),
    }
}

/// `userTypeName`: `[ks.]name` as a field-less UDT reference.
fn udt(i: Input<'_>) -> PResult<'_, DataType> {
    let (i, name) = qualified_name(i)?;
    Ok((
        i,
        DataType::Udt(Box::new(UserType {
            keyspace: name.keyspace,
            name: name.name,
            fields: Vec::new(),
        })),
    ))
}

/// A constant's raw text, for property values: numbers, booleans, durations, UUIDs, blobs,
/// `NaN` and `Infinity`.
fn constant_text(i: Input<'_>) -> PResult<'_, String> {
    match i.peek() {
        Some(t)
            if matches!(
                t.kind,
                TokenKind::Integer
                    | TokenKind::Float
                    | TokenKind::Boolean
                    | TokenKind::Duration
                    | TokenKind::Uuid
                    | TokenKind::Hex
                    | TokenKind::NegNaN
                    | TokenKind::NegInfinity
            ) || t.is_keyword("nan")
                || t.is_keyword("infinity") =>
        {
            Ok((i.advance(1), t.text.to_string()))
        }
        _ => i.expected(Expected::Other("constant")),
    }
}

/// A property value: string, constant, map or bare word.
pub(crate) fn option_value(i: Input<'_>) -> PResult<'_, OptionValue> {
    let _guard = i.nest()?;
    match i.peek() {
        Some(t) if t.kind == TokenKind::String => {
            Ok((i.advance(1), OptionValue::String(unescape_string(t.text))))
        }
        Some(t) if t.kind == TokenKind::LBrace => option_map.map(OptionValue::Map).parse(i),
        _ => alt((
            constant_text.map(OptionValue::Constant),
            ident.map(OptionValue::Identifier),
        ))
        .parse(i),
    }
}

/// `fullMapLiteral` of constants: `{'k': 'v', ...}` (possibly empty).
pub(crate) fn option_map(i: Input<'_>) -> PResult<'_, Vec<(OptionValue, OptionValue)>> {
    let (i, _) = sym(TokenKind::LBrace, "{")(i)?;
    let entry = |i| {
        let (i, k) = option_value(i)?;
        let (i, _) = sym(TokenKind::Colon, ":")(i)?;
        let (i, v) = option_value(i)?;
        Ok((i, (k, v)))
    };
    let (i, entries) = opt(separated_list1(comma, entry)).parse(i)?;
    let (i, _) = sym(TokenKind::RBrace, "}")(i)?;
    Ok((i, entries.unwrap_or_default()))
}

/// `property`: `name = value`.
pub(crate) fn property(i: Input<'_>) -> PResult<'_, (String, OptionValue)> {
    let (i, name) = ident(i)?;
    let (i, _) = eq(i)?;
    let (i, value) = option_value(i)?;
    Ok((i, (name, value)))
}

/// `properties`: `name = value AND ...`.
pub(crate) fn properties(i: Input<'_>) -> PResult<'_, Vec<(String, OptionValue)>> {
    separated_list1(kw("and"), property).parse(i)
}
