//! The dispatch step: one decoded request frame goes to the session (connection-state
//! requests), or is routed by its plan to run inline on the connection's task, on a read
//! thread, or on the blocking pool. Each request's prepared statement is looked up once here
//! and each QUERY parsed once here; both are handed on to the executor.

use super::answered::{Answered, FLUSH_EVERY_ANSWERS};
use super::read_threads::{ReadJob, ReadOffload};
use crate::config::{CommitlogSync, Config};
use crate::context::SessionContext;
use crate::error::{internal_error, QueryError};
use crate::executor::{self, Known};
use crate::node::Node;
use crate::planner::Inline;
use crate::prepared::PreparedStatement;
use bytes::Bytes;
use cql::ast::Statement;
use cql::frame::{self, Frame, Opcode};
use cql::request::{CustomPayload, Request};
use cql::response::Envelope;
use std::sync::Arc;
use std::time::Duration;
use tracing::warn;

/// Where a request runs.
enum Route {
    /// On the connection's own task (a read may go to a read thread instead): a prepared
    /// statement whose current plan is cheap and bounded.
    Inline(Inline, Arc<PreparedStatement>),
    /// On the blocking pool, bounded by the timeout of its kind.
    Pool(RequestKind, Known),
}

/// Decides where `request` runs, from its plan. One prepared-statement lookup (EXECUTE) or
/// one parse (QUERY), both handed on.
///
/// # Errors
/// The QUERY's syntax error.
fn route(
    node: &Node,
    ctx: &SessionContext,
    request: &Request,
    payload: Option<&CustomPayload>,
) -> Result<Route, QueryError> {
    match request {
        Request::Execute(e) => {
            let Some(prepared) = node.prepared().get(&e.id) else {
                // The executor answers Unprepared.
                return Ok(Route::Pool(RequestKind::Other, Known::Nothing));
            };
            if let Some(inline) = runs_inline(node, ctx, &prepared) {
                return Ok(Route::Inline(inline, prepared));
            }
            let kind = RequestKind::of(&prepared.statement);
            Ok(Route::Pool(kind, Known::Prepared(prepared)))
        }
        Request::Query(q) => {
            let mut statement = cql::parse_statement(&q.query)?;
            throughput_from_payload(&mut statement, payload);
            let kind = RequestKind::of(&statement);
            Ok(Route::Pool(kind, Known::Parsed(Box::new(statement))))
        }
        Request::Batch(_) => Ok(Route::Pool(
            RequestKind::Write { batch: true },
            Known::Nothing,
        )),
        _ => Ok(Route::Pool(RequestKind::Other, Known::Nothing)),
    }
}

/// Cosmos DB's custom payload key `cosmosdb_provisioned_throughput` (a decimal string) on a
/// CREATE TABLE sets the table's throughput, as the option of that name does (the option wins
/// when both are given).
fn throughput_from_payload(statement: &mut Statement, payload: Option<&CustomPayload>) {
    use crate::schema::throughput::PROVISIONED;
    let Statement::CreateTable(create) = statement else {
        return;
    };
    let Some(value) = payload
        .into_iter()
        .flatten()
        .find(|(k, _)| k == PROVISIONED)
        .and_then(|(_, v)| v.as_ref())
    else {
        return;
    };
    let properties = &mut create.options.properties;
    if !properties
        .iter()
        .any(|(n, _)| crate::schema::throughput::Throughput::is_option(&n.to_ascii_lowercase()))
    {
        let text = String::from_utf8_lossy(value).trim().to_string();
        properties.push((
            PROVISIONED.to_string(),
            cql::ast::OptionValue::Constant(text),
        ));
    }
}

