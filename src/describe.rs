//! Server-side DESCRIBE (Cassandra 4 semantics, as cqlsh 6 expects): listings and CQL
//! `create_statement`s that recreate each object.

use crate::error::QueryError;
use crate::executor::virtual_select::page;
use crate::schema::{
    is_system_keyspace, AggregateDef, Catalog, ClusteringOrder, Column, ColumnKind, FunctionDef,
    Keyspace, Table, TypeDef,
};
use crate::system::{is_virtual_keyspace, NodeInfo, PARTITIONER};
use bytes::Bytes;
use cql::ast::{Describe, DescribeTarget, QualifiedName};
use cql::response::{ColumnSpec, ResultMetadata, Rows};
use cql::types::{write_identifier, DataType, NativeType};
use std::collections::BTreeMap;
use std::fmt::Write;

fn ident(name: &str) -> String {
    let mut s = String::new();
    let _ = write_identifier(&mut s, name);
    s
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn text_map(m: &BTreeMap<String, String>) -> String {
    let items: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{}: {}", quote(k), quote(v)))
        .collect();
    format!("{{{}}}", items.join(", "))
}

fn spec(name: &str, ty: DataType) -> ColumnSpec {
    ColumnSpec {
        keyspace: "system".into(),
        table: "describe".into(),
        name: name.into(),
        data_type: ty,
    }
}

fn text_cell(s: &str) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(s.as_bytes()))
}

/// `CREATE KEYSPACE` for a keyspace; with `internals`, its Cosmos DB throughput too.
pub fn keyspace_statement(ks: &Keyspace, internals: bool) -> String {
    let throughput = match (internals, ks.params.throughput) {
        (true, Some(t)) => {
            let (name, value) = t.option();
            format!("  AND {name} = {value}")
        }
        _ => String::new(),
    };
    format!(
        "CREATE KEYSPACE {} WITH replication = {}  AND durable_writes = {}{throughput};",
        ident(&ks.name),
        text_map(&ks.params.replication),
        ks.params.durable_writes
    )
}

/// `CREATE TYPE` for a user type.
pub fn type_statement(t: &TypeDef) -> String {
    let mut s = format!("CREATE TYPE {}.{} (\n", ident(&t.keyspace), ident(&t.name));
    let fields: Vec<String> = t
        .field_names
        .iter()
        .zip(&t.field_types)
        .map(|(n, ty)| format!("    {} {}", ident(n), ty))
        .collect();
    s.push_str(&fields.join(",\n"));
    s.push_str("\n);");
    s
}

/// The name DESCRIBE gives an overload: `f(int, text)`.
fn overload_name(name: &str, arg_types: &[DataType]) -> String {
    format!(
        "{}({})",
        ident(name),
        crate::schema::functions::type_list(arg_types)
    )
}

/// `CREATE FUNCTION` for a user function, laid out as Cassandra's `UDFunction.toCqlString`.
pub fn function_statement(f: &FunctionDef) -> String {
    let args: Vec<String> = f
        .arg_names
        .iter()
        .zip(&f.arg_types)
        .map(|(n, t)| format!("{} {t}", ident(n)))
        .collect();
    let on_null = if f.called_on_null_input {
        "CALLED"
    } else {
        "RETURNS NULL"
    };
    format!(
        "CREATE FUNCTION {}.{}({})\n    {on_null} ON NULL INPUT\n    RETURNS {}\n    LANGUAGE {}\n    AS $${}$$;",
        ident(&f.keyspace),
        ident(&f.name),
        args.join(", "),
        f.return_type,
        f.language,
        f.body
    )
}

/// `CREATE AGGREGATE` for a user aggregate, laid out as Cassandra's `UDAggregate.toCqlString`.
pub fn aggregate_statement(a: &AggregateDef) -> String {
    let mut s = format!(
        "CREATE AGGREGATE {}.{}({})\n    SFUNC {}\n    STYPE {}",
        ident(&a.keyspace),
        ident(&a.name),
        crate::schema::functions::type_list(&a.arg_types),
        ident(&a.state_func),
        a.state_type
    );
    if let Some(f) = &a.final_func {
        let _ = write!(s, "\n    FINALFUNC {}", ident(f));
    }
    if let Some(i) = &a.initcond {
        let _ = write!(s, "\n    INITCOND {i}");
    }
    s.push(';');
    s
}

