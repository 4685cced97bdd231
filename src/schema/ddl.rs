//! Applies DDL statements to the catalog with Cassandra's validation and messages.

use super::names::check_name;
use super::{
    is_system_keyspace, Catalog, ClusteringOrder, Column, ColumnKind, ColumnMask, DroppedColumn,
    Keyspace, KeyspaceParams, Table, TableParams, TypeDef,
};
use crate::error::QueryError;
use cql::ast::{
    AlterTableOp, AlterTypeOp, ColumnDef, CreateTable, Order, QualifiedName, Statement,
};
use cql::response::{SchemaChange, SchemaChangeTarget, SchemaChangeType};
use cql::types::{DataType, NativeType};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use uuid::Uuid;

/// What a DDL statement did.
#[derive(Debug, Default)]
pub struct DdlOutcome {
    /// The schema change to report (None: nothing changed, e.g. IF NOT EXISTS on an existing object).
    pub change: Option<SchemaChange>,
    /// Tables to hand to storage: created, or altered (storage must learn the new layout).
    pub storage_tables: Vec<Arc<Table>>,
    /// Tables whose storage must be dropped.
    pub dropped_tables: Vec<Uuid>,
}

pub(super) fn change(
    change_type: SchemaChangeType,
    target: SchemaChangeTarget,
) -> Option<SchemaChange> {
    Some(SchemaChange {
        change_type,
        target,
    })
}

/// A change of the table `name` of `keyspace`.
pub(super) fn table_change(
    change_type: SchemaChangeType,
    keyspace: String,
    name: String,
) -> Option<SchemaChange> {
    change(change_type, SchemaChangeTarget::Table { keyspace, name })
}

/// Keyspace of a possibly-qualified name, from the session's `USE` otherwise.
pub(crate) fn keyspace_of(
    name: &QualifiedName,
    current: Option<&str>,
) -> Result<String, QueryError> {
    name.keyspace
        .clone()
        .or_else(|| current.map(str::to_string))
        .ok_or_else(|| {
            QueryError::invalid(
                "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename",
            )
        })
}

pub(super) fn user_keyspace<'a>(
    catalog: &'a mut Catalog,
    name: &str,
) -> Result<&'a mut Keyspace, QueryError> {
    if is_system_keyspace(name) {
        return Err(QueryError::Unauthorized(format!(
            "{name} keyspace is not user-modifiable."
        )));
    }
    catalog
        .keyspaces
        .get_mut(name)
        .ok_or_else(|| QueryError::invalid(format!("Keyspace '{name}' doesn't exist")))
}

