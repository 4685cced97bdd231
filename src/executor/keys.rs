//! Keys of a read or write: planned WHERE restrictions bound to a request's values and
//! serialized as storage wants them (partition keys, clustering prefixes, slice bounds).

use crate::error::QueryError;
use crate::executor::values::{Bound, Values};
use crate::planner::restrictions::{KeyValues, RangeEnd};
use crate::planner::terms::Term;
use crate::schema::{ClusteringOrder, Table};
use cql::types::Value;
use storage::ClusteringBound;

/// Binds one key value, which may be neither null nor unset.
fn bind_one(t: &Term, values: &Values<'_>, name: &str) -> Result<Value, QueryError> {
    match values.bind(t)? {
        Bound::Value(v) => Ok(v),
        Bound::Null => Err(QueryError::invalid(format!(
            "Invalid null value in condition for column {name}"
        ))),
        Bound::Unset => Err(QueryError::invalid(format!(
            "Invalid unset value for column {name}"
        ))),
    }
}

/// Binds key values: one entry per value (IN expands).
///
/// # Errors
/// InvalidRequest for null or unset key values.
pub fn bind_key_values(
    v: &KeyValues,
    values: &Values<'_>,
    name: &str,
) -> Result<Vec<Value>, QueryError> {
    let one = |t: &Term| bind_one(t, values, name);
    match v {
        KeyValues::Eq(t) => Ok(vec![one(t)?]),
        KeyValues::In(ts) => ts.iter().map(one).collect(),
        KeyValues::Tuples {
            terms, in_marker, ..
        } => {
            let mut out = Vec::new();
            for t in terms {
                match values.bind(t)? {
                    Bound::Value(Value::List(items)) if *in_marker => out.extend(items),
                    Bound::Value(v) => out.push(v),
                    Bound::Null => {
                        return Err(QueryError::invalid(format!(
                            "Invalid null value in condition for columns {name}"
                        )))
                    }
                    Bound::Unset => {
                        return Err(QueryError::invalid(format!(
                            "Invalid unset value for columns {name}"
                        )))
                    }
                }
            }
            Ok(out)
        }
        KeyValues::InMarker(t) => match values.bind(t)? {
            Bound::Value(Value::List(items)) => Ok(items),
            Bound::Null => Err(QueryError::invalid(format!(
                "Invalid null value for IN restriction on {name}"
            ))),
            Bound::Unset => Err(QueryError::invalid(format!(
                "Invalid unset value for column {name}"
            ))),
            Bound::Value(other) => Ok(vec![other]),
        },
    }
}

/// Every partition key the restrictions on the partition-key columns select, serialized, in
/// statement order (IN expands; repeats are kept). `=` on every column, a point read's or a
/// write's key, binds its one key without the product.
///
/// # Errors
/// InvalidRequest for null or unset key values, or too many combinations.
pub fn bind_partition_keys(
    partition: &[KeyValues],
    table: &Table,
    values: &Values<'_>,
) -> Result<Vec<KeyBytes>, QueryError> {
    if partition.iter().all(|v| matches!(v, KeyValues::Eq(_))) {
        // `=` on every column (a point read's or a write's key): one key, bound without
        // the lists and the product below.
        let mut key = Vec::with_capacity(partition.len());
        for (v, c) in partition.iter().zip(table.partition_key()) {
            if let KeyValues::Eq(t) = v {
                key.push(bind_one(t, values, &c.name)?.to_bytes());
            }
        }
        return Ok(vec![key]);
    }
    let mut lists = Vec::with_capacity(partition.len());
    for (v, c) in partition.iter().zip(table.partition_key()) {
        lists.push(bind_key_values(v, values, &c.name)?);
    }
    Ok(cartesian(lists)?
        .iter()
        .map(|k| k.iter().map(Value::to_bytes).collect())
        .collect())
}

