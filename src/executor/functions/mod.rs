//! CQL's native functions and aggregates, as Cassandra 4.0 declares and resolves them.
//!
//! - [`resolve`] picks the overload of a call from what is known of its arguments (typed values,
//!   bind markers, untyped literals) with Cassandra's `FunctionResolver` rules and messages: a
//!   name with one declared signature only checks arity and assignability; a name with several
//!   takes the first exact match, else the single weakly assignable one, else reports
//!   "none of its type signatures match" or "Ambiguous call".
//! - [`call_scalar`] evaluates a scalar function ([`scalar`]), [`cast`] a `CAST`
//!   ([`conversions`]), and [`Aggregator`] runs `count`, `min`, `max`, `sum` and `avg`
//!   ([`aggregate`]).
//!
//! Names are matched exactly against Cassandra's registered (lower-case) names, so callers pass
//! the name as the parser gives it: lower-cased unless it was quoted (`"toTimestamp"(t)` is
//! unknown, as in Cassandra). A `system.` prefix is accepted. `token`, `writetime`, `ttl`,
//! `toJson`, `fromJson`, `count(*)` and the arithmetic operators are not handled here.
//!
//! Result column names follow `AbstractFunction.columnName`: the function's qualified, registered
//! name and the argument names, `system.totimestamp(t)`, `system.count(v)`,
//! `system.totimestamp(system.now())`; `count(*)`/`count(1)` print as `count` and a cast as
//! `cast(v as int)` (`CastFcts.CastFunction.columnName`).

pub mod aggregate;
pub mod collection;
pub mod conversions;
pub mod format;
pub mod mask;
pub mod math;
pub mod scalar;
pub mod vector;

use crate::error::QueryError;
use cql::ast::Literal;
use cql::types::{DataType, NativeType};

pub use aggregate::Aggregator;
pub use conversions::{cast, cast_column_name, check_cast};
pub use scalar::call_scalar;

use NativeType as N;

/// The keyspace Cassandra registers native functions in.
const SYSTEM: &str = "system";

/// The aggregate functions (besides `count(*)`, which the caller handles).
const AGGREGATES: [&str; 5] = ["count", "min", "max", "sum", "avg"];

/// Native types in the order of Cassandra's `CQL3Type.Native` (without `empty` and `varchar`),
/// the order aggregates are registered in.
const NATIVE_ORDER: [NativeType; 20] = NativeType::ALL;

/// Numeric types in the order `AggregateFcts.all()` registers `sum` and `avg`.
const SUMMABLE: [NativeType; 9] = [
    N::Tinyint,
    N::Smallint,
    N::Int,
    N::Bigint,
    N::Float,
    N::Double,
    N::Decimal,
    N::Varint,
    N::Counter,
];

/// What is known of one argument of a call when the call is planned.
#[derive(Debug, Clone, Copy)]
pub enum ArgKind<'a> {
    /// A value of a known type: a column, a nested function call, a type-hinted term.
    Typed(&'a DataType),
    /// A bind marker (`?` or `:name`): it takes the type of the chosen overload.
    Marker,
    /// An untyped literal (`'text'`, `42`, `1.5`, `0xff`, `null`, ...).
    Literal(&'a Literal),
}

/// One argument of a call: what is known of it and its text as written (for error messages).
#[derive(Debug, Clone)]
pub struct FunctionArg<'a> {
    /// Its type, or that it is a marker or a literal.
    pub kind: ArgKind<'a>,
    /// The argument as written, e.g. `t`, `?`, `'2024-01-01'`.
    pub text: String,
}

/// A declared function signature.
#[derive(Debug, Clone, PartialEq)]
pub struct Signature {
    /// The registered name, e.g. `totimestamp`, `blobasint`, `castAsInt`.
    pub name: String,
    /// The argument types.
    pub arg_types: Vec<DataType>,
    /// The result type.
    pub return_type: DataType,
    /// True for `count`, `min`, `max`, `sum` and `avg`, and user aggregates.
    pub is_aggregate: bool,
    /// The keyspace of a user-defined function or aggregate; `None` for native ones (`system`).
    pub keyspace: Option<String>,
}

