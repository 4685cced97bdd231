//! Splits for throughput, as Cosmos DB makes them: a table whose provisioned throughput is
//! more than its physical partitions may carry (`max_ru_per_physical_partition` each) has its
//! partitions split, widest token range first at the middle of its range (never inside a
//! logical partition: a cut falls between tokens), until each carries at most that much. The
//! budget is divided again after every split ([`super::Budgets`] counts the partitions).

use crate::schema::Catalog;
use storage::{Storage, TableId};
use tracing::{info, warn};

/// Every table with a throughput, with how many physical partitions it needs to carry it
/// at `max_per_partition` RU/s each (the store's on a single node, the groups in a cluster).
pub fn partitions_needed(catalog: &Catalog, max_per_partition: f64) -> Vec<(TableId, usize)> {
    catalog
        .keyspaces
        .values()
        .flat_map(|ks| ks.tables.values())
        .filter_map(|t| {
            let throughput = t.params.throughput?;
            let needed = (f64::from(throughput.limit()) / max_per_partition).ceil() as usize;
            Some((crate::schema::table_id(t), needed))
        })
        .collect()
}

/// The tables whose store has fewer physical partitions than they need, with how many.
fn wanting(catalog: &Catalog, storage: &Storage, max_per_partition: f64) -> Vec<(TableId, usize)> {
    partitions_needed(catalog, max_per_partition)
        .into_iter()
        .filter(|(id, needed)| {
            let has = storage.partition_of(*id, 0).map_or(usize::MAX, |p| p.count);
            has < *needed
        })
        .collect()
}

/// Splits one table's partitions until it has `needed`.
fn split_table(storage: &Storage, table: TableId, needed: usize) {
    loop {
        let Ok(parts) = storage.physical_partitions(table) else {
            return;
        };
        if parts.len() >= needed {
            info!(%table, partitions = parts.len(), "split for throughput done");
            return;
        }
        let widest = parts
            .iter()
            .max_by_key(|p| i128::from(p.end_token) - i128::from(p.start_token));
        let Some(p) = widest else { return };
        let middle = (i128::from(p.start_token) + i128::from(p.end_token)) / 2;
        let Ok(at) = i64::try_from(middle) else {
            return;
        };
        info!(%table, at, partitions = parts.len(), needed, "splitting a physical partition for throughput");
        match storage.split_at(table, at) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                warn!(%table, error = %e, "a split for throughput failed");
                return;
            }
        }
    }
}

/// Starts, in the background, the splits every table's throughput needs on this node's
/// store (a single node: in a cluster the groups' own splits are left to the cluster).
pub fn split_for_throughput(catalog: &Catalog, storage: &Storage, max_per_partition: f64) {
    let wanting = wanting(catalog, storage, max_per_partition);
    if wanting.is_empty() {
        return;
    }
    let storage = storage.clone();
    let spawned = std::thread::Builder::new()
        .name("throughput-split".into())
        .spawn(move || {
            for (table, needed) in wanting {
                split_table(&storage, table, needed);
            }
        });
    if let Err(e) = spawned {
        warn!(error = %e, "could not start the splits for throughput");
    }
}