/// The cartesian product of per-column value lists, in order (Cassandra caps it).
///
/// # Errors
/// InvalidRequest when the product exceeds 65,535 combinations.
pub fn cartesian(columns: Vec<Vec<Value>>) -> Result<Vec<Vec<Value>>, QueryError> {
    let width = columns.len();
    let mut out: Vec<Vec<Value>> = vec![Vec::with_capacity(width)];
    for col in columns {
        if let [_] = col.as_slice() {
            // One value (`=`, the usual case): appended to each combination, moved into the
            // last one rather than copied.
            let Some(v) = col.into_iter().next() else {
                continue;
            };
            if let Some((last, rest)) = out.split_last_mut() {
                for prefix in rest {
                    prefix.push(v.clone());
                }
                last.push(v);
            }
            continue;
        }
        let mut next = Vec::with_capacity(out.len() * col.len());
        for prefix in &out {
            for v in &col {
                let mut p = Vec::with_capacity(width);
                p.extend_from_slice(prefix);
                p.push(v.clone());
                next.push(p);
            }
        }
        if next.len() > 65_535 {
            return Err(QueryError::invalid(
                "Cartesian product of IN restrictions is too large (more than 65535 combinations)",
            ));
        }
        out = next;
    }
    Ok(out)
}

/// Bound values of a clustering slice: (lower, upper), each (serialized values, inclusive).
pub type SliceBounds = Option<(Option<SliceEnd>, Option<SliceEnd>)>;

/// One bound slice end: serialized clustering values and whether they are included.
pub type SliceEnd = (Vec<Vec<u8>>, bool);

/// A clustering prefix or partition key: serialized components.
pub type KeyBytes = Vec<Vec<u8>>;

/// The one clustering component a value on a single column stands for (a one-element
/// tuple, as `(c) = (1)` binds, stands for its element).
fn one_component(v: &Value) -> Result<Vec<u8>, QueryError> {
    match v {
        Value::Tuple(items) if items.len() == 1 => items[0]
            .as_ref()
            .map(Value::to_bytes)
            .ok_or_else(|| QueryError::invalid("Invalid null value in multi-column relation")),
        _ => Ok(v.to_bytes()),
    }
}

/// Serialized components of a bound value: a tuple's components for multi-column relations.
fn components(v: &Value, width: usize) -> Result<Vec<Vec<u8>>, QueryError> {
    if width <= 1 {
        return Ok(vec![one_component(v)?]);
    }
    match v {
        Value::Tuple(items) if items.len() == width => items
            .iter()
            .map(|i| {
                i.as_ref().map(Value::to_bytes).ok_or_else(|| {
                    QueryError::invalid("Invalid null value in multi-column relation")
                })
            })
            .collect(),
        _ => Err(QueryError::invalid(format!(
            "Expected {width} elements in value tuple, but got {}",
            match v {
                Value::Tuple(i) => i.len(),
                _ => 1,
            }
        ))),
    }
}

/// Every clustering prefix the = / IN restrictions select (IN expanded, multi-column tuples
/// split into their columns).
///
/// # Errors
/// InvalidRequest for null values or oversized products.
pub fn bind_prefixes(
    entries: &[KeyValues],
    table: &Table,
    values: &Values<'_>,
) -> Result<Vec<Vec<Vec<u8>>>, QueryError> {
    if entries.iter().all(|e| matches!(e, KeyValues::Eq(_))) {
        // Only `=` on single columns (a point read's or a write's key): one prefix, bound
        // without the lists and the product below.
        let mut prefix = Vec::with_capacity(entries.len());
        let mut columns = table.clustering();
        for e in entries {
            let name = columns.next().map_or("", |c| c.name.as_str());
            let KeyValues::Eq(t) = e else {
                continue;
            };
            let c = one_component(&bind_one(t, values, name)?)?;
            if c.len() > 0xFFFF {
                return Err(too_long(c.len()));
            }
            prefix.push(c);
        }
        return Ok(vec![prefix]);
    }
    let mut lists = Vec::with_capacity(entries.len());
    let mut pos = 0;
    for e in entries {
        let name = table.clustering().nth(pos).map_or("", |c| c.name.as_str());
        lists.push(bind_key_values(e, values, name)?);
        pos += e.width();
    }
    let mut out = Vec::new();
    for combo in cartesian(lists)? {
        let mut prefix = Vec::new();
        for (v, e) in combo.iter().zip(entries) {
            prefix.extend(components(v, e.width())?);
        }
        if let Some(c) = prefix.iter().find(|c| c.len() > 0xFFFF) {
            return Err(too_long(c.len()));
        }
        out.push(prefix);
    }
    Ok(out)
}