/// How a prepared statement may run on the connection's own task: its stored plan is current
/// and cheap (see [`crate::planner::CachedPlan::runs_inline`]), fjall would not stall its
/// writes and the node has no peers. `None` (the blocking pool) for anything else, a first
/// execution included.
fn runs_inline(node: &Node, ctx: &SessionContext, prepared: &PreparedStatement) -> Option<Inline> {
    // In a cluster a request waits for other nodes (a commit, a read index): on the
    // connection's task it would hold every later request of the connection behind it.
    if node.has_peers() {
        return None;
    }
    let cached = prepared.cached_plan()?;
    let keyspace = prepared.keyspace.as_ref().or(ctx.keyspace.as_ref());
    if !cached.is_current(node.catalog().version, keyspace) {
        return None;
    }
    let inline =
        cached.runs_inline(matches!(node.config().commitlog_sync, CommitlogSync::Batch))?;
    // A write fjall would stall goes to the blocking pool, where sleeping is harmless and the
    // node-wide request slots bound the queue (beyond them: Overloaded).
    let stalled = cached
        .written_tables()
        .any(|t| node.shards().write_stalled(crate::schema::table_id(t)));
    // A request that may wait for its throughput budget (server-side retry) sleeps: never
    // on the connection's task.
    let may_wait = node.config().throttle_retry_max_ms > 0
        && cached
            .plan
            .tables()
            .any(|t| node.budgets().limits(crate::schema::table_id(t)));
    (!stalled && !may_wait).then_some(inline)
}

