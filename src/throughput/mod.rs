//! Provisioned throughput as Azure Cosmos DB meters it: every request is charged request
//! units by a fixed model ([`request_units`]), returned to the client as the `RequestCharge`
//! custom payload ([`request_charge`]); a table (or keyspace) with
//! `cosmosdb_provisioned_throughput` divides it among its physical partitions ([`Budgets`]),
//! and a request over its partition's budget gets Overloaded with Cosmos DB's message
//! ([`rate_is_large`]). The shards a request uses are metered ([`MeteredShards`]). A
//! throughput past what the partitions may carry splits them ([`split_for_throughput`]).

mod budgets;
mod metered;
pub mod request_charge;
pub mod request_units;
mod throughput_splits;

pub use budgets::{rate_is_large, Budgets, PartitionCount, PartitionUse};
pub use metered::MeteredShards;
pub use throughput_splits::{partitions_needed, split_for_throughput};
