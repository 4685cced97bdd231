//! Cassandra 5.0's collection functions (`CollectionFcts`): `map_keys`, `map_values`,
//! `collection_count`, and `collection_min`, `_max`, `_sum`, `_avg`, which fold one
//! collection's elements with the aggregate of the same name ([`super::Aggregator`]), so a
//! collection and a column of rows aggregate alike.

use super::{Aggregator, ArgKind, FunctionArg, Signature, SYSTEM};
use crate::error::QueryError;
use cql::types::{DataType, NativeType, Value};

/// The collection functions' registered names.
pub const COLLECTION_FUNCTIONS: [&str; 7] = [
    "map_keys",
    "map_values",
    "collection_count",
    "collection_min",
    "collection_max",
    "collection_sum",
    "collection_avg",
];

/// True for a collection function's registered name.
pub fn is_collection_function(name: &str) -> bool {
    COLLECTION_FUNCTIONS.contains(&name)
}

/// The parameter as `FunctionParameter.toString` prints it (`setOrList` prints as
/// `numeric_set_or_list` in Cassandra too).
fn parameter(name: &str) -> &'static str {
    match name {
        "map_keys" | "map_values" => "map",
        "collection_count" => "collection",
        _ => "numeric_set_or_list",
    }
}

/// The elements' type of a set or list.
fn elements(ty: &DataType) -> Option<&DataType> {
    match ty.unfrozen() {
        DataType::List(e) | DataType::Set(e) => Some(e),
        _ => None,
    }
}

fn numeric(ty: &DataType) -> bool {
    use NativeType as N;
    matches!(
        ty.unfrozen(),
        DataType::Native(
            N::Tinyint
                | N::Smallint
                | N::Int
                | N::Bigint
                | N::Float
                | N::Double
                | N::Decimal
                | N::Varint
        )
    )
}

/// Resolves a call of the collection function `name`: its argument must be typed (a column or
/// a nested call) and of the kind the function takes.
///
/// # Errors
/// InvalidRequest with `FunctionFactory`'s and `FunctionParameter`'s messages.
pub fn resolve(name: &str, args: &[FunctionArg<'_>]) -> Result<Signature, QueryError> {
    let factory = format!("{SYSTEM}.{name}({})", parameter(name));
    let [arg] = args else {
        return Err(QueryError::invalid(format!(
            "Invalid number of arguments for function {factory}"
        )));
    };
    let ArgKind::Typed(ty) = arg.kind else {
        return Err(QueryError::invalid(format!(
            "Cannot infer type of argument {} in call to function {factory}: use type casts to \
             disambiguate",
            arg.text
        )));
    };
    let refuse = |wanted: &str| {
        QueryError::invalid(format!(
            "Function {SYSTEM}.{name} requires a {wanted} argument, but found argument {} of \
             type {ty}",
            arg.text
        ))
    };
    let ret = match (name, ty.unfrozen()) {
        ("map_keys", DataType::Map(k, _)) => DataType::Set(k.clone()),
        ("map_values", DataType::Map(_, v)) => DataType::List(v.clone()),
        ("map_keys" | "map_values", _) => return Err(refuse("map")),
        ("collection_count", DataType::List(_) | DataType::Set(_) | DataType::Map(..)) => {
            DataType::Native(NativeType::Int)
        }
        ("collection_count", _) => return Err(refuse("collection")),
        ("collection_min" | "collection_max", _) => {
            elements(ty).ok_or_else(|| refuse("set or list"))?.clone()
        }
        _ => elements(ty)
            .filter(|e| numeric(e))
            .ok_or_else(|| refuse("numeric set/list"))?
            .clone(),
    };
    Ok(Signature {
        name: name.to_string(),
        arg_types: vec![ty.clone()],
        return_type: ret,
        is_aggregate: false,
        keyspace: None,
    })
}

/// Evaluates the collection function `name` on a value of `arg_type` (null in, null out).
///
/// # Errors
/// What the folding aggregate fails with.
pub fn call(
    name: &str,
    arg: Option<&Value>,
    arg_type: &DataType,
) -> Result<Option<Value>, QueryError> {
    let Some(value) = arg else {
        return Ok(None);
    };
    let items: &[Value] = match value {
        Value::List(items) | Value::Set(items) => items,
        Value::Map(entries) => {
            return Ok(match name {
                "map_keys" => Some(Value::Set(entries.iter().map(|e| e.0.clone()).collect())),
                "map_values" => Some(Value::List(entries.iter().map(|e| e.1.clone()).collect())),
                _ => Some(Value::Int(i32::try_from(entries.len()).unwrap_or(i32::MAX))),
            });
        }
        _ => return Ok(None),
    };
    if name == "collection_count" {
        return Ok(Some(Value::Int(
            i32::try_from(items.len()).unwrap_or(i32::MAX),
        )));
    }
    let Some(element) = elements(arg_type) else {
        return Ok(None);
    };
    let aggregate = name.trim_start_matches("collection_");
    let mut folded = Aggregator::new(aggregate, element)?;
    for item in items {
        folded.add(Some(item))?;
    }
    Ok(folded.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use NativeType as N;

    fn typed(ty: &DataType) -> Vec<FunctionArg<'_>> {
        vec![FunctionArg {
            kind: ArgKind::Typed(ty),
            text: "c".into(),
        }]
    }

    #[test]
    fn types_follow_collection_fcts() {
        let map = DataType::Map(Box::new(N::Text.into()), Box::new(N::Int.into()));
        let r = |name: &str, ty: &DataType| resolve(name, &typed(ty)).map(|s| s.return_type);
        assert_eq!(
            r("map_keys", &map).ok(),
            Some(DataType::Set(Box::new(N::Text.into())))
        );
        assert_eq!(
            r("map_values", &map).ok(),
            Some(DataType::List(Box::new(N::Int.into())))
        );
        assert_eq!(r("collection_count", &map).ok(), Some(N::Int.into()));
        let texts = DataType::List(Box::new(N::Text.into()));
        assert_eq!(r("collection_max", &texts).ok(), Some(N::Text.into()));
        let e = r("collection_sum", &texts).err().map(|e| e.to_string());
        assert!(e.is_some_and(|m| m.contains(
            "Function system.collection_sum requires a numeric set/list argument, but found \
             argument c of type list<text>"
        )));
    }

    #[test]
    fn folds_as_the_aggregates() {
        let ints = DataType::Set(Box::new(N::Int.into()));
        let v = Value::Set(vec![Value::Int(1), Value::Int(2), Value::Int(4)]);
        let c = |name: &str| call(name, Some(&v), &ints).ok().flatten();
        assert_eq!(c("collection_sum"), Some(Value::Int(7)));
        // avg of ints stays an int, as `avg` does.
        assert_eq!(c("collection_avg"), Some(Value::Int(2)));
        assert_eq!(c("collection_min"), Some(Value::Int(1)));
        assert_eq!(c("collection_count"), Some(Value::Int(3)));
        let empty = Value::Set(vec![]);
        assert_eq!(
            call("collection_avg", Some(&empty), &ints).ok().flatten(),
            Some(Value::Int(0))
        );
        assert_eq!(
            call("collection_max", Some(&empty), &ints).ok().flatten(),
            None
        );
        assert_eq!(call("collection_sum", None, &ints).ok().flatten(), None);
    }
}