/// The element rows of the functions (`aggregates` false) or aggregates of `ks` named `name`
/// (all when `None`).
fn function_elements(ks: &Keyspace, name: Option<&str>, aggregates: bool) -> Vec<Element> {
    let wanted = |n: &str| name.is_none_or(|w| w == n);
    if aggregates {
        ks.aggregates
            .values()
            .filter(|a| wanted(&a.name))
            .map(|a| {
                let n = overload_name(&a.name, &a.arg_types);
                (ks.name.clone(), "aggregate", n, aggregate_statement(a))
            })
            .collect()
    } else {
        ks.functions
            .values()
            .filter(|f| wanted(&f.name))
            .map(|f| {
                let n = overload_name(&f.name, &f.arg_types);
                (ks.name.clone(), "function", n, function_statement(f))
            })
            .collect()
    }
}

/// A table's `CREATE TABLE ks.t (columns, PRIMARY KEY (...))` (a virtual table's under its
/// warning), up to the closing parenthesis.
fn table_header(s: &mut String, t: &Table, virtual_table: bool, pk: &[&Column], ck: &[&Column]) {
    if virtual_table {
        s.push_str("/*\nWarning: Table ");
        let _ = write!(s, "{}.{} is a virtual table and cannot be recreated with CQL.\nStructure, for reference:\n", ident(&t.keyspace), ident(&t.name));
    }
    let _ = writeln!(
        s,
        "{} {}.{} (",
        if virtual_table {
            "VIRTUAL TABLE"
        } else {
            "CREATE TABLE"
        },
        ident(&t.keyspace),
        ident(&t.name)
    );
    let single_pk = pk.len() == 1 && ck.is_empty();
    for c in t.select_star_order() {
        let _ = write!(s, "    {} {}", ident(&c.name), c.data_type);
        if c.kind == ColumnKind::Static {
            s.push_str(" static");
        }
        if let Some(mask) = &c.mask {
            let _ = write!(s, " MASKED WITH {}", mask.cql());
        }
        if single_pk && c.kind == ColumnKind::PartitionKey {
            s.push_str(" PRIMARY KEY");
        }
        s.push_str(",\n");
    }
    if single_pk {
        s.truncate(s.len() - 2);
        s.push('\n');
    } else {
        let _ = writeln!(s, "    PRIMARY KEY ({})", primary_key(pk, ck));
    }
    s.push(')');
}

/// `(pk), c1, c2`: the text between a PRIMARY KEY's parentheses.
fn primary_key(pk: &[&Column], ck: &[&Column]) -> String {
    let names: Vec<String> = pk.iter().map(|c| ident(&c.name)).collect();
    let mut key = vec![if names.len() == 1 {
        names.join("")
    } else {
        format!("({})", names.join(", "))
    }];
    key.extend(ck.iter().map(|c| ident(&c.name)));
    key.join(", ")
}

