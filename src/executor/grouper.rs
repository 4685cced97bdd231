//! Folding the rows of a SELECT with aggregates into one output row per group (consecutive
//! rows with equal GROUP BY keys): `count(*)`, native and user aggregates, plain selectors (the
//! group's first row), and functions over aggregates (`plus(max(v), 1)`: the aggregates are
//! folded, then the function runs on their results and the first row's other values).

use bytes::Bytes;
use cql::types::{DataType, Value};

use crate::error::QueryError;
use crate::executor::functions::Aggregator;
use crate::executor::selection::eval_args;
use crate::planner::selection::Selection;
use crate::udf::calls::AggregateState;

/// One output row of a group, with the partition key the group belongs to.
pub(crate) type GroupRow = (Vec<Vec<u8>>, Vec<Option<Bytes>>);

/// Per-group state of one output.
enum Fold<'a> {
    /// `count(*)`.
    Count(i64),
    /// An aggregate function.
    Agg(Aggregator, &'a Selection, &'a DataType),
    /// A user-defined aggregate and its arguments.
    UserAgg(AggregateState, &'a [(Selection, DataType)]),
    /// A plain selection: the value on the group's first row.
    First(Option<Bytes>, bool),
    /// A selection with aggregates inside: the aggregates' folds (in tree order), and the
    /// selection with the group's first row's values put in (aggregates left in place).
    Over(Vec<Fold<'a>>, Option<Selection>),
}

/// True for the selections folded over a group's rows.
fn is_fold(sel: &Selection) -> bool {
    matches!(
        sel,
        Selection::CountStar | Selection::Aggregate { .. } | Selection::UserAggregate { .. }
    )
}

/// The direct sub-selections of `sel`.
fn children(sel: &Selection) -> Vec<&Selection> {
    match sel {
        Selection::Scalar { args, .. } | Selection::UserFunction { args, .. } => {
            args.iter().map(|(a, _)| a).collect()
        }
        Selection::Cast { arg, .. }
        | Selection::Field { arg, .. }
        | Selection::Element { arg, .. }
        | Selection::ToJson { arg, .. } => vec![arg.as_ref()],
        _ => Vec::new(),
    }
}

/// The aggregates inside `sel`, in tree order (not looking inside an aggregate).
fn aggregates_in<'a>(sel: &'a Selection, out: &mut Vec<&'a Selection>) {
    if is_fold(sel) {
        out.push(sel);
        return;
    }
    for c in children(sel) {
        aggregates_in(c, out);
    }
}

/// `sel` with its sub-selections replaced by `f`'s.
fn map_children(
    sel: &Selection,
    f: &mut dyn FnMut(&Selection) -> Result<Selection, QueryError>,
) -> Result<Selection, QueryError> {
    let args = |args: &[(Selection, DataType)], f: &mut dyn FnMut(&Selection) -> _| {
        args.iter()
            .map(|(a, t)| Ok((f(a)?, t.clone())))
            .collect::<Result<Vec<_>, QueryError>>()
    };
    Ok(match sel {
        Selection::Scalar { name, args: a } => Selection::Scalar {
            name: name.clone(),
            args: args(a, f)?,
        },
        Selection::UserFunction { call, args: a } => Selection::UserFunction {
            call: call.clone(),
            args: args(a, f)?,
        },
        Selection::Cast { arg, from, to } => Selection::Cast {
            arg: Box::new(f(arg)?),
            from: from.clone(),
            to: to.clone(),
        },
        Selection::Field {
            arg,
            arg_type,
            index,
        } => Selection::Field {
            arg: Box::new(f(arg)?),
            arg_type: arg_type.clone(),
            index: *index,
        },
        Selection::Element { arg, arg_type, key } => Selection::Element {
            arg: Box::new(f(arg)?),
            arg_type: arg_type.clone(),
            key: key.clone(),
        },
        Selection::ToJson { arg, arg_type } => Selection::ToJson {
            arg: Box::new(f(arg)?),
            arg_type: arg_type.clone(),
        },
        other => other.clone(),
    })
}

/// `sel` with every column, writetime, ttl and token outside its aggregates replaced by its
/// value on this row.
fn with_row_values(
    sel: &Selection,
    leaf: &dyn Fn(&Selection) -> Option<Bytes>,
) -> Result<Selection, QueryError> {
    if is_fold(sel) {
        return Ok(sel.clone());
    }
    match sel {
        Selection::Column(_) | Selection::WriteTime(_) | Selection::Ttl(_) | Selection::Token => {
            Ok(Selection::Const(leaf(sel)))
        }
        other => map_children(other, &mut |c| with_row_values(c, leaf)),
    }
}

/// `sel` with its aggregates (in tree order) replaced by their results.
fn with_results(
    sel: &Selection,
    results: &mut std::vec::IntoIter<Option<Bytes>>,
) -> Result<Selection, QueryError> {
    if is_fold(sel) {
        return Ok(Selection::Const(results.next().flatten()));
    }
    map_children(sel, &mut |c| with_results(c, results))
}

