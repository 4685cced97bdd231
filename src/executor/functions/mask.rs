//! Cassandra 5.0's masking functions (`MaskingFcts`, dynamic data masking): `mask_null`,
//! `mask_default`, `mask_replace`, `mask_inner`, `mask_outer` and `mask_hash`. Each is built
//! for the type of its first argument (`FunctionFactory`), so it takes a column, a nested call
//! or a literal whose type is known; a bind marker or a `null` there cannot be typed.
//!
//! - `mask_null(v)`: null of `v`'s type;
//! - `mask_default(v)`: a fixed value of `v`'s type (`AbstractType.getMaskedValue`): `****`
//!   for text, zero for numbers, `false`, the epoch for dates and times, the zero UUID, the
//!   smallest timeuuid of the epoch, `0.0.0.0`, an empty blob, empty collections, and tuples,
//!   user types and vectors of their elements' defaults;
//! - `mask_replace(v, r)`: `r`, which has `v`'s type;
//! - `mask_inner(s, begin, end[, padding])` / `mask_outer(...)`: text with every character
//!   but the first `begin` and last `end` (inner), or only those (outer), replaced by
//!   `padding` (`*` by default; a null `begin` or `end` is 0);
//! - `mask_hash(v[, algorithm])`: the digest of `v`'s serialized bytes as a blob, SHA-256 by
//!   default, or MD5, SHA-1, the SHA-2 and the SHA-3 families by their Java names.
//!
//! Characters are Unicode scalar values; Java counts UTF-16 units, which differ only for
//! characters outside the Basic Multilingual Plane.

use super::{ArgKind, FunctionArg, Signature, SYSTEM};
use crate::error::QueryError;
use cql::ast::Literal;
use cql::types::{DataType, NativeType, Value};
use digest::Digest;

use NativeType as N;

/// The masking functions' registered names.
pub const MASK_FUNCTIONS: [&str; 6] = [
    "mask_null",
    "mask_default",
    "mask_replace",
    "mask_inner",
    "mask_outer",
    "mask_hash",
];

/// True for a masking function's registered name.
pub fn is_mask_function(name: &str) -> bool {
    MASK_FUNCTIONS.contains(&name)
}

/// The function as `FunctionFactory.toString` prints it in errors.
fn factory(name: &str) -> String {
    let params = match name {
        "mask_replace" => "any, same",
        "mask_inner" | "mask_outer" => "[text|varchar|ascii], int, int, [text]",
        "mask_hash" => "any, [text]",
        _ => "any",
    };
    format!("{SYSTEM}.{name}({params})")
}

/// The type a literal is read as when nothing else says (`Constants.Type.getPreferedTypeFor`);
/// `None` when it cannot be known alone (`null`, collections, tuples).
fn literal_type(literal: &Literal) -> Option<DataType> {
    Some(DataType::Native(match literal {
        Literal::String(s) if s.is_ascii() => N::Ascii,
        Literal::String(_) => N::Text,
        Literal::Integer(s) if s.parse::<i32>().is_ok() => N::Int,
        Literal::Integer(s) if s.parse::<i64>().is_ok() => N::Bigint,
        Literal::Integer(_) => N::Varint,
        Literal::Float(_) => N::Double,
        Literal::Boolean(_) => N::Boolean,
        Literal::Blob(_) => N::Blob,
        Literal::Uuid(_) => N::Uuid,
        Literal::Duration { .. } => N::Duration,
        _ => return None,
    }))
}

/// The type of an argument, as `FunctionParameter.inferType` finds it: its own, a literal's
/// preferred one, else `default` (a `fixed` parameter's first type).
fn inferred(arg: &FunctionArg<'_>, default: Option<NativeType>) -> Option<DataType> {
    match arg.kind {
        ArgKind::Typed(t) => Some(t.clone()),
        ArgKind::Literal(l) => literal_type(l).or(default.map(DataType::Native)),
        ArgKind::Marker => default.map(DataType::Native),
    }
}

