//! The nom parser over lexed tokens, in the shape of databend's: [`Input`] wraps the token
//! slice plus a shared [`State`] that remembers the farthest failure and what was expected
//! there, which becomes the [`ParseError`] when nothing parses.
//!
//! Rules are plain functions `fn(Input) -> PResult<T>`; the grammar follows Cassandra's
//! `Parser.g` (the rule names are noted where the mapping is not obvious).

mod auth;
mod common;
mod ddl;
mod dml;
mod expr;
mod function;
mod select;
mod statement;
mod view;

use std::cell::{Cell, RefCell};
use std::iter::Enumerate;
use std::slice::Iter;

use nom::Needed;

use super::error::ParseError;
use super::lexer::{error_at, tokenize, Token, TokenKind};
use crate::ast::Statement;
use crate::types::DataType;

pub(crate) use common::data_type;

/// How deeply terms, selectors and types may nest before the parser gives up (this bounds
/// recursion, so hostile input cannot overflow the stack).
const MAX_DEPTH: usize = 48;

/// What the parser wanted at a failure point, for the error message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    /// A keyword, shown as Cassandra's token name (`K_FROM`).
    Keyword(&'static str),
    /// A symbol, shown quoted (`')'`).
    Symbol(&'static str),
    /// Anything else (`identifier`, `EOF`).
    Other(&'static str),
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expected::Keyword(k) => write!(f, "K_{}", k.to_ascii_uppercase()),
            Expected::Symbol(s) => write!(f, "'{s}'"),
            Expected::Other(o) => f.write_str(o),
        }
    }
}

/// Parse-wide state shared by every [`Input`] of one parse.
pub(crate) struct State<'a> {
    source: &'a str,
    total: usize,
    farthest: RefCell<(usize, Vec<Expected>)>,
    depth: Cell<usize>,
}

/// The parser's input: the remaining tokens and the shared [`State`].
#[derive(Clone, Copy)]
pub(crate) struct Input<'a> {
    pub(crate) tokens: &'a [Token<'a>],
    pub(crate) state: &'a State<'a>,
}

/// The nom error: where it happened and, for a hard failure, a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PError {
    pos: usize,
    message: Option<String>,
    /// A semantic error Cassandra reports as InvalidRequest rather than a syntax error.
    invalid: bool,
}

/// The result of a parser rule.
pub(crate) type PResult<'a, T> = nom::IResult<Input<'a>, T, PError>;

impl<'a> Input<'a> {
    /// Index of the first remaining token in the whole token list.
    pub(crate) fn pos(&self) -> usize {
        self.state.total - self.tokens.len()
    }

    /// The first remaining token.
    pub(crate) fn peek(&self) -> Option<&'a Token<'a>> {
        self.tokens.first()
    }

    /// The `n`-th remaining token.
    pub(crate) fn peek_nth(&self, n: usize) -> Option<&'a Token<'a>> {
        self.tokens.get(n)
    }

    /// The input without its first `n` tokens.
    pub(crate) fn advance(&self, n: usize) -> Input<'a> {
        Input {
            tokens: self.tokens.get(n..).unwrap_or(&[]),
            state: self.state,
        }
    }

    /// The source text of the tokens consumed between `self` and `end`.
    pub(crate) fn text_until(&self, end: &Input<'a>) -> &'a str {
        let consumed = self.tokens.len().saturating_sub(end.tokens.len());
        match (
            self.tokens.first(),
            consumed.checked_sub(1).and_then(|n| self.tokens.get(n)),
        ) {
            (Some(first), Some(last)) => self
                .state
                .source
                .get(first.span.start..last.span.end)
                .unwrap_or(""),
            _ => "",
        }
    }

    /// Records that `what` was expected here and returns the matching soft error.
    pub(crate) fn expected<T>(&self, what: Expected) -> PResult<'a, T> {
        let pos = self.pos();
        let mut far = self.state.farthest.borrow_mut();
        if pos > far.0 {
            *far = (pos, vec![what]);
        } else if pos == far.0 && !far.1.contains(&what) {
            far.1.push(what);
        }
        Err(nom::Err::Error(PError {
            pos,
            message: None,
            invalid: false,
        }))
    }

    /// A hard failure with a message (no backtracking past it).
    pub(crate) fn fail<T>(&self, message: impl Into<String>) -> PResult<'a, T> {
        Err(nom::Err::Failure(PError {
            pos: self.pos(),
            message: Some(message.into()),
            invalid: false,
        }))
    }

    /// Stops parsing with an error Cassandra reports as InvalidRequest (a well-formed statement
    /// that its grammar rejects on meaning, such as a vector of dimension 0).
    pub(crate) fn invalid<T>(&self, message: impl Into<String>) -> PResult<'a, T> {
        Err(nom::Err::Failure(PError {
            pos: self.pos(),
            message: Some(message.into()),
            invalid: true,
        }))
    }

    /// Enters one level of nesting; the guard leaves it when dropped.
    pub(crate) fn nest(&self) -> Result<DepthGuard<'a>, nom::Err<PError>> {
        let depth = self.state.depth.get() + 1;
        if depth > MAX_DEPTH {
            return Err(nom::Err::Failure(PError {
                pos: self.pos(),
                message: Some("expression nested too deeply".to_string()),
                invalid: false,
            }));
        }
        self.state.depth.set(depth);
        Ok(DepthGuard(self.state))
    }
}

