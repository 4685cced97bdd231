//! Statement execution: QUERY, PREPARE, EXECUTE and BATCH requests become results.
//! Everything here is synchronous and runs on the blocking pool (storage is fjall).

pub mod literal;
pub mod numeric;
pub mod order;
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
use std::sync::Arc;
use terms::{Markers, Values};
use virtual_select::VirtualSelect;

/// How a request's values reach a statement.
struct Inputs<'a> {
    values: &'a [RawValue],
    names: Option<&'a [String]>,
    page_size: Option<i32>,
    paging_state: Option<&'a Bytes>,
}

impl Node {
    /// Executes one QUERY, PREPARE, EXECUTE or BATCH request and returns its response.
    pub fn execute(&self, ctx: &SessionContext, request: Request, _version: u8) -> Response {
        let result = match request {
            Request::Query(q) => self.query(ctx, &q.query, &q.params),
            Request::Prepare(p) => self.prepare(ctx, &p.query),
            Request::Execute(e) => self.execute_prepared(ctx, &e.id, &e.params),
            Request::Batch(_) => Err(QueryError::invalid("BATCH is not supported yet")),
            _ => Err(QueryError::Protocol("Unexpected message".into())),
        };
        match result {
            Ok(body) => Response::Result(body),
            Err(e) => Response::Error(e.to_error_body()),
        }
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
    ) -> Result<ResultBody, QueryError> {
        let prepared = self
            .prepared()
            .get(id)
            .ok_or_else(|| QueryError::Unprepared(id.clone()))?;
        check_consistency(params.consistency, &prepared.statement)?;
        let ctx = SessionContext {
            keyspace: prepared.keyspace.clone().or_else(|| ctx.keyspace.clone()),
            peer: ctx.peer,
        };
        let inputs = Inputs {
            values: &params.values,
            names: params.names.as_deref(),
            page_size: params.page_size,
            paging_state: params.paging_state.as_ref(),
        };
        self.run(&ctx, &prepared.statement, &inputs)
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
                columns: result_columns,
                paging_state: None,
            },
        }))
    }

    /// Bind-marker specs, result columns and partition-key marker indexes of a statement.
    fn describe_markers(
        &self,
        ctx: &SessionContext,
        stmt: &Statement,
    ) -> Result<(Vec<ColumnSpec>, Vec<ColumnSpec>, Vec<u16>), QueryError> {
        match stmt {
            Statement::Select(select) => {
                let table = self.resolve_table(ctx, &select.table)?;
                if schema::is_system_keyspace(&table.keyspace) {
                    let mut markers = Markers::default();
                    let plan = VirtualSelect::plan(select, table, &mut markers)?;
                    return Ok((markers.specs, plan.columns(), Vec::new()));
                }
                Err(QueryError::invalid(format!(
                    "Reading user table {}.{} is not supported yet",
                    table.keyspace, table.name
                )))
            }
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) | Statement::Batch(_) => {
                Err(QueryError::invalid("Data modification is not supported yet"))
            }
            _ => Ok((Vec::new(), Vec::new(), Vec::new())),
        }
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
        match stmt {
            Statement::Select(select) => {
                let table = self.resolve_table(ctx, &select.table)?;
                if !schema::is_system_keyspace(&table.keyspace) {
                    return Err(QueryError::invalid(format!(
                        "Reading user table {}.{} is not supported yet",
                        table.keyspace, table.name
                    )));
                }
                let mut markers = Markers::default();
                let plan = VirtualSelect::plan(select, table.clone(), &mut markers)?;
                let values = Values::new(inputs.values, inputs.names, &markers.specs)?;
                let catalog = self.catalog();
                let rows = crate::system::rows_for(self.info(), &catalog, &table);
                let rows = plan.execute(rows, &values, inputs.page_size, inputs.paging_state)?;
                Ok(ResultBody::Rows(rows))
            }
            Statement::Use(ks) => {
                if self.catalog().keyspaces.contains_key(ks) {
                    Ok(ResultBody::SetKeyspace(ks.clone()))
                } else {
                    Err(QueryError::invalid(format!("Keyspace '{ks}' does not exist")))
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
                crate::describe::describe(&catalog, self.info(), ctx.keyspace.as_deref(), d, inputs.page_size, inputs.paging_state)
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
            | Statement::DropType(_) => self.run_ddl(ctx, stmt),
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) | Statement::Batch(_) => {
                Err(QueryError::invalid("Data modification is not supported yet"))
            }
            Statement::CreateIndex(_) | Statement::DropIndex(_) => Err(QueryError::invalid(
                "Secondary indexes are not supported by ringdb",
            )),
            Statement::Unsupported(u) => Err(QueryError::invalid(format!(
                "{} is not supported by ringdb",
                u.kind
            ))),
            _ => Err(QueryError::invalid(
                "Authentication and authorization statements are not supported yet",
            )),
        }
    }

    fn run_ddl(&self, ctx: &SessionContext, stmt: &Statement) -> Result<ResultBody, QueryError> {
        let now = self.now_ms();
        let outcome = self.update_catalog(|catalog| {
            let outcome = apply_ddl(catalog, stmt, ctx.keyspace.as_deref(), now)?;
            let changed = outcome.change.is_some();
            Ok((outcome, changed))
        })?;
        for t in &outcome.created_tables {
            self.storage().create_table(table_id(t), layout_of(t))?;
        }
        for id in &outcome.dropped_tables {
            self.storage().drop_table(storage::TableId(id.as_u128()))?;
        }
        match outcome.change {
            Some(change) => {
                self.prepared().clear();
                self.publish(Event::SchemaChange(change.clone()));
                Ok(ResultBody::SchemaChange(change))
            }
            None => Ok(ResultBody::Void),
        }
    }
}

/// A single node with replication factor 1 answers as Cassandra would.
fn check_consistency(cl: Consistency, stmt: &Statement) -> Result<(), QueryError> {
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
