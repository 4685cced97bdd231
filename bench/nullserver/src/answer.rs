//! What the null server answers to each request: the handshake, schema changes kept in the
//! catalog, writes acknowledged without being kept, and reads answered with synthesized rows
//! (or the system tables' rows).

use crate::catalog::{Catalog, SchemaError};
use crate::prepared::{Prepared, Shape};
use crate::system_tables::{self, Identity, VirtualTable};
use bytes::Bytes;
use cql::ast::{Expr, Literal, Operator, Relation, Select, Statement};
use cql::request::Request;
use cql::response::result::{ColumnSpec, PreparedMetadata, ResultMetadata};
use cql::response::{
    ErrorBody, Response, ResultBody, SchemaChange, SchemaChangeTarget, SchemaChangeType,
};
use cql::types::{DataType, NativeType};
use cql::wire::RawValue;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// What a read answers, from the settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadSettings {
    /// Bytes of each text or blob value.
    pub(crate) value_size: usize,
    /// Rows of a read that is not a point lookup.
    pub(crate) slice_rows: usize,
}

/// The server: its catalog and prepared statements.
pub(crate) struct Server {
    catalog: Catalog,
    identity: Identity,
    reads: ReadSettings,
    prepared: RwLock<HashMap<Bytes, Arc<Prepared>>>,
}

/// One connection's state.
#[derive(Default)]
pub(crate) struct Session {
    /// The keyspace of `USE`.
    pub(crate) keyspace: Option<String>,
    /// Prepared statements this connection has executed (spares the shared map's lock).
    seen: HashMap<Bytes, Arc<Prepared>>,
}

fn invalid(message: impl Into<String>) -> Response {
    Response::Error(ErrorBody::Invalid(message.into()))
}

fn applied() -> ResultBody {
    let spec = ColumnSpec {
        keyspace: String::new(),
        table: String::new(),
        name: "[applied]".into(),
        data_type: DataType::Native(NativeType::Boolean),
    };
    let mut rows = cql::response::result::EncodedRows {
        metadata: ResultMetadata {
            columns: vec![spec].into(),
            ..Default::default()
        },
        count: 1,
        cells: Vec::new(),
    };
    rows.push_cell(Some(&[1]));
    ResultBody::EncodedRows(rows)
}

fn schema_error(e: SchemaError) -> Response {
    Response::Error(match e {
        SchemaError::NoKeyspace(ks) => {
            ErrorBody::Invalid(format!("Keyspace '{ks}' does not exist"))
        }
        SchemaError::Exists { keyspace, table } => ErrorBody::AlreadyExists {
            message: if table.is_empty() {
                format!("Keyspace {keyspace} already exists")
            } else {
                format!("Object {keyspace}.{table} already exists")
            },
            keyspace,
            table,
        },
        SchemaError::UnknownKeyColumn(c) => {
            ErrorBody::Invalid(format!("Unknown definition {c} referenced in PRIMARY KEY"))
        }
    })
}

fn changed(change_type: SchemaChangeType, target: SchemaChangeTarget) -> Response {
    Response::Result(ResultBody::SchemaChange(SchemaChange {
        change_type,
        target,
    }))
}

/// The 16-byte id of `query` prepared in `keyspace`.
fn statement_id(query: &str, keyspace: Option<&str>) -> Bytes {
    use std::hash::{Hash, Hasher};
    let mut id = [0u8; 16];
    for (i, half) in id.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (i, query, keyspace).hash(&mut h);
        half.copy_from_slice(&h.finish().to_be_bytes());
    }
    Bytes::copy_from_slice(&id)
}

