//! Statement execution: QUERY, PREPARE, EXECUTE and BATCH requests become results.
//! Everything here is synchronous and runs on the blocking pool (storage is fjall).

pub mod clock;
pub mod functions;
pub mod json;
pub mod literal;
pub mod lwt;
pub mod modify;
pub mod numeric;
pub mod order;
pub mod restrictions;
pub mod select;
pub mod selection;
pub mod terms;
pub mod time;
pub mod virtual_select;

use crate::error::QueryError;
use crate::node::{layout_of, table_id, Node};
use crate::prepared::{statement_id, PreparedStatement};
use crate::schema::{self, apply_ddl};
use crate::session::SessionContext;
use bytes::Bytes;
use cql::ast::{QualifiedName, Statement};
use cql::request::{Consistency, QueryParameters, RawValue, Request};
use cql::response::{
    ColumnSpec, Event, Prepared, PreparedMetadata, Response, ResultBody, ResultMetadata,
};
use modify::ModifyPlan;
use select::SelectPlan;
use std::collections::BTreeMap;
use std::sync::Arc;
use terms::{Markers, Values};
use virtual_select::VirtualSelect;

/// Bind-marker specs, result columns and partition-key marker indexes.
type MarkerInfo = (Vec<ColumnSpec>, Vec<ColumnSpec>, Vec<u16>);

/// Writes grouped by (table id, partition key).
type WritesByPartition = BTreeMap<(u128, Vec<Vec<u8>>), (Arc<schema::Table>, storage::Mutation)>;

/// The token of a partition key given as serialized components.
fn partition_token(components: &[Vec<u8>]) -> i64 {
    let parts: Vec<&[u8]> = components.iter().map(Vec::as_slice).collect();
    storage::token::token(&storage::token::serialize_partition_key(&parts))
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

/// A prepared statement's plan, kept with the statement so EXECUTE binds values without
/// re-planning; valid while the catalog version and the keyspace it was planned in hold.
pub(crate) struct CachedPlan {
    /// Catalog version the plan was made against.
    catalog_version: uuid::Uuid,
    /// Keyspace unqualified names resolved in.
    keyspace: Option<Arc<str>>,
    plan: Plan,
    markers: Vec<ColumnSpec>,
}

impl CachedPlan {
    /// The tables the statement writes (none for a SELECT).
    fn written_tables(&self) -> impl Iterator<Item = &Arc<schema::Table>> {
        let plans: &[ModifyPlan] = match &self.plan {
            Plan::Modify(m) => std::slice::from_ref(m),
            Plan::Batch(plans, _) => plans,
            Plan::Select(_) | Plan::Virtual(_) => &[],
        };
        plans.iter().map(ModifyPlan::table)
    }

    /// True for statements cheap and bounded enough to run on the connection's own task
    /// instead of hopping to the blocking pool: unconditional writes (unless every write
    /// waits for an fsync) and reads of named partitions without filtering or aggregation.
    pub(crate) fn runs_inline(&self, fsync_per_write: bool) -> Option<Inline> {
        let inline = match &self.plan {
            Plan::Select(s) => return s.is_partition_read().then_some(Inline::Read),
            Plan::Modify(m) => m.conditions().is_none() && !fsync_per_write,
            Plan::Batch(plans, _) => {
                !fsync_per_write
                    && plans.len() <= 16
                    && plans.iter().all(|p| p.conditions().is_none())
            }
            Plan::Virtual(_) => false,
        };
        inline.then_some(Inline::Write)
    }
}

/// What a request that runs on the connection's own task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inline {
    /// Reads only: owes no journal flush, so it may also run on a read thread.
    Read,
    /// Writes: its journal flush is shared with the requests answered beside it.
    Write,
}

/// A statement planned against the catalog.
enum Plan {
    /// SELECT on a system table.
    Virtual(VirtualSelect),
    /// SELECT on a user table.
    Select(SelectPlan),
    /// INSERT, UPDATE or DELETE.
    Modify(ModifyPlan),
    /// BEGIN BATCH ... APPLY BATCH.
    Batch(Vec<ModifyPlan>, Option<terms::Term>),
}