/// Applies one DDL statement. Non-DDL statements are a programming error reported as Invalid.
///
/// # Errors
/// Cassandra's errors for the statement: Invalid, AlreadyExists, ConfigurationException, ...
pub fn apply_ddl(
    catalog: &mut Catalog,
    stmt: &Statement,
    current: Option<&str>,
    now_ms: i64,
) -> Result<DdlOutcome, QueryError> {
    let mut out = DdlOutcome::default();
    match stmt {
        Statement::CreateKeyspace(s) => {
            check_name("Keyspace", &s.name)?;
            if catalog.keyspaces.contains_key(&s.name) || is_system_keyspace(&s.name) {
                if s.if_not_exists {
                    return Ok(out);
                }
                return Err(QueryError::AlreadyExists {
                    message: format!("Cannot add existing keyspace \"{}\"", s.name),
                    keyspace: s.name.clone(),
                    table: String::new(),
                });
            }
            let params = KeyspaceParams::from_options(&s.name, &s.options, None)?;
            catalog.keyspaces.insert(
                s.name.clone(),
                Keyspace {
                    name: s.name.clone(),
                    params,
                    tables: BTreeMap::new(),
                    types: BTreeMap::new(),
                    functions: BTreeMap::new(),
                    aggregates: BTreeMap::new(),
                },
            );
            out.change = change(
                SchemaChangeType::Created,
                SchemaChangeTarget::Keyspace(s.name.clone()),
            );
        }
        Statement::AlterKeyspace(s) => {
            if !catalog.keyspaces.contains_key(&s.name)
                && !is_system_keyspace(&s.name)
                && s.if_exists
            {
                return Ok(out);
            }
            let ks = user_keyspace(catalog, &s.name)?;
            ks.params = KeyspaceParams::from_options(&s.name, &s.options, Some(&ks.params))?;
            out.change = change(
                SchemaChangeType::Updated,
                SchemaChangeTarget::Keyspace(s.name.clone()),
            );
        }
        Statement::DropKeyspace(s) => {
            if !catalog.keyspaces.contains_key(&s.name) && !is_system_keyspace(&s.name) {
                if s.if_exists {
                    return Ok(out);
                }
                return Err(QueryError::invalid(format!(
                    "Keyspace '{}' doesn't exist",
                    s.name
                )));
            }
            user_keyspace(catalog, &s.name)?;
            if let Some(ks) = catalog.keyspaces.remove(&s.name) {
                out.dropped_tables = ks.tables.values().map(|t| t.id).collect();
            }
            out.change = change(
                SchemaChangeType::Dropped,
                SchemaChangeTarget::Keyspace(s.name.clone()),
            );
        }
        Statement::CreateTable(s) => return create_table(catalog, s, current),
        Statement::CreateView(s) => return super::views::create_view(catalog, s, current),
        Statement::DropView(s) => return super::views::drop_view(catalog, s, current),
        Statement::AlterView(s) => return super::views::alter_view(catalog, s, current),
        Statement::AlterTable(s) => {
            let ks_name = keyspace_of(&s.name, current)?;
            let exists = catalog.table(&ks_name, &s.name.name).is_some();
            if !exists {
                user_keyspace(catalog, &ks_name)?;
                if s.if_exists {
                    return Ok(out);
                }
                return Err(QueryError::invalid(format!(
                    "Table '{ks_name}.{}' doesn't exist",
                    s.name.name
                )));
            }
            let resolved = catalog_snapshot_for_types(catalog);
            let ks = user_keyspace(catalog, &ks_name)?;
            let Some(table) = ks.tables.get(&s.name.name) else {
                return Err(QueryError::invalid(format!(
                    "Table '{ks_name}.{}' doesn't exist",
                    s.name.name
                )));
            };
            let mut t = (**table).clone();
            if !alter_table(&mut t, &s.op, &resolved, now_ms)? {
                return Ok(out);
            }
            // AlterTableStatement.AddColumns: a view of `SELECT *` gains the new columns.
            if matches!(s.op, AlterTableOp::Add { .. }) {
                for name in &t.views {
                    let Some(view) = ks.tables.get(name) else {
                        continue;
                    };
                    if !view.view.as_ref().is_some_and(|v| v.include_all_columns) {
                        continue;
                    }
                    let mut v = (**view).clone();
                    for c in t.columns.iter().filter(|c| c.kind == ColumnKind::Regular) {
                        if v.column(&c.name).is_none() {
                            v.columns.push(Column {
                                id: v.next_column_id,
                                ..c.clone()
                            });
                            v.next_column_id += 1;
                        }
                    }
                    let v = Arc::new(v);
                    ks.tables.insert(v.name.clone(), v.clone());
                    out.storage_tables.push(v);
                }
            }
            let t = Arc::new(t);
            ks.tables.insert(t.name.clone(), t.clone());
            out.storage_tables.push(t);
            out.change = table_change(SchemaChangeType::Updated, ks_name, s.name.name.clone());
        }
        Statement::CreateIndex(s) => {
            let ks_name = keyspace_of(&s.table, current)?;
            let Some(table) = catalog.table(&ks_name, &s.table.name).cloned() else {
                user_keyspace(catalog, &ks_name)?;
                return Err(QueryError::invalid(format!(
                    "Table '{ks_name}.{}' doesn't exist",
                    s.table.name
                )));
            };
            user_keyspace(catalog, &ks_name)?;
            let Some(def) = super::index::create_index(catalog, &ks_name, &table, s)? else {
                return Ok(out);
            };
            let mut t = (*table).clone();
            t.indexes.push(def);
            // Storage keeps a graph per vector index (its layout lists them).
            out.storage_tables.push(Arc::new(t.clone()));
            set_table(catalog, &ks_name, t);
            out.change = table_change(SchemaChangeType::Updated, ks_name, s.table.name.clone());
        }
        Statement::DropIndex(s) => {
            let ks_name = keyspace_of(&s.name, current)?;
            user_keyspace(catalog, &ks_name)?;
            let Some(table_name) = super::index::drop_index_table(catalog, &ks_name, s)? else {
                return Ok(out);
            };
            let Some(table) = catalog.table(&ks_name, &table_name).cloned() else {
                return Ok(out);
            };
            let mut t = (*table).clone();
            t.indexes.retain(|i| i.name != s.name.name);
            out.storage_tables.push(Arc::new(t.clone()));
            set_table(catalog, &ks_name, t);
            out.change = table_change(SchemaChangeType::Updated, ks_name, table_name);
        }
        Statement::DropTable(s) => {
            let ks_name = keyspace_of(&s.name, current)?;
            let ks = user_keyspace(catalog, &ks_name)?;
            super::views::check_table_drop(ks, &s.name.name)?;
            match ks.tables.remove(&s.name.name) {
                Some(t) => out.dropped_tables.push(t.id),
                None if s.if_exists => return Ok(out),
                None => {
                    return Err(QueryError::invalid(format!(
                        "Table '{ks_name}.{}' doesn't exist",
                        s.name.name
                    )))
                }
            }
            out.change = table_change(SchemaChangeType::Dropped, ks_name, s.name.name.clone());
        }
        Statement::CreateType(s) => {
            let ks_name = keyspace_of(&s.name, current)?;
            let snapshot = catalog_snapshot_for_types(catalog);
            let ks = user_keyspace(catalog, &ks_name)?;
            if ks.types.contains_key(&s.name.name) {
                if s.if_not_exists {
                    return Ok(out);
                }
                return Err(QueryError::AlreadyExists {
                    message: format!("A user type with name '{}' already exists", s.name.name),
                    keyspace: ks_name,
                    table: s.name.name.clone(),
                });
            }
            let mut seen = HashSet::new();
            for (field, ty) in &s.fields {
                if !seen.insert(field.clone()) {
                    return Err(QueryError::invalid(format!(
                        "Duplicate field name {field} in type {}",
                        s.name.name
                    )));
                }
                validate_field_type(&snapshot, &ks_name, &s.name.name, ty)?;
            }
            ks.types.insert(
                s.name.name.clone(),
                Arc::new(TypeDef {
                    keyspace: ks_name.clone(),
                    name: s.name.name.clone(),
                    field_names: s.fields.iter().map(|(n, _)| n.clone()).collect(),
                    field_types: s.fields.iter().map(|(_, t)| t.clone()).collect(),
                }),
            );
            out.change = change(
                SchemaChangeType::Created,
                SchemaChangeTarget::Type {
                    keyspace: ks_name,
                    name: s.name.name.clone(),
                },
            );
        }
        Statement::AlterType(s) => {
            let ks_name = keyspace_of(&s.name, current)?;
            let snapshot = catalog_snapshot_for_types(catalog);
            let ks = user_keyspace(catalog, &ks_name)?;
            let Some(def) = ks.types.get(&s.name.name) else {
                if s.if_exists {
                    return Ok(out);
                }
                return Err(QueryError::invalid(format!(
                    "No user type named {ks_name}.{} exists.",
                    s.name.name
                )));
            };
            let mut def = (**def).clone();
            match &s.op {
                AlterTypeOp::Add {
                    field,
                    data_type: ty,
                    if_not_exists,
                } => {
                    if def.field_names.contains(field) {
                        if *if_not_exists {
                            return Ok(out);
                        }
                        return Err(QueryError::invalid(format!(
                            "Cannot add new field {field} to type {ks_name}.{}: a field with name {field} already exists",
                            s.name.name
                        )));
                    }
                    validate_field_type(&snapshot, &ks_name, &s.name.name, ty)?;
                    def.field_names.push(field.clone());
                    def.field_types.push(ty.clone());
                }
                AlterTypeOp::Rename { renames, if_exists } => {
                    for (from, to) in renames {
                        let Some(i) = def.field_names.iter().position(|f| f == from) else {
                            if *if_exists {
                                continue;
                            }
                            return Err(QueryError::invalid(format!(
                                "Unkown field {from} in user type {ks_name}.{}",
                                s.name.name
                            )));
                        };
                        if def.field_names.contains(to) {
                            return Err(QueryError::invalid(format!(
                                "Duplicate field name {to} in type {}",
                                s.name.name
                            )));
                        }
                        def.field_names[i] = to.clone();
                    }
                }
                AlterTypeOp::AlterFieldType(field, _) => {
                    return Err(QueryError::invalid(format!(
                        "Altering field types is no longer supported (field {field})"
                    )))
                }
            }
            ks.types.insert(s.name.name.clone(), Arc::new(def));
            catalog.refresh_types(&ks_name);
            out.change = change(
                SchemaChangeType::Updated,
                SchemaChangeTarget::Type {
                    keyspace: ks_name,
                    name: s.name.name.clone(),
                },
            );
        }
        Statement::DropType(s) => {
            let ks_name = keyspace_of(&s.name, current)?;
            let ks = user_keyspace(catalog, &ks_name)?;
            if !ks.types.contains_key(&s.name.name) {
                if s.if_exists {
                    return Ok(out);
                }
                return Err(QueryError::invalid(format!(
                    "Type '{ks_name}.{}' doesn't exist",
                    s.name.name
                )));
            }
            // Cassandra's DropTypeStatement checks functions and aggregates first.
            let uses = |t: &DataType| mentions_type(t, &s.name.name);
            let mut functions: Vec<String> = ks
                .functions
                .values()
                .filter(|f| f.arg_types.iter().any(uses) || uses(&f.return_type))
                .map(|f| format!("{ks_name}.{}", f.name))
                .collect();
            functions.extend(
                ks.aggregates
                    .values()
                    .filter(|a| {
                        a.arg_types.iter().any(uses) || uses(&a.state_type) || uses(&a.return_type)
                    })
                    .map(|a| format!("{ks_name}.{}", a.name)),
            );
            if !functions.is_empty() {
                return Err(QueryError::invalid(format!(
                    "Cannot drop user type '{ks_name}.{}' as it is still used by functions {}",
                    s.name.name,
                    functions.join(", ")
                )));
            }
            let user = ks.tables.values().find(|t| {
                t.columns
                    .iter()
                    .any(|c| mentions_type(&c.data_type, &s.name.name))
            });
            if let Some(t) = user {
                return Err(QueryError::invalid(format!(
                    "Cannot drop user type {ks_name}.{} as it is still used by table {ks_name}.{}",
                    s.name.name, t.name
                )));
            }
            let other_type = ks.types.values().find(|d| {
                d.name != s.name.name
                    && d.field_types.iter().any(|t| mentions_type(t, &s.name.name))
            });
            if let Some(d) = other_type {
                return Err(QueryError::invalid(format!(
                    "Cannot drop user type {ks_name}.{} as it is still used by user type {}",
                    s.name.name, d.name
                )));
            }
            ks.types.remove(&s.name.name);
            out.change = change(
                SchemaChangeType::Dropped,
                SchemaChangeTarget::Type {
                    keyspace: ks_name,
                    name: s.name.name.clone(),
                },
            );
        }
        Statement::CreateFunction(s) => {
            return super::function_ddl::create_function(catalog, s, current)
        }
        Statement::DropFunction(s) => {
            return super::function_ddl::drop_function(catalog, s, current)
        }
        Statement::CreateAggregate(s) => {
            return super::function_ddl::create_aggregate(catalog, s, current)
        }
        Statement::DropAggregate(s) => {
            return super::function_ddl::drop_aggregate(catalog, s, current)
        }
        _ => return Err(QueryError::invalid("Not a schema statement")),
    }
    Ok(out)
}