/// Resolves a call of the masking function `name`.
///
/// # Errors
/// InvalidRequest with `FunctionFactory`'s and `FunctionParameter`'s messages.
pub fn resolve(name: &str, args: &[FunctionArg<'_>]) -> Result<Signature, QueryError> {
    let (required, total) = match name {
        "mask_replace" => (2, 2),
        "mask_inner" | "mask_outer" => (3, 4),
        "mask_hash" => (1, 2),
        _ => (1, 1),
    };
    if args.len() < required || args.len() > total {
        return Err(QueryError::invalid(format!(
            "Invalid number of arguments for function {}",
            factory(name)
        )));
    }
    let cannot_infer = |arg: &FunctionArg<'_>| {
        QueryError::invalid(format!(
            "Cannot infer type of argument {} in call to function {}: use type casts to \
             disambiguate",
            arg.text,
            factory(name)
        ))
    };
    let requires = |arg: &FunctionArg<'_>, wanted: &str, found: &DataType| {
        QueryError::invalid(format!(
            "Function {SYSTEM}.{name} requires an argument of type {wanted}, but found argument \
             {} of type {found}",
            arg.text
        ))
    };
    let string = |t: &DataType| matches!(t, DataType::Native(N::Text | N::Ascii));
    let first = &args[0];
    let mut arg_types = Vec::with_capacity(args.len());
    let value_type = match name {
        "mask_inner" | "mask_outer" => {
            let t = inferred(first, Some(N::Text)).ok_or_else(|| cannot_infer(first))?;
            if !string(&t) {
                return Err(requires(first, "[text|varchar|ascii]", &t));
            }
            t
        }
        _ => inferred(first, None).ok_or_else(|| cannot_infer(first))?,
    };
    arg_types.push(value_type.clone());
    for (i, arg) in args.iter().enumerate().skip(1) {
        let t = match (name, i) {
            ("mask_replace", _) => value_type.clone(),
            ("mask_inner" | "mask_outer", 1 | 2) => {
                let t = inferred(arg, Some(N::Int)).ok_or_else(|| cannot_infer(arg))?;
                if !matches!(t, DataType::Native(N::Int)) {
                    return Err(requires(arg, "int", &t));
                }
                t
            }
            _ => {
                // The padding and the algorithm are read as text whatever the literal
                // (`PartialMaskingFunction` / `HashMaskingFunction` declare `UTF8Type`).
                let t = inferred(arg, Some(N::Text)).ok_or_else(|| cannot_infer(arg))?;
                if !string(&t) {
                    return Err(requires(arg, "text", &t));
                }
                DataType::Native(N::Text)
            }
        };
        arg_types.push(t);
    }
    let return_type = match name {
        "mask_hash" => DataType::Native(N::Blob),
        _ => value_type,
    };
    Ok(Signature {
        name: name.to_string(),
        arg_types,
        return_type,
        is_aggregate: false,
        keyspace: None,
    })
}

/// Evaluates the masking function of `sig` on `args`.
///
/// # Errors
/// `PartialMaskingFunction`'s message for a padding that is not one character, and
/// `HashMaskingFunction`'s for an unknown algorithm.
pub fn call(sig: &Signature, args: &[Option<Value>]) -> Result<Option<Value>, QueryError> {
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    let value_type = sig.arg_types.first().unwrap_or(&sig.return_type);
    match sig.name.as_str() {
        "mask_null" => Ok(None),
        "mask_default" => Ok(Some(masked_value(value_type))),
        "mask_replace" => Ok(arg(1).cloned()),
        "mask_inner" | "mask_outer" => {
            let Some(Value::Text(s) | Value::Ascii(s)) = arg(0) else {
                return Ok(None);
            };
            let int = |i: usize| match arg(i) {
                Some(Value::Int(n)) => i64::from(*n),
                _ => 0,
            };
            let padding = match arg(3) {
                Some(Value::Text(p) | Value::Ascii(p)) => {
                    let mut chars = p.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => c,
                        _ => {
                            return Err(QueryError::invalid(format!(
                                "The padding argument for function {SYSTEM}.{} should be \
                                 single-character, but '{p}' has {} characters.",
                                sig.name,
                                p.chars().count()
                            )))
                        }
                    }
                }
                _ => '*',
            };
            let masked = mask_text(s, int(1), int(2), padding, sig.name == "mask_inner");
            Ok(Some(match arg(0) {
                Some(Value::Ascii(_)) => Value::Ascii(masked),
                _ => Value::Text(masked),
            }))
        }
        _ => {
            let Some(value) = arg(0) else {
                return Ok(None);
            };
            let algorithm = match arg(1) {
                Some(Value::Text(a) | Value::Ascii(a)) => a.as_str(),
                _ => "SHA-256",
            };
            Ok(Some(Value::Blob(hash(algorithm, &value.to_bytes())?)))
        }
    }
}

/// `value` with every character but the first `begin` and last `end` replaced by `padding`
/// (`inner`), or only those (outer), as `PartialMaskingFunction.Kind.mask`.
fn mask_text(value: &str, begin: i64, end: i64, padding: char, inner: bool) -> String {
    let size = value.chars().count() as i64;
    let end_index = size - 1 - end;
    value
        .chars()
        .enumerate()
        .map(|(i, c)| {
            let i = i as i64;
            let in_middle = i >= begin && i <= end_index;
            if in_middle == inner {
                padding
            } else {
                c
            }
        })
        .collect()
}