impl Signature {
    fn new(name: impl Into<String>, args: &[NativeType], ret: NativeType) -> Self {
        let name = name.into();
        Signature {
            is_aggregate: AGGREGATES.contains(&name.as_str()),
            name,
            arg_types: args.iter().map(|t| DataType::Native(*t)).collect(),
            return_type: DataType::Native(ret),
            keyspace: None,
        }
    }

    /// The qualified name, `system.totimestamp` or `ks.myfunction`.
    pub fn qualified_name(&self) -> String {
        format!(
            "{}.{}",
            self.keyspace.as_deref().unwrap_or(SYSTEM),
            self.name
        )
    }
}

/// As Cassandra's `AbstractFunction.toString`: `system.totimestamp : (timeuuid) -> timestamp`.
impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} : (", self.qualified_name())?;
        for (i, t) in self.arg_types.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{t}")?;
        }
        write!(f, ") -> {}", self.return_type)
    }
}

/// The name without a `system.` prefix.
fn bare_name(name: &str) -> &str {
    name.strip_prefix("system.").unwrap_or(name)
}

/// The native type a `blobAsX`/`xAsBlob` name refers to (`varchar` included, `blob` excluded).
fn blob_conversion_type(type_name: &str) -> Option<NativeType> {
    if type_name == "varchar" {
        return Some(N::Text);
    }
    NativeType::ALL
        .into_iter()
        .find(|t| *t != N::Blob && t.name() == type_name)
}

/// Every declared signature of `name` (registered, lower-case), in Cassandra's order.
pub fn signatures(name: &str) -> Vec<Signature> {
    let name = bare_name(name);
    let one = |args: &[NativeType], ret| vec![Signature::new(name, args, ret)];
    match name {
        "now" | "currenttimeuuid" => one(&[], N::Timeuuid),
        "currenttimestamp" => one(&[], N::Timestamp),
        "currentdate" => one(&[], N::Date),
        "currenttime" => one(&[], N::Time),
        "uuid" => one(&[], N::Uuid),
        "mintimeuuid" | "maxtimeuuid" => one(&[N::Timestamp], N::Timeuuid),
        "dateof" => one(&[N::Timeuuid], N::Timestamp),
        "unixtimestampof" => one(&[N::Timeuuid], N::Bigint),
        "todate" => [N::Timeuuid, N::Timestamp]
            .iter()
            .map(|t| Signature::new(name, &[*t], N::Date))
            .collect(),
        "totimestamp" => [N::Timeuuid, N::Date]
            .iter()
            .map(|t| Signature::new(name, &[*t], N::Timestamp))
            .collect(),
        "tounixtimestamp" => [N::Timeuuid, N::Timestamp, N::Date]
            .iter()
            .map(|t| Signature::new(name, &[*t], N::Bigint))
            .collect(),
        "count" => NATIVE_ORDER
            .iter()
            .map(|t| Signature::new(name, &[*t], N::Bigint))
            .collect(),
        "min" | "max" => NATIVE_ORDER
            .iter()
            .map(|t| Signature::new(name, &[*t], *t))
            .collect(),
        "sum" | "avg" => SUMMABLE
            .iter()
            .map(|t| Signature::new(name, &[*t], *t))
            .collect(),
        "abs" | "exp" | "log" | "log10" | "round" => math::argument_types(name)
            .into_iter()
            .map(|t| Signature::new(name, &[t], t))
            .collect(),
        _ => {
            if let Some(t) = name.strip_suffix("asblob").and_then(blob_conversion_type) {
                one(&[t], N::Blob)
            } else if let Some(t) = name.strip_prefix("blobas").and_then(blob_conversion_type) {
                one(&[N::Blob], t)
            } else {
                Vec::new()
            }
        }
    }
}

