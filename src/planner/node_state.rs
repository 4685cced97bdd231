//! Planning `UPDATE system_views.cluster_nodes SET state = 'LEAVING' | 'REMOVING' WHERE
//! host_id = <uuid>`: the CQL form of `ringdb decommission` and `ringdb removenode`, the one
//! write a system view takes. Values are literals (an operator's command, never prepared).

use crate::cluster_hooks::NodeState;
use crate::error::QueryError;
use cql::ast::{Assignment, Expr, Literal, Operator, Relation, Update};

/// A member's new state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeStatePlan {
    /// The member.
    pub(crate) host_id: uuid::Uuid,
    /// What it starts.
    pub(crate) state: NodeState,
}

impl NodeStatePlan {
    /// Plans the statement.
    ///
    /// # Errors
    /// Invalid for any other form of UPDATE on the view.
    pub(crate) fn plan(update: &Update) -> Result<NodeStatePlan, QueryError> {
        let usage = || {
            QueryError::invalid(
                "system_views.cluster_nodes only takes UPDATE ... SET state = 'LEAVING' | \
                 'REMOVING' WHERE host_id = <uuid>",
            )
        };
        if update.conditions.is_some()
            || update.using.ttl.is_some()
            || update.using.timestamp.is_some()
        {
            return Err(usage());
        }
        let state = match update.assignments.as_slice() {
            [Assignment::Set {
                column,
                value: Expr::Literal(Literal::String(s)),
            }] if column == "state" => match s.to_ascii_uppercase().as_str() {
                "LEAVING" => NodeState::Leaving,
                "REMOVING" => NodeState::Removing,
                _ => return Err(usage()),
            },
            _ => return Err(usage()),
        };
        let host_id = match update.where_clause.as_slice() {
            [Relation::Simple {
                column,
                op: Operator::Eq,
                value: Expr::Literal(Literal::Uuid(id)),
            }] if column == "host_id" => *id,
            _ => return Err(usage()),
        };
        Ok(NodeStatePlan { host_id, state })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(cql: &str) -> Result<NodeStatePlan, QueryError> {
        match cql::parse_statement(cql) {
            Ok(cql::ast::Statement::Update(u)) => NodeStatePlan::plan(&u),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn leaving_and_removing_are_planned_and_nothing_else() {
        let id = "5e1d3e1c-0000-4000-8000-000000000001";
        let p = plan(&format!(
            "UPDATE system_views.cluster_nodes SET state = 'leaving' WHERE host_id = {id}"
        ))
        .unwrap();
        assert_eq!(p.state, NodeState::Leaving);
        assert_eq!(p.host_id.to_string(), id);
        let p = plan(&format!(
            "UPDATE system_views.cluster_nodes SET state = 'REMOVING' WHERE host_id = {id}"
        ))
        .unwrap();
        assert_eq!(p.state, NodeState::Removing);
        for bad in [
            format!("UPDATE system_views.cluster_nodes SET state = 'UP' WHERE host_id = {id}"),
            format!("UPDATE system_views.cluster_nodes SET status = 'LEAVING' WHERE host_id = {id}"),
            "UPDATE system_views.cluster_nodes SET state = ? WHERE host_id = ?".to_string(),
            format!("UPDATE system_views.cluster_nodes SET state = 'LEAVING' WHERE host_id = {id} IF EXISTS"),
        ] {
            assert!(plan(&bad).is_err(), "{bad}");
        }
    }
}
