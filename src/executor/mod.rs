//! Statement execution: QUERY, PREPARE, EXECUTE and BATCH requests become results. Functions
//! take the node's shared state ([`Node`]) and reach table data only through its
//! [`Shards`](crate::shard::Shards). Everything here is synchronous: it runs on the
//! connection's task, a read thread or the blocking pool, as `connection::dispatch` decides.
//!
//! Plans come from [`crate::planner`]; here they are bound to a request's values and run:
//! - [`values`]: a request's values matched to the bind markers, terms bound;
//! - [`keys`]: WHERE restrictions bound into partition keys, clustering prefixes, slice bounds;
//! - [`select`]: runs a SELECT on a user table, with [`selection`] evaluating its selectors,
//!   `paging_state` resuming it and `column_bytes` giving stored columns in wire form;
//! - [`virtual_select`]: runs a SELECT on a system table, and pages by offset;
//! - [`modify`]: binds INSERT, UPDATE and DELETE into mutations, which `apply` writes;
//!   [`lwt`] runs conditional ones as one compare-and-set;
//! - `batch` and `prepare`: the BATCH and PREPARE messages; `consistency`: the levels accepted,
//!   and the replicas a level needs against the keyspace's replication;
//! - value helpers, which planning uses too: [`literal`], [`json`], [`functions`], [`order`],
//!   [`time`], [`numeric`]; and [`clock`], write timestamps.

mod apply;
mod batch;
pub mod clock;
mod column_bytes;
mod consistency;
pub mod functions;
mod grouper;
pub mod json;
pub mod keys;
pub mod literal;
pub mod lwt;
pub(crate) mod masking;
pub mod modify;
mod node_view;
pub mod numeric;
mod observed;
pub mod order;
mod paging_state;
mod prepare;
pub mod select;
pub mod selection;
pub mod time;
mod traced;
mod user_functions;
pub mod values;
mod views;
pub mod virtual_select;

use crate::context::SessionContext;
use crate::error::QueryError;
use crate::node::Node;
use crate::planner::terms::Markers;
use crate::planner::{self, CachedPlan, Plan};
use crate::prepared::PreparedStatement;
use crate::schema::{self, apply_ddl, Catalog};
use bytes::Bytes;
use cql::ast::Statement;
use cql::request::{Consistency, QueryParameters, RawValue, Request};
use cql::response::{Envelope, Event, Response, ResultBody};
use std::sync::Arc;
use values::Values;

pub(crate) use apply::apply;
pub use consistency::{check_consistency, check_replicas};

/// What the dispatch step already knows of a request, so nothing is looked up or parsed twice.
#[derive(Debug, Default)]
pub enum Known {
    /// Nothing: the executor looks up or parses what it needs.
    #[default]
    Nothing,
    /// An EXECUTE's prepared statement.
    Prepared(Arc<PreparedStatement>),
    /// A QUERY's parsed statement.
    Parsed(Box<Statement>),
}

/// Refuses a request carrying a bound value larger than `max` bytes (`max_value_bytes`, like
/// Cassandra's `max_value_size`).
fn check_value_sizes(request: &Request, max: u64) -> Result<(), QueryError> {
    let check = |values: &[RawValue]| -> Result<(), QueryError> {
        for v in values {
            if let RawValue::Bytes(b) = v {
                if b.len() as u64 > max {
                    return Err(QueryError::invalid(format!(
                        "A bound value of {} bytes exceeds max_value_bytes ({max})",
                        b.len()
                    )));
                }
            }
        }
        Ok(())
    };
    match request {
        Request::Query(q) => check(&q.params.values),
        Request::Execute(e) => check(&e.params.values),
        Request::Batch(b) => b.statements.iter().try_for_each(|s| check(&s.values)),
        _ => Ok(()),
    }
}

/// How a request's values reach a statement.
struct Inputs<'a> {
    consistency: Consistency,
    timestamp: Option<i64>,
    values: &'a [RawValue],
    names: Option<&'a [String]>,
    page_size: Option<i32>,
    paging_state: Option<&'a Bytes>,
}