/// Leaves a nesting level on drop (see [`Input::nest`]).
pub(crate) struct DepthGuard<'a>(&'a State<'a>);

impl Drop for DepthGuard<'_> {
    fn drop(&mut self) {
        self.0.depth.set(self.0.depth.get().saturating_sub(1));
    }
}

impl<'a> nom::error::ParseError<Input<'a>> for PError {
    fn from_error_kind(input: Input<'a>, _kind: nom::error::ErrorKind) -> Self {
        PError {
            pos: input.pos(),
            message: None,
            invalid: false,
        }
    }

    fn append(_input: Input<'a>, _kind: nom::error::ErrorKind, other: Self) -> Self {
        other
    }
}

impl<'a> nom::Input for Input<'a> {
    type Item = &'a Token<'a>;
    type Iter = Iter<'a, Token<'a>>;
    type IterIndices = Enumerate<Iter<'a, Token<'a>>>;

    fn input_len(&self) -> usize {
        self.tokens.len()
    }

    fn take(&self, index: usize) -> Self {
        Input {
            tokens: self.tokens.get(..index).unwrap_or(self.tokens),
            state: self.state,
        }
    }

    fn take_from(&self, index: usize) -> Self {
        self.advance(index)
    }

    fn take_split(&self, index: usize) -> (Self, Self) {
        (self.take_from(index), self.take(index))
    }

    fn position<P>(&self, predicate: P) -> Option<usize>
    where
        P: Fn(Self::Item) -> bool,
    {
        self.tokens.iter().position(predicate)
    }

    fn iter_elements(&self) -> Self::Iter {
        self.tokens.iter()
    }

    fn iter_indices(&self) -> Self::IterIndices {
        self.tokens.iter().enumerate()
    }

    fn slice_index(&self, count: usize) -> Result<usize, Needed> {
        if self.tokens.len() >= count {
            Ok(count)
        } else {
            Err(Needed::new(count - self.tokens.len()))
        }
    }
}

impl<'a> State<'a> {
    fn new(source: &'a str, total: usize) -> Self {
        State {
            source,
            total,
            farthest: RefCell::new((0, Vec::new())),
            depth: Cell::new(0),
        }
    }