/// A read-only copy used to resolve types while a keyspace is borrowed mutably.
/// Cassandra's `AlterTableStatement` refusal to drop or rename an indexed column.
fn check_no_index(t: &Table, column: &str, verb: &str) -> Result<(), QueryError> {
    let names: Vec<&str> = t
        .indexes
        .iter()
        .filter(|i| i.column == column)
        .map(|i| i.name.as_str())
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    Err(QueryError::invalid(format!(
        "Cannot {verb} column {column} because it has dependent secondary indexes ({})",
        names.join(", ")
    )))
}

fn set_table(catalog: &mut Catalog, ks: &str, t: Table) {
    if let Some(keyspace) = catalog.keyspaces.get_mut(ks) {
        keyspace.tables.insert(t.name.clone(), Arc::new(t));
    }
}

pub(super) fn catalog_snapshot_for_types(catalog: &Catalog) -> Catalog {
    catalog.clone()
}

fn mentions_type(t: &DataType, name: &str) -> bool {
    match t {
        DataType::Udt(u) => u.name == name || u.fields.iter().any(|(_, f)| mentions_type(f, name)),
        DataType::List(t) | DataType::Set(t) | DataType::Frozen(t) | DataType::Vector(t, _) => {
            mentions_type(t, name)
        }
        DataType::Map(k, v) => mentions_type(k, name) || mentions_type(v, name),
        DataType::Tuple(ts) => ts.iter().any(|t| mentions_type(t, name)),
        DataType::Native(_) | DataType::Custom(_) => false,
    }
}