/// The error for a key component past the 64 KiB it may hold.
pub fn too_long(len: usize) -> QueryError {
    QueryError::invalid(format!(
        "Key length of {len} is longer than maximum of 65535"
    ))
}

/// Binds a slice's ends.
///
/// # Errors
/// InvalidRequest for null bounds.
pub fn bind_slice(
    slice: &Option<(Option<RangeEnd>, Option<RangeEnd>)>,
    values: &Values<'_>,
) -> Result<SliceBounds, QueryError> {
    let Some((lo, hi)) = slice else {
        return Ok(None);
    };
    let bind = |e: &Option<RangeEnd>| -> Result<Option<SliceEnd>, QueryError> {
        match e {
            None => Ok(None),
            Some(r) => match values.bind(&r.term)? {
                Bound::Value(v) => Ok(Some((components(&v, r.width)?, r.inclusive))),
                _ => Err(QueryError::invalid(
                    "Invalid null value in clustering restriction",
                )),
            },
        }
    };
    Ok(Some((bind(lo)?, bind(hi)?)))
}

/// A clustering slice bound in storage (clustering) order for one prefix.
pub fn storage_bounds(
    prefix: Vec<Vec<u8>>,
    slice: SliceBounds,
    order: ClusteringOrder,
) -> (ClusteringBound, ClusteringBound) {
    // One side: the prefix, extended by the slice's values on that side if any.
    let side = |end: Option<SliceEnd>, mut p: Vec<Vec<u8>>| match end {
        Some((v, inclusive)) => {
            p.extend(v);
            if inclusive {
                ClusteringBound::Inclusive(p)
            } else {
                ClusteringBound::Exclusive(p)
            }
        }
        None if p.is_empty() => ClusteringBound::Unbounded,
        None => ClusteringBound::Inclusive(p),
    };
    let (first, last) = match slice {
        None => (None, None),
        Some((lo, hi)) => match order {
            ClusteringOrder::Asc => (lo, hi),
            ClusteringOrder::Desc => (hi, lo),
        },
    };
    (side(first, prefix.clone()), side(last, prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i32]) -> Vec<Value> {
        v.iter().map(|i| Value::Int(*i)).collect()
    }

    #[test]
    fn cartesian_keeps_statement_order_and_empty_in() {
        let got = cartesian(vec![ints(&[1, 2]), ints(&[7]), ints(&[3, 4])]).unwrap();
        let want: Vec<Vec<Value>> = [[1, 7, 3], [1, 7, 4], [2, 7, 3], [2, 7, 4]]
            .iter()
            .map(|c| ints(c))
            .collect();
        assert_eq!(got, want);
        assert_eq!(cartesian(vec![ints(&[5])]).unwrap(), vec![ints(&[5])]);
        assert!(cartesian(vec![ints(&[]), ints(&[1])]).unwrap().is_empty());
        let wide = vec![(0..300).collect::<Vec<i32>>(); 2];
        let wide: Vec<Vec<Value>> = wide.iter().map(|c| ints(c)).collect();
        assert!(cartesian(wide).is_err(), "90,000 combinations are refused");
    }
}