    /// Turns a nom error into the user-facing [`ParseError`].
    fn error(&self, tokens: &[Token<'_>], err: nom::Err<PError>) -> ParseError {
        let (pos, message, invalid) = match err {
            nom::Err::Failure(PError {
                pos,
                message: Some(m),
                invalid,
            }) => (pos, Some(m), invalid),
            _ => (self.farthest.borrow().0, None, false),
        };
        let (offset, shown) = match tokens.get(pos) {
            Some(t) => (t.span.start, t.text),
            None => (self.source.len(), "<EOF>"),
        };
        let message = message.unwrap_or_else(|| {
            let far = self.farthest.borrow();
            match far.1.as_slice() {
                [one] => format!("mismatched input '{shown}' expecting {one}"),
                [init @ .., last] if !init.is_empty() && init.len() < 3 => {
                    let init: Vec<String> = init.iter().map(ToString::to_string).collect();
                    format!(
                        "mismatched input '{shown}' expecting {} or {last}",
                        init.join(", ")
                    )
                }
                _ => format!("no viable alternative at input '{shown}'"),
            }
        });
        let mut e = error_at(self.source, offset, &message);
        e.invalid = invalid;
        e
    }
}

fn parse_with<T>(
    text: &str,
    rule: impl for<'a> FnOnce(Input<'a>) -> PResult<'a, T>,
) -> Result<T, ParseError> {
    let tokens = tokenize(text)?;
    let state = State::new(text, tokens.len());
    let input = Input {
        tokens: &tokens,
        state: &state,
    };
    rule(input)
        .map(|(_, v)| v)
        .map_err(|e| state.error(&tokens, e))
}

/// Skips `;` tokens.
fn skip_semicolons(mut i: Input<'_>) -> Input<'_> {
    while i.peek().is_some_and(|t| t.kind == TokenKind::Semicolon) {
        i = i.advance(1);
    }
    i
}

/// After a statement: a `;` or the end of input must follow.
fn statement_end(i: Input<'_>) -> PResult<'_, ()> {
    match i.peek() {
        None => Ok((i, ())),
        Some(t) if t.kind == TokenKind::Semicolon => Ok((skip_semicolons(i), ())),
        Some(_) => {
            let _ = i.expected::<()>(Expected::Symbol(";"));
            i.expected(Expected::Other("EOF"))
        }
    }
}

fn statements(i: Input<'_>) -> PResult<'_, Vec<Statement>> {
    let mut out = Vec::new();
    let mut i = skip_semicolons(i);
    while !i.tokens.is_empty() {
        let (rest, stmt) = statement::statement(i)?;
        out.push(stmt);
        let (rest, ()) = statement_end(rest)?;
        i = rest;
    }
    Ok((i, out))
}

fn single_statement(i: Input<'_>) -> PResult<'_, Statement> {
    let i = skip_semicolons(i);
    let (rest, stmt) = statement::statement(i)?;
    let (rest, ()) = statement_end(rest)?;
    match rest.peek() {
        None => Ok((rest, stmt)),
        Some(_) => rest.expected(Expected::Other("EOF")),
    }
}

/// Parses `;`-separated statements (empty statements, a trailing `;` and comments are fine).
///
/// # Errors
/// Returns a [`ParseError`] naming the line and column of the first token that cannot be
/// parsed.
pub fn parse_statements(text: &str) -> Result<Vec<Statement>, ParseError> {
    parse_with(text, statements)
}

/// Parses exactly one statement (a trailing `;` is allowed).
///
/// # Errors
/// Returns a [`ParseError`] when the text is not exactly one valid statement.
pub fn parse_statement(text: &str) -> Result<Statement, ParseError> {
    parse_with(text, single_statement)
}

/// Parses a CQL term: a literal, a collection, tuple or UDT literal, e.g. an aggregate's
/// `INITCOND` as `system_schema.aggregates` keeps it (`0`, `(0, 0.0)`, `{'a': 1}`).
///
/// # Errors
/// Returns a [`ParseError`] when the text is not exactly one term.
pub fn parse_term(text: &str) -> Result<crate::ast::Expr, ParseError> {
    parse_with(text, |i| {
        let (rest, t) = expr::term(i)?;
        match rest.peek() {
            None => Ok((rest, t)),
            Some(_) => rest.expected(Expected::Other("EOF")),
        }
    })
}

/// Parses a CQL type: `int`, `varchar`, `frozen<map<text, list<int>>>`, `tuple<int, text>`,
/// `ks.my_type` (a UDT reference with no fields) or `'org.example.CustomType'`.
///
/// # Errors
/// Returns a [`ParseError`] when the text is not exactly one type.
pub fn parse_data_type(text: &str) -> Result<DataType, ParseError> {
    parse_with(text, |i| {
        let (rest, t) = data_type(i)?;
        match rest.peek() {
            None => Ok((rest, t)),
            Some(_) => rest.expected(Expected::Other("EOF")),
        }
    })
}