/// How a request's values reach a statement.
struct Inputs<'a> {
    timestamp: Option<i64>,
    values: &'a [RawValue],
    names: Option<&'a [String]>,
    page_size: Option<i32>,
    paging_state: Option<&'a Bytes>,
}

impl Node {
    /// Executes one QUERY, PREPARE, EXECUTE or BATCH request and returns its response.
    pub fn execute(&self, ctx: &SessionContext, request: Request, version: u8) -> Response {
        self.execute_known(ctx, request, version, None)
    }

    /// Like [`Node::execute`], with an EXECUTE's statement already looked up (by
    /// [`Node::runs_inline`]), so it is not looked up again.
    pub fn execute_known(
        &self,
        ctx: &SessionContext,
        request: Request,
        _version: u8,
        prepared: Option<Arc<PreparedStatement>>,
    ) -> Response {
        if let Err(e) = check_value_sizes(&request, self.config().max_value_bytes) {
            return Response::Error(e.to_error_body());
        }
        let result = match request {
            Request::Query(q) => self.query(ctx, &q.query, &q.params),
            Request::Prepare(p) => self.prepare(ctx, &p.query),
            Request::Execute(e) => self.execute_prepared(ctx, &e.id, &e.params, prepared),
            Request::Batch(b) => check_consistency(b.consistency, &Statement::Use(String::new()))
                .and_then(|()| self.batch(ctx, &b)),
            _ => Err(QueryError::Protocol("Unexpected message".into())),
        };
        match result {
            Ok(body) => Response::Result(body),
            Err(e) => Response::Error(e.to_error_body()),
        }
    }

    /// Whether `request` may run on the connection's own task, and as what: an EXECUTE whose
    /// stored plan is current and cheap (see [`CachedPlan::runs_inline`]), returned with its
    /// statement. Anything else (`None`), including a statement's first execution, goes to
    /// the blocking pool.
    pub fn runs_inline(
        &self,
        ctx: &SessionContext,
        request: &Request,
    ) -> Option<(Inline, Arc<PreparedStatement>)> {
        let Request::Execute(e) = request else {
            return None;
        };
        let prepared = self.prepared().get(&e.id)?;
        let cached = prepared.cached_plan()?;
        let keyspace = prepared.keyspace.as_ref().or(ctx.keyspace.as_ref());
        if cached.keyspace.as_ref() != keyspace || cached.catalog_version != self.catalog().version
        {
            return None;
        }
        let inline = cached.runs_inline(matches!(
            self.config().commitlog_sync,
            crate::config::CommitlogSync::Batch
        ))?;
        // A write fjall would stall goes to the blocking pool, where sleeping is harmless
        // and the node-wide request slots bound the queue (beyond them: Overloaded).
        let stalled = cached
            .written_tables()
            .any(|t| self.storage().write_stalled(table_id(t)));
        (!stalled).then_some((inline, prepared))
    }

    fn query(
        &self,
        ctx: &SessionContext,
        text: &str,
        params: &QueryParameters,
    ) -> Result<ResultBody, QueryError> {
        let stmt = cql::parse_statement(text)?;
        check_consistency(params.consistency, &stmt)?;
        let inputs = Inputs {
            timestamp: params.timestamp,
            values: &params.values,
            names: params.names.as_deref(),
            page_size: params.page_size,
            paging_state: params.paging_state.as_ref(),
        };
        self.run(ctx, &stmt, &inputs)
    }

