//! How a catalog table maps onto storage: its storage id and its [`TableLayout`] (key types,
//! clustering order, column ids, the point-read columns, gc grace and vector indexes).

use super::index::{IndexDef, TargetKind};
use super::{ClusteringOrder, ColumnKind, Table};
use cql::types::DataType;
use storage::{TableId, TableLayout};

/// The storage layout of a catalog table.
pub fn layout_of(table: &Table) -> TableLayout {
    TableLayout {
        partition_key: table.partition_key().map(|c| c.data_type.clone()).collect(),
        clustering: table
            .clustering()
            .map(|c| {
                let order = match c.order {
                    ClusteringOrder::Asc => storage::Order::Asc,
                    ClusteringOrder::Desc => storage::Order::Desc,
                };
                (c.data_type.clone(), order)
            })
            .collect(),
        columns: table
            .columns
            .iter()
            .filter(|c| matches!(c.kind, ColumnKind::Regular | ColumnKind::Static))
            .map(|c| (c.id, c.data_type.clone()))
            .collect(),
        point_row_columns: {
            let regular = table
                .columns
                .iter()
                .filter(|c| c.kind == ColumnKind::Regular);
            (!regular.clone().any(|c| c.data_type.is_multi_cell()))
                .then(|| regular.map(|c| c.id).collect())
        },
        gc_grace_seconds: u32::try_from(table.params.gc_grace_seconds).unwrap_or(0),
        vector_indexes: table
            .indexes
            .iter()
            .filter_map(|i| {
                let similarity = i.vector_similarity(table)?;
                let column = table.column(&i.column)?;
                let DataType::Vector(_, n) = &column.data_type else {
                    return None;
                };
                Some(storage::VectorIndexSpec {
                    column: column.id,
                    dimension: *n as usize,
                    similarity,
                })
            })
            .collect(),
        indexes: table
            .indexes
            .iter()
            .filter(|i| i.vector_similarity(table).is_none())
            .filter_map(|i| index_spec(table, i))
            .collect(),
    }
}

/// The storage spec of a (non-vector) secondary index.
pub fn index_spec(table: &Table, index: &IndexDef) -> Option<storage::IndexSpec> {
    let column = table.column(&index.column)?;
    let position = || u16::try_from(column.position).ok();
    let place = match column.kind {
        ColumnKind::Regular => storage::IndexPlace::Regular,
        ColumnKind::Static => storage::IndexPlace::Static,
        ColumnKind::Clustering => storage::IndexPlace::Clustering(position()?),
        ColumnKind::PartitionKey => storage::IndexPlace::PartitionKey(position()?),
    };
    let target = match index.kind {
        TargetKind::Simple => storage::IndexTarget::Simple,
        TargetKind::Keys => storage::IndexTarget::Keys,
        TargetKind::Values => storage::IndexTarget::Values,
        TargetKind::Entries => storage::IndexTarget::Entries,
        TargetKind::Full => storage::IndexTarget::Full,
    };
    Some(storage::IndexSpec {
        column: column.id,
        target,
        place,
    })
}

/// The storage id of a catalog table.
pub fn table_id(table: &Table) -> TableId {
    TableId(table.id.as_u128())
}
