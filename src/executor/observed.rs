//! What the metrics learn of a request before it runs (`crate::metrics`): its class, and the
//! "bad query" counters ScyllaDB's CQL advisor keeps (reads and writes sent unprepared,
//! SELECTs without paging or with ALLOW FILTERING). Statements on the system keyspaces (the
//! drivers' own metadata queries) are left out of the advisor's counters.

use super::Known;
use crate::context::SessionContext;
use crate::metrics::{Metrics, RequestClass};
use cql::ast::Statement;
use cql::request::Request;

/// The keyspace a read or write names (the session's when it names none).
fn keyspace_of<'a>(statement: &'a Statement, ctx: &'a SessionContext) -> Option<&'a str> {
    let table = match statement {
        Statement::Select(s) => &s.table,
        Statement::Insert(i) => &i.table,
        Statement::Update(u) => &u.table,
        Statement::Delete(d) => &d.table,
        Statement::Batch(b) => return b.statements.first().and_then(|s| keyspace_of(s, ctx)),
        _ => return None,
    };
    table.keyspace.as_deref().or(ctx.keyspace.as_deref())
}

/// Counts what `request` does wrong by the advisor's rules; returns its class.
pub(super) fn observe(
    metrics: &Metrics,
    ctx: &SessionContext,
    request: &Request,
    known: &Known,
) -> RequestClass {
    let (statement, page_size, prepared) = match (request, known) {
        (Request::Prepare(_), _) => return RequestClass::Prepare,
        (Request::Batch(_), _) => return RequestClass::Batch,
        (Request::Query(q), Known::Parsed(s)) => (s.as_ref(), q.params.page_size, false),
        (Request::Execute(e), Known::Prepared(p)) => (&p.statement, e.params.page_size, true),
        _ => return RequestClass::Other,
    };
    let class = RequestClass::of(statement);
    let user = keyspace_of(statement, ctx).is_some_and(|ks| !crate::schema::is_system_keyspace(ks));
    if !user {
        return class;
    }
    if !prepared
        && matches!(
            class,
            RequestClass::Read | RequestClass::Write | RequestClass::Cas
        )
    {
        metrics.unprepared();
    }
    if let Statement::Select(select) = statement {
        if page_size.is_none_or(|n| n <= 0) {
            metrics.unpaged();
        }
        if select.allow_filtering {
            metrics.filtered();
        }
    }
    class
}
