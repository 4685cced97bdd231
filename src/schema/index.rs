//! Secondary indexes in the catalog: `CREATE INDEX` / `DROP INDEX` with Cassandra 5.0's checks.
//!
//! Storage keeps each index's entries (`storage::IndexSpec`, from `layout_of`); a query
//! reads the rows they name and verifies every row against its restrictions, so a hit is
//! never stale (see README, "Secondary indexes").

use super::{Catalog, ColumnKind, Table};
use crate::error::QueryError;
use cql::ast::{CreateIndex, DropIndex, IndexTarget, OptionValue};
use cql::types::DataType;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A vector index's option naming its similarity function.
pub const SIMILARITY_OPTION: &str = "similarity_function";

/// True for `vector<float, n>`, the one vector type SAI indexes for ANN.
pub fn is_float_vector(ty: &DataType) -> bool {
    matches!(ty, DataType::Vector(e, _) if **e == DataType::Native(cql::types::NativeType::Float))
}

/// The class name Cassandra stores for a storage-attached index.
pub const SAI_CLASS: &str = "org.apache.cassandra.index.sai.StorageAttachedIndex";

/// What part of a column an index covers (Cassandra's `IndexTarget.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// The value of a regular column (or of a key column).
    Simple,
    /// Map keys.
    Keys,
    /// Collection values.
    Values,
    /// Map entries.
    Entries,
    /// A whole frozen collection.
    Full,
}

/// One secondary index of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDef {
    /// Index name (unique in its keyspace).
    pub name: String,
    /// The indexed column.
    pub column: String,
    /// What of the column is indexed.
    pub kind: TargetKind,
    /// The custom class (SAI), or None for a legacy index.
    pub class_name: Option<String>,
    /// Options besides `class_name` and `target`: a vector index's `similarity_function`.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

impl IndexDef {
    /// The `target` option as `system_schema.indexes` shows it (`v`, `keys(m)`, ...).
    pub fn target_text(&self) -> String {
        let c = quote_if_needed(&self.column);
        match self.kind {
            TargetKind::Simple => c,
            TargetKind::Keys => format!("keys({c})"),
            TargetKind::Values => format!("values({c})"),
            TargetKind::Entries => format!("entries({c})"),
            TargetKind::Full => format!("full({c})"),
        }
    }

    /// True for a storage-attached index (ranges and several columns without ALLOW FILTERING).
    pub fn is_sai(&self) -> bool {
        self.class_name.as_deref() == Some(SAI_CLASS)
    }

    /// A storage-attached index on a `vector<float, n>` column: what storage keeps a graph
    /// of for ANN queries, with its similarity function (cosine unless set).
    pub fn vector_similarity(&self, table: &Table) -> Option<storage::Similarity> {
        if !self.is_sai() || !is_float_vector(&table.column(&self.column)?.data_type) {
            return None;
        }
        Some(
            self.options
                .get(SIMILARITY_OPTION)
                .and_then(|s| storage::Similarity::from_option(s))
                .unwrap_or_default(),
        )
    }

    /// `COMPOSITES` for a legacy index, `CUSTOM` for a custom one.
    pub fn kind_text(&self) -> &'static str {
        if self.class_name.is_some() {
            "CUSTOM"
        } else {
            "COMPOSITES"
        }
    }
}