/// True when `name` is a native function this module knows.
pub fn is_known_function(name: &str) -> bool {
    vector::is_similarity(bare_name(name))
        || collection::is_collection_function(bare_name(name))
        || format::is_format_function(bare_name(name))
        || mask::is_mask_function(bare_name(name))
        || !signatures(name).is_empty()
}

/// True for the aggregates `count`, `min`, `max`, `sum` and `avg`.
pub fn is_aggregate(name: &str) -> bool {
    AGGREGATES.contains(&bare_name(name))
}

/// How well an argument fits a parameter (Cassandra's `AssignmentTestable.TestResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fit {
    /// Not assignable.
    No,
    /// Assignable, not exactly the type.
    Weak,
    /// Exactly the type.
    Exact,
}

/// Cassandra's `AbstractType.isValueCompatibleWith`: can `receiver` read a value of `provided`?
pub(crate) fn is_value_compatible(receiver: &DataType, provided: &DataType) -> bool {
    let (r, p) = (receiver.unfrozen(), provided.unfrozen());
    if r == p {
        return true;
    }
    let DataType::Native(r) = r else {
        return false;
    };
    // BytesType reads anything.
    if *r == N::Blob {
        return true;
    }
    let DataType::Native(p) = p else {
        return false;
    };
    matches!(
        (r, p),
        (N::Text, N::Ascii)
            | (N::Bigint, N::Timestamp)
            | (N::Timestamp, N::Bigint)
            | (N::Varint, N::Int | N::Bigint | N::Timestamp)
    )
}

fn typed_fit(receiver: &DataType, provided: &DataType) -> Fit {
    if receiver.unfrozen() == provided.unfrozen() {
        Fit::Exact
    } else if is_value_compatible(receiver, provided) {
        Fit::Weak
    } else {
        Fit::No
    }
}

/// The type Cassandra prefers for a literal (`Constants.Type.getPreferedTypeFor`).
fn preferred_type(lit: &Literal) -> Option<NativeType> {
    Some(match lit {
        Literal::String(s) if s.is_ascii() => N::Ascii,
        Literal::String(_) => N::Text,
        Literal::Integer(s) => {
            if s.parse::<i32>().is_ok() {
                N::Int
            } else if s.parse::<i64>().is_ok() {
                N::Bigint
            } else {
                N::Varint
            }
        }
        Literal::Float(s) => {
            if conversions::float_literal_is_lossless_double(s) {
                N::Double
            } else {
                N::Decimal
            }
        }
        Literal::NaN | Literal::Infinity { .. } => N::Double,
        Literal::Boolean(_) => N::Boolean,
        Literal::Uuid(_) => N::Uuid,
        Literal::Blob(_) => N::Blob,
        Literal::Duration { .. } => N::Duration,
        Literal::Null => return None,
    })
}

/// Cassandra's `Constants.Literal.testAssignment` (and `NULL_LITERAL`'s).
fn literal_fit(receiver: &DataType, lit: &Literal) -> Fit {
    let DataType::Native(nt) = receiver.unfrozen() else {
        return match receiver.unfrozen() {
            DataType::Custom(_) => Fit::Weak,
            _ if matches!(lit, Literal::Null) => Fit::Weak,
            _ => Fit::No,
        };
    };
    let Some(preferred) = preferred_type(lit) else {
        return if *nt == N::Counter {
            Fit::No
        } else {
            Fit::Weak
        };
    };
    if preferred == *nt {
        return Fit::Exact;
    }
    let weak = match lit {
        Literal::String(_) => matches!(
            nt,
            N::Ascii | N::Text | N::Inet | N::Date | N::Time | N::Timestamp
        ),
        Literal::Integer(_) => matches!(
            nt,
            N::Bigint
                | N::Counter
                | N::Date
                | N::Decimal
                | N::Double
                | N::Duration
                | N::Float
                | N::Int
                | N::Smallint
                | N::Time
                | N::Timestamp
                | N::Tinyint
                | N::Varint
        ),
        Literal::Uuid(_) => matches!(nt, N::Uuid | N::Timeuuid),
        Literal::Float(_) | Literal::NaN | Literal::Infinity { .. } => {
            matches!(nt, N::Decimal | N::Double | N::Float)
        }
        Literal::Boolean(_) => *nt == N::Boolean,
        Literal::Blob(_) => *nt == N::Blob,
        Literal::Duration { .. } => *nt == N::Duration,
        Literal::Null => true,
    };
    if weak {
        Fit::Weak
    } else {
        Fit::No
    }
}

