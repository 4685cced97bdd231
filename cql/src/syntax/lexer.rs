//! The CQL lexer: turns query text into [`Token`]s, mirroring Cassandra's `Lexer.g`.
//!
//! Keywords are not distinguished here: every word is an [`TokenKind::Ident`] and the parser
//! matches keywords case-insensitively, which is what lets non-reserved keywords double as
//! identifiers. Like ANTLR, the lexer takes the longest match, so `1h30m` is one duration, `-5`
//! one integer and `12345678-1234-1234-1234-123456789abc` one UUID.

use super::error::ParseError;

/// A half-open byte range into the query text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte of the token.
    pub start: usize,
    /// One past the last byte of the token.
    pub end: usize,
}

/// What kind of token was lexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// An unquoted word (identifier or keyword): `LETTER (LETTER | DIGIT | '_')*`.
    Ident,
    /// A double-quoted identifier, `"Name"` (possibly empty).
    QuotedIdent,
    /// A string literal, `'...'` or `$$...$$`.
    String,
    /// An integer, possibly negative.
    Integer,
    /// A floating-point number (with a fraction or an exponent).
    Float,
    /// `true` or `false`.
    Boolean,
    /// A duration literal (`1h30m`, `P1Y2M`, `P0001-02-03T04:05:06`).
    Duration,
    /// A UUID literal.
    Uuid,
    /// A blob literal, `0x...`.
    Hex,
    /// `-NaN`.
    NegNaN,
    /// `-Infinity`.
    NegInfinity,
    /// `?`.
    QMark,
    /// `(`.
    LParen,
    /// `)`.
    RParen,
    /// `[`.
    LBracket,
    /// `]`.
    RBracket,
    /// `{`.
    LBrace,
    /// `}`.
    RBrace,
    /// `,`.
    Comma,
    /// `;`.
    Semicolon,
    /// `.`.
    Dot,
    /// `..`.
    Range,
    /// `:`.
    Colon,
    /// `=`.
    Eq,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `!=`.
    Ne,
    /// `+`.
    Plus,
    /// `-`.
    Minus,
    /// `*`.
    Star,
    /// `/`.
    Slash,
    /// `%`.
    Percent,
    /// `+=`.
    PlusEq,
    /// `-=`.
    MinusEq,
}

/// One lexed token: its kind, its raw text and where it sits in the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    /// The token's kind.
    pub kind: TokenKind,
    /// The raw source text (quotes and escapes included).
    pub text: &'a str,
    /// Byte range in the query text.
    pub span: Span,
}

impl Token<'_> {
    /// True when this is an unquoted word equal to `kw`, ignoring ASCII case.
    pub fn is_keyword(&self, kw: &str) -> bool {
        self.kind == TokenKind::Ident && self.text.eq_ignore_ascii_case(kw)
    }
}

/// Lexes `text` into tokens, skipping whitespace and comments.
///
/// # Errors
/// Returns a [`ParseError`] at the first character that starts no token, or at an unterminated
/// string, quoted name or comment.
pub fn tokenize(text: &str) -> Result<Vec<Token<'_>>, ParseError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let rest = &text[pos..];
        let c = bytes[pos];
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            pos += 1;
            continue;
        }
        if rest.starts_with("--") || rest.starts_with("//") {
            pos += rest.find(['\n', '\r']).unwrap_or(rest.len());
            continue;
        }
        if let Some(body) = rest.strip_prefix("/*") {
            match body.find("*/") {
                Some(end) => pos += end + 4,
                None => {
                    return Err(error_at(
                        text,
                        text.len(),
                        "mismatched input '<EOF>' expecting '*/'",
                    ))
                }
            }
            continue;
        }
        let (kind, len) = match lex_one(rest) {
            Ok(found) => found,
            Err(LexFailure::Unterminated(what)) => {
                return Err(error_at(
                    text,
                    text.len(),
                    &format!("mismatched character '<EOF>' expecting '{what}'"),
                ))
            }
            Err(LexFailure::BadChar) => {
                let ch = rest.chars().next().unwrap_or('?');
                return Err(error_at(
                    text,
                    pos,
                    &format!("no viable alternative at character '{}'", ch.escape_debug()),
                ));
            }
        };
        tokens.push(Token {
            kind,
            text: &rest[..len],
            span: Span {
                start: pos,
                end: pos + len,
            },
        });
        pos += len;
    }
    Ok(tokens)
}

