//! Whether a SELECT's WHERE clause is served by secondary indexes, so that it needs no
//! ALLOW FILTERING (Cassandra's `StatementRestrictions` with `IndexRestrictions`).
//!
//! The query reads the rows an index names (`Shards::index_scan`, chosen by the executor's
//! `index_lookup`) and checks every row against every restriction: results never depend on
//! whether an entry is stale.

use crate::error::QueryError;
use crate::schema::index::{IndexDef, TargetKind};
use crate::schema::{ColumnKind, Table};
use cql::ast::{Operator, Relation};
use cql::types::{DataType, NativeType};

/// True when `index` can answer `op` on its column (a map-element `=` when `element`).
fn supports(index: &IndexDef, op: Operator, element: bool) -> bool {
    match (index.kind, op, element) {
        (TargetKind::Entries, Operator::Eq, true) => true,
        (_, _, true) => false,
        (TargetKind::Simple | TargetKind::Full, Operator::Eq, _) => true,
        (TargetKind::Simple, Operator::Lt | Operator::Le | Operator::Gt | Operator::Ge, _) => {
            index.is_sai()
        }
        (TargetKind::Values, Operator::Contains, _) => true,
        (TargetKind::Keys, Operator::ContainsKey, _) => true,
        _ => false,
    }
}

/// True for the types SAI indexes as literals, answering `=` but no range (SAI's
/// `IndexTermType.isLiteral`): strings, booleans, blobs.
fn literal_type(ty: &DataType) -> bool {
    matches!(
        ty,
        DataType::Native(
            NativeType::Text | NativeType::Ascii | NativeType::Boolean | NativeType::Blob
        )
    )
}

/// The index answering a relation on `column` of type `ty`, if one does.
pub fn serving<'a>(
    table: &'a Table,
    column: &str,
    ty: &DataType,
    op: Operator,
    element: bool,
) -> Option<&'a IndexDef> {
    let range = matches!(
        op,
        Operator::Lt | Operator::Le | Operator::Gt | Operator::Ge
    );
    if range && literal_type(ty) {
        return None;
    }
    table
        .indexes
        .iter()
        .find(|i| i.column == column && supports(i, op, element))
}

/// True when every partition-key column is restricted by `=` or `IN`: the query reads given
/// partitions, and restrictions on key columns are served by the key itself.
fn partition_given(relations: &[Relation], table: &Table) -> bool {
    table.partition_key().all(|pk| {
        relations.iter().any(|r| {
            matches!(r, Relation::Simple { column, op: Operator::Eq | Operator::In, .. }
                if *column == pk.name)
        })
    })
}

/// True when the relations need no ALLOW FILTERING because indexes serve them: at least one
/// relation is indexed, every other relation on a non-key column is indexed too, so are
/// those on key columns unless the partition is given, and a legacy index serves the only
/// indexed relation (Cassandra counts every restriction its index query must filter, and
/// more than one needs ALLOW FILTERING; SAI intersects several indexed columns).
pub fn served_by_indexes(relations: &[Relation], table: &Table) -> bool {
    if table.indexes.is_empty() {
        return false;
    }
    let partition = partition_given(relations, table);
    let mut used: Vec<&IndexDef> = Vec::new();
    for rel in relations {
        let (column, op, element) = match rel {
            Relation::Simple { column, op, .. } => (column, *op, false),
            Relation::MapElement { column, op, .. } => (column, *op, true),
            Relation::MultiColumn { .. } if partition => continue,
            Relation::MultiColumn { .. } => return false,
            Relation::Token { .. } => continue,
        };
        let Some(col) = table.column(column) else {
            return false;
        };
        if col.kind == ColumnKind::PartitionKey && partition {
            continue;
        }
        let key = matches!(col.kind, ColumnKind::PartitionKey | ColumnKind::Clustering);
        match serving(table, column, &col.data_type, op, element) {
            Some(i) => used.push(i),
            None if key && partition => {}
            None => return false,
        }
    }
    match used.len() {
        0 => false,
        1 => true,
        _ => used.iter().all(|i| i.is_sai()),
    }
}