impl<'a> Inputs<'a> {
    fn of(params: &'a QueryParameters) -> Inputs<'a> {
        Inputs {
            consistency: params.consistency,
            timestamp: params.timestamp,
            values: &params.values,
            names: params.names.as_deref(),
            page_size: params.page_size,
            paging_state: params.paging_state.as_ref(),
        }
    }
}

/// A request's response, and what goes with it in the frame (the warnings it raised).
pub struct Answer {
    /// The response message.
    pub response: Response,
    /// The frame's optional parts.
    pub envelope: Envelope,
    /// How long the request ran (zero when it panicked).
    pub took: std::time::Duration,
}

/// Executes one QUERY, PREPARE, EXECUTE or BATCH request and returns its response with the
/// client warnings it raised; `known` is what the dispatch step already looked up or parsed.
pub fn execute(node: &Node, ctx: &SessionContext, request: Request, known: Known) -> Answer {
    let started = crate::metrics::clock::now();
    // A request that panicked on this thread may have left its note.
    crate::metrics::coordinated::take();
    let class = observed::observe(node.metrics(), ctx, &request, &known);
    let charged = !matches!(request, Request::Prepare(_));
    let slow_log = node.config().slow_query_log_ms;
    let recorded = traced::traced(ctx.traced, node.config().trace_probability);
    let described = (recorded || slow_log > 0).then(|| traced::describe(&request, &known));
    let started_at = described.as_ref().map(|_| std::time::SystemTime::now());
    let first_event = described.as_ref().map(traced::Described::first_event);
    let (((response, spent), warnings), events) = crate::query_trace::capture(recorded, || {
        if let Some(first) = first_event {
            crate::query_trace::event(|| first);
        }
        let answered = crate::client_warnings::capture(|| {
            crate::throughput::request_charge::capture(|| respond(node, ctx, request, known))
        });
        crate::query_trace::event(|| "Request complete".to_string());
        answered
    });
    let ended = crate::metrics::clock::now();
    let took = ended - started;
    let error = match &response {
        Response::Error(e) => Some(e.code()),
        _ => None,
    };
    node.metrics().request(class, took, error);
    if let Some((table, op)) = crate::metrics::coordinated::take() {
        node.metrics().coordinator(table, op, took, ended);
    }
    let slow = slow_log > 0 && took >= std::time::Duration::from_millis(slow_log);
    let tracing_id = match described {
        Some(d) if events.is_some() || slow => Some(traced::keep(
            node,
            ctx.peer.ip(),
            d,
            started_at.unwrap_or_else(std::time::SystemTime::now),
            took,
            events.unwrap_or_default(),
        )),
        _ => None,
    };
    let mut envelope = Envelope::warned(warnings);
    envelope.tracing_id = tracing_id.filter(|_| ctx.traced);
    // Cosmos DB's RequestCharge: the request units spent, an 8-byte big-endian double.
    if charged && matches!(response, Response::Result(_)) {
        envelope
            .custom_payload
            .push((REQUEST_CHARGE.to_string(), spent.to_be_bytes().to_vec()));
    }
    Answer {
        response,
        envelope,
        took,
    }
}

/// The custom payload key of a response's request units.
pub const REQUEST_CHARGE: &str = "RequestCharge";

fn respond(node: &Node, ctx: &SessionContext, request: Request, known: Known) -> Response {
    if let Err(e) = check_value_sizes(&request, node.config().max_value_bytes) {
        return Response::Error(e.to_error_body());
    }
    let result = match request {
        Request::Query(q) => {
            let parsed = match known {
                Known::Parsed(stmt) => Ok(*stmt),
                _ => cql::parse_statement(&q.query).map_err(QueryError::from),
            };
            parsed.and_then(|stmt| query(node, ctx, &stmt, &q.params))
        }
        Request::Prepare(p) => prepare::prepare(node, ctx, &p.query),
        Request::Execute(e) => {
            let known = match known {
                Known::Prepared(p) => Some(p),
                _ => None,
            };
            execute_prepared(node, ctx, &e.id, &e.params, known)
        }
        Request::Batch(b) => batch::batch(node, ctx, &b),
        _ => Err(QueryError::Protocol("Unexpected message".into())),
    };
    match result {
        Ok(body) => Response::Result(body),
        Err(e) => Response::Error(e.to_error_body()),
    }
}

/// [`execute`], with a panic in the request answered as a ServerError (the details go to the
/// log) instead of unwinding into the caller's thread.
pub fn execute_caught(node: &Node, ctx: &SessionContext, request: Request, known: Known) -> Answer {
    let run = std::panic::AssertUnwindSafe(|| execute(node, ctx, request, known));
    std::panic::catch_unwind(run).unwrap_or_else(|_| {
        tracing::warn!("request panicked");
        Answer {
            response: crate::error::internal_error(),
            envelope: Envelope::default(),
            took: std::time::Duration::ZERO,
        }
    })
}

fn query(
    node: &Node,
    ctx: &SessionContext,
    stmt: &Statement,
    params: &QueryParameters,
) -> Result<ResultBody, QueryError> {
    check_consistency(params.consistency, stmt)?;
    run(node, ctx, stmt, &Inputs::of(params))
}

fn execute_prepared(
    node: &Node,
    ctx: &SessionContext,
    id: &Bytes,
    params: &QueryParameters,
    known: Option<Arc<PreparedStatement>>,
) -> Result<ResultBody, QueryError> {
    let prepared = match known {
        Some(p) => p,
        None => node
            .prepared()
            .get(id)
            .ok_or_else(|| QueryError::Unprepared(id.clone()))?,
    };
    check_consistency(params.consistency, &prepared.statement)?;
    let ctx = SessionContext {
        keyspace: prepared.keyspace.clone().or_else(|| ctx.keyspace.clone()),
        peer: ctx.peer,
        user: ctx.user.clone(),
        traced: ctx.traced,
    };
    let mut result = run_prepared(node, &ctx, &prepared, &Inputs::of(params))?;
    // Skip metadata only when the client's copy (from PREPARE) is still exact.
    let metadata = match &mut result {
        ResultBody::Rows(rows) => Some(&mut rows.metadata),
        ResultBody::EncodedRows(rows) => Some(&mut rows.metadata),
        _ => None,
    };
    if let Some(metadata) = metadata {
        if params.skip_metadata && metadata.columns[..] == prepared.result_columns[..] {
            metadata.no_metadata = true;
        }
    }
    Ok(result)
}

/// Runs a prepared statement, planning it only when its cached plan is stale.
fn run_prepared(
    node: &Node,
    ctx: &SessionContext,
    prepared: &PreparedStatement,
    inputs: &Inputs<'_>,
) -> Result<ResultBody, QueryError> {
    if !matches!(
        prepared.statement,
        Statement::Select(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::Batch(_)
    ) {
        return run(node, ctx, &prepared.statement, inputs);
    }
    let catalog = node.catalog();
    crate::auth::authorize(node.auth(), &catalog, ctx, &prepared.statement)?;
    let cached = cached_plan(node, ctx, prepared)?;
    if node.auth().enforces_permissions() {
        crate::auth::authorize_calls(node.auth(), ctx, &cached.functions)?;
        crate::auth::authorize_calls(node.auth(), ctx, &cached.plan.user_functions())?;
    }
    let values = Values::new(inputs.values, inputs.names, &cached.markers)?;
    let _masks = masking::scope_for(node, ctx, &cached.plan)?;
    run_plan(node, &catalog, &cached.plan, &values, inputs)
}

/// The prepared statement's plan for the current catalog, planned and stored when the
/// stored one is missing or stale.
fn cached_plan(
    node: &Node,
    ctx: &SessionContext,
    prepared: &PreparedStatement,
) -> Result<Arc<CachedPlan>, QueryError> {
    let catalog = node.catalog();
    if let Some(c) = prepared.cached_plan() {
        if c.is_current(catalog.version, ctx.keyspace.as_ref()) {
            return Ok(c);
        }
    }
    let mut markers = Markers::default();
    let plan = planner::plan(&catalog, ctx, &prepared.statement, &mut markers)?
        .ok_or_else(|| QueryError::invalid("Unsupported statement"))?;
    let cached = Arc::new(CachedPlan {
        catalog_version: catalog.version,
        keyspace: ctx.keyspace.clone(),
        plan,
        markers: markers.specs,
        functions: markers.functions,
    });
    prepared.set_cached_plan(cached.clone());
    Ok(cached)
}

/// Runs one statement: planned statements through [`run_plan`], the others (USE, TRUNCATE,
/// DESCRIBE, DDL, security statements) here.
fn run(
    node: &Node,
    ctx: &SessionContext,
    stmt: &Statement,
    inputs: &Inputs<'_>,
) -> Result<ResultBody, QueryError> {
    let catalog = node.catalog();
    crate::auth::authorize(node.auth(), &catalog, ctx, stmt)?;
    match stmt {
        Statement::Select(_)
        | Statement::Insert(_)
        | Statement::Update(_)
        | Statement::Delete(_)
        | Statement::Batch(_) => {
            let mut markers = Markers::default();
            let plan = planner::plan(&catalog, ctx, stmt, &mut markers)?
                .ok_or_else(|| QueryError::invalid("Unsupported statement"))?;
            if node.auth().enforces_permissions() {
                crate::auth::authorize_calls(node.auth(), ctx, &markers.functions)?;
                crate::auth::authorize_calls(node.auth(), ctx, &plan.user_functions())?;
            }
            let values = Values::new(inputs.values, inputs.names, &markers.specs)?;
            let _masks = masking::scope_for(node, ctx, &plan)?;
            run_plan(node, &catalog, &plan, &values, inputs)
        }
        Statement::Use(ks) => {
            if catalog.keyspaces.contains_key(ks) {
                Ok(ResultBody::SetKeyspace(ks.clone()))
            } else {
                Err(QueryError::invalid(format!(
                    "Keyspace '{ks}' does not exist"
                )))
            }
        }
        Statement::Truncate(name) => {
            let table = planner::resolve_table(&catalog, ctx, name)?;
            if schema::is_system_keyspace(&table.keyspace) {
                return Err(QueryError::invalid(format!(
                    "Cannot truncate table {} in keyspace {}: system tables are read-only",
                    table.name, table.keyspace
                )));
            }
            // Through the groups in a cluster (a majority of each must be up).
            node.shards_at(cql::request::Consistency::Quorum)
                .get()
                .truncate(schema::table_id(&table))?;
            Ok(ResultBody::Void)
        }
        Statement::Describe(d) => crate::describe::describe(
            &catalog,
            node.info(),
            ctx.keyspace.as_deref(),
            d,
            inputs.page_size,
            inputs.paging_state,
        )
        .map(ResultBody::Rows),
        Statement::CreateKeyspace(_)
        | Statement::AlterKeyspace(_)
        | Statement::DropKeyspace(_)
        | Statement::CreateTable(_)
        | Statement::AlterTable(_)
        | Statement::DropTable(_)
        | Statement::CreateType(_)
        | Statement::AlterType(_)
        | Statement::DropType(_)
        | Statement::CreateView(_)
        | Statement::DropView(_)
        | Statement::AlterView(_)
        | Statement::CreateIndex(_)
        | Statement::DropIndex(_) => {
            if matches!(stmt, Statement::CreateView(_)) {
                views::check_enabled(node)?;
            }
            masking::check_enabled(node.config(), stmt)?;
            let result = run_ddl(node, ctx, stmt)
                .inspect(|r| crate::auth::after_ddl(node.auth(), ctx, stmt, r))?;
            if let (Statement::CreateView(v), ResultBody::SchemaChange(_)) = (stmt, &result) {
                crate::client_warnings::warn(views::EXPERIMENTAL.to_string());
                let ks = schema::keyspace_of(&v.name, ctx.keyspace.as_deref())?;
                let catalog = node.catalog();
                if let (Some(view), Some(base)) = (
                    catalog.table(&ks, &v.name.name),
                    catalog.table(&ks, &v.base.name),
                ) {
                    views::build(node.shards(), base, view)?;
                }
            }
            if matches!(result, ResultBody::SchemaChange(_)) {
                warn_replication(node, stmt);
                if !node.has_peers() {
                    crate::throughput::split_for_throughput(
                        &node.catalog(),
                        node.storage(),
                        node.budgets().max_per_partition(),
                    );
                }
            }
            Ok(result)
        }
        Statement::CreateFunction(_)
        | Statement::DropFunction(_)
        | Statement::CreateAggregate(_)
        | Statement::DropAggregate(_) => {
            user_functions::check(node.config(), ctx.keyspace.as_deref(), stmt)?;
            run_ddl(node, ctx, stmt).inspect(|r| crate::auth::after_ddl(node.auth(), ctx, stmt, r))
        }
        Statement::Unsupported(u) => Err(QueryError::invalid(format!(
            "{} is not supported by ringdb",
            u.kind
        ))),
        _ => crate::auth::execute(node.auth(), &catalog, ctx, stmt),
    }
}

/// Checks that this node meets `cl` for every table `plan` reads or writes ([`check_replicas`]
/// with the table's keyspace). Cassandra's virtual tables (`system_views`,
/// `system_virtual_schema`) have no replicas to count; its other system keyspaces do.
fn check_plan_replicas(
    node: &Node,
    catalog: &Catalog,
    plan: &Plan,
    cl: Consistency,
) -> Result<(), QueryError> {
    // In a cluster the groups' replicas are counted per request (`cluster::shards`).
    if node.has_peers() {
        return Ok(());
    }
    if let Plan::Virtual(v) = plan {
        if crate::system::is_virtual_keyspace(&v.table().keyspace) {
            return Ok(());
        }
    }
    for table in plan.tables() {
        if let Some(ks) = catalog.keyspaces.get(&table.keyspace) {
            check_replicas(cl, &ks.params)?;
        }
    }
    Ok(())
}

/// Runs a plan with its bound values, once the node meets the request's consistency for it.
fn run_plan(
    node: &Node,
    catalog: &Catalog,
    plan: &Plan,
    values: &Values<'_>,
    inputs: &Inputs<'_>,
) -> Result<ResultBody, QueryError> {
    let consistency = match plan {
        Plan::Select(s) if s.ann.is_some() => topk_consistency(inputs.consistency)?,
        _ => inputs.consistency,
    };
    check_plan_replicas(node, catalog, plan, consistency)?;
    let shards_at = node.shards_at(consistency);
    let shards = shards_at.get();
    match plan {
        Plan::Virtual(v) => {
            let view = match node.cluster() {
                Some(c) if crate::system::describes_cluster(v.table()) => {
                    crate::system::ClusterView {
                        peers: c.peers(),
                        local_tokens: c.local_tokens(),
                        nodes: c.nodes(),
                        placements: c.placements(),
                        moves: c.moves(),
                    }
                }
                _ => crate::system::ClusterView::default(),
            };
            let table = v.table();
            let local = if crate::system::describes_node(&table.keyspace, &table.name) {
                node_view::node_view(node)
            } else {
                crate::system::NodeView::default()
            };
            let auth = node.auth().state();
            let traces = if table.keyspace == "system_traces" {
                node.traces().all()
            } else {
                Vec::new()
            };
            let sources = crate::system::Sources {
                traces: &traces,
                info: node.info(),
                cluster: &view,
                catalog,
                auth: &auth,
                storage: node.storage(),
                budgets: node.budgets(),
                node: &local,
            };
            let rows = crate::system::rows_for(&sources, v.table());
            Ok(ResultBody::Rows(v.execute(
                rows,
                values,
                inputs.page_size,
                inputs.paging_state,
            )?))
        }
        Plan::NodeState(p) => match node.cluster() {
            Some(c) => {
                c.set_node_state(p.host_id, p.state)?;
                Ok(ResultBody::Void)
            }
            None => Err(QueryError::invalid("this node is not in a cluster")),
        },
        Plan::Select(s) => {
            let op = if s.restrictions.partition.is_some() {
                crate::metrics::Operation::Read
            } else {
                crate::metrics::Operation::Scan
            };
            crate::metrics::coordinated::note(crate::schema::table_id(&s.table), op);
            s.execute(shards, values, inputs.page_size, inputs.paging_state)
        }
        Plan::Modify(m) if m.conditions().is_some() => {
            let write = crate::metrics::Operation::Write;
            crate::metrics::coordinated::note(crate::schema::table_id(m.table()), write);
            let ts = inputs.timestamp.unwrap_or_else(clock::next_timestamp);
            let result = views::around_conditional(shards, catalog, &[m], &[values], ts, || {
                lwt::execute(shards, &[m], &[values], ts, false)
            });
            Ok(ResultBody::Rows(result?))
        }
        Plan::Modify(m) => {
            let write = crate::metrics::Operation::Write;
            crate::metrics::coordinated::note(crate::schema::table_id(m.table()), write);
            views::check_writable(m.table())?;
            let mutations = m.mutations(values, inputs.timestamp, shards)?;
            views::apply(
                shards,
                catalog,
                mutations
                    .into_iter()
                    .map(|x| (m.table().clone(), x))
                    .collect(),
            )?;
            Ok(ResultBody::Void)
        }
        Plan::Batch(plans, timestamp) => {
            let ts = match timestamp {
                Some(t) => match values.bind(t)? {
                    values::Bound::Value(cql::types::Value::Bigint(ts)) => ts,
                    _ => inputs.timestamp.unwrap_or_else(clock::next_timestamp),
                },
                None => inputs.timestamp.unwrap_or_else(clock::next_timestamp),
            };
            if plans.iter().any(|p| p.conditions().is_some()) {
                let refs: Vec<&planner::modify::ModifyPlan> = plans.iter().collect();
                let vals: Vec<&Values<'_>> = plans.iter().map(|_| values).collect();
                let rows = views::around_conditional(shards, catalog, &refs, &vals, ts, || {
                    lwt::execute(shards, &refs, &vals, ts, true)
                })?;
                return Ok(ResultBody::Rows(rows));
            }
            let mut writes = Vec::new();
            for p in plans {
                views::check_writable(p.table())?;
                for m in p.mutations(values, Some(ts), shards)? {
                    writes.push((p.table().clone(), m));
                }
            }
            views::apply(shards, catalog, writes)?;
            Ok(ResultBody::Void)
        }
    }
}

/// Runs a schema change in a cluster: planned on this node's catalog and replicated through
/// the schema log, which installs it on every node (tables, events included); planned again
/// when another change got in first.
fn run_replicated_ddl(
    node: &Node,
    cluster: &dyn crate::cluster_hooks::ClusterHooks,
    ctx: &SessionContext,
    stmt: &Statement,
    now: i64,
) -> Result<ResultBody, QueryError> {
    use crate::cluster_hooks::SchemaProposal;
    for _ in 0..20 {
        let current = node.catalog();
        let mut next = (*current).clone();
        let outcome = apply_ddl(&mut next, stmt, ctx.keyspace.as_deref(), now)?;
        let Some(change) = outcome.change else {
            return Ok(ResultBody::Void);
        };
        next.version = uuid::Uuid::new_v4();
        match cluster.propose_schema(current.version, &next, &change)? {
            SchemaProposal::Installed => return Ok(ResultBody::SchemaChange(change)),
            SchemaProposal::Stale => continue,
        }
    }
    Err(QueryError::Server(
        "The schema kept changing while this change was made; try again".into(),
    ))
}

/// Cassandra's warning after CREATE or ALTER KEYSPACE when a replication factor is higher
/// than the number of nodes (`SimpleStrategy`/`NetworkTopologyStrategy.validate`).
fn warn_replication(node: &Node, stmt: &Statement) {
    let name = match stmt {
        Statement::CreateKeyspace(c) => &c.name,
        Statement::AlterKeyspace(a) => &a.name,
        _ => return,
    };
    let catalog = node.catalog();
    let Some(ks) = catalog.keyspaces.get(name) else {
        return;
    };
    // Every node is in the one datacenter.
    let nodes = node.cluster().map_or(1, |c| c.nodes().len().max(1));
    let name = &ks.name;
    match ks.params.replicas() {
        schema::Replicas::Simple(rf) if rf as usize > nodes => {
            crate::client_warnings::warn(format!(
                "Your replication factor {rf} for keyspace {name} is higher than the number of nodes {nodes}"
            ));
        }
        replicas @ schema::Replicas::PerDc(_) => {
            for (dc, rf) in replicas.per_dc() {
                if dc == schema::DATA_CENTER && rf as usize > nodes {
                    crate::client_warnings::warn(format!(
                        "Your replication factor {rf} for keyspace {name} is higher than the number of nodes {nodes} for datacenter {dc}"
                    ));
                }
            }
        }
        _ => {}
    }
}

/// Cassandra 5.0's top-K (ANN) rule (`SelectStatement.execute`): SERIAL levels are refused,
/// levels above ONE are downgraded to ONE (LOCAL_ONE when datacenter-local) with a warning.
fn topk_consistency(cl: Consistency) -> Result<Consistency, QueryError> {
    match cl {
        Consistency::Serial | Consistency::LocalSerial => Err(QueryError::invalid(format!(
            "Top-K queries can only be run with consistency level ONE/LOCAL_ONE. Consistency level {} was used.",
            cl.name()
        ))),
        Consistency::One | Consistency::LocalOne => Ok(cl),
        _ => {
            let local = cl == Consistency::LocalQuorum;
            let to = if local { Consistency::LocalOne } else { Consistency::One };
            crate::client_warnings::warn(format!(
                "Top-K queries can only be run with consistency level ONE / LOCAL_ONE / NODE_LOCAL. Consistency level {} was requested. Downgrading the consistency level to {}.",
                cl.name(),
                to.name()
            ));
            Ok(to)
        }
    }
}

/// Runs a schema change: the catalog first (persisted), then the tables' shards, then the
/// prepared statements it made stale and the SCHEMA_CHANGE event.
fn run_ddl(node: &Node, ctx: &SessionContext, stmt: &Statement) -> Result<ResultBody, QueryError> {
    let now = node.now_ms();
    if let Some(cluster) = node.cluster() {
        return run_replicated_ddl(node, cluster.as_ref(), ctx, stmt, now);
    }
    let outcome = node.update_catalog(|catalog| {
        let outcome = apply_ddl(catalog, stmt, ctx.keyspace.as_deref(), now)?;
        let changed = outcome.change.is_some();
        Ok((outcome, changed))
    })?;
    for t in &outcome.storage_tables {
        node.shards()
            .create_table(schema::table_id(t), schema::layout_of(t))?;
    }
    for id in &outcome.dropped_tables {
        node.shards().drop_table(storage::TableId(id.as_u128()))?;
    }
    match outcome.change {
        Some(change) => {
            node.prepared().invalidate(&change);
            node.publish(Event::SchemaChange(change.clone()));
            Ok(ResultBody::SchemaChange(change))
        }
        None => Ok(ResultBody::Void),
    }
}
