//! JSON support: `SELECT JSON` rows as Cassandra formats them, and `INSERT JSON` values parsed
//! into typed values (Cassandra's `toJSONString` / `fromJSONObject` per type).

use crate::error::QueryError;
use crate::executor::literal::literal_value;
use cql::ast::{Expr, Literal, Relation, Statement};
use cql::types::{DataType, NativeType, Value};
use serde_json::{Map, Number, Value as Json};

fn strip_quotes(s: &str) -> String {
    s.trim_matches('\'').to_string()
}

/// The JSON form of a value of type `ty`.
pub fn to_json(v: &Value, ty: &DataType) -> Json {
    let number = |s: String| match s.parse::<f64>() {
        Ok(_) => serde_json::from_str::<Json>(&s).unwrap_or(Json::String(s)),
        Err(_) => Json::String(s),
    };
    match (v, ty.unfrozen()) {
        (Value::Ascii(s) | Value::Text(s), _) => Json::String(s.clone()),
        (Value::Boolean(b), _) => Json::Bool(*b),
        (Value::Bigint(n) | Value::Counter(n), _) => Json::Number(Number::from(*n)),
        (Value::Int(n), _) => Json::Number(Number::from(*n)),
        (Value::Smallint(n), _) => Json::Number(Number::from(*n)),
        (Value::Tinyint(n), _) => Json::Number(Number::from(*n)),
        (Value::Varint(_) | Value::Decimal { .. }, _) => number(v.to_cql_literal()),
        (Value::Double(d), _) => Number::from_f64(*d)
            .map(Json::Number)
            .unwrap_or_else(|| Json::String(v.to_cql_literal())),
        (Value::Float(d), _) => Number::from_f64(f64::from(*d))
            .map(Json::Number)
            .unwrap_or_else(|| Json::String(v.to_cql_literal())),
        (Value::Timestamp(_), _) => {
            let lit = strip_quotes(&v.to_cql_literal());
            Json::String(
                lit.strip_suffix("+0000")
                    .map(|s| format!("{s}Z"))
                    .unwrap_or(lit),
            )
        }
        (Value::List(items), DataType::List(e))
        | (Value::Set(items), DataType::Set(e))
        | (Value::Vector(items), DataType::Vector(e, _)) => {
            Json::Array(items.iter().map(|i| to_json(i, e)).collect())
        }
        (Value::Map(entries), DataType::Map(kt, vt)) => {
            let mut m = Map::new();
            for (k, val) in entries {
                let key = match to_json(k, kt) {
                    Json::String(s) => s,
                    other => other.to_string(),
                };
                m.insert(key, to_json(val, vt));
            }
            Json::Object(m)
        }
        (Value::Tuple(items), DataType::Tuple(types)) => Json::Array(
            items
                .iter()
                .zip(types)
                .map(|(i, t)| i.as_ref().map(|i| to_json(i, t)).unwrap_or(Json::Null))
                .collect(),
        ),
        (Value::Udt(fields), DataType::Udt(u)) => {
            let mut m = Map::new();
            for ((name, val), (_, ft)) in fields.iter().zip(&u.fields) {
                m.insert(
                    json_key(name),
                    val.as_ref().map(|v| to_json(v, ft)).unwrap_or(Json::Null),
                );
            }
            Json::Object(m)
        }
        _ => Json::String(strip_quotes(&v.to_cql_literal())),
    }
}

/// Cassandra's JSON text: `{"k": 1, "l": [1, 2]}` (a space after `:` and `,`), keys in order.
pub fn to_text(j: &Json) -> String {
    struct Spaced;
    impl serde_json::ser::Formatter for Spaced {
        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_key<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_value<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
        ) -> std::io::Result<()> {
            w.write_all(b": ")
        }
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Spaced);
    if serde::Serialize::serialize(j, &mut ser).is_err() {
        return j.to_string();
    }
    String::from_utf8(out).unwrap_or_else(|_| j.to_string())
}