/// Builds an error at byte offset `offset` of `text`.
pub(crate) fn error_at(text: &str, offset: usize, message: &str) -> ParseError {
    let (line, column) = line_column(text, offset);
    ParseError {
        line,
        column,
        message: message.to_string(),
        invalid: false,
    }
}

/// The 1-based line and 0-based character column of byte `offset` in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count();
    (line, column)
}

enum LexFailure {
    Unterminated(&'static str),
    BadChar,
}

fn lex_one(rest: &str) -> Result<(TokenKind, usize), LexFailure> {
    use TokenKind as K;
    let b = rest.as_bytes();
    let c = b[0];
    let next = b.get(1).copied();
    let sym = |k, n| Ok((k, n));
    match c {
        b'\'' => return lex_quoted(rest, b'\'').map(|n| (K::String, n)),
        b'"' => return lex_quoted(rest, b'"').map(|n| (K::QuotedIdent, n)),
        b'$' if next == Some(b'$') => {
            return match rest[2..].find("$$") {
                Some(end) => Ok((K::String, end + 4)),
                None => Err(LexFailure::Unterminated("$$")),
            }
        }
        b'(' => return sym(K::LParen, 1),
        b')' => return sym(K::RParen, 1),
        b'[' => return sym(K::LBracket, 1),
        b']' => return sym(K::RBracket, 1),
        b'{' => return sym(K::LBrace, 1),
        b'}' => return sym(K::RBrace, 1),
        b',' => return sym(K::Comma, 1),
        b';' => return sym(K::Semicolon, 1),
        b':' => return sym(K::Colon, 1),
        b'?' => return sym(K::QMark, 1),
        b'*' => return sym(K::Star, 1),
        b'/' => return sym(K::Slash, 1),
        b'%' => return sym(K::Percent, 1),
        b'=' => return sym(K::Eq, 1),
        b'.' if next == Some(b'.') => return sym(K::Range, 2),
        b'.' => return sym(K::Dot, 1),
        b'<' if next == Some(b'=') => return sym(K::Le, 2),
        b'<' => return sym(K::Lt, 1),
        b'>' if next == Some(b'=') => return sym(K::Ge, 2),
        b'>' => return sym(K::Gt, 1),
        b'!' if next == Some(b'=') => return sym(K::Ne, 2),
        b'+' if next == Some(b'=') => return sym(K::PlusEq, 2),
        b'+' => return sym(K::Plus, 1),
        b'-' if next == Some(b'=') => return sym(K::MinusEq, 2),
        b'-' => {
            let tail = &rest[1..];
            if tail.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                if let Some((kind, n)) = lex_number_or_duration(tail) {
                    return Ok((kind, n + 1));
                }
            }
            if let Some(n) = iso_duration_len(tail) {
                if n >= ident_len(tail) {
                    return Ok((K::Duration, n + 1));
                }
            }
            let word = ident_len(tail);
            if word > 0 {
                let w = &tail[..word];
                if w.eq_ignore_ascii_case("nan") {
                    return Ok((K::NegNaN, word + 1));
                }
                if w.eq_ignore_ascii_case("infinity") {
                    return Ok((K::NegInfinity, word + 1));
                }
            }
            return sym(K::Minus, 1);
        }
        _ => {}
    }
    if let Some(n) = uuid_len(rest) {
        return Ok((K::Uuid, n));
    }
    if c.is_ascii_digit() {
        if c == b'0' && matches!(next, Some(b'x' | b'X')) {
            let hex = rest[2..].bytes().take_while(u8::is_ascii_hexdigit).count();
            return Ok((K::Hex, hex + 2));
        }
        return lex_number_or_duration(rest).ok_or(LexFailure::BadChar);
    }
    if c.is_ascii_alphabetic() {
        let word = ident_len(rest);
        if c == b'P' {
            if let Some(n) = iso_duration_len(rest) {
                if n >= word {
                    return Ok((K::Duration, n));
                }
            }
        }
        let w = &rest[..word];
        if w.eq_ignore_ascii_case("true") || w.eq_ignore_ascii_case("false") {
            return Ok((K::Boolean, word));
        }
        return Ok((K::Ident, word));
    }
    Err(LexFailure::BadChar)
}