/// The text a relation on a system table compares with (a literal or a bound value).
fn bound_text(expr: &Expr, values: &[RawValue], next: &mut usize) -> Vec<Vec<u8>> {
    match expr {
        Expr::Literal(Literal::String(s)) => vec![s.as_bytes().to_vec()],
        Expr::List(items) => items
            .iter()
            .flat_map(|e| bound_text(e, values, next))
            .collect(),
        Expr::BindMarker(_) => {
            let v = values.get(*next);
            *next += 1;
            match v {
                Some(RawValue::Bytes(b)) => vec![b.to_vec()],
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// A system table's answer: its rows filtered by `=` and `IN` relations, and the selected
/// columns.
fn system_rows(table: VirtualTable, select: &Select, values: &[RawValue]) -> Response {
    let mut next = 0;
    let mut rows = table.rows;
    for r in &select.where_clause {
        if let Relation::Simple {
            column,
            op: Operator::Eq | Operator::In,
            value,
        } = r
        {
            let wanted = bound_text(value, values, &mut next);
            if let Some(at) = table.columns.iter().position(|(n, _)| n == column) {
                rows.retain(|row| {
                    row.get(at)
                        .and_then(|c| c.as_ref())
                        .is_some_and(|c| wanted.iter().any(|w| w == c))
                });
            }
        }
    }
    let picked: Vec<usize> = if select.selectors.is_empty() {
        (0..table.columns.len()).collect()
    } else {
        let mut picked = Vec::new();
        for s in &select.selectors {
            let Expr::Column(name) = &s.expr else {
                return invalid(format!("Selector {} is not supported here", s.expr));
            };
            match table.columns.iter().position(|(n, _)| n == name) {
                Some(i) => picked.push(i),
                None => return invalid(format!("Undefined column name {name}")),
            }
        }
        picked
    };
    let keyspace = select.table.keyspace.clone().unwrap_or_default();
    let columns: Vec<ColumnSpec> = picked
        .iter()
        .filter_map(|&i| table.columns.get(i))
        .map(|(name, t)| ColumnSpec {
            keyspace: keyspace.clone(),
            table: select.table.name.clone(),
            name: (*name).to_string(),
            data_type: t.clone(),
        })
        .collect();
    let mut out = cql::response::result::EncodedRows {
        metadata: ResultMetadata {
            columns: columns.into(),
            ..Default::default()
        },
        count: rows.len(),
        cells: Vec::new(),
    };
    for row in &rows {
        for &i in &picked {
            out.push_cell(row.get(i).and_then(|c| c.as_deref()));
        }
    }
    Response::Result(ResultBody::EncodedRows(out))
}

impl Server {
    /// A server answering as `identity`, with reads shaped by `reads`.
    pub(crate) fn new(identity: Identity, reads: ReadSettings) -> Server {
        Server {
            catalog: Catalog::default(),
            identity,
            reads,
            prepared: RwLock::default(),
        }
    }

    /// The answer to `request` on `session`.
    pub(crate) fn answer(&self, request: Request, session: &mut Session) -> Response {
        match request {
            Request::Startup(_) | Request::Register(_) => Response::Ready,
            Request::Options => {
                Response::Supported(cql::response::supported::supported_options("3.4.6", &[]))
            }
            Request::AuthResponse(_) => Response::AuthSuccess(None),
            Request::Query(q) => match cql::parse_statement(&q.query) {
                Ok(statement) => {
                    let prepared = self.prepare_statement(statement, session.keyspace.clone());
                    self.run(&prepared, &q.params.values, q.params.skip_metadata, session)
                }
                Err(e) => Response::Error(ErrorBody::SyntaxError(e.to_string())),
            },
            Request::Prepare(p) => self.prepare(&p.query, session),
            Request::Execute(e) => {
                let found = session.seen.get(&e.id).cloned().or_else(|| {
                    let shared = self.prepared.read().unwrap_or_else(|p| p.into_inner());
                    let found = shared.get(&e.id).cloned()?;
                    session.seen.insert(e.id.clone(), found.clone());
                    Some(found)
                });
                match found {
                    Some(p) => self.run(&p, &e.params.values, e.params.skip_metadata, session),
                    None => Response::Error(ErrorBody::Unprepared {
                        message: "Prepared statement not found".into(),
                        id: e.id,
                    }),
                }
            }
            Request::Batch(_) => Response::Result(ResultBody::Void),
        }
    }

    fn prepare_statement(&self, statement: Statement, keyspace: Option<String>) -> Prepared {
        let name = match &statement {
            Statement::Select(s) => Some(&s.table),
            Statement::Insert(i) => Some(&i.table),
            Statement::Update(u) => Some(&u.table),
            Statement::Delete(d) => Some(&d.table),
            _ => None,
        };
        let table = name.and_then(|n| self.catalog.table(n, keyspace.as_deref()));
        Prepared::new(statement, keyspace, table.as_ref(), self.reads.value_size)
    }

    fn prepare(&self, query: &str, session: &Session) -> Response {
        let statement = match cql::parse_statement(query) {
            Ok(s) => s,
            Err(e) => return Response::Error(ErrorBody::SyntaxError(e.to_string())),
        };
        if let Some(missing) = self.missing_table(&statement, session.keyspace.as_deref()) {
            return missing;
        }
        let id = statement_id(query, session.keyspace.as_deref());
        let prepared = Arc::new(self.prepare_statement(statement, session.keyspace.clone()));
        let result_columns = prepared
            .read
            .as_ref()
            .map_or_else(|| Vec::new().into(), |r| r.columns.clone());
        let metadata = PreparedMetadata {
            columns: prepared.markers.specs.clone(),
            pk_indexes: prepared.markers.pk_indexes.clone(),
        };
        self.prepared
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), prepared);
        Response::Result(ResultBody::Prepared(cql::response::result::Prepared {
            id,
            metadata,
            result_metadata: ResultMetadata {
                columns: result_columns,
                ..Default::default()
            },
        }))
    }

    /// The error for a statement on a user table that does not exist.
    fn missing_table(&self, statement: &Statement, keyspace: Option<&str>) -> Option<Response> {
        let name = match statement {
            Statement::Select(s) => &s.table,
            Statement::Insert(i) => &i.table,
            Statement::Update(u) => &u.table,
            Statement::Delete(d) => &d.table,
            _ => return None,
        };
        let ks = name.keyspace.as_deref().or(keyspace);
        if ks.is_some_and(system_tables::is_system) {
            return None;
        }
        if self.catalog.table(name, keyspace).is_some() {
            return None;
        }
        Some(match ks {
            None => invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename"),
            Some(ks) if self.catalog.read(|k| k.contains_key(ks)) => {
                invalid(format!("unconfigured table {}", name.name))
            }
            Some(ks) => invalid(format!("Keyspace '{ks}' does not exist")),
        })
    }

    /// Answers a prepared (or just parsed) statement with its bound `values`.
    fn run(
        &self,
        prepared: &Prepared,
        values: &[RawValue],
        skip_metadata: bool,
        session: &mut Session,
    ) -> Response {
        let keyspace = prepared.keyspace.as_deref();
        match &prepared.statement {
            Statement::Select(s) => {
                let ks = s.table.keyspace.as_deref().or(keyspace).unwrap_or_default();
                if system_tables::is_system(ks) {
                    return match system_tables::table(
                        &self.catalog,
                        &self.identity,
                        ks,
                        &s.table.name,
                    ) {
                        Some(t) => system_rows(t, s, values),
                        None => invalid(format!("table {} does not exist", s.table.name)),
                    };
                }
                let Some(read) = &prepared.read else {
                    return self
                        .missing_table(&prepared.statement, keyspace)
                        .unwrap_or_else(|| invalid("unconfigured table"));
                };
                let rows = match read.shape {
                    Shape::Point => 1,
                    Shape::Range => self.reads.slice_rows,
                    Shape::Slice {
                        limit,
                        limit_marker,
                    } => {
                        let bound = limit_marker.and_then(|i| match values.get(i) {
                            Some(RawValue::Bytes(b)) => {
                                let b: [u8; 4] = b.as_ref().try_into().ok()?;
                                usize::try_from(i32::from_be_bytes(b)).ok()
                            }
                            _ => None,
                        });
                        limit
                            .or(bound)
                            .map_or(self.reads.slice_rows, |l| l.min(self.reads.slice_rows))
                    }
                };
                let mut cells = Vec::with_capacity(read.row.len() * rows);
                for _ in 0..rows {
                    cells.extend_from_slice(&read.row);
                }
                Response::Result(ResultBody::EncodedRows(
                    cql::response::result::EncodedRows {
                        metadata: ResultMetadata {
                            columns: read.columns.clone(),
                            paging_state: None,
                            no_metadata: skip_metadata,
                        },
                        count: rows,
                        cells,
                    },
                ))
            }
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                if prepared.read.is_none() && prepared.markers.specs.is_empty() {
                    if let Some(missing) = self.missing_table(&prepared.statement, keyspace) {
                        return missing;
                    }
                }
                if prepared.conditional {
                    Response::Result(applied())
                } else {
                    Response::Result(ResultBody::Void)
                }
            }
            Statement::Use(ks) => {
                if !system_tables::is_system(ks)
                    && !self.catalog.read(|k| k.contains_key(ks.as_str()))
                {
                    return invalid(format!("Keyspace '{ks}' does not exist"));
                }
                session.keyspace = Some(ks.clone());
                Response::Result(ResultBody::SetKeyspace(ks.clone()))
            }
            Statement::CreateKeyspace(c) => match self.catalog.create_keyspace(c) {
                Ok(true) => changed(
                    SchemaChangeType::Created,
                    SchemaChangeTarget::Keyspace(c.name.clone()),
                ),
                Ok(false) => Response::Result(ResultBody::Void),
                Err(e) => schema_error(e),
            },
            Statement::DropKeyspace(d) => {
                if self.catalog.drop_keyspace(&d.name) {
                    changed(
                        SchemaChangeType::Dropped,
                        SchemaChangeTarget::Keyspace(d.name.clone()),
                    )
                } else if d.if_exists {
                    Response::Result(ResultBody::Void)
                } else {
                    invalid(format!("Keyspace '{}' doesn't exist", d.name))
                }
            }
            Statement::CreateTable(c) => match self.catalog.create_table(c, keyspace) {
                Ok((ks, true)) => changed(
                    SchemaChangeType::Created,
                    SchemaChangeTarget::Table {
                        keyspace: ks,
                        name: c.name.name.clone(),
                    },
                ),
                Ok((_, false)) => Response::Result(ResultBody::Void),
                Err(e) => schema_error(e),
            },
            Statement::DropTable(d) => {
                let ks = d.name.keyspace.as_deref().or(keyspace).unwrap_or_default();
                if self.catalog.drop_table(ks, &d.name.name) {
                    changed(
                        SchemaChangeType::Dropped,
                        SchemaChangeTarget::Table {
                            keyspace: ks.to_string(),
                            name: d.name.name.clone(),
                        },
                    )
                } else if d.if_exists {
                    Response::Result(ResultBody::Void)
                } else {
                    invalid(format!("Table '{ks}.{}' doesn't exist", d.name.name))
                }
            }
            _ => Response::Result(ResultBody::Void),
        }
    }
}