    fn execute_prepared(
        &self,
        ctx: &SessionContext,
        id: &Bytes,
        params: &QueryParameters,
        known: Option<Arc<PreparedStatement>>,
    ) -> Result<ResultBody, QueryError> {
        let prepared = match known {
            Some(p) => p,
            None => self
                .prepared()
                .get(id)
                .ok_or_else(|| QueryError::Unprepared(id.clone()))?,
        };
        check_consistency(params.consistency, &prepared.statement)?;
        let ctx = SessionContext {
            keyspace: prepared.keyspace.clone().or_else(|| ctx.keyspace.clone()),
            peer: ctx.peer,
            user: ctx.user.clone(),
        };
        let inputs = Inputs {
            timestamp: params.timestamp,
            values: &params.values,
            names: params.names.as_deref(),
            page_size: params.page_size,
            paging_state: params.paging_state.as_ref(),
        };
        let mut result = self.run_prepared(&ctx, &prepared, &inputs)?;
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
        &self,
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
            return self.run(ctx, &prepared.statement, inputs);
        }
        crate::auth::authorize(self, ctx, &prepared.statement)?;
        let cached = self.cached_plan(ctx, prepared)?;
        let values = Values::new(inputs.values, inputs.names, &cached.markers)?;
        self.run_plan(&cached.plan, &values, inputs)
    }

    /// The prepared statement's plan for the current catalog, planned and stored when the
    /// stored one is missing or stale.
    pub(crate) fn cached_plan(
        &self,
        ctx: &SessionContext,
        prepared: &PreparedStatement,
    ) -> Result<Arc<CachedPlan>, QueryError> {
        let version = self.catalog().version;
        if let Some(c) = prepared.cached_plan() {
            if c.catalog_version == version && c.keyspace == ctx.keyspace {
                return Ok(c);
            }
        }
        let mut markers = Markers::default();
        let plan = self
            .plan(ctx, &prepared.statement, &mut markers)?
            .ok_or_else(|| QueryError::invalid("Unsupported statement"))?;
        let cached = Arc::new(CachedPlan {
            catalog_version: version,
            keyspace: ctx.keyspace.clone(),
            plan,
            markers: markers.specs,
        });
        prepared.set_cached_plan(cached.clone());
        Ok(cached)
    }

    fn prepare(&self, ctx: &SessionContext, text: &str) -> Result<ResultBody, QueryError> {
        let statement = cql::parse_statement(text)?;
        let (markers, result_columns, pk_indexes) = self.describe_markers(ctx, &statement)?;
        let id = statement_id(ctx.keyspace.as_deref(), text);
        let prepared = Arc::new(PreparedStatement {
            id,
            query: text.to_string(),
            keyspace: ctx.keyspace.clone(),
            statement,
            markers: markers.clone(),
            result_columns: result_columns.clone(),
            pk_indexes: pk_indexes.clone(),
            plan: Default::default(),
        });
        self.prepared().insert(prepared);
        Ok(ResultBody::Prepared(Prepared {
            id: Bytes::copy_from_slice(&id),
            metadata: PreparedMetadata {
                columns: markers,
                pk_indexes,
            },
            result_metadata: ResultMetadata {
                no_metadata: result_columns.is_empty(),
                columns: result_columns.into(),
                paging_state: None,
            },
        }))
    }

    /// Bind-marker specs, result columns and partition-key marker indexes of a statement.
    fn describe_markers(
        &self,
        ctx: &SessionContext,
        stmt: &Statement,
    ) -> Result<MarkerInfo, QueryError> {
        let mut markers = Markers::default();
        let Some(plan) = self.plan(ctx, stmt, &mut markers)? else {
            return Ok((Vec::new(), Vec::new(), Vec::new()));
        };
        Ok(match plan {
            Plan::Virtual(v) => (markers.specs, v.columns(), Vec::new()),
            Plan::Select(s) => {
                let pk = s.pk_indexes();
                (markers.specs, s.columns().to_vec(), pk)
            }
            Plan::Modify(m) => {
                let pk = m.pk_indexes();
                (markers.specs, Vec::new(), pk)
            }
            Plan::Batch(..) => (markers.specs, Vec::new(), Vec::new()),
        })
    }

    /// Plans SELECT, INSERT, UPDATE, DELETE and BATCH statements; None for the others.
    fn plan(
        &self,
        ctx: &SessionContext,
        stmt: &Statement,
        markers: &mut Markers,
    ) -> Result<Option<Plan>, QueryError> {
        Ok(Some(match stmt {
            Statement::Select(select) => {
                let table = self.resolve_table(ctx, &select.table)?;
                if schema::is_system_keyspace(&table.keyspace) {
                    Plan::Virtual(VirtualSelect::plan(select, table, markers)?)
                } else {
                    Plan::Select(SelectPlan::plan(select, table, markers)?)
                }
            }
            Statement::Insert(s) => Plan::Modify(ModifyPlan::insert(
                s,
                self.writable_table(ctx, &s.table)?,
                markers,
            )?),
            Statement::Update(s) => Plan::Modify(ModifyPlan::update(
                s,
                self.writable_table(ctx, &s.table)?,
                markers,
            )?),
            Statement::Delete(s) => Plan::Modify(ModifyPlan::delete(
                s,
                self.writable_table(ctx, &s.table)?,
                markers,
            )?),
            Statement::Batch(b) => {
                let timestamp = match &b.using.timestamp {
                    Some(e) => Some(markers.term_named(
                        e,
                        &cql::types::DataType::Native(cql::types::NativeType::Bigint),
                        "",
                        "",
                        "[timestamp]",
                        "[timestamp]",
                    )?),
                    None => None,
                };
                let mut plans = Vec::new();
                for inner in &b.statements {
                    match self.plan(ctx, inner, markers)? {
                        Some(Plan::Modify(m)) => plans.push(m),
                        _ => {
                            return Err(QueryError::invalid(
                                "Only INSERT, UPDATE and DELETE statements are allowed in a BATCH",
                            ))
                        }
                    }
                }
                check_batch_kind(b.batch_type, plans.iter().map(|p| p.table().is_counter()))?;
                if timestamp.is_some() && plans.iter().any(ModifyPlan::has_timestamp) {
                    return Err(QueryError::invalid(
                        "Timestamp must be set either on BATCH or individual statements",
                    ));
                }
                Plan::Batch(plans, timestamp)
            }
            _ => return Ok(None),
        }))
    }

    fn writable_table(
        &self,
        ctx: &SessionContext,
        name: &QualifiedName,
    ) -> Result<Arc<schema::Table>, QueryError> {
        let table = self.resolve_table(ctx, name)?;
        if schema::is_system_keyspace(&table.keyspace) {
            return Err(QueryError::Unauthorized(format!(
                "{} keyspace is not user-modifiable.",
                table.keyspace
            )));
        }
        Ok(table)
    }

    /// Applies mutations, merging those of one partition of one table into one atomic write.
    fn apply(
        &self,
        writes: Vec<(Arc<schema::Table>, storage::Mutation)>,
    ) -> Result<(), QueryError> {
        // Statements on one partition (every single-statement write) need no merging.
        let merged: Vec<(Arc<schema::Table>, storage::Mutation)> = if writes.len() == 1 {
            writes
        } else {
            let mut by_partition: WritesByPartition = BTreeMap::new();
            for (table, m) in writes {
                let key = (table.id.as_u128(), m.partition_key.clone());
                match by_partition.get_mut(&key) {
                    Some((_, into)) => {
                        into.partition_deletion =
                            match (into.partition_deletion, m.partition_deletion) {
                                (Some(a), Some(b)) => {
                                    Some(if a.timestamp >= b.timestamp { a } else { b })
                                }
                                (a, b) => a.or(b),
                            };
                        into.range_deletions.extend(m.range_deletions);
                        into.static_columns.extend(m.static_columns);
                        into.rows.extend(m.rows);
                    }
                    None => {
                        by_partition.insert(key, (table, m));
                    }
                }
            }
            by_partition.into_values().collect()
        };
        // One atomic storage write for every partition: a logged batch spanning partitions
        // is all there or not at all after a crash.
        let writes: Vec<(storage::TableId, &storage::Mutation)> = merged
            .iter()
            .map(|(table, m)| (table_id(table), m))
            .collect();
        self.storage().apply_all(&writes).map_err(|e| {
            let culprit = match &e {
                storage::StorageError::PartitionTooLarge { table, token, .. } => {
                    merged.iter().find(|(t, m)| {
                        table_id(t) == *table && partition_token(&m.partition_key) == *token
                    })
                }
                _ => None,
            };
            match culprit {
                Some((table, m)) => crate::error::write_error(e, table, &m.partition_key),
                None => e.into(),
            }
        })
    }

    /// Looks a table up, from the session keyspace when unqualified.
    fn resolve_table(
        &self,
        ctx: &SessionContext,
        name: &QualifiedName,
    ) -> Result<Arc<schema::Table>, QueryError> {
        let catalog = self.catalog();
        let ks = name
            .keyspace
            .as_deref()
            .or(ctx.keyspace.as_deref())
            .ok_or_else(|| {
                QueryError::invalid(
                    "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename",
                )
            })?;
        if !catalog.keyspaces.contains_key(ks) {
            return Err(QueryError::invalid(format!("Keyspace {ks} does not exist")));
        }
        catalog
            .table(ks, &name.name)
            .cloned()
            .ok_or_else(|| QueryError::invalid(format!("unconfigured table {}", name.name)))
    }

    fn run(
        &self,
        ctx: &SessionContext,
        stmt: &Statement,
        inputs: &Inputs<'_>,
    ) -> Result<ResultBody, QueryError> {
        crate::auth::authorize(self, ctx, stmt)?;
        match stmt {
            Statement::Select(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::Batch(_) => {
                let mut markers = Markers::default();
                let plan = self
                    .plan(ctx, stmt, &mut markers)?
                    .ok_or_else(|| QueryError::invalid("Unsupported statement"))?;
                let values = Values::new(inputs.values, inputs.names, &markers.specs)?;
                self.run_plan(&plan, &values, inputs)
            }
            Statement::Use(ks) => {
                if self.catalog().keyspaces.contains_key(ks) {
                    Ok(ResultBody::SetKeyspace(ks.clone()))
                } else {
                    Err(QueryError::invalid(format!(
                        "Keyspace '{ks}' does not exist"
                    )))
                }
            }
            Statement::Truncate(name) => {
                let table = self.resolve_table(ctx, name)?;
                if schema::is_system_keyspace(&table.keyspace) {
                    return Err(QueryError::invalid(format!(
                        "Cannot truncate table {} in keyspace {}: system tables are read-only",
                        table.name, table.keyspace
                    )));
                }
                self.storage().truncate(table_id(&table))?;
                Ok(ResultBody::Void)
            }
            Statement::Describe(d) => {
                let catalog = self.catalog();
                crate::describe::describe(
                    &catalog,
                    self.info(),
                    ctx.keyspace.as_deref(),
                    d,
                    inputs.page_size,
                    inputs.paging_state,
                )
                .map(ResultBody::Rows)
            }
            Statement::CreateKeyspace(_)
            | Statement::AlterKeyspace(_)
            | Statement::DropKeyspace(_)
            | Statement::CreateTable(_)
            | Statement::AlterTable(_)
            | Statement::DropTable(_)
            | Statement::CreateType(_)
            | Statement::AlterType(_)
            | Statement::DropType(_) => self
                .run_ddl(ctx, stmt)
                .inspect(|r| crate::auth::after_ddl(self, ctx, stmt, r)),
            Statement::CreateIndex(_) | Statement::DropIndex(_) => Err(QueryError::invalid(
                "Secondary indexes are not supported by ringdb",
            )),
            Statement::Unsupported(u) => Err(QueryError::invalid(format!(
                "{} is not supported by ringdb",
                u.kind
            ))),
            _ => crate::auth::execute(self, ctx, stmt),
        }
    }

    fn run_plan(
        &self,
        plan: &Plan,
        values: &Values<'_>,
        inputs: &Inputs<'_>,
    ) -> Result<ResultBody, QueryError> {
        match plan {
            Plan::Virtual(v) => {
                let catalog = self.catalog();
                let rows = crate::system::rows_for(
                    self.info(),
                    &catalog,
                    &self.auth().state(),
                    self.storage(),
                    v.table(),
                );
                Ok(ResultBody::Rows(v.execute(
                    rows,
                    values,
                    inputs.page_size,
                    inputs.paging_state,
                )?))
            }
            Plan::Select(s) => s.execute(
                self.storage(),
                values,
                inputs.page_size,
                inputs.paging_state,
            ),
            Plan::Modify(m) if m.conditions().is_some() => {
                let ts = inputs.timestamp.unwrap_or_else(clock::next_timestamp);
                Ok(ResultBody::Rows(lwt::execute(
                    self.storage(),
                    self.partition_locks(),
                    &[m],
                    &[values],
                    ts,
                )?))
            }
            Plan::Modify(m) => {
                let mutations = m.mutations(values, inputs.timestamp, self.storage())?;
                self.apply(
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
                        terms::Bound::Value(cql::types::Value::Bigint(ts)) => ts,
                        _ => inputs.timestamp.unwrap_or_else(clock::next_timestamp),
                    },
                    None => inputs.timestamp.unwrap_or_else(clock::next_timestamp),
                };
                if plans.iter().any(|p| p.conditions().is_some()) {
                    let refs: Vec<&ModifyPlan> = plans.iter().collect();
                    let vals: Vec<&Values<'_>> = plans.iter().map(|_| values).collect();
                    return Ok(ResultBody::Rows(lwt::execute(
                        self.storage(),
                        self.partition_locks(),
                        &refs,
                        &vals,
                        ts,
                    )?));
                }
                let mut writes = Vec::new();
                for p in plans {
                    for m in p.mutations(values, Some(ts), self.storage())? {
                        writes.push((p.table().clone(), m));
                    }
                }
                self.apply(writes)?;
                Ok(ResultBody::Void)
            }
        }
    }

    fn batch(
        &self,
        ctx: &SessionContext,
        batch: &cql::request::Batch,
    ) -> Result<ResultBody, QueryError> {
        if batch.statements.len() > u16::MAX as usize {
            return Err(QueryError::invalid("Too many statements in BATCH"));
        }
        let ts = batch.timestamp.unwrap_or_else(clock::next_timestamp);
        let mut writes = Vec::new();
        let mut counters = Vec::new();
        let mut planned: Vec<(ModifyPlan, Vec<ColumnSpec>, usize)> = Vec::new();
        for entry in &batch.statements {
            let (stmt, ctx_ks) = match &entry.kind {
                cql::request::BatchStatementKind::Query(text) => {
                    (Arc::new(cql::parse_statement(text)?), ctx.keyspace.clone())
                }
                cql::request::BatchStatementKind::Prepared(id) => {
                    let p = self
                        .prepared()
                        .get(id)
                        .ok_or_else(|| QueryError::Unprepared(id.clone()))?;
                    (
                        Arc::new(p.statement.clone()),
                        p.keyspace.clone().or_else(|| ctx.keyspace.clone()),
                    )
                }
            };
            let inner_ctx = SessionContext {
                keyspace: ctx_ks,
                peer: ctx.peer,
                user: ctx.user.clone(),
            };
            crate::auth::authorize(self, &inner_ctx, &stmt)?;
            let mut markers = Markers::default();
            let plan = match self.plan(&inner_ctx, &stmt, &mut markers)? {
                Some(Plan::Modify(m)) => m,
                _ => {
                    return Err(QueryError::invalid(
                        "Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.",
                    ))
                }
            };
            counters.push(plan.table().is_counter());
            planned.push((plan, markers.specs, planned.len()));
        }
        let bound: Vec<Values<'_>> = planned
            .iter()
            .zip(&batch.statements)
            .map(|((_, specs, _), entry)| Values::new(&entry.values, None, specs))
            .collect::<Result<_, _>>()?;
        if planned.iter().any(|(p, _, _)| p.conditions().is_some()) {
            let refs: Vec<&ModifyPlan> = planned.iter().map(|(p, _, _)| p).collect();
            let vals: Vec<&Values<'_>> = bound.iter().collect();
            return Ok(ResultBody::Rows(lwt::execute(
                self.storage(),
                self.partition_locks(),
                &refs,
                &vals,
                ts,
            )?));
        }
        for ((plan, _, _), values) in planned.iter().zip(&bound) {
            for m in plan.mutations(values, Some(ts), self.storage())? {
                writes.push((plan.table().clone(), m));
            }
        }
        let kind = match batch.batch_type {
            cql::request::BatchType::Logged => cql::ast::BatchType::Logged,
            cql::request::BatchType::Unlogged => cql::ast::BatchType::Unlogged,
            cql::request::BatchType::Counter => cql::ast::BatchType::Counter,
        };
        check_batch_kind(kind, counters.into_iter())?;
        self.apply(writes)?;
        Ok(ResultBody::Void)
    }

    fn run_ddl(&self, ctx: &SessionContext, stmt: &Statement) -> Result<ResultBody, QueryError> {
        let now = self.now_ms();
        let outcome = self.update_catalog(|catalog| {
            let outcome = apply_ddl(catalog, stmt, ctx.keyspace.as_deref(), now)?;
            let changed = outcome.change.is_some();
            Ok((outcome, changed))
        })?;
        for t in &outcome.storage_tables {
            self.storage().create_table(table_id(t), layout_of(t))?;
        }
        for id in &outcome.dropped_tables {
            self.storage().drop_table(storage::TableId(id.as_u128()))?;
        }
        match outcome.change {
            Some(change) => {
                self.prepared().invalidate(&change);
                self.publish(Event::SchemaChange(change.clone()));
                Ok(ResultBody::SchemaChange(change))
            }
            None => Ok(ResultBody::Void),
        }
    }
}