/// Length of a `'...'` or `"..."` token whose quote is doubled to escape it.
fn lex_quoted(rest: &str, quote: u8) -> Result<usize, LexFailure> {
    let b = rest.as_bytes();
    let mut i = 1;
    while i < b.len() {
        if b[i] == quote {
            if b.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return Ok(i + 1);
        }
        i += 1;
    }
    Err(LexFailure::Unterminated(if quote == b'\'' {
        "'"
    } else {
        "\""
    }))
}

fn ident_len(s: &str) -> usize {
    let b = s.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_alphabetic) {
        return 0;
    }
    b.iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count()
}

fn digits(s: &[u8]) -> usize {
    s.iter().take_while(|c| c.is_ascii_digit()).count()
}

fn uuid_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.len() < 36 {
        return None;
    }
    for (i, c) in b[..36].iter().enumerate() {
        let ok = if matches!(i, 8 | 13 | 18 | 23) {
            *c == b'-'
        } else {
            c.is_ascii_hexdigit()
        };
        if !ok {
            return None;
        }
    }
    Some(36)
}

/// Longest of a number (`INTEGER`/`FLOAT`) and a unit duration (`1h30m`) starting at a digit.
fn lex_number_or_duration(s: &str) -> Option<(TokenKind, usize)> {
    let b = s.as_bytes();
    let int = digits(b);
    if int == 0 {
        return None;
    }
    let mut num = int;
    let mut kind = TokenKind::Integer;
    // `1..2` is INTEGER RANGE INTEGER, not a float.
    if b.get(num) == Some(&b'.') && b.get(num + 1) != Some(&b'.') {
        num += 1 + digits(&b[num + 1..]);
        kind = TokenKind::Float;
    }
    if matches!(b.get(num), Some(b'e' | b'E')) {
        let mut j = num + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp = digits(&b[j.min(b.len())..]);
        if exp > 0 {
            num = j + exp;
            kind = TokenKind::Float;
        }
    }
    let dur = unit_duration_len(s);
    if dur > num {
        Some((TokenKind::Duration, dur))
    } else {
        Some((kind, num))
    }
}

const DURATION_UNITS: [&str; 11] = ["mo", "ms", "us", "µs", "ns", "y", "w", "d", "h", "m", "s"];

/// Splits off the longest duration unit at the start of `s` (case-insensitive).
pub(crate) fn duration_unit(s: &str) -> Option<&'static str> {
    DURATION_UNITS.into_iter().find(|u| {
        s.get(..u.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(u) || head == *u)
    })
}

fn unit_duration_len(s: &str) -> usize {
    let mut pos = 0;
    loop {
        let d = digits(&s.as_bytes()[pos..]);
        if d == 0 {
            return pos;
        }
        match duration_unit(&s[pos + d..]) {
            Some(unit) => pos += d + unit.len(),
            None => return pos,
        }
    }
}

/// Length of an ISO 8601 duration (`P...`, upper-case designators as in Cassandra) at `s`.
fn iso_duration_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.first() != Some(&b'P') {
        return None;
    }
    if let Some(n) = iso_alternative_len(b) {
        return Some(n);
    }
    let mut pos = 1;
    let designators = |pos: &mut usize, allowed: &[u8]| -> Vec<u8> {
        let mut seen = Vec::new();
        let mut rank = 0;
        loop {
            let d = digits(&b[*pos..]);
            let Some(&unit) = b.get(*pos + d) else { break };
            if d == 0 {
                break;
            }
            match allowed[rank..].iter().position(|u| *u == unit) {
                Some(r) => {
                    rank += r + 1;
                    seen.push(unit);
                    *pos += d + 1;
                }
                None => break,
            }
        }
        seen
    };
    if b.get(1) == Some(&b'W') {
        return None;
    }
    let period = designators(&mut pos, b"YMDW");
    if period.contains(&b'W') {
        return (period == [b'W']).then_some(pos);
    }
    if b.get(pos) == Some(&b'T') {
        let mut tpos = pos + 1;
        let time = designators(&mut tpos, b"HMS");
        if !time.is_empty() {
            return Some(tpos);
        }
    }
    (!period.is_empty()).then_some(pos)
}

