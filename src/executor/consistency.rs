//! Consistency levels a single node can honour, answered as Cassandra answers them: the
//! request-level rules ([`check_consistency`]) and, once the statement's tables are known, the
//! replicas a level needs against the one this node is ([`check_replicas`]).

use crate::error::QueryError;
use crate::schema::{KeyspaceParams, Replicas, DATA_CENTER};
use cql::ast::Statement;
use cql::request::Consistency;

/// The rules that need only the level and the statement, checked before it is planned.
///
/// Statements that read or write a table (SELECT, INSERT, UPDATE, DELETE, BATCH) meet their
/// keyspace's replication in [`check_replicas`] once planned; any other statement touches
/// no replica, and answers TWO and THREE, which no single node meets, with Unavailable.
///
/// # Errors
/// Invalid for SERIAL on an unconditional write or ANY on a read; Unavailable for TWO and
/// THREE on a statement that is not planned.
pub fn check_consistency(cl: Consistency, stmt: &Statement) -> Result<(), QueryError> {
    let is_write = matches!(
        stmt,
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) | Statement::Batch(_)
    );
    if matches!(cl, Consistency::Serial | Consistency::LocalSerial)
        && is_write
        && !stmt.is_conditional()
    {
        return Err(QueryError::invalid(
            "You must use conditional updates for serializable writes",
        ));
    }
    if !is_write && !matches!(stmt, Statement::Select(_)) {
        let required = match cl {
            Consistency::Two => 2,
            Consistency::Three => 3,
            _ => 1,
        };
        if required > 1 {
            return Err(unavailable(cl, required, 1, None));
        }
    }
    if matches!(cl, Consistency::Any) && matches!(stmt, Statement::Select(_)) {
        return Err(QueryError::invalid(
            "ANY ConsistencyLevel is only supported for writes",
        ));
    }
    Ok(())
}

/// Whether this one node meets `cl` for a table of a keyspace replicated as `params`, as
/// Cassandra's `ReplicaPlans.assureSufficientLiveReplicas` decides it: the level needs
/// `blockFor` replicas (QUORUM `rf / 2 + 1` of all replicas, LOCAL_QUORUM of this node's
/// datacenter's, EACH_QUORUM of every datacenter's, ALL every one) and one is alive, the node
/// itself (none when its datacenter has no replica). Reads and writes count alike. SERIAL and
/// LOCAL_SERIAL count the replicas that exist, as Paxos does: the node.
///
/// # Errors
/// Unavailable with Cassandra's `required` and `alive` when the level needs more replicas.
pub fn check_replicas(cl: Consistency, params: &KeyspaceParams) -> Result<(), QueryError> {
    let replicas = params.replicas();
    let total = replicas.total();
    let local = replicas.in_dc(DATA_CENTER);
    // The node holds a replica when its datacenter has one.
    let alive = u32::from(local > 0);
    let required = match cl {
        Consistency::Any => return Ok(()),
        Consistency::One | Consistency::LocalOne => 1,
        Consistency::Two => 2,
        Consistency::Three => 3,
        Consistency::Quorum => quorum(total),
        Consistency::All => total,
        Consistency::LocalQuorum => quorum(local),
        Consistency::EachQuorum => match replicas {
            // Each datacenter its own quorum; the first short one is named.
            Replicas::PerDc(_) => {
                for (dc, rf) in replicas.per_dc() {
                    let alive = u32::from(dc == DATA_CENTER && rf > 0);
                    if alive < quorum(rf) {
                        return Err(unavailable(cl, quorum(rf), alive, Some(dc)));
                    }
                }
                return Ok(());
            }
            Replicas::Local | Replicas::Simple(_) => quorum(total),
        },
        Consistency::Serial | Consistency::LocalSerial => 1,
    };
    if alive < required {
        return Err(unavailable(cl, required, alive, None));
    }
    Ok(())
}

/// Cassandra's quorum of `rf` replicas.
fn quorum(rf: u32) -> u32 {
    rf / 2 + 1
}

fn unavailable(cl: Consistency, required: u32, alive: u32, dc: Option<&str>) -> QueryError {
    QueryError::Unavailable {
        consistency: cl,
        required: i32::try_from(required).unwrap_or(i32::MAX),
        alive: i32::try_from(alive).unwrap_or(i32::MAX),
        dc: dc.map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn nts(dcs: &[(&str, u32)]) -> KeyspaceParams {
        let mut replication = BTreeMap::from([(
            "class".to_string(),
            "org.apache.cassandra.locator.NetworkTopologyStrategy".to_string(),
        )]);
        for (dc, rf) in dcs {
            replication.insert(dc.to_string(), rf.to_string());
        }
        KeyspaceParams {
            replication,
            durable_writes: true,
            throughput: None,
        }
    }

    fn outcome(cl: Consistency, params: &KeyspaceParams) -> Option<(i32, i32, Option<String>)> {
        match check_replicas(cl, params) {
            Ok(()) => None,
            Err(QueryError::Unavailable {
                required,
                alive,
                dc,
                ..
            }) => Some((required, alive, dc)),
            Err(other) => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn replication_factor_one_meets_every_level() {
        for params in [KeyspaceParams::simple(1), nts(&[("datacenter1", 1)])] {
            for cl in Consistency::ALL_LEVELS {
                let want = match cl {
                    Consistency::Two => Some((2, 1, None)),
                    Consistency::Three => Some((3, 1, None)),
                    _ => None,
                };
                assert_eq!(outcome(cl, &params), want, "{cl:?} {params:?}");
            }
        }
        assert_eq!(outcome(Consistency::All, &KeyspaceParams::local()), None);
    }

    #[test]
    fn replication_factor_three_needs_what_cassandra_needs() {
        for params in [KeyspaceParams::simple(3), nts(&[("datacenter1", 3)])] {
            assert_eq!(outcome(Consistency::Quorum, &params), Some((2, 1, None)));
            assert_eq!(
                outcome(Consistency::LocalQuorum, &params),
                Some((2, 1, None))
            );
            assert_eq!(outcome(Consistency::All, &params), Some((3, 1, None)));
            for cl in [
                Consistency::One,
                Consistency::LocalOne,
                Consistency::Any,
                Consistency::Serial,
                Consistency::LocalSerial,
            ] {
                assert_eq!(outcome(cl, &params), None, "{cl:?}");
            }
        }
        assert_eq!(
            outcome(Consistency::EachQuorum, &KeyspaceParams::simple(3)),
            Some((2, 1, None))
        );
        assert_eq!(
            outcome(Consistency::EachQuorum, &nts(&[("datacenter1", 3)])),
            Some((2, 1, Some("datacenter1".to_string())))
        );
        // RF 2: QUORUM is 2 of 2, one alive.
        assert_eq!(
            outcome(Consistency::Quorum, &KeyspaceParams::simple(2)),
            Some((2, 1, None))
        );
    }

    #[test]
    fn a_datacenter_without_replicas_here_has_none_alive() {
        // A keyspace stored before unknown datacenters were refused.
        let params = nts(&[("datacenter1", 1), ("dc2", 1)]);
        assert_eq!(outcome(Consistency::LocalQuorum, &params), None);
        assert_eq!(outcome(Consistency::Quorum, &params), Some((2, 1, None)));
        assert_eq!(
            outcome(Consistency::EachQuorum, &params),
            Some((1, 0, Some("dc2".to_string())))
        );
        let none_here = KeyspaceParams::simple(0);
        assert_eq!(outcome(Consistency::One, &none_here), Some((1, 0, None)));
    }
}