/// Routes one request frame, `backlog` more being buffered behind it. Returns false when the
/// connection must close.
pub(super) fn dispatch(
    frame: Frame,
    session: &Arc<crate::session::Session>,
    node: &Arc<Node>,
    reads: &ReadOffload,
    permit: tokio::sync::OwnedSemaphorePermit,
    answered: &mut Answered,
    backlog: usize,
) -> bool {
    session.count_request();
    let header = frame.header;
    let version = header.version;
    let stream = header.stream;
    let established = session.version_or(version);
    if established != version {
        session.send_uncompressed(
            established,
            stream,
            &QueryError::Protocol(format!(
                "Invalid message version. Got {version} but previous messages on this connection had version {established}"
            ))
            .to_response(),
        );
        return true;
    }
    let body: Bytes = if header.flags & frame::flags::COMPRESSION != 0 {
        match session.decompress(&frame.body, node.config().max_frame_bytes as usize) {
            Ok(b) => b,
            Err(message) => {
                session.send(
                    version,
                    stream,
                    &QueryError::Protocol(message).to_response(),
                );
                return true;
            }
        }
    } else {
        frame.body
    };
    let (request, payload) =
        match Request::decode_shared(header.flags, header.opcode, version, &body) {
            Ok(decoded) => decoded,
            Err(e) => {
                session.send(
                    version,
                    stream,
                    &QueryError::Protocol(e.to_string()).to_response(),
                );
                return true;
            }
        };
    if matches!(
        request,
        Request::Startup(_) | Request::Options | Request::Register(_) | Request::AuthResponse(_)
    ) {
        // Connection-state requests are answered in order, on the reader.
        session.handle_control(request, version, stream, node);
        drop(permit);
        return !session.is_closing();
    }
    if !session.is_ready() {
        let name = Opcode::from_u8(header.opcode)
            .map(|o| format!("{o:?}").to_uppercase())
            .unwrap_or_else(|| format!("0x{:02x}", header.opcode));
        session.send(
            version,
            stream,
            &QueryError::Protocol(format!(
                "Unexpected message {name}, expecting {}",
                session.expecting()
            ))
            .to_response(),
        );
        return true;
    }
    // Bounded work: past the node-wide limit a request is refused, not queued.
    let Some(slot) = node.try_start_request() else {
        node.metrics().error(cql::response::codes::OVERLOADED);
        session.send(
            version,
            stream,
            &QueryError::Overloaded("Too many requests in flight on this node; retry later".into())
                .to_response(),
        );
        session.release_after_write(permit);
        return true;
    };
    let mut ctx = session.context();
    ctx.traced = header.flags & frame::flags::TRACING != 0;
    let route = match route(node, &ctx, &request, payload.as_ref()) {
        Ok(route) => route,
        Err(e) => {
            drop(slot);
            let response = e.to_response();
            if let cql::response::Response::Error(body) = &response {
                node.metrics().error(body.code());
            }
            session.send(version, stream, &response);
            session.release_after_write(permit);
            return true;
        }
    };
    let (inline, prepared) = match route {
        Route::Inline(inline, prepared) => (inline, prepared),
        Route::Pool(kind, known) => {
            tracing::trace!(?kind, stream, "request runs on the blocking pool");
            let timeout = kind.timeout(node.config());
            let session = session.clone();
            let node = node.clone();
            tokio::spawn(async move {
                let counted = node.clone();
                let work = tokio::task::spawn_blocking(move || {
                    let answer = executor::execute(&node, &ctx, request, known);
                    drop(slot);
                    answer
                });
                let (response, envelope) = match tokio::time::timeout(timeout, work).await {
                    Ok(Ok(a)) => (a.response, a.envelope),
                    Ok(Err(e)) => {
                        warn!(error = %e, "request task failed");
                        (internal_error(), Envelope::default())
                    }
                    Err(_) => {
                        let error = kind.timeout_error().to_response();
                        if let cql::response::Response::Error(body) = &error {
                            counted.metrics().error(body.code());
                        }
                        (error, Envelope::default())
                    }
                };
                session.apply_effects(&response);
                session.send_answer(version, stream, &response, &envelope);
                session.release_after_write(permit);
            });
            return true;
        }
    };
    // A read may go to a read thread when this connection has enough work buffered.
    let times = answered.run_times;
    let buffered_ns = (backlog as u64).saturating_mul(times.all_ns);
    let (ctx, request, prepared, permit, slot) =
        if inline == Inline::Read && reads.wants(times.read_ns, buffered_ns) {
            let job = Box::new(ReadJob {
                node: node.clone(),
                session: session.clone(),
                ctx,
                request,
                prepared,
                version,
                stream,
                permit,
                slot,
            });
            match reads.offer(job) {
                Ok(()) => return true,
                Err(job) => (job.ctx, job.request, job.prepared, job.permit, job.slot),
            }
        } else {
            (ctx, request, prepared, permit, slot)
        };
    // Cheap and bounded: a hop to the blocking pool would cost more than the work.
    let mut answer = None;
    let mut input = Some((request, prepared));
    let mut run = || {
        if let Some((request, prepared)) = input.take() {
            answer = Some(executor::execute_caught(
                node,
                &ctx,
                request,
                Known::Prepared(prepared),
            ));
        }
    };
    let owed = node.shards().deferring_sync(&mut run);
    let (response, envelope, took) = match answer {
        Some(a) => (a.response, a.envelope, a.took),
        None => (internal_error(), Envelope::default(), Duration::ZERO),
    };
    answered.journal_flush_owed |= owed;
    // The executor's own timing of the request (one pair of clock reads serves both).
    let took = took.as_nanos().min(u128::from(u32::MAX)) as u64;
    answered.run_times.record(inline, took);
    drop(slot);
    if answered.frames.capacity() == 0 {
        answered.frames.reserve(answered.room);
        answered.permits.reserve(FLUSH_EVERY_ANSWERS);
    }
    session.encode_into(version, stream, &response, &envelope, &mut answered.frames);
    answered.permits.push(permit);
    true
}

/// What a request does, for its timeout and its timeout error.
#[derive(Debug, Clone, Copy)]
enum RequestKind {
    Read,
    Write { batch: bool },
    Other,
}

impl RequestKind {
    /// The kind of a statement.
    fn of(statement: &Statement) -> RequestKind {
        match statement {
            Statement::Select(_) => RequestKind::Read,
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                RequestKind::Write { batch: false }
            }
            Statement::Batch(_) => RequestKind::Write { batch: true },
            _ => RequestKind::Other,
        }
    }

    fn timeout(self, config: &Config) -> Duration {
        Duration::from_millis(match self {
            RequestKind::Read => config.read_request_timeout_ms,
            RequestKind::Write { .. } => config.write_request_timeout_ms,
            RequestKind::Other => config.request_timeout_ms,
        })
    }

    fn timeout_error(self) -> QueryError {
        match self {
            RequestKind::Read | RequestKind::Other => QueryError::ReadTimeout {
                consistency: cql::request::Consistency::One,
                block_for: 1,
            },
            RequestKind::Write { batch } => QueryError::WriteTimeout {
                batch,
                consistency: cql::request::Consistency::One,
                block_for: 1,
            },
        }
    }
}
