//! The cluster: nodes that find each other through seeds, talk over the internode transport,
//! keep cluster metadata in one Raft group and replicate each physical partition in its own.
//! The design is in `docs/cluster.md`.

pub mod transport;