fn validate_field_type(
    catalog: &Catalog,
    ks: &str,
    type_name: &str,
    ty: &DataType,
) -> Result<(), QueryError> {
    if mentions_type(ty, type_name) {
        return Err(QueryError::invalid(format!(
            "Cannot use user type {type_name} inside itself"
        )));
    }
    if ty.is_counter() {
        return Err(QueryError::invalid("A user type cannot contain counters"));
    }
    let resolved = catalog.resolve_type(ks, ty).map_err(QueryError::invalid)?;
    validate_nesting(&resolved, false)?;
    if resolved.is_multi_cell() && !matches!(resolved, DataType::Udt(_)) {
        // Non-frozen collections in UDT fields are stored frozen by Cassandra 4; accept them.
    }
    Ok(())
}

/// Cassandra's rules on frozen-ness: inside a collection, nested collections and UDTs must be frozen.
/// Durations have no order, so they may not be set elements or map keys at any depth.
fn validate_nesting(t: &DataType, inside_collection: bool) -> Result<(), QueryError> {
    if !inside_collection {
        check_durations(t)?;
        // The catalog stores a type as its CQL text (tuples printed frozen): that text must
        // parse again, or the schema could not be read back.
        if cql::parse_data_type(&t.to_string()).is_err() {
            return Err(QueryError::invalid("Type nesting is too deep"));
        }
    }
    match t {
        DataType::List(e) | DataType::Set(e) => {
            if inside_collection {
                return Err(QueryError::invalid(
                    "Non-frozen collections are not allowed inside collections: ".to_string()
                        + &t.to_string(),
                ));
            }
            check_element(e, t)?;
            validate_nesting(e, true)
        }
        DataType::Map(k, v) => {
            if inside_collection {
                return Err(QueryError::invalid(
                    "Non-frozen collections are not allowed inside collections: ".to_string()
                        + &t.to_string(),
                ));
            }
            check_element(k, t)?;
            check_element(v, t)?;
            validate_nesting(k, true)?;
            validate_nesting(v, true)
        }
        DataType::Udt(u) => {
            if inside_collection {
                return Err(QueryError::invalid(format!(
                    "Non-frozen UDTs are not allowed inside collections: {t}"
                )));
            }
            let _ = u;
            Ok(())
        }
        DataType::Frozen(inner) => match inner.as_ref() {
            DataType::Native(_) | DataType::Custom(_) => Err(QueryError::invalid(
                "frozen<> is only allowed on collections, tuples, and user-defined types",
            )),
            other => validate_frozen(other),
        },
        DataType::Tuple(ts) => ts.iter().try_for_each(validate_frozen),
        // Cassandra's `VectorType.getInstance` freezes the element; `resolve_type` did too.
        DataType::Vector(e, _) => {
            check_element(e, t)?;
            validate_frozen(e)
        }
        DataType::Native(_) | DataType::Custom(_) => Ok(()),
    }
}