fn fold_for(sel: &Selection) -> Result<Fold<'_>, QueryError> {
    Ok(match sel {
        Selection::CountStar => Fold::Count(0),
        Selection::UserAggregate { call, args } => {
            Fold::UserAgg(AggregateState::new(call.clone()), args.as_slice())
        }
        Selection::Aggregate {
            name,
            arg,
            arg_type,
        } => Fold::Agg(Aggregator::new(name, arg_type)?, arg, arg_type),
        other if other.is_aggregate() => {
            let mut inner = Vec::new();
            aggregates_in(other, &mut inner);
            Fold::Over(
                inner.into_iter().map(fold_for).collect::<Result<_, _>>()?,
                None,
            )
        }
        _ => Fold::First(None, false),
    })
}

fn feed_fold(
    fold: &mut Fold<'_>,
    sel: &Selection,
    leaf: &dyn Fn(&Selection) -> Option<Bytes>,
) -> Result<(), QueryError> {
    match fold {
        Fold::Count(n) => *n += 1,
        Fold::Agg(agg, arg, ty) => {
            let v = match arg.eval(leaf)? {
                Some(b) => Value::decode(ty, &b).ok(),
                None => None,
            };
            agg.add(v.as_ref())?;
        }
        Fold::UserAgg(state, args) => state.add(eval_args(args, leaf)?)?,
        Fold::First(v, seen) => {
            if !*seen {
                *v = sel.eval(leaf)?;
                *seen = true;
            }
        }
        Fold::Over(inner, first) => {
            let mut aggs = Vec::new();
            aggregates_in(sel, &mut aggs);
            for (f, s) in inner.iter_mut().zip(aggs) {
                feed_fold(f, s, leaf)?;
            }
            if first.is_none() {
                *first = Some(with_row_values(sel, leaf)?);
            }
        }
    }
    Ok(())
}

fn finish_fold(fold: Fold<'_>, sel: &Selection) -> Result<Option<Bytes>, QueryError> {
    Ok(match fold {
        Fold::Count(n) => Some(Bytes::copy_from_slice(&n.to_be_bytes())),
        Fold::Agg(agg, _, _) => agg.finish().map(|v| Bytes::from(v.to_bytes())),
        Fold::UserAgg(state, _) => state.finish()?.map(|v| Bytes::from(v.to_bytes())),
        Fold::First(v, _) => v,
        Fold::Over(inner, first) => {
            let mut aggs = Vec::new();
            aggregates_in(sel, &mut aggs);
            let results = inner
                .into_iter()
                .zip(aggs)
                .map(|(f, s)| finish_fold(f, s))
                .collect::<Result<Vec<_>, _>>()?;
            // Over no rows, the other values are null.
            let template = match first {
                Some(t) => t,
                None => with_row_values(sel, &|_| None)?,
            };
            with_results(&template, &mut results.into_iter())?.eval(&|_| None)?
        }
    })
}

/// Folds rows into one output row per group (consecutive rows with equal GROUP BY keys).
pub(crate) struct Grouper<'a> {
    outputs: &'a [(Selection, DataType)],
    key: Option<Vec<Option<Bytes>>>,
    partition: Vec<Vec<u8>>,
    folds: Vec<Fold<'a>>,
    rows: Vec<GroupRow>,
    grouped: bool,
}

impl<'a> Grouper<'a> {
    /// A grouper for these outputs; `grouped` when the query has GROUP BY.
    ///
    /// # Errors
    /// An aggregate of a type it cannot fold.
    pub(crate) fn new(
        outputs: &'a [(Selection, DataType)],
        grouped: bool,
    ) -> Result<Grouper<'a>, QueryError> {
        let mut g = Grouper {
            outputs,
            key: None,
            partition: Vec::new(),
            folds: Vec::new(),
            rows: Vec::new(),
            grouped,
        };
        g.folds = g.fresh()?;
        Ok(g)
    }

    fn fresh(&self) -> Result<Vec<Fold<'a>>, QueryError> {
        let outputs: &'a [(Selection, DataType)] = self.outputs;
        outputs.iter().map(|(s, _)| fold_for(s)).collect()
    }

    /// Feeds one row, with its group key (empty without GROUP BY).
    ///
    /// # Errors
    /// Aggregate failures.
    pub(crate) fn feed(
        &mut self,
        key: Vec<Option<Bytes>>,
        partition: &[Vec<u8>],
        leaf: &dyn Fn(&Selection) -> Option<Bytes>,
    ) -> Result<(), QueryError> {
        if self.key.as_ref().is_some_and(|k| *k != key) {
            self.flush()?;
        }
        if self.key.is_none() {
            self.partition = partition.to_vec();
        }
        self.key = Some(key);
        for (fold, (sel, _)) in self.folds.iter_mut().zip(self.outputs) {
            feed_fold(fold, sel, leaf)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), QueryError> {
        let fresh = self.fresh()?;
        let folds = std::mem::replace(&mut self.folds, fresh);
        let row = folds
            .into_iter()
            .zip(self.outputs)
            .map(|(f, (sel, _))| finish_fold(f, sel))
            .collect::<Result<_, QueryError>>()?;
        self.rows.push((std::mem::take(&mut self.partition), row));
        self.key = None;
        Ok(())
    }

    /// The output rows with their partition keys: one per group (one in all without GROUP BY,
    /// even over no rows).
    ///
    /// # Errors
    /// Aggregate failures.
    pub(crate) fn finish(mut self) -> Result<Vec<GroupRow>, QueryError> {
        if self.key.is_some() || (!self.grouped && self.rows.is_empty()) {
            self.flush()?;
        }
        Ok(self.rows)
    }
}