/// Cassandra's `validateSecondaryIndexSelections`: an index query cannot read partitions
/// given by `IN` (checked whether or not ALLOW FILTERING is given).
///
/// # Errors
/// InvalidRequest with Cassandra's message.
pub fn check_index_selection(relations: &[Relation], table: &Table) -> Result<(), QueryError> {
    let uses_index = relations.iter().any(|r| match r {
        Relation::Simple { column, op, .. } | Relation::MapElement { column, op, .. } => {
            let element = matches!(r, Relation::MapElement { .. });
            table.column(column).is_some_and(|c| {
                c.kind != ColumnKind::PartitionKey
                    && serving(table, column, &c.data_type, *op, element).is_some()
            })
        }
        _ => false,
    });
    let key_in = relations.iter().any(|r| {
        matches!(r, Relation::Simple { column, op: Operator::In, .. }
            if table.column(column).is_some_and(|c| c.kind == ColumnKind::PartitionKey))
    });
    if uses_index && key_in {
        return Err(QueryError::invalid(
            "Select on indexed columns and with IN clause for the PRIMARY KEY are not supported",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{apply_ddl, Catalog};
    use cql::ast::Statement;

    fn catalog(ddl: &[&str]) -> Catalog {
        let mut c = Catalog::default();
        for text in ddl {
            let stmt = cql::parse_statement(text).expect("ddl parses");
            apply_ddl(&mut c, &stmt, Some("ks"), 0).expect("ddl applies");
        }
        c
    }

    fn served(c: &Catalog, select: &str) -> bool {
        let Ok(Statement::Select(s)) = cql::parse_statement(select) else {
            panic!("not a select: {select}");
        };
        let table = c.table("ks", "t").expect("table");
        served_by_indexes(&s.where_clause, table)
    }

    const BASE: [&str; 2] = [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int, c int, v int, w int, s text, m map<text, int>, PRIMARY KEY (k, c))",
    ];

    #[test]
    fn one_legacy_index_serves_one_restriction() {
        let mut ddl = BASE.to_vec();
        ddl.extend(["CREATE INDEX ON ks.t (v)", "CREATE INDEX ON ks.t (w)"]);
        let c = catalog(&ddl);
        assert!(served(&c, "SELECT * FROM t WHERE v = 1"));
        assert!(served(
            &c,
            "SELECT * FROM t WHERE k = 1 AND c = 2 AND v = 1"
        ));
        assert!(!served(&c, "SELECT * FROM t WHERE v = 1 AND w = 2"));
        assert!(!served(&c, "SELECT * FROM t WHERE v = 1 AND c = 2"));
        assert!(!served(&c, "SELECT * FROM t WHERE v > 1"));
        assert!(!served(&c, "SELECT * FROM t WHERE s = 'a'"));
    }

    #[test]
    fn sai_serves_ranges_and_several_columns() {
        let mut ddl = BASE.to_vec();
        ddl.extend([
            "CREATE INDEX ON ks.t (v) USING 'sai'",
            "CREATE INDEX ON ks.t (s) USING 'sai'",
            "CREATE CUSTOM INDEX ON ks.t (KEYS(m)) USING 'StorageAttachedIndex'",
        ]);
        let c = catalog(&ddl);
        assert!(served(
            &c,
            "SELECT * FROM t WHERE v > 1 AND v < 5 AND s = 'a'"
        ));
        assert!(served(
            &c,
            "SELECT * FROM t WHERE m CONTAINS KEY 'x' AND v = 1"
        ));
        assert!(!served(&c, "SELECT * FROM t WHERE s > 'a'"));
        assert!(!served(&c, "SELECT * FROM t WHERE m CONTAINS 1"));
        assert!(!served(&c, "SELECT * FROM t WHERE v = 1 AND w = 2"));
    }
}
