//! Terms and selectors ([`Expr`], [`Literal`]) and `WHERE` relations ([`Relation`]).

use std::fmt;

use uuid::Uuid;

use super::{Comma, Ident, QualifiedName, StrLit, TypeSyntax};
use crate::types::DataType;

/// A constant.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// A string, `'...'` or `$$...$$` (unescaped).
    String(String),
    /// An integer, kept as written (`-5`, `0012`).
    Integer(String),
    /// A floating-point number, kept as written (`1.5`, `-1.5e3`, `2.`).
    Float(String),
    /// `true` or `false`.
    Boolean(bool),
    /// A UUID.
    Uuid(Uuid),
    /// A blob, `0xCAFE`.
    Blob(Vec<u8>),
    /// A duration (`1h30m`, `P1Y2M`, ...), as Cassandra stores it.
    Duration {
        /// Months (years count as 12 months).
        months: i32,
        /// Days (weeks count as 7 days).
        days: i32,
        /// Nanoseconds.
        nanos: i64,
    },
    /// `NULL`.
    Null,
    /// `NaN` (also `-NaN`).
    NaN,
    /// `Infinity` or `-Infinity`.
    Infinity {
        /// True for `-Infinity`.
        negative: bool,
    },
}

/// An arithmetic operator in a term or selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%`.
    Rem,
}

/// A term (a value in `VALUES`, `SET`, `WHERE`, ...) or a selector (an item of a `SELECT`
/// clause); selectors may also refer to columns.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Literal(Literal),
    /// A bind marker: `None` for `?`, `Some(name)` for `:name`.
    BindMarker(Option<String>),
    /// A function call, `f(a, b)`, `ks.f()`; `writetime(c)`, `ttl(c)`, `token(a, b)` and
    /// `count(*)` are function calls too (the name is lower-cased unless it was quoted).
    FunctionCall {
        /// The function's name.
        name: QualifiedName,
        /// Its arguments.
        args: Vec<Expr>,
    },
    /// `CAST(expr AS type)`.
    Cast {
        /// The value to convert.
        expr: Box<Expr>,
        /// The target type.
        to: DataType,
    },
    /// `(type) expr`: a type hint, typically on a bind marker.
    TypeHint {
        /// The hinted type.
        ty: DataType,
        /// The hinted value.
        expr: Box<Expr>,
    },
    /// `[a, b]`.
    List(Vec<Expr>),
    /// `{a, b}` (also the empty `{}`).
    Set(Vec<Expr>),
    /// `{k: v, ...}`.
    Map(Vec<(Expr, Expr)>),
    /// `(a, b)`.
    Tuple(Vec<Expr>),
    /// `{field: value, ...}`.
    UdtLiteral(Vec<(String, Expr)>),
    /// A column reference (in selectors).
    Column(String),
    /// `*`, as in `count(*)`.
    Star,
    /// `expr.field`: a UDT field.
    FieldAccess {
        /// The UDT value.
        expr: Box<Expr>,
        /// The field's name.
        field: String,
    },
    /// `expr[key]`: a collection element.
    ElementAccess {
        /// The collection.
        expr: Box<Expr>,
        /// The element's key or index.
        key: Box<Expr>,
    },
    /// `- expr` (a negative number literal is a [`Literal`] instead).
    Negate(Box<Expr>),
    /// `left op right`.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// The left operand.
        left: Box<Expr>,
        /// The right operand.
        right: Box<Expr>,
    },
}

/// A relation or condition operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
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
    /// `IN`.
    In,
    /// `CONTAINS`.
    Contains,
    /// `CONTAINS KEY`.
    ContainsKey,
    /// `LIKE`.
    Like,
    /// `IS NOT` (always with `NULL`).
    IsNot,
}

/// One `WHERE` restriction.
#[derive(Debug, Clone, PartialEq)]
pub enum Relation {
    /// `col op value`. For `IN` the value is an [`Expr::List`] for `IN (a, b)` / `IN ()`, or a
    /// bind marker for `IN ?`; for `IS NOT NULL` it is `Literal::Null`.
    Simple {
        /// The column.
        column: String,
        /// The operator.
        op: Operator,
        /// The value.
        value: Expr,
    },
    /// `(c1, c2) op value`: the value is a tuple or a marker, and for `IN` a list of tuples or
    /// markers, or a single marker.
    MultiColumn {
        /// The columns.
        columns: Vec<String>,
        /// The operator.
        op: Operator,
        /// The value.
        value: Expr,
    },
    /// `token(c1, c2) op value`.
    Token {
        /// The partition-key columns.
        columns: Vec<String>,
        /// The operator.
        op: Operator,
        /// The value.
        value: Expr,
    },
    /// `col[key] op value` (map element).
    MapElement {
        /// The map column.
        column: String,
        /// The element's key.
        key: Expr,
        /// The operator.
        op: Operator,
        /// The value.
        value: Expr,
    },
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::String(s) => StrLit(s).fmt(f),
            Literal::Integer(s) | Literal::Float(s) => f.write_str(s),
            Literal::Boolean(b) => write!(f, "{b}"),
            Literal::Uuid(u) => write!(f, "{}", u.hyphenated()),
            Literal::Blob(bytes) => {
                f.write_str("0x")?;
                bytes.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
            Literal::Duration {
                months,
                days,
                nanos,
            } => write_duration(f, *months, *days, *nanos),
            Literal::Null => f.write_str("NULL"),
            Literal::NaN => f.write_str("NaN"),
            Literal::Infinity { negative } => {
                f.write_str(if *negative { "-Infinity" } else { "Infinity" })
            }
        }
    }
}

