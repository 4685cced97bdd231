//! Schema statements (keyspaces, tables, types, indexes) and `describeStatement`.

use nom::branch::alt;
use nom::combinator::opt;
use nom::multi::{separated_list0, separated_list1};
use nom::Parser;

use super::common::{
    comma, data_type, ident, ident_list, if_exists as opt_if_exists, if_not_exists, kw, kws,
    lparen, opt_kw, peek_is, properties, property, qualified_name, rparen,
};
use super::expr::{function_name, term};
use super::select::ordering;
use super::{Input, PResult};
use crate::ast::{
    AlterKeyspace, AlterTable, AlterTableOp, AlterType, AlterTypeOp, ColumnDef, ColumnMaskDef,
    CreateIndex, CreateKeyspace, CreateTable, CreateType, Describe, DescribeTarget, DropIndex,
    DropKeyspace, DropTable, DropType, IndexTarget, Statement, TableOptions,
};
use crate::syntax::lexer::{unescape_string, TokenKind};

/// Every `CREATE`/`ALTER`/`DROP` of a keyspace, table, type or index.
pub(crate) fn ddl_statement(i: Input<'_>) -> PResult<'_, Statement> {
    alt((
        create_keyspace.map(Statement::CreateKeyspace),
        alter_keyspace.map(Statement::AlterKeyspace),
        drop_keyspace.map(Statement::DropKeyspace),
        create_table.map(|s| Statement::CreateTable(Box::new(s))),
        alter_table.map(Statement::AlterTable),
        drop_table.map(Statement::DropTable),
        create_type.map(Statement::CreateType),
        alter_type.map(Statement::AlterType),
        drop_type.map(Statement::DropType),
        create_index.map(Statement::CreateIndex),
        drop_index.map(Statement::DropIndex),
    ))
    .parse(i)
}

fn keyspace_kw(i: Input<'_>) -> PResult<'_, ()> {
    alt((kw("keyspace"), kw("schema"))).parse(i)
}

fn table_kw(i: Input<'_>) -> PResult<'_, ()> {
    alt((kw("table"), kw("columnfamily"))).parse(i)
}

fn create_keyspace(i: Input<'_>) -> PResult<'_, CreateKeyspace> {
    let (i, _) = kw("create")(i)?;
    let (i, _) = keyspace_kw(i)?;
    let (i, if_not_exists) = if_not_exists(i)?;
    let (i, name) = ident(i)?;
    let (i, _) = kw("with")(i)?;
    let (i, options) = properties(i)?;
    Ok((
        i,
        CreateKeyspace {
            name,
            if_not_exists,
            options,
        },
    ))
}

fn alter_keyspace(i: Input<'_>) -> PResult<'_, AlterKeyspace> {
    let (i, _) = kw("alter")(i)?;
    let (i, _) = keyspace_kw(i)?;
    let (i, if_exists) = opt_if_exists(i)?;
    let (i, name) = ident(i)?;
    let (i, _) = kw("with")(i)?;
    let (i, options) = properties(i)?;
    Ok((
        i,
        AlterKeyspace {
            name,
            if_exists,
            options,
        },
    ))
}

fn drop_keyspace(i: Input<'_>) -> PResult<'_, DropKeyspace> {
    let (i, _) = kw("drop")(i)?;
    let (i, _) = keyspace_kw(i)?;
    let (i, if_exists) = opt_if_exists(i)?;
    let (i, name) = ident(i)?;
    Ok((i, DropKeyspace { name, if_exists }))
}

/// One item between the parentheses of `CREATE TABLE`.
enum TableItem {
    Column(ColumnDef, bool),
    Key(Vec<String>, Vec<String>),
}

fn table_item(i: Input<'_>) -> PResult<'_, TableItem> {
    if let Ok((i, _)) = kws(&["primary", "key"])(i) {
        let (i, _) = lparen(i)?;
        let (i, partition) = alt((ident_list, ident.map(|c| vec![c]))).parse(i)?;
        let (i, clustering) = nom::multi::many0(|i| {
            let (i, _) = comma(i)?;
            ident(i)
        })
        .parse(i)?;
        let (i, _) = rparen(i)?;
        return Ok((i, TableItem::Key(partition, clustering)));
    }
    let (i, column) = column_def(i)?;
    let (i, key) = opt(kws(&["primary", "key"])).parse(i)?;
    Ok((i, TableItem::Column(column, key.is_some())))
}

fn column_def(i: Input<'_>) -> PResult<'_, ColumnDef> {
    let (i, name) = ident(i)?;
    let (i, data_type) = data_type(i)?;
    let (i, is_static) = opt_kw("static")(i)?;
    let (i, mask) = opt(column_mask).parse(i)?;
    Ok((
        i,
        ColumnDef {
            name,
            data_type,
            is_static,
            mask,
        },
    ))
}

/// `MASKED WITH DEFAULT` or `MASKED WITH fn([term, ...])`.
fn column_mask(i: Input<'_>) -> PResult<'_, ColumnMaskDef> {
    let (i, _) = kws(&["masked", "with"])(i)?;
    if let Ok((i, _)) = kw("default")(i) {
        let function = crate::ast::QualifiedName::unqualified("mask_default".to_string());
        let args = Vec::new();
        return Ok((i, ColumnMaskDef { function, args }));
    }
    let (i, function) = function_name(i)?;
    let (i, _) = lparen(i)?;
    let (i, args) = separated_list0(comma, term).parse(i)?;
    let (i, _) = rparen(i)?;
    Ok((i, ColumnMaskDef { function, args }))
}

fn create_table(i: Input<'_>) -> PResult<'_, CreateTable> {
    let (i, _) = kw("create")(i)?;
    let (i, _) = table_kw(i)?;
    let (i, if_not_exists) = if_not_exists(i)?;
    let (i, name) = qualified_name(i)?;
    let (mut i, _) = lparen(i)?;
    let mut table = CreateTable {
        name,
        if_not_exists,
        columns: Vec::new(),
        partition_key: Vec::new(),
        clustering_key: Vec::new(),
        options: TableOptions::default(),
    };
    loop {
        let start = i;
        let (r, item) = table_item(i)?;
        let key = match item {
            TableItem::Column(col, true) => Some((vec![col.name.clone()], Vec::new(), col)),
            TableItem::Column(col, false) => {
                table.columns.push(col);
                None
            }
            TableItem::Key(p, c) => {
                if !table.partition_key.is_empty() {
                    return start.fail("Multiple PRIMARY KEYs specified (exactly one required)");
                }
                table.partition_key = p;
                table.clustering_key = c;
                None
            }
        };
        if let Some((p, c, col)) = key {
            if !table.partition_key.is_empty() {
                return start.fail("Multiple PRIMARY KEYs specified (exactly one required)");
            }
            table.partition_key = p;
            table.clustering_key = c;
            table.columns.push(col);
        }
        i = r;
        // `( ',' tableColumns? )*`: trailing commas are allowed.
        if !peek_is(&i, TokenKind::Comma) {
            break;
        }
        while peek_is(&i, TokenKind::Comma) {
            i = i.advance(1);
        }
        if peek_is(&i, TokenKind::RParen) {
            break;
        }
    }
    let (i, _) = rparen(i)?;
    let (i, with) = opt(|i| {
        let (i, _) = kw("with")(i)?;
        separated_list1(kw("and"), table_property).parse(i)
    })
    .parse(i)?;
    for p in with.into_iter().flatten() {
        match p {
            TableProperty::Property(name, value) => table.options.properties.push((name, value)),
            TableProperty::CompactStorage => table.options.compact_storage = true,
            TableProperty::ClusteringOrder(order) => table.options.clustering_order.extend(order),
        }
    }
    Ok((i, table))
}

pub(crate) enum TableProperty {
    Property(String, crate::ast::OptionValue),
    CompactStorage,
    ClusteringOrder(Vec<(String, crate::ast::Order)>),
}

pub(crate) fn table_property(i: Input<'_>) -> PResult<'_, TableProperty> {
    alt((
        kws(&["compact", "storage"]).map(|_| TableProperty::CompactStorage),
        |i| {
            let (i, _) = kws(&["clustering", "order", "by"])(i)?;
            let (i, _) = lparen(i)?;
            let (i, order) = separated_list1(comma, ordering).parse(i)?;
            let (i, _) = rparen(i)?;
            Ok((i, TableProperty::ClusteringOrder(order)))
        },
        property.map(|(n, v)| TableProperty::Property(n, v)),
    ))
    .parse(i)
}

fn alter_table(i: Input<'_>) -> PResult<'_, AlterTable> {
    let (i, _) = kw("alter")(i)?;
    let (i, _) = table_kw(i)?;
    let (i, if_exists) = opt_if_exists(i)?;
    let (i, name) = qualified_name(i)?;
    let (i, op) = alt((
        |i| {
            let (i, _) = kw("alter")(i)?;
            let (i, column) = ident(i)?;
            if let Ok((i, _)) = kws(&["drop", "masked"])(i) {
                return Ok((i, AlterTableOp::MaskColumn(column, None)));
            }
            if let Ok((i, mask)) = column_mask(i) {
                return Ok((i, AlterTableOp::MaskColumn(column, Some(mask))));
            }
            let (i, _) = kw("type")(i)?;
            let (i, t) = data_type(i)?;
            Ok((i, AlterTableOp::AlterColumnType(column, t)))
        },
        |i| {
            let (i, _) = kw("add")(i)?;
            let (i, if_not_exists) = if_not_exists(i)?;
            let (i, columns) = alt((
                |i| {
                    let (i, _) = lparen(i)?;
                    let (i, cols) = separated_list1(comma, column_def).parse(i)?;
                    let (i, _) = rparen(i)?;
                    Ok((i, cols))
                },
                column_def.map(|c| vec![c]),
            ))
            .parse(i)?;
            Ok((
                i,
                AlterTableOp::Add {
                    columns,
                    if_not_exists,
                },
            ))
        },
        kws(&["drop", "compact", "storage"]).map(|_| AlterTableOp::DropCompactStorage),
        |i| {
            let (i, _) = kw("drop")(i)?;
            let (i, if_exists) = opt_if_exists(i)?;
            let (i, columns) = alt((ident_list, ident.map(|c| vec![c]))).parse(i)?;
            let (i, timestamp) = opt(|i| {
                let (i, _) = kws(&["using", "timestamp"])(i)?;
                integer(i)
            })
            .parse(i)?;
            Ok((
                i,
                AlterTableOp::Drop {
                    columns,
                    if_exists,
                    timestamp,
                },
            ))
        },
        |i| {
            let (i, _) = kw("rename")(i)?;
            let (i, if_exists) = opt_if_exists(i)?;
            let (i, renames) = renames(i)?;
            Ok((i, AlterTableOp::Rename { renames, if_exists }))
        },
        |i| {
            let (i, _) = kw("with")(i)?;
            properties.map(AlterTableOp::With).parse(i)
        },
    ))
    .parse(i)?;
    Ok((
        i,
        AlterTable {
            name,
            if_exists,
            op,
        },
    ))
}

fn integer(i: Input<'_>) -> PResult<'_, i64> {
    match i.peek() {
        Some(t) if t.kind == TokenKind::Integer => match t.text.parse() {
            Ok(n) => Ok((i.advance(1), n)),
            Err(_) => i.fail(format!("Invalid integer {}", t.text)),
        },
        _ => i.expected(super::Expected::Other("INTEGER")),
    }
}

/// `a TO b AND c TO d`.
fn renames(i: Input<'_>) -> PResult<'_, Vec<(String, String)>> {
    separated_list1(kw("and"), |i| {
        let (i, from) = ident(i)?;
        let (i, _) = kw("to")(i)?;
        let (i, to) = ident(i)?;
        Ok((i, (from, to)))
    })
    .parse(i)
}

fn drop_table(i: Input<'_>) -> PResult<'_, DropTable> {
    let (i, _) = kw("drop")(i)?;
    let (i, _) = table_kw(i)?;
    let (i, if_exists) = opt_if_exists(i)?;
    let (i, name) = qualified_name(i)?;
    Ok((i, DropTable { name, if_exists }))
}

fn create_type(i: Input<'_>) -> PResult<'_, CreateType> {
    let (i, _) = kws(&["create", "type"])(i)?;
    let (i, if_not_exists) = if_not_exists(i)?;
    let (i, name) = qualified_name(i)?;
    let (mut i, _) = lparen(i)?;
    let mut fields = Vec::new();
    loop {
        let (r, field) = ident(i)?;
        let (r, t) = data_type(r)?;
        fields.push((field, t));
        i = r;
        if !peek_is(&i, TokenKind::Comma) {
            break;
        }
        while peek_is(&i, TokenKind::Comma) {
            i = i.advance(1);
        }
        if peek_is(&i, TokenKind::RParen) {
            break;
        }
    }
    let (i, _) = rparen(i)?;
    Ok((
        i,
        CreateType {
            name,
            if_not_exists,
            fields,
        },
    ))
}

fn alter_type(i: Input<'_>) -> PResult<'_, AlterType> {
    let (i, _) = kws(&["alter", "type"])(i)?;
    let (i, if_exists) = opt_if_exists(i)?;
    let (i, name) = qualified_name(i)?;
    let (i, op) = alt((
        |i| {
            let (i, _) = kw("alter")(i)?;
            let (i, field) = ident(i)?;
            let (i, _) = kw("type")(i)?;
            let (i, t) = data_type(i)?;
            Ok((i, AlterTypeOp::AlterFieldType(field, t)))
        },
        |i| {
            let (i, _) = kw("add")(i)?;
            let (i, if_not_exists) = if_not_exists(i)?;
            let (i, field) = ident(i)?;
            let (i, data_type) = data_type(i)?;
            Ok((
                i,
                AlterTypeOp::Add {
                    field,
                    data_type,
                    if_not_exists,
                },
            ))
        },
        |i| {
            let (i, _) = kw("rename")(i)?;
            let (i, if_exists) = opt_if_exists(i)?;
            let (i, renames) = renames(i)?;
            Ok((i, AlterTypeOp::Rename { renames, if_exists }))
        },
    ))
    .parse(i)?;
    Ok((
        i,
        AlterType {
            name,
            if_exists,
            op,
        },
    ))
}

fn drop_type(i: Input<'_>) -> PResult<'_, DropType> {
    let (i, _) = kws(&["drop", "type"])(i)?;
    let (i, if_exists) = opt_if_exists(i)?;
    let (i, name) = qualified_name(i)?;
    Ok((i, DropType { name, if_exists }))
}

/// `indexIdent`.
fn index_target(i: Input<'_>) -> PResult<'_, IndexTarget> {
    let wrapped = |word: &'static str, make: fn(String) -> IndexTarget| {
        move |i| {
            let (i, _) = kw(word)(i)?;
            let (i, _) = lparen(i)?;
            let (i, c) = ident(i)?;
            let (i, _) = rparen(i)?;
            Ok((i, make(c)))
        }
    };
    alt((
        wrapped("keys", IndexTarget::Keys),
        wrapped("values", IndexTarget::Values),
        wrapped("entries", IndexTarget::Entries),
        wrapped("full", IndexTarget::Full),
        ident.map(IndexTarget::Column),
    ))
    .parse(i)
}

fn create_index(i: Input<'_>) -> PResult<'_, CreateIndex> {
    let (i, _) = kw("create")(i)?;
    let (i, custom) = opt_kw("custom")(i)?;
    let (i, _) = kw("index")(i)?;
    let (i, if_not_exists) = if_not_exists(i)?;
    let (i, name) = opt(ident).parse(i)?;
    let (i, _) = kw("on")(i)?;
    let (i, table) = qualified_name(i)?;
    let (i, _) = lparen(i)?;
    let at_targets = i;
    let (i, mut targets) = nom::multi::separated_list0(comma, index_target).parse(i)?;
    let (i, _) = rparen(i)?;
    if targets.len() != 1 {
        return at_targets.fail("exactly one index target is supported");
    }
    let target = targets.remove(0);
    let (i, custom_class) = opt(|i| {
        let (r, _) = kw("using")(i)?;
        match r.peek() {
            Some(t) if t.kind == TokenKind::String => Ok((r.advance(1), unescape_string(t.text))),
            _ => r.expected(super::Expected::Other("STRING_LITERAL")),
        }
    })
    .parse(i)?;
    let (i, options) = opt(|i| {
        let (i, _) = kw("with")(i)?;
        properties(i)
    })
    .parse(i)?;
    Ok((
        i,
        CreateIndex {
            name,
            table,
            target,
            if_not_exists,
            custom,
            custom_class,
            options: options.unwrap_or_default(),
        },
    ))
}

fn drop_index(i: Input<'_>) -> PResult<'_, DropIndex> {
    let (i, _) = kws(&["drop", "index"])(i)?;
    let (i, if_exists) = opt_if_exists(i)?;
    let (i, name) = qualified_name(i)?;
    Ok((i, DropIndex { name, if_exists }))
}

/// `describeStatement`.
pub(crate) fn describe(i: Input<'_>) -> PResult<'_, Describe> {
    use DescribeTarget as D;
    let (i, _) = alt((kw("describe"), kw("desc"))).parse(i)?;
    let named = |words: &'static [&'static str], make: fn(crate::ast::QualifiedName) -> D| {
        move |i| {
            let (i, _) = kws(words)(i)?;
            qualified_name.map(make).parse(i)
        }
    };
    let (i, target) = alt((
        kw("cluster").map(|_| D::Cluster),
        |i| {
            let (i, full) = opt_kw("full")(i)?;
            let (i, _) = kw("schema")(i)?;
            Ok((i, D::Schema { full }))
        },
        kw("keyspaces").map(|_| D::Keyspaces),
        |i| {
            let (i, only) = opt_kw("only")(i)?;
            let (i, _) = kw("keyspace")(i)?;
            let (i, name) = opt(ident).parse(i)?;
            Ok((i, D::Keyspace { name, only }))
        },
        alt((kw("tables"), kw("columnfamilies"))).map(|_| D::Tables),
        named(&["table"], D::Table),
        named(&["columnfamily"], D::Table),
        named(&["index"], D::Index),
        named(&["materialized", "view"], D::MaterializedView),
        kw("types").map(|_| D::Types),
        named(&["type"], D::Type),
        kw("functions").map(|_| D::Functions),
        named(&["function"], D::Function),
        kw("aggregates").map(|_| D::Aggregates),
        named(&["aggregate"], D::Aggregate),
        qualified_name.map(D::Generic),
    ))
    .parse(i)?;
    let (i, with_internals) = opt(kws(&["with", "internals"])).parse(i)?;
    Ok((
        i,
        Describe {
            target,
            with_internals: with_internals.is_some(),
        },
    ))
}