/// Counter batches hold only counter updates; other batches none.
fn check_batch_kind(
    kind: cql::ast::BatchType,
    counters: impl Iterator<Item = bool>,
) -> Result<(), QueryError> {
    for is_counter in counters {
        match (kind, is_counter) {
            (cql::ast::BatchType::Counter, false) => {
                return Err(QueryError::invalid(
                    "Cannot include non-counter statement in a counter batch",
                ))
            }
            (cql::ast::BatchType::Logged, true) => {
                return Err(QueryError::invalid(
                    "Cannot include a counter statement in a logged batch",
                ))
            }
            (cql::ast::BatchType::Unlogged, true) => {
                return Err(QueryError::invalid(
                    "Counter and non-counter mutations cannot exist in the same batch",
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// True for INSERT/UPDATE/DELETE/BATCH statements that carry an IF clause.
fn is_conditional(stmt: &Statement) -> bool {
    match stmt {
        Statement::Insert(i) => i.if_not_exists,
        Statement::Update(u) => u.conditions.is_some(),
        Statement::Delete(d) => d.conditions.is_some(),
        Statement::Batch(b) => b.statements.iter().any(is_conditional),
        _ => false,
    }
}

/// A single node with replication factor 1 answers as Cassandra would.
fn check_consistency(cl: Consistency, stmt: &Statement) -> Result<(), QueryError> {
    let is_write = matches!(
        stmt,
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) | Statement::Batch(_)
    );
    if matches!(cl, Consistency::Serial | Consistency::LocalSerial)
        && is_write
        && !is_conditional(stmt)
    {
        return Err(QueryError::invalid(
            "You must use conditional updates for serializable writes",
        ));
    }
    let required = match cl {
        Consistency::Two => 2,
        Consistency::Three => 3,
        _ => 1,
    };
    if required > 1 {
        return Err(QueryError::Unavailable {
            consistency: cl,
            required,
            alive: 1,
        });
    }
    if matches!(cl, Consistency::Any) && matches!(stmt, Statement::Select(_)) {
        return Err(QueryError::invalid(
            "ANY ConsistencyLevel is only supported for writes",
        ));
    }
    Ok(())
}