/// `CREATE TABLE` for a table (`CREATE MATERIALIZED VIEW` for a view), options included.
pub fn table_statement(t: &Table, virtual_table: bool, internals: bool) -> String {
    let mut s = String::new();
    let pk: Vec<_> = t.partition_key().collect();
    let ck: Vec<_> = t.clustering().collect();
    if let Some(v) = t.view.as_ref().filter(|_| !virtual_table) {
        // Cassandra 4.1's `ViewMetadata.toCqlString`: the view's SELECT, then its options.
        let columns = if v.include_all_columns {
            "*".to_string()
        } else {
            t.select_star_order()
                .iter()
                .map(|c| ident(&c.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = write!(
            s,
            "CREATE MATERIALIZED VIEW {}.{} AS\n    SELECT {columns}\n    FROM {}.{}\n    WHERE {}\n    PRIMARY KEY ({})\n",
            ident(&t.keyspace),
            ident(&t.name),
            ident(&t.keyspace),
            ident(&v.base_table),
            v.where_clause,
            primary_key(&pk, &ck)
        );
    } else {
        table_header(&mut s, t, virtual_table, &pk, &ck);
    }
    if virtual_table {
        // As Cassandra 4.1 prints a virtual table: its comment, then the end of the remark.
        let _ = write!(s, " WITH comment = {};\n*/", quote(&t.params.comment));
        return s;
    }
    let p = &t.params;
    let mut opts: Vec<String> = Vec::new();
    if internals {
        opts.push(format!("ID = {}", t.id));
    }
    if !ck.is_empty() {
        let order: Vec<String> = ck
            .iter()
            .map(|c| {
                format!(
                    "{} {}",
                    ident(&c.name),
                    if c.order == ClusteringOrder::Desc {
                        "DESC"
                    } else {
                        "ASC"
                    }
                )
            })
            .collect();
        opts.push(format!("CLUSTERING ORDER BY ({})", order.join(", ")));
    }
    opts.push(format!(
        "additional_write_policy = {}",
        quote(&p.additional_write_policy)
    ));
    opts.push(format!(
        "bloom_filter_fp_chance = {}",
        float(p.bloom_filter_fp_chance)
    ));
    opts.push(format!("caching = {}", text_map(&p.caching)));
    opts.push(format!("cdc = {}", p.cdc));
    opts.push(format!("comment = {}", quote(&p.comment)));
    opts.push(format!("compaction = {}", text_map(&p.compaction)));
    opts.push(format!("compression = {}", text_map(&p.compression)));
    opts.push(format!("crc_check_chance = {}", float(p.crc_check_chance)));
    // Cosmos DB's throughput options, shown only WITH INTERNALS as Cosmos DB does.
    if let (true, Some(t)) = (internals, p.throughput) {
        let (name, value) = t.option();
        opts.push(format!("{name} = {value}"));
    }
    opts.push(format!("default_time_to_live = {}", p.default_time_to_live));
    opts.push("extensions = {}".to_string());
    opts.push(format!("gc_grace_seconds = {}", p.gc_grace_seconds));
    opts.push(format!("max_index_interval = {}", p.max_index_interval));
    opts.push(format!(
        "memtable_flush_period_in_ms = {}",
        p.memtable_flush_period_in_ms
    ));
    opts.push(format!("min_index_interval = {}", p.min_index_interval));
    opts.push(format!("read_repair = {}", quote(&p.read_repair)));
    opts.push(format!(
        "speculative_retry = {}",
        quote(&p.speculative_retry)
    ));
    s.push_str(" WITH ");
    s.push_str(&opts.join("\n    AND "));
    s.push(';');
    s
}

fn float(v: f64) -> String {
    if v.fract() == 0.0 && v.is_finite() {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// Cassandra's `IndexMetadata.toCqlString`: `CREATE [CUSTOM] INDEX name ON ks.t (target)
/// [USING 'class'];`.
pub fn index_statement(t: &Table, i: &crate::schema::index::IndexDef) -> String {
    let on = format!("{}.{}", ident(&t.keyspace), ident(&t.name));
    match &i.class_name {
        Some(class) if !i.options.is_empty() => {
            let options: Vec<String> = i
                .options
                .iter()
                .map(|(k, v)| format!("{}: {}", quote(k), quote(v)))
                .collect();
            format!(
                "CREATE CUSTOM INDEX {} ON {on} ({}) USING {} WITH OPTIONS = {{{}}};",
                ident(&i.name),
                i.target_text(),
                quote(class),
                options.join(", ")
            )
        }
        Some(class) => format!(
            "CREATE CUSTOM INDEX {} ON {on} ({}) USING {};",
            ident(&i.name),
            i.target_text(),
            quote(class)
        ),
        None => format!(
            "CREATE INDEX {} ON {on} ({});",
            ident(&i.name),
            i.target_text()
        ),
    }
}

/// A table's element row followed by one per index, as DESCRIBE lists them.
fn table_elements(t: &Table, virt: bool, internals: bool) -> Vec<Element> {
    let mut out = vec![(
        t.keyspace.clone(),
        element_kind(t),
        t.name.clone(),
        table_statement(t, virt, internals),
    )];
    let mut indexes: Vec<_> = t.indexes.iter().collect();
    indexes.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    for i in indexes {
        out.push((
            t.keyspace.clone(),
            "index",
            i.name.clone(),
            index_statement(t, i),
        ));
    }
    out
}

/// One element row: (keyspace, type, name, create statement).
type Element = (String, &'static str, String, String);

fn keyspace_elements(ks: &Keyspace, only: bool, internals: bool) -> Vec<Element> {
    let virt = is_virtual_keyspace(&ks.name);
    let mut out = Vec::new();
    let ks_stmt = if virt {
        format!("/*\nWarning: Keyspace {} is a virtual keyspace and cannot be recreated with CQL.\nStructure, for reference:\nVIRTUAL KEYSPACE {};\n*/", ident(&ks.name), ident(&ks.name))
    } else {
        keyspace_statement(ks, internals)
    };
    out.push((ks.name.clone(), "keyspace", ks.name.clone(), ks_stmt));
    if only {
        return out;
    }
    for t in types_in_dependency_order(ks) {
        out.push((ks.name.clone(), "type", t.name.clone(), type_statement(t)));
    }
    out.extend(function_elements(ks, None, false));
    out.extend(function_elements(ks, None, true));
    // Tables, then the views (each after its base, which a view needs to be created).
    let (views, tables): (Vec<_>, Vec<_>) = ks.tables.values().partition(|t| t.view.is_some());
    for t in tables.into_iter().chain(views) {
        out.extend(table_elements(t, virt, internals));
    }
    out
}

/// The `type` column of a DESCRIBE row of `t`.
fn element_kind(t: &Table) -> &'static str {
    if t.view.is_some() {
        "materialized_view"
    } else {
        "table"
    }
}

/// Types ordered so that each comes after the types it uses.
fn types_in_dependency_order(ks: &Keyspace) -> Vec<&TypeDef> {
    let mut out: Vec<&TypeDef> = Vec::new();
    let mut remaining: Vec<&TypeDef> = ks.types.values().map(|t| t.as_ref()).collect();
    while !remaining.is_empty() {
        let before = remaining.len();
        remaining.retain(|t| {
            let ready = t.field_types.iter().all(|ft| {
                udt_names(ft).iter().all(|n| {
                    n == &t.name || out.iter().any(|o| &o.name == n) || !ks.types.contains_key(n)
                })
            });
            if ready {
                out.push(t);
            }
            !ready
        });
        if remaining.len() == before {
            out.append(&mut remaining);
        }
    }
    out
}

fn udt_names(t: &DataType) -> Vec<String> {
    match t {
        DataType::Udt(u) => vec![u.name.clone()],
        DataType::List(e) | DataType::Set(e) | DataType::Frozen(e) | DataType::Vector(e, _) => {
            udt_names(e)
        }
        DataType::Map(k, v) => {
            let mut n = udt_names(k);
            n.extend(udt_names(v));
            n
        }
        DataType::Tuple(ts) => ts.iter().flat_map(udt_names).collect(),
        _ => Vec::new(),
    }
}

fn element_rows(
    elements: Vec<Element>,
    page_size: Option<i32>,
    state: Option<&Bytes>,
) -> Result<Rows, QueryError> {
    let text = || DataType::Native(NativeType::Text);
    let (elements, next) = page(elements, page_size, state)?;
    Ok(Rows {
        metadata: ResultMetadata {
            columns: vec![
                spec("keyspace_name", text()),
                spec("type", text()),
                spec("name", text()),
                spec("create_statement", text()),
            ]
            .into(),
            paging_state: next,
            no_metadata: false,
        },
        rows: elements
            .into_iter()
            .map(|(k, t, n, c)| vec![text_cell(&k), text_cell(t), text_cell(&n), text_cell(&c)])
            .collect(),
    })
}

fn listing_rows(
    items: Vec<(String, &'static str, String)>,
    page_size: Option<i32>,
    state: Option<&Bytes>,
) -> Result<Rows, QueryError> {
    let text = || DataType::Native(NativeType::Text);
    let (items, next) = page(items, page_size, state)?;
    Ok(Rows {
        metadata: ResultMetadata {
            columns: vec![
                spec("keyspace_name", text()),
                spec("type", text()),
                spec("name", text()),
            ]
            .into(),
            paging_state: next,
            no_metadata: false,
        },
        rows: items
            .into_iter()
            .map(|(k, t, n)| {
                // Overloads are named `f(int, text)`, their name already quoted if need be.
                let n = if matches!(t, "function" | "aggregate") {
                    n
                } else {
                    ident(&n)
                };
                vec![text_cell(&ident(&k)), text_cell(t), text_cell(&n)]
            })
            .collect(),
    })
}

/// Keyspaces in DESCRIBE order: user keyspaces first would differ from Cassandra, which sorts
/// all names; we sort by name.
fn keyspaces_in_scope<'a>(catalog: &'a Catalog, current: Option<&str>) -> Vec<&'a Keyspace> {
    catalog
        .keyspaces
        .values()
        .filter(|k| current.is_none_or(|c| c == k.name))
        .collect()
}

fn keyspace<'a>(catalog: &'a Catalog, name: &str) -> Result<&'a Keyspace, QueryError> {
    catalog
        .keyspaces
        .get(name)
        .ok_or_else(|| QueryError::invalid(format!("'{name}' not found in keyspaces")))
}

fn ks_of(name: &QualifiedName, current: Option<&str>) -> Result<String, QueryError> {
    name.keyspace
        .clone()
        .or_else(|| current.map(str::to_string))
        .ok_or_else(|| QueryError::invalid("No keyspace specified and no current keyspace"))
}

/// Answers a DESCRIBE statement.
///
/// # Errors
/// InvalidRequest when the object does not exist.
pub fn describe(
    catalog: &Catalog,
    info: &NodeInfo,
    current: Option<&str>,
    d: &Describe,
    page_size: Option<i32>,
    state: Option<&Bytes>,
) -> Result<Rows, QueryError> {
    match &d.target {
        DescribeTarget::Keyspaces => {
            let items = catalog
                .keyspaces
                .values()
                .map(|k| (k.name.clone(), "keyspace", k.name.clone()))
                .collect();
            listing_rows(items, page_size, state)
        }
        DescribeTarget::Tables => {
            let mut items = Vec::new();
            for ks in keyspaces_in_scope(catalog, current) {
                for t in ks.tables.values() {
                    items.push((ks.name.clone(), "table", t.name.clone()));
                }
            }
            listing_rows(items, page_size, state)
        }
        DescribeTarget::Types => {
            let mut items = Vec::new();
            for ks in keyspaces_in_scope(catalog, current) {
                for t in ks.types.values() {
                    items.push((ks.name.clone(), "type", t.name.clone()));
                }
            }
            listing_rows(items, page_size, state)
        }
        DescribeTarget::Functions | DescribeTarget::Aggregates => {
            let aggregates = matches!(d.target, DescribeTarget::Aggregates);
            let mut items = Vec::new();
            for ks in keyspaces_in_scope(catalog, current) {
                for (k, t, n, _) in function_elements(ks, None, aggregates) {
                    items.push((k, t, n));
                }
            }
            listing_rows(items, page_size, state)
        }
        DescribeTarget::Function(name) | DescribeTarget::Aggregate(name) => {
            let aggregates = matches!(d.target, DescribeTarget::Aggregate(_));
            let ks = ks_of(name, current)?;
            let k = keyspace(catalog, &ks)?;
            let elements = function_elements(k, Some(&name.name), aggregates);
            if elements.is_empty() {
                return Err(QueryError::invalid(format!(
                    "'{}' not found in keyspace '{ks}'",
                    name.name
                )));
            }
            element_rows(elements, page_size, state)
        }
        DescribeTarget::Keyspace { name, only } => {
            let name = match name {
                Some(n) => n.clone(),
                None => current.map(str::to_string).ok_or_else(|| {
                    QueryError::invalid("No keyspace specified and no current keyspace")
                })?,
            };
            element_rows(
                keyspace_elements(keyspace(catalog, &name)?, *only, d.with_internals),
                page_size,
                state,
            )
        }
        DescribeTarget::Table(name) | DescribeTarget::MaterializedView(name) => {
            let ks = ks_of(name, current)?;
            let k = keyspace(catalog, &ks)?;
            let t = k.tables.get(&name.name).ok_or_else(|| {
                QueryError::invalid(format!("'{}' not found in keyspace '{ks}'", name.name))
            })?;
            element_rows(
                table_elements(t, is_virtual_keyspace(&ks), d.with_internals),
                page_size,
                state,
            )
        }
        DescribeTarget::Type(name) => {
            let ks = ks_of(name, current)?;
            let k = keyspace(catalog, &ks)?;
            let t = k.types.get(&name.name).ok_or_else(|| {
                QueryError::invalid(format!("'{}' not found in keyspace '{ks}'", name.name))
            })?;
            element_rows(
                vec![(ks.clone(), "type", t.name.clone(), type_statement(t))],
                page_size,
                state,
            )
        }
        DescribeTarget::Schema { full } => {
            let mut elements = Vec::new();
            for ks in catalog.keyspaces.values() {
                if !full && is_system_keyspace(&ks.name) {
                    continue;
                }
                elements.extend(keyspace_elements(ks, false, d.with_internals));
            }
            element_rows(elements, page_size, state)
        }
        DescribeTarget::Cluster => {
            let text = || DataType::Native(NativeType::Text);
            let cells = vec![
                text_cell(&info.cluster_name),
                text_cell(PARTITIONER),
                text_cell("org.apache.cassandra.locator.SimpleSnitch"),
            ];
            Ok(Rows {
                metadata: ResultMetadata {
                    columns: vec![
                        spec("cluster", text()),
                        spec("partitioner", text()),
                        spec("snitch", text()),
                    ]
                    .into(),
                    paging_state: None,
                    no_metadata: false,
                },
                rows: vec![cells],
            })
        }
        DescribeTarget::Generic(name) => {
            if name.keyspace.is_none() {
                if let Some(k) = catalog.keyspaces.get(&name.name) {
                    return element_rows(
                        keyspace_elements(k, false, d.with_internals),
                        page_size,
                        state,
                    );
                }
            }
            let ks = ks_of(name, current)?;
            let k = keyspace(catalog, &ks)?;
            if let Some(t) = k.tables.get(&name.name) {
                return element_rows(
                    table_elements(t, is_virtual_keyspace(&ks), d.with_internals),
                    page_size,
                    state,
                );
            }
            if let Some((t, i)) = crate::schema::index::find_index(catalog, &ks, &name.name) {
                return element_rows(
                    vec![(ks.clone(), "index", i.name.clone(), index_statement(t, i))],
                    page_size,
                    state,
                );
            }
            if let Some(t) = k.types.get(&name.name) {
                return element_rows(
                    vec![(ks.clone(), "type", t.name.clone(), type_statement(t))],
                    page_size,
                    state,
                );
            }
            let mut overloads = function_elements(k, Some(&name.name), false);
            overloads.extend(function_elements(k, Some(&name.name), true));
            if !overloads.is_empty() {
                return element_rows(overloads, page_size, state);
            }
            Err(QueryError::invalid(format!(
                "'{}' not found in keyspace '{ks}'",
                name.name
            )))
        }
        DescribeTarget::Index(name) => {
            let ks = ks_of(name, current)?;
            keyspace(catalog, &ks)?;
            let (t, i) =
                crate::schema::index::find_index(catalog, &ks, &name.name).ok_or_else(|| {
                    QueryError::invalid(format!("'{}' not found in keyspace '{ks}'", name.name))
                })?;
            element_rows(
                vec![(ks.clone(), "index", i.name.clone(), index_statement(t, i))],
                page_size,
                state,
            )
        }
    }
}