fn arg_fit(receiver: &DataType, arg: &ArgKind<'_>) -> Fit {
    match arg {
        ArgKind::Typed(t) => typed_fit(receiver, t),
        ArgKind::Marker => Fit::Weak,
        ArgKind::Literal(lit) => literal_fit(receiver, lit),
    }
}

/// Cassandra's `FunctionResolver.matchAguments`.
fn match_arguments(sig: &Signature, args: &[FunctionArg<'_>]) -> Fit {
    if sig.arg_types.len() != args.len() {
        return Fit::No;
    }
    sig.arg_types
        .iter()
        .zip(args)
        .map(|(t, a)| arg_fit(t, &a.kind))
        .min()
        .unwrap_or(Fit::Exact)
}

fn format_signatures(sigs: &[Signature]) -> String {
    sigs.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Picks the overload among `candidates` (non-empty) as `FunctionResolver.get` does. `called`
/// is the function name as the call spelled it, which Cassandra's messages about overloads use.
fn pick(
    called: &str,
    candidates: Vec<Signature>,
    args: &[FunctionArg<'_>],
) -> Result<Signature, QueryError> {
    if candidates.len() == 1 {
        let Some(sig) = candidates.into_iter().next() else {
            return Err(QueryError::invalid(format!("Unknown function '{called}'")));
        };
        if sig.arg_types.len() != args.len() {
            return Err(QueryError::invalid(format!(
                "Invalid number of arguments in call to function {}: {} required but {} provided",
                sig.qualified_name(),
                sig.arg_types.len(),
                args.len()
            )));
        }
        for (i, (t, a)) in sig.arg_types.iter().zip(args).enumerate() {
            if arg_fit(t, &a.kind) == Fit::No {
                return Err(QueryError::invalid(format!(
                    "Type error: {} cannot be passed as argument {i} of function {} of type {t}",
                    a.text,
                    sig.qualified_name()
                )));
            }
        }
        return Ok(sig);
    }
    let mut compatibles = Vec::new();
    for sig in &candidates {
        match match_arguments(sig, args) {
            Fit::Exact => return Ok(sig.clone()),
            Fit::Weak => compatibles.push(sig.clone()),
            Fit::No => {}
        }
    }
    match compatibles.len() {
        0 => Err(QueryError::invalid(format!(
            "Invalid call to function {called}, none of its type signatures match (known type signatures: {})",
            format_signatures(&candidates)
        ))),
        1 => Ok(compatibles.remove(0)),
        _ => Err(QueryError::invalid(format!(
            "Ambiguous call to function {called} (can be matched by following signatures: {}): use type casts to disambiguate",
            format_signatures(&compatibles)
        ))),
    }
}

/// Picks the overload of a user-defined function or aggregate among `candidates` (non-empty),
/// with the rules and messages of [`resolve`].
///
/// # Errors
/// As [`resolve`].
pub fn resolve_among(
    called: &str,
    candidates: Vec<Signature>,
    args: &[FunctionArg<'_>],
) -> Result<Signature, QueryError> {
    pick(called, candidates, args)
}

/// Resolves a call of the native function `name` (as the parser gives it, optionally
/// `system.`-qualified) with the given arguments to one declared signature.
///
/// # Errors
/// InvalidRequest with Cassandra's text: `Unknown function 'foo'` (the selector form; in a
/// term Cassandra says `Unknown function foo called`, see [`is_known_function`]),
/// `Invalid number of arguments in call to function system.now: 0 required but 1 provided`,
/// `Type error: x cannot be passed as argument 0 of function system.mintimeuuid of type
/// timestamp`, `Invalid call to function todate, none of its type signatures match (known
/// type signatures: ...)` or `Ambiguous call to function totimestamp (can be matched by
/// following signatures: system.totimestamp : (timeuuid) -> timestamp, system.totimestamp :
/// (date) -> timestamp): use type casts to disambiguate`.
pub fn resolve(name: &str, args: &[FunctionArg<'_>]) -> Result<Signature, QueryError> {
    if vector::is_similarity(bare_name(name)) {
        return vector::resolve(bare_name(name), args);
    }
    if collection::is_collection_function(bare_name(name)) {
        return collection::resolve(bare_name(name), args);
    }
    if format::is_format_function(bare_name(name)) {
        return format::resolve(bare_name(name), args);
    }
    if mask::is_mask_function(bare_name(name)) {
        return mask::resolve(bare_name(name), args);
    }
    let candidates = signatures(name);
    if candidates.is_empty() {
        return Err(QueryError::invalid(format!("Unknown function '{name}'")));
    }
    pick(name, candidates, args)
}

/// The result type of `name` called with arguments of the given types (aggregates included).
/// Type errors name the argument by its type; use [`resolve`] to name it as written.
///
/// # Errors
/// As [`resolve`].
pub fn scalar_return_type(name: &str, arg_types: &[DataType]) -> Result<DataType, QueryError> {
    let args: Vec<FunctionArg<'_>> = arg_types
        .iter()
        .map(|t| FunctionArg {
            kind: ArgKind::Typed(t),
            text: t.to_string(),
        })
        .collect();
    resolve(name, &args).map(|s| s.return_type)
}

/// The type each of `arity` bind-marker arguments of `name` takes, e.g. `blobAsInt(?)` →
/// `[blob]`, `now()` → `[]`.
///
/// # Errors
/// As [`resolve`]: `toTimestamp(?)` is ambiguous.
pub fn scalar_arg_types(name: &str, arity: usize) -> Result<Vec<DataType>, QueryError> {
    let args: Vec<FunctionArg<'_>> = (0..arity)
        .map(|_| FunctionArg {
            kind: ArgKind::Marker,
            text: "?".to_string(),
        })
        .collect();
    resolve(name, &args).map(|s| s.arg_types)
}

/// The result type of the aggregate `name` over a column of type `arg_type`
/// (`count` → bigint, `min`/`max`/`sum`/`avg` → the argument type).
///
/// # Errors
/// As [`resolve`], e.g. `sum` of a text column; also when `name` is not an aggregate.
pub fn aggregate_return_type(name: &str, arg_type: &DataType) -> Result<DataType, QueryError> {
    if !is_aggregate(name) {
        return Err(QueryError::invalid(format!("Unknown function '{name}'")));
    }
    scalar_return_type(name, std::slice::from_ref(arg_type))
}

/// The result column name Cassandra prints for a function selector: `system.` and the registered
/// (lower-case) name, then the argument column names, e.g. `system.totimestamp(t)`,
/// `system.blobasint(system.intasblob(v))`; `count(*)` and `count(1)` are `count`.
pub fn result_column_name(name: &str, arg_names: &[String]) -> String {
    let bare = bare_name(name);
    if bare == "count" && matches!(arg_names, [a] if a == "*" || a == "1") {
        return "count".to_string();
    }
    format!("{SYSTEM}.{}({})", bare, arg_names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(t: &DataType) -> FunctionArg<'_> {
        FunctionArg {
            kind: ArgKind::Typed(t),
            text: "c".into(),
        }
    }

    fn native(t: NativeType) -> DataType {
        DataType::Native(t)
    }

    #[test]
    fn return_types_follow_the_declared_overload() {
        let ts = scalar_return_type("totimestamp", &[native(N::Timeuuid)]).ok();
        assert_eq!(ts, Some(native(N::Timestamp)));
        let d = scalar_return_type("system.todate", &[native(N::Timestamp)]).ok();
        assert_eq!(d, Some(native(N::Date)));
        let b = scalar_return_type("blobasint", &[native(N::Blob)]).ok();
        assert_eq!(b, Some(native(N::Int)));
        let v = scalar_return_type("varcharasblob", &[native(N::Text)]).ok();
        assert_eq!(v, Some(native(N::Blob)));
        assert_eq!(
            scalar_return_type("now", &[]).ok(),
            Some(native(N::Timeuuid))
        );
    }

    #[test]
    fn unknown_function_is_invalid() {
        let e = scalar_return_type("foo", &[]).err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("Unknown function 'foo'"));
        // Quoted mixed-case names are not Cassandra's registered names.
        assert!(!is_known_function("toTimestamp"));
        assert!(!is_known_function("blobasblob"));
    }

    #[test]
    fn single_overload_checks_arity_and_types() {
        let e = scalar_return_type("now", &[native(N::Int)])
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("Invalid number of arguments in call to function system.now: 0 required but 1 provided")
        );
        let int = native(N::Int);
        let e = resolve("mintimeuuid", &[typed(&int)])
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("Type error: c cannot be passed as argument 0 of function system.mintimeuuid of type timestamp")
        );
        // A bigint is value-compatible with timestamp.
        assert!(scalar_return_type("mintimeuuid", &[native(N::Bigint)]).is_ok());
    }

    #[test]
    fn overloads_report_no_match_and_ambiguity() {
        let e = scalar_return_type("totimestamp", &[native(N::Int)])
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("Invalid call to function totimestamp, none of its type signatures match (known type signatures: system.totimestamp : (timeuuid) -> timestamp, system.totimestamp : (date) -> timestamp)")
        );
        let e = scalar_arg_types("totimestamp", 1)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("Ambiguous call to function totimestamp (can be matched by following signatures: system.totimestamp : (timeuuid) -> timestamp, system.totimestamp : (date) -> timestamp): use type casts to disambiguate")
        );
        assert_eq!(
            scalar_arg_types("blobasint", 1).ok(),
            Some(vec![native(N::Blob)])
        );
    }

    #[test]
    fn literals_pick_the_overload_they_fit() {
        let lit = Literal::String("2024-01-01".into());
        let args = [FunctionArg {
            kind: ArgKind::Literal(&lit),
            text: "'2024-01-01'".into(),
        }];
        // A string fits timestamp but not timeuuid.
        let sig = resolve("todate", &args).ok();
        assert_eq!(sig.map(|s| s.arg_types), Some(vec![native(N::Timestamp)]));
    }

    #[test]
    fn aggregates_resolve_by_argument_type() {
        assert!(is_aggregate("max") && !is_aggregate("now"));
        assert_eq!(
            aggregate_return_type("count", &native(N::Text)).ok(),
            Some(native(N::Bigint))
        );
        assert_eq!(
            aggregate_return_type("sum", &native(N::Smallint)).ok(),
            Some(native(N::Smallint))
        );
        assert!(aggregate_return_type("sum", &native(N::Text)).is_err());
        // Any value is value-compatible with blob, so min of a collection is min(blob).
        let list = DataType::Frozen(Box::new(DataType::List(Box::new(native(N::Int)))));
        assert_eq!(
            aggregate_return_type("min", &list).ok(),
            Some(native(N::Blob))
        );
    }

    #[test]
    fn column_names_are_qualified_and_lower_case() {
        assert_eq!(
            result_column_name("totimestamp", &["t".into()]),
            "system.totimestamp(t)"
        );
        assert_eq!(
            result_column_name("totimestamp", &["system.now()".into()]),
            "system.totimestamp(system.now())"
        );
        assert_eq!(result_column_name("count", &["*".into()]), "count");
        assert_eq!(
            result_column_name("count", &["v".into()]),
            "system.count(v)"
        );
    }
}