/// A column name as a JSON key: quoted (`"\"Name\""`) when CQL would need quotes.
pub fn json_key(name: &str) -> String {
    if cql::types::is_unquoted_identifier(name) {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Parses CQL literal text (`1h30m`, `0xff`, a uuid, `123`) with the real parser.
fn parse_literal(text: &str) -> Option<Expr> {
    if text.contains(';') {
        return None;
    }
    let stmt = cql::parse_statement(&format!("SELECT * FROM t WHERE x = {text}")).ok()?;
    match stmt {
        Statement::Select(s) => match s.where_clause.into_iter().next() {
            Some(Relation::Simple { value, .. }) => Some(value),
            _ => None,
        },
        _ => None,
    }
}

/// The typed value of a JSON value for a column of type `ty` (None for JSON null).
///
/// # Errors
/// InvalidRequest naming the column when the JSON does not fit the type.
pub fn from_json(j: &Json, ty: &DataType, column: &str) -> Result<Option<Value>, QueryError> {
    let bad = || {
        QueryError::invalid(format!(
            "Error decoding JSON value for {column}: Unable to make {ty} from '{}'",
            match j {
                Json::String(s) => s.clone(),
                other => other.to_string(),
            }
        ))
    };
    if j.is_null() {
        return Ok(None);
    }
    let unfrozen = ty.unfrozen();
    Ok(Some(match (j, unfrozen) {
        (Json::String(s), DataType::Native(NativeType::Text)) => Value::Text(s.clone()),
        (Json::String(s), DataType::Native(NativeType::Ascii)) => {
            if !s.is_ascii() {
                return Err(bad());
            }
            Value::Ascii(s.clone())
        }
        (_, DataType::Native(NativeType::Text | NativeType::Ascii)) => return Err(bad()),
        (
            Json::String(s),
            DataType::Native(
                NativeType::Timestamp | NativeType::Date | NativeType::Time | NativeType::Inet,
            ),
        ) => literal_value(&Expr::Literal(Literal::String(s.clone())), ty, column)?
            .ok_or_else(bad)?,
        (Json::Bool(b), DataType::Native(NativeType::Boolean)) => Value::Boolean(*b),
        (Json::Number(n), DataType::Native(_)) => {
            let text = n.to_string();
            let expr = parse_literal(&text).ok_or_else(bad)?;
            literal_value(&expr, ty, column)
                .map_err(|_| bad())?
                .ok_or_else(bad)?
        }
        (Json::String(s), DataType::Native(_)) => {
            let expr = parse_literal(s).ok_or_else(bad)?;
            literal_value(&expr, ty, column)
                .map_err(|_| bad())?
                .ok_or_else(bad)?
        }
        // A collection, tuple or UDT may come as a JSON-encoded string (`"[7, 8]"`): Cassandra
        // decodes the string once (`ListType.fromJSONObject` and its siblings).
        (
            Json::String(s),
            DataType::List(_)
            | DataType::Vector(..)
            | DataType::Set(_)
            | DataType::Map(_, _)
            | DataType::Tuple(_)
            | DataType::Udt(_),
        ) => match serde_json::from_str::<Json>(s) {
            Ok(Json::String(_)) | Err(_) => return Err(bad()),
            Ok(decoded) => return from_json(&decoded, ty, column),
        },
        (Json::Array(items), DataType::Vector(e, n)) => {
            crate::executor::literal::check_vector_len(items.len(), ty.unfrozen(), *n, column)?;
            Value::Vector(
                items
                    .iter()
                    .map(|i| from_json(i, e, column)?.ok_or_else(bad))
                    .collect::<Result<_, _>>()?,
            )
        }
        (Json::Array(items), DataType::List(e)) => Value::List(
            items
                .iter()
                .map(|i| from_json(i, e, column)?.ok_or_else(bad))
                .collect::<Result<_, _>>()?,
        ),
        (Json::Array(items), DataType::Set(e)) => {
            let mut v: Vec<Value> = items
                .iter()
                .map(|i| from_json(i, e, column)?.ok_or_else(bad))
                .collect::<Result<_, _>>()?;
            crate::executor::order::sort_set(&mut v, e);
            Value::Set(v)
        }
        (Json::Object(m), DataType::Map(kt, vt)) => {
            let mut out = Vec::new();
            for (k, v) in m {
                let key = match kt.unfrozen() {
                    DataType::Native(NativeType::Text | NativeType::Ascii) => {
                        Json::String(k.clone())
                    }
                    _ => serde_json::from_str(k).unwrap_or_else(|_| Json::String(k.clone())),
                };
                let key = from_json(&key, kt, column)?.ok_or_else(bad)?;
                let val = from_json(v, vt, column)?.ok_or_else(bad)?;
                out.push((key, val));
            }
            crate::executor::order::sort_map(&mut out, kt);
            Value::Map(out)
        }
        (Json::Array(items), DataType::Tuple(types)) => {
            if items.len() != types.len() {
                return Err(bad());
            }
            Value::Tuple(
                items
                    .iter()
                    .zip(types)
                    .map(|(i, t)| from_json(i, t, column))
                    .collect::<Result<_, _>>()?,
            )
        }
        (Json::Object(m), DataType::Udt(u)) => {
            for k in m.keys() {
                let name = unquote_key(k);
                if !u.fields.iter().any(|(f, _)| *f == name) {
                    return Err(QueryError::invalid(format!(
                        "Unknown field '{name}' in value of user defined type {}",
                        u.name
                    )));
                }
            }
            let mut fields = Vec::new();
            for (f, ft) in &u.fields {
                let v = m.iter().find(|(k, _)| unquote_key(k) == *f).map(|(_, v)| v);
                fields.push((
                    f.clone(),
                    match v {
                        Some(v) => from_json(v, ft, column)?,
                        None => None,
                    },
                ));
            }
            Value::Udt(fields)
        }
        _ => return Err(bad()),
    }))
}

/// A JSON object key as a column or field name: `"\"Name\""` is case-sensitive, others lower-cased.
pub fn unquote_key(k: &str) -> String {
    match k.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => k.to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_collections_and_numbers() {
        let ty = DataType::Map(
            Box::new(DataType::TEXT),
            Box::new(DataType::List(Box::new(NativeType::Int.into()))),
        );
        let v = Value::Map(vec![(
            Value::Text("a".into()),
            Value::List(vec![Value::Int(1), Value::Int(2)]),
        )]);
        let j = to_json(&v, &ty);
        assert_eq!(j.to_string(), r#"{"a":[1,2]}"#);
        assert_eq!(from_json(&j, &ty, "m").ok().flatten(), Some(v));
    }

    #[test]
    fn timestamps_print_like_cassandra() {
        let j = to_json(&Value::Timestamp(0), &NativeType::Timestamp.into());
        assert_eq!(j, Json::String("1970-01-01 00:00:00.000Z".into()));
        let back = from_json(&j, &NativeType::Timestamp.into(), "t")
            .ok()
            .flatten();
        assert_eq!(back, Some(Value::Timestamp(0)));
    }

    #[test]
    fn collections_may_come_as_json_encoded_strings() {
        let list = DataType::List(Box::new(NativeType::Int.into()));
        let decoded = |text: &str, ty: &DataType| {
            let j: Json = serde_json::from_str(text).expect("json");
            from_json(&j, ty, "c")
        };
        assert_eq!(
            decoded(r#""[7, 8]""#, &list).ok().flatten(),
            Some(Value::List(vec![Value::Int(7), Value::Int(8)]))
        );
        let set = DataType::Set(Box::new(NativeType::Int.into()));
        assert_eq!(
            decoded(r#""[3, 1]""#, &set).ok().flatten(),
            Some(Value::Set(vec![Value::Int(1), Value::Int(3)]))
        );
        let map = DataType::Map(Box::new(DataType::TEXT), Box::new(NativeType::Int.into()));
        assert_eq!(
            decoded(r#""{\"a\": 1}""#, &map).ok().flatten(),
            Some(Value::Map(vec![(Value::Text("a".into()), Value::Int(1))]))
        );
        // Decoded once only, and it must then fit the type.
        assert!(decoded(r#""\"[7]\"""#, &list).is_err());
        assert!(decoded(r#""[7, ""#, &list).is_err());
        assert!(decoded(r#""{}""#, &list).is_err());
    }
}