/// Cassandra's `CollectionType.Raw.prepare`: no duration inside a set or as a map key.
fn check_durations(t: &DataType) -> Result<(), QueryError> {
    let is_duration = |e: &DataType| matches!(e.unfrozen(), DataType::Native(NativeType::Duration));
    match t {
        DataType::Set(e) if is_duration(e) => Err(QueryError::invalid(format!(
            "Durations are not allowed inside sets: {t}"
        ))),
        DataType::Map(k, _) if is_duration(k) => Err(QueryError::invalid(format!(
            "Durations are not allowed as map keys: {t}"
        ))),
        DataType::List(e) | DataType::Set(e) | DataType::Frozen(e) | DataType::Vector(e, _) => {
            check_durations(e)
        }
        DataType::Map(k, v) => {
            check_durations(k)?;
            check_durations(v)
        }
        DataType::Tuple(ts) => ts.iter().try_for_each(check_durations),
        DataType::Udt(_) | DataType::Native(_) | DataType::Custom(_) => Ok(()),
    }
}

fn check_element(e: &DataType, outer: &DataType) -> Result<(), QueryError> {
    if e.is_counter() {
        return Err(QueryError::invalid(format!(
            "Counters are not allowed inside collections: {outer}"
        )));
    }
    Ok(())
}

/// Everything inside `frozen<...>` is frozen, so nesting is free; but frozen applies only to
/// collections, tuples and user types.
fn validate_frozen(t: &DataType) -> Result<(), QueryError> {
    match t {
        DataType::Native(NativeType::Counter) => Err(QueryError::invalid(
            "counters are not allowed inside frozen types",
        )),
        _ => Ok(()),
    }
}

fn create_table(
    catalog: &mut Catalog,
    s: &CreateTable,
    current: Option<&str>,
) -> Result<DdlOutcome, QueryError> {
    let mut out = DdlOutcome::default();
    let ks_name = keyspace_of(&s.name, current)?;
    let snapshot = catalog_snapshot_for_types(catalog);
    let ks = user_keyspace(catalog, &ks_name)?;
    let table_name = &s.name.name;
    if ks.tables.contains_key(table_name) {
        if s.if_not_exists {
            return Ok(out);
        }
        return Err(QueryError::AlreadyExists {
            message: format!(
                "Cannot add already existing table \"{table_name}\" to keyspace \"{ks_name}\""
            ),
            keyspace: ks_name,
            table: table_name.clone(),
        });
    }
    check_name("Table", table_name)?;
    let table = build_table(&snapshot, &ks_name, s)?;
    let table = Arc::new(table);
    ks.tables.insert(table_name.clone(), table.clone());
    out.storage_tables.push(table);
    out.change = table_change(SchemaChangeType::Created, ks_name, table_name.clone());
    Ok(out)
}