/// The digest of `bytes` by the algorithm Java's `MessageDigest` knows as `algorithm` (names
/// compare ignoring case, as Java's providers do).
fn hash(algorithm: &str, bytes: &[u8]) -> Result<Vec<u8>, QueryError> {
    fn digest<D: Digest>(bytes: &[u8]) -> Vec<u8> {
        D::digest(bytes).to_vec()
    }
    Ok(match algorithm.to_ascii_uppercase().as_str() {
        "MD5" => md5::compute(bytes).0.to_vec(),
        "SHA-1" | "SHA1" | "SHA" => digest::<sha1::Sha1>(bytes),
        "SHA-224" | "SHA224" => digest::<sha2::Sha224>(bytes),
        "SHA-256" | "SHA256" => digest::<sha2::Sha256>(bytes),
        "SHA-384" | "SHA384" => digest::<sha2::Sha384>(bytes),
        "SHA-512" | "SHA512" => digest::<sha2::Sha512>(bytes),
        "SHA-512/224" | "SHA512/224" => digest::<sha2::Sha512_224>(bytes),
        "SHA-512/256" | "SHA512/256" => digest::<sha2::Sha512_256>(bytes),
        "SHA3-224" => digest::<sha3::Sha3_224>(bytes),
        "SHA3-256" => digest::<sha3::Sha3_256>(bytes),
        "SHA3-384" => digest::<sha3::Sha3_384>(bytes),
        "SHA3-512" => digest::<sha3::Sha3_512>(bytes),
        _ => {
            return Err(QueryError::invalid(format!(
                "Hash algorithm not found: {algorithm}"
            )))
        }
    })
}

/// `mask_default`'s value of type `ty` (`AbstractType.getMaskedValue`).
pub fn masked_value(ty: &DataType) -> Value {
    match ty.unfrozen() {
        DataType::Native(n) => match n {
            N::Ascii => Value::Ascii("****".into()),
            N::Text => Value::Text("****".into()),
            N::Bigint => Value::Bigint(0),
            N::Counter => Value::Counter(0),
            N::Int => Value::Int(0),
            N::Smallint => Value::Smallint(0),
            N::Tinyint => Value::Tinyint(0),
            N::Varint => Value::Varint(vec![0]),
            N::Decimal => Value::Decimal {
                scale: 0,
                unscaled: vec![0],
            },
            N::Double => Value::Double(0.0),
            N::Float => Value::Float(0.0),
            N::Boolean => Value::Boolean(false),
            N::Blob => Value::Blob(Vec::new()),
            // 1970-01-01: day 0 of the epoch, stored as 2^31.
            N::Date => Value::Date(1 << 31),
            N::Time => Value::Time(0),
            N::Timestamp => Value::Timestamp(0),
            N::Duration => Value::Duration {
                months: 0,
                days: 0,
                nanos: 0,
            },
            N::Inet => Value::Inet(std::net::Ipv4Addr::UNSPECIFIED.into()),
            N::Uuid => Value::Uuid(uuid::Uuid::nil()),
            N::Timeuuid => Value::Timeuuid(super::scalar::min_timeuuid(0)),
        },
        DataType::List(_) => Value::List(Vec::new()),
        DataType::Set(_) => Value::Set(Vec::new()),
        DataType::Map(..) => Value::Map(Vec::new()),
        DataType::Tuple(types) => {
            Value::Tuple(types.iter().map(|t| Some(masked_value(t))).collect())
        }
        DataType::Udt(udt) => Value::Udt(
            udt.fields
                .iter()
                .map(|(name, t)| (name.clone(), Some(masked_value(t))))
                .collect(),
        ),
        DataType::Vector(t, n) => Value::Vector((0..*n).map(|_| masked_value(t)).collect()),
        DataType::Frozen(_) | DataType::Custom(_) => Value::Blob(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_inner_and_outer_characters_as_cassandra() {
        // Worked by hand from `Kind.mask`: inner masks positions begin..=size-1-end.
        assert_eq!(mask_text("abcdef", 1, 2, '*', true), "a***ef");
        assert_eq!(mask_text("abcdef", 1, 2, '*', false), "*bcd**");
        assert_eq!(mask_text("abcdef", 0, 0, '#', true), "######");
        assert_eq!(mask_text("abcdef", 0, 0, '#', false), "abcdef");
        assert_eq!(mask_text("abcdef", 10, 10, '*', true), "abcdef");
        assert_eq!(mask_text("abcdef", 10, 10, '*', false), "******");
        assert_eq!(mask_text("", 1, 1, '*', true), "");
        assert_eq!(mask_text("ab", -1, -1, '*', true), "**");
    }

    #[test]
    fn hashes_by_java_names() {
        let sha256 = hash("SHA-256", b"abc").expect("sha-256");
        assert_eq!(sha256.len(), 32);
        assert_eq!(sha256[..4], [0xba, 0x78, 0x16, 0xbf]);
        assert_eq!(
            hash("md5", b"").expect("md5")[..4],
            [0xd4, 0x1d, 0x8c, 0xd9]
        );
        assert!(hash("SHA-999", b"").is_err());
    }
}
