//! Cassandra 5.0's vector similarity functions (`VectorFcts`): `similarity_cosine`,
//! `similarity_euclidean` and `similarity_dot_product` over two `vector<float, n>` of the same
//! dimension, returning `float` as Lucene's `VectorSimilarityFunction` scores them:
//! cosine `(1 + cos) / 2`, euclidean `1 / (1 + squared distance)`, dot product `(1 + dot) / 2`.

use super::{FunctionArg, Signature, SYSTEM};
use crate::error::QueryError;
use cql::types::{DataType, NativeType, Value};
use storage::Similarity;

/// The similarity functions' registered names.
pub const SIMILARITY_FUNCTIONS: [&str; 3] = [
    "similarity_cosine",
    "similarity_euclidean",
    "similarity_dot_product",
];

/// True for a similarity function's registered name.
pub fn is_similarity(name: &str) -> bool {
    SIMILARITY_FUNCTIONS.contains(&name)
}

/// The dimension of a `vector<float, n>`, or Cassandra's error naming the argument.
fn float_dimension(name: &str, arg: &str, ty: &DataType) -> Result<u32, QueryError> {
    match ty.unfrozen() {
        DataType::Vector(e, n) if matches!(e.unfrozen(), DataType::Native(NativeType::Float)) => {
            Ok(*n)
        }
        other => Err(QueryError::invalid(format!(
            "Function {name} requires a float vector argument, but found argument {arg} of type {other}"
        ))),
    }
}

/// The argument type of a call of the similarity function `name` given the types of its
/// arguments (`None` for a literal or null whose type is to be inferred, with the number of
/// elements of a list literal): `vector<float, n>`.
///
/// # Errors
/// InvalidRequest with `VectorFcts`' messages: wrong arity, a non-float-vector argument,
/// `All arguments must have the same vector dimensions`, `Cannot infer type of argument NULL`.
pub fn argument_type(
    name: &str,
    args: &[(String, Option<&DataType>, Option<usize>)],
) -> Result<DataType, QueryError> {
    if args.len() != 2 {
        return Err(QueryError::invalid(format!(
            "Invalid number of arguments in call to function {SYSTEM}.{name}: 2 required but {} provided",
            args.len()
        )));
    }
    let mut dims = Vec::with_capacity(2);
    for (text, ty, literal_len) in args {
        match (ty, literal_len) {
            (Some(t), _) => dims.push(u64::from(float_dimension(name, text, t)?)),
            (None, Some(n)) => dims.push(*n as u64),
            (None, None) => {}
        }
    }
    let Some(&first) = dims.first() else {
        let text = args.first().map(|a| a.0.as_str()).unwrap_or("NULL");
        return Err(QueryError::invalid(format!(
            "Cannot infer type of argument {} in call to function {name}",
            if text == "null" { "NULL" } else { text }
        )));
    };
    if dims.iter().any(|d| *d != first) {
        return Err(QueryError::invalid(
            "All arguments must have the same vector dimensions",
        ));
    }
    let n = u32::try_from(first)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            QueryError::invalid(format!(
                "vectors may only have positive dimensions; given {first}"
            ))
        })?;
    Ok(DataType::Vector(
        Box::new(DataType::Native(NativeType::Float)),
        n,
    ))
}