pub(super) fn build_table(
    catalog: &Catalog,
    ks: &str,
    s: &CreateTable,
) -> Result<Table, QueryError> {
    let qualified = format!("{ks}.{}", s.name.name);
    let mut defs: Vec<&ColumnDef> = Vec::new();
    let mut names = HashSet::new();
    for c in &s.columns {
        if !names.insert(c.name.as_str()) {
            return Err(QueryError::invalid(format!(
                "Duplicate column '{}' declaration for table '{qualified}'",
                c.name
            )));
        }
        defs.push(c);
    }
    if s.partition_key.is_empty() {
        return Err(QueryError::invalid(format!(
            "No PRIMARY KEY specifed for table '{qualified}' (exactly one required)"
        )));
    }
    let find = |name: &str| defs.iter().find(|c| c.name == name).copied();
    let mut key_names = HashSet::new();
    for k in s.partition_key.iter().chain(&s.clustering_key) {
        if find(k).is_none() {
            return Err(QueryError::invalid(format!(
                "Unknown column '{k}' referenced in PRIMARY KEY for table '{qualified}'"
            )));
        }
        if !key_names.insert(k.as_str()) {
            return Err(QueryError::invalid(format!(
                "Duplicate column '{k}' in PRIMARY KEY clause for table '{qualified}'"
            )));
        }
    }
    // Clustering order.
    let mut orders: Vec<ClusteringOrder> = vec![ClusteringOrder::Asc; s.clustering_key.len()];
    let given = &s.options.clustering_order;
    for (i, (name, order)) in given.iter().enumerate() {
        let Some(pos) = s.clustering_key.iter().position(|c| c == name) else {
            let missing = s
                .clustering_key
                .iter()
                .find(|c| !given.iter().any(|(g, _)| g == *c));
            return Err(QueryError::invalid(match missing {
                Some(m) => format!("Missing CLUSTERING ORDER for column {m}"),
                None => format!(
                    "Only clustering key columns can be defined in CLUSTERING ORDER directive: {name} is not a clustering column"
                ),
            }));
        };
        if pos != i {
            return Err(QueryError::invalid("The order of columns in the CLUSTERING ORDER directive must match that of the clustering columns (".to_string() + &s.clustering_key.join(", ") + ")"));
        }
        orders[pos] = match order {
            Order::Asc => ClusteringOrder::Asc,
            Order::Desc => ClusteringOrder::Desc,
        };
    }
    // 'ReversedType(..)' on a clustering column is its descending order, as Cassandra
    // reads such a column.
    for (pos, name) in s.clustering_key.iter().enumerate() {
        let reversed = find(name).is_some_and(|c| match &c.data_type {
            DataType::Custom(class) => {
                cql::types::marshal::MarshalType::parse(class).is_ok_and(|m| m.reversed().is_some())
            }
            _ => false,
        });
        if reversed && given.is_empty() {
            orders[pos] = ClusteringOrder::Desc;
        }
    }
    if !given.is_empty()
        && given.len() < s.clustering_key.len()
        && given.len() != s.clustering_key.len()
    {
        // Cassandra requires a prefix in order, which the loop above checked.
    }
    if s.options.compact_storage {
        return Err(QueryError::invalid(
            "COMPACT STORAGE tables are not supported in Cassandra 4.0+ (use a regular table)",
        ));
    }
    let mut columns = Vec::new();
    let mut next_id = 0u32;
    let mut push = |def: &ColumnDef,
                    kind: ColumnKind,
                    position: i32,
                    order: ClusteringOrder|
     -> Result<(), QueryError> {
        let data_type = catalog
            .resolve_type(ks, &def.data_type)
            .map_err(QueryError::invalid)?;
        validate_nesting(&data_type, false)?;
        let mask = def
            .mask
            .as_ref()
            .map(|m| ColumnMask::prepare(m, &def.name, &data_type).map(Box::new))
            .transpose()?;
        columns.push(Column {
            name: def.name.clone(),
            id: next_id,
            data_type,
            kind,
            position,
            order,
            mask,
        });
        next_id += 1;
        Ok(())
    };
    for (i, k) in s.partition_key.iter().enumerate() {
        if let Some(def) = find(k) {
            push(
                def,
                ColumnKind::PartitionKey,
                i as i32,
                ClusteringOrder::Asc,
            )?;
        }
    }
    for (i, k) in s.clustering_key.iter().enumerate() {
        if let Some(def) = find(k) {
            push(def, ColumnKind::Clustering, i as i32, orders[i])?;
        }
    }
    for def in &defs {
        if key_names.contains(def.name.as_str()) {
            if def.is_static {
                return Err(QueryError::invalid(format!(
                    "Static column '{}' cannot be part of the PRIMARY KEY",
                    def.name
                )));
            }
            continue;
        }
        let kind = if def.is_static {
            ColumnKind::Static
        } else {
            ColumnKind::Regular
        };
        push(def, kind, -1, ClusteringOrder::Asc)?;
    }
    // Key column rules.
    for c in columns
        .iter()
        .filter(|c| matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering))
    {
        if c.data_type.is_multi_cell() {
            return Err(QueryError::invalid(format!(
                "Invalid non-frozen {} type {} for PRIMARY KEY column '{}'",
                if matches!(c.data_type, DataType::Udt(_)) {
                    "user"
                } else {
                    "collection"
                },
                c.data_type,
                c.name
            )));
        }
        if c.data_type.is_counter() {
            return Err(QueryError::invalid(format!(
                "counter type is not supported for PRIMARY KEY column '{}'",
                c.name
            )));
        }
        if contains_duration(&c.data_type) {
            return Err(QueryError::invalid(format!(
                "duration type is not supported for PRIMARY KEY column '{}'",
                c.name
            )));
        }
    }
    if s.clustering_key.is_empty() && columns.iter().any(|c| c.kind == ColumnKind::Static) {
        return Err(QueryError::invalid("Static columns are only useful (and thus allowed) if the table has at least one clustering column"));
    }
    let counters = columns
        .iter()
        .filter(|c| {
            c.kind != ColumnKind::PartitionKey
                && c.kind != ColumnKind::Clustering
                && c.data_type.is_counter()
        })
        .count();
    let non_key = columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Regular || c.kind == ColumnKind::Static)
        .count();
    if counters > 0 && counters != non_key {
        return Err(QueryError::invalid(
            "Cannot mix counter and non counter columns in the same table",
        ));
    }
    let mut params = TableParams::default();
    params.apply(&s.options.properties)?;
    if counters > 0 && params.default_time_to_live > 0 {
        return Err(QueryError::invalid(
            "Cannot set default_time_to_live on a table with counters",
        ));
    }
    let id = s
        .options
        .properties
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("id"))
        .and_then(|(_, v)| super::options::option_text(v))
        .and_then(|t| Uuid::parse_str(&t).ok())
        .unwrap_or_else(Uuid::new_v4);
    Ok(Table {
        keyspace: ks.to_string(),
        name: s.name.name.clone(),
        id,
        columns,
        params,
        next_column_id: next_id,
        dropped: Vec::new(),
        view: None,
        views: Vec::new(),
        indexes: Vec::new(),
    })
}