/// `P0001-02-03T04:05:06`.
fn iso_alternative_len(b: &[u8]) -> Option<usize> {
    const PATTERN: &[u8] = b"P9999-99-99T99:99:99";
    if b.len() < PATTERN.len() {
        return None;
    }
    PATTERN
        .iter()
        .zip(b)
        .all(|(p, c)| {
            if *p == b'9' {
                c.is_ascii_digit()
            } else {
                p == c
            }
        })
        .then_some(PATTERN.len())
}

/// The value of a string token: `'it''s'` gives `it's`, `$$x$$` gives `x`.
pub fn unescape_string(text: &str) -> String {
    if let Some(inner) = text.strip_prefix("$$").and_then(|t| t.strip_suffix("$$")) {
        return inner.to_string();
    }
    let inner = text
        .strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .unwrap_or(text);
    inner.replace("''", "'")
}

/// The value of a quoted identifier token: `"My""Col"` gives `My"Col`.
pub fn unescape_quoted_ident(text: &str) -> String {
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    inner.replace("\"\"", "\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use TokenKind as K;

    fn kinds(s: &str) -> Vec<(TokenKind, &str)> {
        tokenize(s)
            .unwrap()
            .into_iter()
            .map(|t| (t.kind, t.text))
            .collect()
    }

    #[test]
    fn lexer_takes_longest_match() {
        assert_eq!(
            kinds("a-5 1h30m 1.5e3 1e3 -1.5 1..2"),
            vec![
                (K::Ident, "a"),
                (K::Integer, "-5"),
                (K::Duration, "1h30m"),
                (K::Float, "1.5e3"),
                (K::Float, "1e3"),
                (K::Float, "-1.5"),
                (K::Integer, "1"),
                (K::Range, ".."),
                (K::Integer, "2"),
            ]
        );
        assert_eq!(
            kinds("P1Y2M PT1H p1y P2W P0001-02-03T04:05:06 -NaN -infinity 0xAB TRUE"),
            vec![
                (K::Duration, "P1Y2M"),
                (K::Duration, "PT1H"),
                (K::Ident, "p1y"),
                (K::Duration, "P2W"),
                (K::Duration, "P0001-02-03T04:05:06"),
                (K::NegNaN, "-NaN"),
                (K::NegInfinity, "-infinity"),
                (K::Hex, "0xAB"),
                (K::Boolean, "TRUE"),
            ]
        );
        assert_eq!(
            kinds("abcdef01-2345-6789-abcd-ef0123456789 1mo 10µs"),
            vec![
                (K::Uuid, "abcdef01-2345-6789-abcd-ef0123456789"),
                (K::Duration, "1mo"),
                (K::Duration, "10µs"),
            ]
        );
    }

    #[test]
    fn lexer_skips_comments_and_reports_positions() {
        assert_eq!(
            kinds("a -- x\n/* y */ b // z"),
            vec![(K::Ident, "a"), (K::Ident, "b")]
        );
        let err = tokenize("select\n  #").unwrap_err();
        assert_eq!((err.line, err.column), (2, 2));
        let err = tokenize("select 'abc").unwrap_err();
        assert_eq!((err.line, err.column), (1, 11));
    }

    #[test]
    fn strings_and_names_unescape() {
        assert_eq!(unescape_string("'it''s'"), "it's");
        assert_eq!(unescape_string("$$a'b$$"), "a'b");
        assert_eq!(unescape_quoted_ident("\"My\"\"Col\""), "My\"Col");
    }
}