/// Resolves a call of a similarity function whose arguments are all typed (as the executor
/// calls it): the signature `(vector<float, n>, vector<float, n>) -> float`.
///
/// # Errors
/// As [`argument_type`].
pub fn resolve(name: &str, args: &[FunctionArg<'_>]) -> Result<Signature, QueryError> {
    let described: Vec<(String, Option<&DataType>, Option<usize>)> = args
        .iter()
        .map(|a| {
            let ty = match a.kind {
                super::ArgKind::Typed(t) => Some(t),
                _ => None,
            };
            (a.text.clone(), ty, None)
        })
        .collect();
    let ty = argument_type(name, &described)?;
    Ok(Signature {
        name: name.to_string(),
        arg_types: vec![ty.clone(), ty],
        return_type: DataType::Native(NativeType::Float),
        is_aggregate: false,
        keyspace: None,
    })
}

fn floats(name: &str, v: &Value) -> Result<Vec<f32>, QueryError> {
    let Value::Vector(items) = v else {
        return Err(QueryError::invalid(format!(
            "Function {name} requires a float vector argument"
        )));
    };
    items
        .iter()
        .map(|i| match i {
            Value::Float(f) => Ok(*f),
            _ => Err(QueryError::invalid(format!(
                "Function {name} requires a float vector argument"
            ))),
        })
        .collect()
}

/// Evaluates the similarity function `name` on two vectors (`None` when either is null).
///
/// # Errors
/// InvalidRequest: dimensions that differ, or an all-zero vector for cosine
/// (`Function similarity_cosine doesn't support all-zero vectors`).
pub fn call(name: &str, a: Option<&Value>, b: Option<&Value>) -> Result<Option<Value>, QueryError> {
    let (Some(a), Some(b)) = (a, b) else {
        return Ok(None);
    };
    let (x, y) = (floats(name, a)?, floats(name, b)?);
    if x.len() != y.len() {
        return Err(QueryError::invalid(
            "All arguments must have the same vector dimensions",
        ));
    }
    let similarity = match name {
        "similarity_cosine" => Similarity::Cosine,
        "similarity_euclidean" => Similarity::Euclidean,
        _ => Similarity::DotProduct,
    };
    let zero = |v: &[f32]| v.iter().all(|e| *e == 0.0);
    if similarity == Similarity::Cosine && (zero(&x) || zero(&y)) {
        return Err(QueryError::invalid(format!(
            "Function {name} doesn't support all-zero vectors"
        )));
    }
    Ok(Some(Value::Float(similarity.score(&x, &y))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[f32]) -> Value {
        Value::Vector(xs.iter().copied().map(Value::Float).collect())
    }

    fn score(name: &str, a: &[f32], b: &[f32]) -> f32 {
        match call(name, Some(&v(a)), Some(&v(b))) {
            Ok(Some(Value::Float(f))) => f,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn scores_follow_lucenes_formulas() {
        assert!((score("similarity_cosine", &[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!((score("similarity_cosine", &[1.0, 0.0], &[-1.0, 0.0])).abs() < 1e-6);
        assert!((score("similarity_euclidean", &[1.0, 2.0], &[2.0, 4.0]) - 1.0 / 6.0).abs() < 1e-6);
        assert!((score("similarity_dot_product", &[1.0, 2.0], &[3.0, 0.5]) - 2.5).abs() < 1e-6);
    }

    #[test]
    fn zero_vectors_and_other_dimensions_are_refused() {
        let e = call(
            "similarity_cosine",
            Some(&v(&[0.0, 0.0])),
            Some(&v(&[1.0, 0.0])),
        );
        assert!(e.is_err());
        assert!(call(
            "similarity_dot_product",
            Some(&v(&[1.0])),
            Some(&v(&[1.0, 2.0]))
        )
        .is_err());
        assert_eq!(
            call("similarity_euclidean", None, Some(&v(&[1.0]))).ok(),
            Some(None)
        );
        let f3 = DataType::Vector(Box::new(DataType::Native(NativeType::Float)), 3);
        let f2 = DataType::Vector(Box::new(DataType::Native(NativeType::Float)), 2);
        let args = [
            ("a".to_string(), Some(&f3), None),
            ("b".to_string(), Some(&f2), None),
        ];
        assert!(argument_type("similarity_cosine", &args).is_err());
        let args = [
            ("a".to_string(), Some(&f3), None),
            ("[1]".to_string(), None, Some(3)),
        ];
        assert_eq!(argument_type("similarity_cosine", &args).ok(), Some(f3));
    }
}