fn contains_duration(t: &DataType) -> bool {
    match t {
        DataType::Native(NativeType::Duration) => true,
        DataType::List(t) | DataType::Set(t) | DataType::Frozen(t) => contains_duration(t),
        DataType::Map(k, v) => contains_duration(k) || contains_duration(v),
        DataType::Tuple(ts) => ts.iter().any(contains_duration),
        DataType::Udt(u) => u.fields.iter().any(|(_, f)| contains_duration(f)),
        _ => false,
    }
}

/// Applies an ALTER TABLE operation; false when nothing changed (IF [NOT] EXISTS no-op).
fn alter_table(
    t: &mut Table,
    op: &AlterTableOp,
    catalog: &Catalog,
    now_ms: i64,
) -> Result<bool, QueryError> {
    if t.view.is_some() {
        return Err(QueryError::invalid(
            "Cannot use ALTER TABLE on a materialized view; use ALTER MATERIALIZED VIEW instead",
        ));
    }
    let qualified = format!("{}.{}", t.keyspace, t.name);
    match op {
        AlterTableOp::Add {
            columns,
            if_not_exists,
        } => {
            let mut changed = false;
            for def in columns {
                if t.column(&def.name).is_some() {
                    if *if_not_exists {
                        continue;
                    }
                    return Err(QueryError::invalid(format!(
                        "Column with name '{}' already exists",
                        def.name
                    )));
                }
                let data_type = catalog
                    .resolve_type(&t.keyspace, &def.data_type)
                    .map_err(QueryError::invalid)?;
                validate_nesting(&data_type, false)?;
                if def.is_static && t.clustering().next().is_none() {
                    return Err(QueryError::invalid("Static columns are only useful (and thus allowed) if the table has at least one clustering column"));
                }
                if data_type.is_counter() != t.is_counter() {
                    return Err(QueryError::invalid(if t.is_counter() {
                        format!(
                            "Cannot add a non counter column ({}) in a counter column family",
                            def.name
                        )
                    } else {
                        format!(
                            "Cannot add a counter column ({}) in a non counter column family",
                            def.name
                        )
                    }));
                }
                if let Some(d) = t.dropped.iter().find(|d| d.name == def.name) {
                    if d.type_text != data_type.to_string() && !data_type.is_multi_cell() {
                        return Err(QueryError::invalid(format!(
                            "Cannot re-add previously dropped column '{}' of type {}, incompatible with previous type {}",
                            def.name, data_type, d.type_text
                        )));
                    }
                }
                let mask = def
                    .mask
                    .as_ref()
                    .map(|m| ColumnMask::prepare(m, &def.name, &data_type).map(Box::new))
                    .transpose()?;
                t.columns.push(Column {
                    name: def.name.clone(),
                    id: t.next_column_id,
                    data_type,
                    kind: if def.is_static {
                        ColumnKind::Static
                    } else {
                        ColumnKind::Regular
                    },
                    position: -1,
                    order: ClusteringOrder::Asc,
                    mask,
                });
                t.next_column_id += 1;
                changed = true;
            }
            Ok(changed)
        }
        AlterTableOp::Drop {
            columns,
            if_exists,
            timestamp,
        } => {
            let mut changed = false;
            for name in columns {
                let Some(pos) = t.columns.iter().position(|c| &c.name == name) else {
                    if *if_exists {
                        continue;
                    }
                    return Err(QueryError::invalid(format!(
                        "Column {name} was not found in table '{qualified}'"
                    )));
                };
                let c = &t.columns[pos];
                if matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Clustering) {
                    return Err(QueryError::invalid(format!(
                        "Cannot drop PRIMARY KEY column {name}"
                    )));
                }
                check_no_index(t, name, "drop")?;
                // AlterTableStatement.DropColumns: a base keeps its columns while it has views.
                if !t.views.is_empty() {
                    return Err(QueryError::invalid(format!(
                        "Cannot drop column {name} on base table {} with materialized views",
                        t.name
                    )));
                }
                let dropped = DroppedColumn {
                    name: c.name.clone(),
                    type_text: c.data_type.to_string(),
                    kind: c.kind,
                    dropped_time_ms: timestamp.map(|t| t / 1000).unwrap_or(now_ms),
                };
                t.dropped.retain(|d| d.name != *name);
                t.dropped.push(dropped);
                t.columns.remove(pos);
                changed = true;
            }
            Ok(changed)
        }
        AlterTableOp::Rename { renames, if_exists } => {
            for (from, to) in renames {
                let Some(pos) = t.columns.iter().position(|c| &c.name == from) else {
                    if *if_exists {
                        continue;
                    }
                    return Err(QueryError::invalid(format!(
                        "Column {from} was not found in table {qualified}"
                    )));
                };
                if !matches!(
                    t.columns[pos].kind,
                    ColumnKind::PartitionKey | ColumnKind::Clustering
                ) {
                    return Err(QueryError::invalid(format!(
                        "Cannot rename non PRIMARY KEY column {from}"
                    )));
                }
                if t.column(to).is_some() {
                    return Err(QueryError::invalid(format!(
                        "Cannot rename column {from} to {to} in table '{qualified}'; another column with that name already exists"
                    )));
                }
                check_no_index(t, from, "rename")?;
                t.columns[pos].name = to.clone();
            }
            Ok(true)
        }
        AlterTableOp::MaskColumn(name, def) => {
            let Some(pos) = t.columns.iter().position(|c| c.name == *name) else {
                return Err(QueryError::invalid(format!(
                    "Column with name '{name}' doesn't exist on table '{qualified}'"
                )));
            };
            let column = &mut t.columns[pos];
            column.mask = def
                .as_ref()
                .map(|m| ColumnMask::prepare(m, name, &column.data_type).map(Box::new))
                .transpose()?;
            Ok(true)
        }
        AlterTableOp::AlterColumnType(name, _) => Err(QueryError::invalid(format!(
            "Altering column types is no longer supported (column {name})"
        ))),
        AlterTableOp::DropCompactStorage => Err(QueryError::invalid(format!(
            "Cannot DROP COMPACT STORAGE on table {qualified}: it is not a COMPACT STORAGE table"
        ))),
        AlterTableOp::With(props) => {
            t.params.apply(props)?;
            if t.is_counter() && t.params.default_time_to_live > 0 {
                return Err(QueryError::invalid(
                    "Cannot set default_time_to_live on a table with counters",
                ));
            }
            Ok(true)
        }
    }
}

/// Builds a node-owned table (system keyspaces) from its definition.
///
/// # Errors
/// When the definition is invalid.
pub fn build_system_table(
    catalog: &Catalog,
    ks: &str,
    s: &CreateTable,
) -> Result<Table, QueryError> {
    build_table(catalog, ks, s)
}