fn quote_if_needed(name: &str) -> String {
    if name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
    {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Finds the keyspace's index called `name` and its table.
pub fn find_index<'a>(
    catalog: &'a Catalog,
    ks: &str,
    name: &str,
) -> Option<(&'a Table, &'a IndexDef)> {
    let keyspace = catalog.keyspaces.get(ks)?;
    keyspace
        .tables
        .values()
        .find_map(|t| t.indexes.iter().find(|i| i.name == name).map(|i| (&**t, i)))
}

/// Cassandra's default name: `<table>_<column>_idx`, made unique with `_1`, `_2`, ...
/// (`CreateIndexStatement.generateIndexName`).
fn default_name(catalog: &Catalog, ks: &str, table: &str, column: &str) -> String {
    let base: String = format!("{table}_{column}_idx")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let mut name = base.clone();
    let mut i = 0;
    while find_index(catalog, ks, &name).is_some() {
        i += 1;
        name = format!("{base}_{i}");
    }
    name
}

fn sai_class(s: &CreateIndex) -> Result<Option<String>, QueryError> {
    let Some(class) = &s.custom_class else {
        if s.custom {
            return Err(QueryError::invalid(
                "Must specify index implementation via USING",
            ));
        }
        return Ok(None);
    };
    let short = class.rsplit('.').next().unwrap_or(class);
    if short.eq_ignore_ascii_case("sai") || short.eq_ignore_ascii_case("StorageAttachedIndex") {
        Ok(Some(SAI_CLASS.to_string()))
    } else {
        Err(QueryError::invalid(format!(
            "Unable to find custom indexer class '{class}'"
        )))
    }
}

/// Validates `CREATE INDEX` against `table` and returns the new index, or None when
/// `IF NOT EXISTS` found one of that name.
pub fn create_index(
    catalog: &Catalog,
    ks: &str,
    table: &Table,
    s: &CreateIndex,
) -> Result<Option<IndexDef>, QueryError> {
    let class_name = sai_class(s)?;
    let options = index_options(s)?;
    if !options.is_empty() && class_name.is_none() {
        // CreateIndexStatement / IndexAttributes.validate.
        return Err(QueryError::invalid(
            "Cannot specify options for a non-CUSTOM index",
        ));
    }
    let (column, requested) = match &s.target {
        IndexTarget::Column(c) => (c, None),
        IndexTarget::Keys(c) => (c, Some(TargetKind::Keys)),
        IndexTarget::Values(c) => (c, Some(TargetKind::Values)),
        IndexTarget::Entries(c) => (c, Some(TargetKind::Entries)),
        IndexTarget::Full(c) => (c, Some(TargetKind::Full)),
    };
    if let Some(name) = &s.name {
        if find_index(catalog, ks, name).is_some() {
            if s.if_not_exists {
                return Ok(None);
            }
            return Err(QueryError::invalid(format!(
                "Index '{name}' already exists"
            )));
        }
        super::names::check_name("Index", name)?;
    }
    if table.is_counter() {
        return Err(QueryError::invalid(
            "Secondary indexes on counter tables aren't supported",
        ));
    }
    // CreateIndexStatement: views take no index.
    if table.view.is_some() {
        return Err(QueryError::invalid(
            "Secondary indexes on materialized views aren't supported",
        ));
    }
    let Some(col) = table.column(column) else {
        return Err(QueryError::invalid(format!(
            "Column '{column}' doesn't exist"
        )));
    };
    if col.kind == ColumnKind::PartitionKey && table.partition_key().count() == 1 {
        return Err(QueryError::invalid(format!(
            "Cannot create secondary index on the only partition key column {column}"
        )));
    }
    let ty = &col.data_type;
    check_indexable_type(column, ty)?;
    let collection = matches!(
        ty.unfrozen(),
        DataType::List(_) | DataType::Set(_) | DataType::Map(..)
    );
    let kind = match requested {
        None if collection && !ty.is_frozen() => TargetKind::Values,
        None if collection => {
            return Err(QueryError::invalid(format!(
                "Cannot create values() index on frozen column {column}. Frozen collections are immutable and must be fully indexed by using the 'full({column})' modifier"
            )))
        }
        None => TargetKind::Simple,
        Some(TargetKind::Full) => {
            if !(collection && ty.is_frozen()) {
                return Err(QueryError::invalid(
                    "full() indexes can only be created on frozen collections",
                ));
            }
            TargetKind::Full
        }
        Some(k) => {
            let word = match k {
                TargetKind::Keys => "keys",
                TargetKind::Values => "values",
                _ => "entries",
            };
            if !collection {
                return Err(QueryError::invalid(format!(
                    "Cannot create {word}() index on {column}. Non-collection columns only support simple indexes"
                )));
            }
            if ty.is_frozen() {
                return Err(QueryError::invalid(format!(
                    "Cannot create {word}() index on frozen column {column}. Frozen collections are immutable and must be fully indexed by using the 'full({column})' modifier"
                )));
            }
            if k != TargetKind::Values && !matches!(ty, DataType::Map(..)) {
                return Err(QueryError::invalid(format!(
                    "Cannot create index on {word} of column {column} with non-map type"
                )));
            }
            k
        }
    };
    if class_name.is_some() && kind == TargetKind::Full {
        return Err(QueryError::invalid(
            "Cannot create a storage-attached index on full() of a frozen collection",
        ));
    }
    check_vector_index(column, ty, class_name.is_some(), &options)?;
    let def = IndexDef {
        name: s
            .name
            .clone()
            .unwrap_or_else(|| default_name(catalog, ks, &table.name, column)),
        column: column.clone(),
        kind,
        class_name,
        options,
    };
    if let Some(existing) = table
        .indexes
        .iter()
        .find(|i| i.column == def.column && i.kind == def.kind && i.class_name == def.class_name)
    {
        if s.if_not_exists {
            return Ok(None);
        }
        return Err(QueryError::invalid(format!(
            "Index {} is a duplicate of existing index {}",
            def.name, existing.name
        )));
    }
    Ok(Some(def))
}

/// The `WITH OPTIONS = {...}` map of `CREATE INDEX`, as text.
fn index_options(s: &CreateIndex) -> Result<BTreeMap<String, String>, QueryError> {
    let mut out = BTreeMap::new();
    for (name, value) in &s.options {
        let pairs = match (name.as_str(), value) {
            ("options", OptionValue::Map(pairs)) => pairs,
            _ => return Err(QueryError::invalid(format!("Unknown property '{name}'"))),
        };
        for (k, v) in pairs {
            let text = |o: &OptionValue| match o {
                OptionValue::String(s) | OptionValue::Constant(s) | OptionValue::Identifier(s) => {
                    Ok(s.clone())
                }
                OptionValue::Map(_) => Err(QueryError::invalid("Index options must be text")),
            };
            out.insert(text(k)?, text(v)?);
        }
    }
    Ok(out)
}

/// SAI's vector rules (`StorageAttachedIndex` / `VectorSimilarityFunction`): options other
/// than `similarity_function` are refused by ringdb (SAI's analyzers change matching, which it
/// does not do), the function must be known, and cosine needs more than one dimension.
fn check_vector_index(
    column: &str,
    ty: &DataType,
    sai: bool,
    options: &BTreeMap<String, String>,
) -> Result<(), QueryError> {
    if let Some(other) = options.keys().find(|k| k.as_str() != SIMILARITY_OPTION) {
        return Err(QueryError::invalid(format!(
            "Storage-attached index option '{other}' is not supported by ringdb"
        )));
    }
    let vector = matches!(ty, DataType::Vector(..));
    if !sai || !vector {
        if options.contains_key(SIMILARITY_OPTION) {
            return Err(QueryError::invalid(format!(
                "Option {SIMILARITY_OPTION} is only supported on vector columns (not {column})"
            )));
        }
        return Ok(());
    }
    if !is_float_vector(ty) {
        return Err(QueryError::invalid(format!(
            "Vector indexes are only supported on vectors of float; {column} is {ty}"
        )));
    }
    let similarity = match options.get(SIMILARITY_OPTION) {
        None => storage::Similarity::Cosine,
        Some(s) => storage::Similarity::from_option(s).ok_or_else(|| {
            QueryError::invalid(format!(
                "Similarity function {s} was not recognized for the vector index (COSINE, EUCLIDEAN, DOT_PRODUCT)"
            ))
        })?,
    };
    if similarity == storage::Similarity::Cosine && matches!(ty, DataType::Vector(_, 1)) {
        return Err(QueryError::invalid(
            "Cosine similarity is not supported for single-dimension vectors",
        ));
    }
    Ok(())
}

/// Cassandra's refusals by type: durations anywhere, and non-frozen UDTs.
fn check_indexable_type(column: &str, ty: &DataType) -> Result<(), QueryError> {
    if ty.references_duration() {
        let message = match ty.unfrozen() {
            DataType::List(_) | DataType::Set(_) | DataType::Map(..) => {
                "Secondary indexes are not supported on collections containing durations"
            }
            DataType::Tuple(_) => {
                "Secondary indexes are not supported on tuples containing durations"
            }
            DataType::Udt(_) => "Secondary indexes are not supported on UDTs containing durations",
            _ => "Secondary indexes are not supported on duration columns",
        };
        return Err(QueryError::invalid(message));
    }
    if matches!(ty, DataType::Udt(_)) {
        return Err(QueryError::invalid(format!(
            "Cannot create index on non-frozen UDT column {column}"
        )));
    }
    Ok(())
}

/// Finds the table holding the index `DROP INDEX` names; None for `IF EXISTS` on a missing one.
pub fn drop_index_table(
    catalog: &Catalog,
    ks: &str,
    s: &DropIndex,
) -> Result<Option<String>, QueryError> {
    match find_index(catalog, ks, &s.name.name) {
        Some((t, _)) => Ok(Some(t.name.clone())),
        None if s.if_exists => Ok(None),
        None => Err(QueryError::invalid(format!(
            "Index '{ks}.{}' doesn't exist",
            s.name.name
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_print_as_cassandra_stores_them() {
        let mut d = IndexDef {
            name: "i".into(),
            column: "m".into(),
            kind: TargetKind::Keys,
            class_name: None,
            options: BTreeMap::new(),
        };
        assert_eq!(d.target_text(), "keys(m)");
        assert_eq!(d.kind_text(), "COMPOSITES");
        d.kind = TargetKind::Simple;
        d.column = "Mixed".into();
        assert_eq!(d.target_text(), "\"Mixed\"");
        d.class_name = Some(SAI_CLASS.into());
        assert!(d.is_sai());
        assert_eq!(d.kind_text(), "CUSTOM");
    }
}