/// Writes a duration in Cassandra's unit format, `-1y2mo3d4h5m6s7ms8us9ns`.
fn write_duration(f: &mut fmt::Formatter<'_>, months: i32, days: i32, nanos: i64) -> fmt::Result {
    if months < 0 || days < 0 || nanos < 0 {
        f.write_str("-")?;
    }
    let months = i64::from(months).unsigned_abs();
    let days = i64::from(days).unsigned_abs();
    let mut nanos = nanos.unsigned_abs();
    if months == 0 && days == 0 && nanos == 0 {
        return f.write_str("0s");
    }
    let part = |f: &mut fmt::Formatter<'_>, value: u64, unit: &str| {
        if value > 0 {
            write!(f, "{value}{unit}")
        } else {
            Ok(())
        }
    };
    part(f, months / 12, "y")?;
    part(f, months % 12, "mo")?;
    part(f, days, "d")?;
    for (unit, size) in [
        ("h", 3_600_000_000_000u64),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ] {
        part(f, nanos / size, unit)?;
        nanos %= size;
    }
    Ok(())
}

impl fmt::Display for BinaryOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        })
    }
}

/// Prints a function name; `token` is reserved but needs no quotes in call position.
struct FunctionName<'a>(&'a QualifiedName);

impl fmt::Display for FunctionName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.keyspace.is_none() && self.0.name == "token" {
            f.write_str("token")
        } else {
            self.0.fmt(f)
        }
    }
}

struct Pair<'a, K>(&'a K, &'a Expr);

impl<K: fmt::Display> fmt::Display for Pair<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0, self.1)
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Literal(l) => l.fmt(f),
            Expr::BindMarker(None) => f.write_str("?"),
            Expr::BindMarker(Some(name)) => write!(f, ":{}", Ident(name)),
            Expr::FunctionCall { name, args } => {
                write!(f, "{}({})", FunctionName(name), Comma(args))
            }
            Expr::Cast { expr, to } => write!(f, "CAST({expr} AS {})", TypeSyntax(to)),
            Expr::TypeHint { ty, expr } => write!(f, "({}) {expr}", TypeSyntax(ty)),
            Expr::List(items) => write!(f, "[{}]", Comma(items)),
            Expr::Set(items) => write!(f, "{{{}}}", Comma(items)),
            Expr::Map(entries) => {
                let pairs: Vec<_> = entries.iter().map(|(k, v)| Pair(k, v)).collect();
                write!(f, "{{{}}}", Comma(&pairs))
            }
            Expr::Tuple(items) => write!(f, "({})", Comma(items)),
            Expr::UdtLiteral(fields) => {
                let idents: Vec<_> = fields.iter().map(|(k, _)| Ident(k)).collect();
                let pairs: Vec<_> = idents
                    .iter()
                    .zip(fields)
                    .map(|(k, (_, v))| Pair(k, v))
                    .collect();
                write!(f, "{{{}}}", Comma(&pairs))
            }
            Expr::Column(c) => Ident(c).fmt(f),
            Expr::Star => f.write_str("*"),
            Expr::FieldAccess { expr, field } => write!(f, "{expr}.{}", Ident(field)),
            Expr::ElementAccess { expr, key } => write!(f, "{expr}[{key}]"),
            Expr::Negate(e) => write!(f, "- {e}"),
            Expr::Binary { op, left, right } => write!(f, "{left} {op} {right}"),
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operator::Eq => "=",
            Operator::Lt => "<",
            Operator::Le => "<=",
            Operator::Gt => ">",
            Operator::Ge => ">=",
            Operator::Ne => "!=",
            Operator::In => "IN",
            Operator::Contains => "CONTAINS",
            Operator::ContainsKey => "CONTAINS KEY",
            Operator::Like => "LIKE",
            Operator::IsNot => "IS NOT",
        })
    }
}

/// Prints the right-hand side of a relation or condition: `IN` lists get parentheses.
pub(crate) struct RelationValue<'a>(pub(crate) Operator, pub(crate) &'a Expr);

impl fmt::Display for RelationValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            (Operator::In, Expr::List(items)) => write!(f, "({})", Comma(items)),
            (_, value) => value.fmt(f),
        }
    }
}

struct Columns<'a>(&'a [String]);

impl fmt::Display for Columns<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let idents: Vec<_> = self.0.iter().map(|c| Ident(c)).collect();
        write!(f, "({})", Comma(&idents))
    }
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Relation::Simple { column, op, value } => {
                write!(f, "{} {op} {}", Ident(column), RelationValue(*op, value))
            }
            Relation::MultiColumn { columns, op, value } => {
                write!(f, "{} {op} {}", Columns(columns), RelationValue(*op, value))
            }
            Relation::Token { columns, op, value } => {
                write!(
                    f,
                    "token{} {op} {}",
                    Columns(columns),
                    RelationValue(*op, value)
                )
            }
            Relation::MapElement {
                column,
                key,
                op,
                value,
            } => write!(
                f,
                "{}[{key}] {op} {}",
                Ident(column),
                RelationValue(*op, value)
            ),
        }
    }
}
