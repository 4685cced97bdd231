//! `createMaterializedViewStatement`, `alterMaterializedViewStatement` and
//! `dropMaterializedViewStatement`.

use nom::branch::alt;
use nom::combinator::opt;
use nom::multi::separated_list1;
use nom::Parser;

use super::common::{
    comma, ident, ident_list, if_exists, if_not_exists, kw, kws, lparen, properties,
    qualified_name, rparen, sym,
};
use super::ddl::{table_property, TableProperty};
use super::expr::where_clause;
use super::{Input, PResult};
use crate::ast::{AlterView, CreateView, DropView, Statement, TableOptions};
use crate::syntax::lexer::TokenKind;

/// `CREATE MATERIALIZED VIEW` or `DROP MATERIALIZED VIEW`.
pub(crate) fn view_statement(i: Input<'_>) -> PResult<'_, Statement> {
    alt((
        create_view.map(|v| Statement::CreateView(Box::new(v))),
        drop_view.map(Statement::DropView),
        alter_view.map(Statement::AlterView),
    ))
    .parse(i)
}

fn create_view(i: Input<'_>) -> PResult<'_, CreateView> {
    let (i, _) = kws(&["create", "materialized", "view"])(i)?;
    let (i, if_not_exists) = if_not_exists(i)?;
    let (i, name) = qualified_name(i)?;
    let (i, _) = kws(&["as", "select"])(i)?;
    let (i, columns) = alt((
        sym(TokenKind::Star, "*").map(|_| Vec::new()),
        separated_list1(comma, ident),
    ))
    .parse(i)?;
    let (i, _) = kw("from")(i)?;
    let (i, base) = qualified_name(i)?;
    let (i, where_clause) = opt(|i| {
        let (i, _) = kw("where")(i)?;
        where_clause(i)
    })
    .parse(i)?;
    let (i, _) = kws(&["primary", "key"])(i)?;
    let (i, _) = lparen(i)?;
    let (i, partition_key) = alt((ident_list, ident.map(|c| vec![c]))).parse(i)?;
    let (i, clustering_key) = nom::multi::many0(|i| {
        let (i, _) = comma(i)?;
        ident(i)
    })
    .parse(i)?;
    let (i, _) = rparen(i)?;
    let (i, with) = opt(|i| {
        let (i, _) = kw("with")(i)?;
        separated_list1(kw("and"), table_property).parse(i)
    })
    .parse(i)?;
    let mut options = TableOptions::default();
    for p in with.into_iter().flatten() {
        match p {
            TableProperty::Property(name, value) => options.properties.push((name, value)),
            TableProperty::CompactStorage => options.compact_storage = true,
            TableProperty::ClusteringOrder(order) => options.clustering_order.extend(order),
        }
    }
    Ok((
        i,
        CreateView {
            name,
            if_not_exists,
            columns,
            base,
            where_clause: where_clause.unwrap_or_default(),
            partition_key,
            clustering_key,
            options,
        },
    ))
}

fn alter_view(i: Input<'_>) -> PResult<'_, AlterView> {
    let (i, _) = kws(&["alter", "materialized", "view"])(i)?;
    let (i, if_exists) = if_exists(i)?;
    let (i, name) = qualified_name(i)?;
    let (i, _) = kw("with")(i)?;
    let (i, properties) = properties(i)?;
    Ok((
        i,
        AlterView {
            name,
            if_exists,
            properties,
        },
    ))
}

fn drop_view(i: Input<'_>) -> PResult<'_, DropView> {
    let (i, _) = kws(&["drop", "materialized", "view"])(i)?;
    let (i, if_exists) = if_exists(i)?;
    let (i, name) = qualified_name(i)?;
    Ok((i, DropView { name, if_exists }))
}

#[cfg(test)]
mod tests {
    use crate::ast::{Operator, Relation, Statement};
    use crate::parse_statement;

    #[test]
    fn alter_view_parses_and_prints_back() {
        let text =
            "ALTER MATERIALIZED VIEW IF EXISTS ks.mv WITH comment = 'x' AND gc_grace_seconds = 5";
        let Ok(Statement::AlterView(v)) = parse_statement(text) else {
            panic!("not ALTER VIEW: {:?}", parse_statement(text));
        };
        assert!(v.if_exists);
        assert_eq!(v.properties.len(), 2);
        assert_eq!(v.to_string(), text);
    }

    #[test]
    fn a_view_parses_and_prints_back() {
        let text = "CREATE MATERIALIZED VIEW IF NOT EXISTS ks.by_v AS SELECT k, c, v FROM ks.t \
                    WHERE v IS NOT NULL AND k IS NOT NULL AND c IS NOT NULL \
                    PRIMARY KEY (v, k, c) WITH CLUSTERING ORDER BY (k DESC) AND comment = 'x'";
        let Ok(Statement::CreateView(v)) = parse_statement(text) else {
            panic!("not a view: {:?}", parse_statement(text));
        };
        assert!(v.if_not_exists);
        assert_eq!(v.columns, ["k", "c", "v"]);
        assert_eq!(v.base.name, "t");
        assert_eq!(v.partition_key, ["v"]);
        assert_eq!(v.clustering_key, ["k", "c"]);
        assert_eq!(v.where_clause.len(), 3);
        assert!(matches!(
            &v.where_clause[0],
            Relation::Simple { column, op: Operator::IsNot, .. } if column == "v"
        ));
        let printed = v.to_string();
        assert_eq!(
            parse_statement(&printed).ok(),
            Some(Statement::CreateView(v)),
            "{printed}"
        );
    }

    #[test]
    fn star_composite_keys_and_drop() {
        let text =
            "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE a IS NOT NULL AND b IS NOT NULL \
                    PRIMARY KEY ((a, b))";
        let Ok(Statement::CreateView(v)) = parse_statement(text) else {
            panic!("not a view");
        };
        assert!(v.columns.is_empty());
        assert_eq!(v.partition_key, ["a", "b"]);
        assert_eq!(
            parse_statement(&v.to_string()).ok(),
            Some(Statement::CreateView(v))
        );
        let Ok(Statement::DropView(d)) = parse_statement("DROP MATERIALIZED VIEW IF EXISTS ks.mv")
        else {
            panic!("not a drop");
        };
        assert!(d.if_exists);
        assert_eq!(d.to_string(), "DROP MATERIALIZED VIEW IF EXISTS ks.mv");
    }
}
