//! `selectStatement`.

use nom::branch::alt;
use nom::combinator::opt;
use nom::multi::separated_list1;
use nom::Parser;

use super::common::{comma, ident, kw, kws, qualified_name, sym};
use super::expr::{alias, int_value, selector_expr, term, where_clause};
use super::{Input, PResult};
use crate::ast::{AnnOrdering, Expr, Order, Select, Selector};
use crate::syntax::lexer::TokenKind;

/// `SELECT ...`.
pub(crate) fn select(i: Input<'_>) -> PResult<'_, Select> {
    let (i, _) = kw("select")(i)?;
    // `json` is also a column name: it is the JSON flag only if a select clause follows it
    // (Cassandra's syntactic predicate `(K_JSON selectClause)=>`).
    let json_clause = kw("json")(i).and_then(|(r, _)| select_clause(r));
    let (i, json, (distinct, selectors)) = match json_clause {
        Ok((r, clause)) => (r, true, clause),
        Err(nom::Err::Failure(e)) => return Err(nom::Err::Failure(e)),
        Err(_) => {
            let (r, clause) = select_clause(i)?;
            (r, false, clause)
        }
    };
    let (i, _) = kw("from")(i)?;
    let (i, table) = qualified_name(i)?;
    let (i, where_clause) = opt(|i| {
        let (i, _) = kw("where")(i)?;
        where_clause(i)
    })
    .parse(i)?;
    let (i, group_by) = opt(|i| {
        let (i, _) = kws(&["group", "by"])(i)?;
        separated_list1(comma, ident).parse(i)
    })
    .parse(i)?;
    let (i, orderings) = opt(|i| {
        let (i, _) = kws(&["order", "by"])(i)?;
        separated_list1(comma, select_ordering).parse(i)
    })
    .parse(i)?;
    let mut order_by = Vec::new();
    let mut ann = Vec::new();
    for o in orderings.unwrap_or_default() {
        match o {
            SelectOrdering::Column(column, order) => order_by.push((column, order)),
            SelectOrdering::Ann(column, vector, order) => ann.push(AnnOrdering {
                column,
                vector,
                order,
                position: order_by.len(),
            }),
        }
    }
    let (i, per_partition_limit) = opt(|i| {
        let (i, _) = kws(&["per", "partition", "limit"])(i)?;
        int_value(i)
    })
    .parse(i)?;
    let (i, limit) = opt(|i| {
        let (i, _) = kw("limit")(i)?;
        int_value(i)
    })
    .parse(i)?;
    let (i, allow_filtering) = opt(kws(&["allow", "filtering"])).parse(i)?;
    Ok((
        i,
        Select {
            distinct,
            json,
            selectors,
            table,
            where_clause: where_clause.unwrap_or_default(),
            group_by: group_by.unwrap_or_default(),
            order_by,
            ann,
            per_partition_limit,
            limit,
            allow_filtering: allow_filtering.is_some(),
        },
    ))
}

/// One item of a SELECT's `ORDER BY`.
enum SelectOrdering {
    Column(String, Order),
    Ann(String, Expr, Option<Order>),
}

/// `orderByClause` of a SELECT: `column [ASC | DESC]` or `column ANN OF term [ASC | DESC]`.
fn select_ordering(i: Input<'_>) -> PResult<'_, SelectOrdering> {
    let (i, column) = ident(i)?;
    let (i, vector) = opt(|i| {
        let (i, _) = kws(&["ann", "of"])(i)?;
        term(i)
    })
    .parse(i)?;
    let (i, order) = opt(alt((
        kw("asc").map(|_| Order::Asc),
        kw("desc").map(|_| Order::Desc),
    )))
    .parse(i)?;
    Ok((
        i,
        match vector {
            Some(v) => SelectOrdering::Ann(column, v, order),
            None => SelectOrdering::Column(column, order.unwrap_or(Order::Asc)),
        },
    ))
}

/// `orderByClause`: `column [ASC | DESC]`.
pub(crate) fn ordering(i: Input<'_>) -> PResult<'_, (String, Order)> {
    let (i, column) = ident(i)?;
    let (i, order) = opt(alt((
        kw("asc").map(|_| Order::Asc),
        kw("desc").map(|_| Order::Desc),
    )))
    .parse(i)?;
    Ok((i, (column, order.unwrap_or(Order::Asc))))
}

/// `selectClause`: `[DISTINCT] selectors`.
fn select_clause(i: Input<'_>) -> PResult<'_, (bool, Vec<Selector>)> {
    match kw("distinct")(i).and_then(|(r, _)| selectors(r)) {
        Ok((r, s)) => Ok((r, (true, s))),
        Err(nom::Err::Failure(e)) => Err(nom::Err::Failure(e)),
        Err(_) => selectors.map(|s| (false, s)).parse(i),
    }
}

/// `selectors`: `*` or a comma-separated list.
fn selectors(i: Input<'_>) -> PResult<'_, Vec<Selector>> {
    if let Ok((r, _)) = sym(TokenKind::Star, "*")(i) {
        return Ok((r, Vec::new()));
    }
    separated_list1(comma, |i| {
        let (i, expr) = selector_expr(i)?;
        let (i, alias) = alias(i)?;
        Ok((i, Selector { expr, alias }))
    })
    .parse(i)
}
