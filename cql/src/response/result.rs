//! RESULT (opcode 0x08, `native_protocol_v4.spec` §4.2.5): `[int kind]` then Void (1),
//! Rows (2), Set_keyspace (3), Prepared (4) or Schema_change (5).
//!
//! Rows metadata: `[int flags][int columns_count][bytes paging_state if 0x0002]`, then unless
//! No_metadata (0x0004) `[string ks][string table]` once if Global_tables_spec (0x0001), and per
//! column (`[string ks][string table]` if not global) `[string name][option type]`. Prepared
//! metadata adds `[int pk_count][short pk_index]*` after the column count in v4 (not in v3).

use std::sync::Arc;

use bytes::{BufMut, Bytes};

use super::type_option::{read_type_option, write_type_option};
use super::{ResponseError, SchemaChange};
use crate::types::{DataType, NativeType};
use crate::wire;

/// Metadata flag: one keyspace/table pair for every column.
pub const GLOBAL_TABLES_SPEC: i32 = 0x0001;
/// Metadata flag: a paging state follows.
pub const HAS_MORE_PAGES: i32 = 0x0002;
/// Metadata flag: no column specs.
pub const NO_METADATA: i32 = 0x0004;

/// Decoding refuses more placeholder columns (or zero-width rows) than this.
const MAX_COLUMNS: usize = 65_535;

const VOID: i32 = 1;
const ROWS: i32 = 2;
const SET_KEYSPACE: i32 = 3;
const PREPARED: i32 = 4;
const SCHEMA_CHANGE: i32 = 5;

/// One column (or bind marker) description.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ColumnSpec {
    /// Keyspace of the column's table.
    pub keyspace: String,
    /// Table name.
    pub table: String,
    /// Column name (or marker name such as `[limit]`).
    pub name: String,
    /// Column type.
    pub data_type: DataType,
}

/// Metadata of a Rows result (also the result metadata of PREPARED).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResultMetadata {
    /// Column specs. With `no_metadata` only their count is sent; decoding such metadata gives
    /// placeholder specs (empty names, blob type) so the count survives. Shared, so a
    /// prepared SELECT hands out its specs without copying them per execution.
    pub columns: Arc<[ColumnSpec]>,
    /// Set when more pages exist (flag 0x0002).
    pub paging_state: Option<Bytes>,
    /// Omit column specs (flag 0x0004), e.g. when the client sent Skip_metadata.
    pub no_metadata: bool,
}

/// A Rows result: metadata and already-serialized cells (`None` is null).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rows {
    /// Column metadata and paging state.
    pub metadata: ResultMetadata,
    /// Rows of cells, each `metadata.columns.len()` long.
    pub rows: Vec<Vec<Option<Bytes>>>,
}

/// A Rows result whose cells are already in wire form: the server writes the rows of plain
/// column selections straight into `cells`, sparing a vector per row and a buffer per cell.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EncodedRows {
    /// Column metadata and paging state.
    pub metadata: ResultMetadata,
    /// Rows in `cells`.
    pub count: usize,
    /// Each row's `metadata.columns.len()` cells, one `[bytes]` each (see [`EncodedRows::push_cell`]).
    pub cells: Vec<u8>,
}

impl EncodedRows {
    /// Appends one cell of the current row (`None` is null); a row's cells go in column order,
    /// and [`EncodedRows::count`] counts the rows.
    pub fn push_cell(&mut self, cell: Option<&[u8]>) {
        wire::write_bytes(&mut self.cells, cell);
    }

    /// Appends the Rows body (metadata, row count, cells), as [`Rows::encode`] does.
    pub fn encode(&self, out: &mut impl BufMut) {
        self.metadata.encode(out);
        wire::write_int(out, count_of(self.count));
        out.put_slice(&self.cells);
    }
}

/// Bind-marker metadata of a PREPARED result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreparedMetadata {
    /// Bind markers, in order.
    pub columns: Vec<ColumnSpec>,
    /// For each partition-key component, the index of the marker binding it (v4 only; empty
    /// unless every component is bound by a plain marker).
    pub pk_indexes: Vec<u16>,
}

/// A PREPARED result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// Statement id (deterministic: clients re-prepare and compare).
    pub id: Bytes,
    /// Bind-marker metadata.
    pub metadata: PreparedMetadata,
    /// Metadata of the rows the statement returns (empty with No_metadata for non-SELECTs).
    pub result_metadata: ResultMetadata,
}

/// The body of a RESULT response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultBody {
    /// Kind 1: nothing.
    Void,
    /// Kind 2: rows.
    Rows(Rows),
    /// Kind 2 as well: rows the server wrote straight into wire form. Decoding yields
    /// [`ResultBody::Rows`].
    EncodedRows(EncodedRows),
    /// Kind 3: the keyspace a `USE` switched to.
    SetKeyspace(String),
    /// Kind 4: a prepared statement.
    Prepared(Prepared),
    /// Kind 5: a DDL statement's schema change.
    SchemaChange(SchemaChange),
}

/// The single keyspace/table shared by all `columns`, if there is at least one column.
fn global_spec(columns: &[ColumnSpec]) -> Option<(&str, &str)> {
    let first = columns.first()?;
    columns
        .iter()
        .all(|c| c.keyspace == first.keyspace && c.table == first.table)
        .then_some((first.keyspace.as_str(), first.table.as_str()))
}

fn write_column_specs(columns: &[ColumnSpec], global: bool, out: &mut impl BufMut) {
    if global {
        if let Some(first) = columns.first() {
            wire::write_string(out, &first.keyspace);
            wire::write_string(out, &first.table);
        }
    }
    for c in columns {
        if !global {
            wire::write_string(out, &c.keyspace);
            wire::write_string(out, &c.table);
        }
        wire::write_string(out, &c.name);
        write_type_option(&c.data_type, out);
    }
}

fn read_column_specs(
    buf: &mut &[u8],
    count: usize,
    global: bool,
) -> Result<Vec<ColumnSpec>, ResponseError> {
    let shared = if global {
        Some((
            wire::read_string(buf)?.to_owned(),
            wire::read_string(buf)?.to_owned(),
        ))
    } else {
        None
    };
    let mut columns = Vec::with_capacity(count.min(buf.len() / 4));
    for _ in 0..count {
        let (keyspace, table) = match &shared {
            Some((ks, t)) => (ks.clone(), t.clone()),
            None => (
                wire::read_string(buf)?.to_owned(),
                wire::read_string(buf)?.to_owned(),
            ),
        };
        let name = wire::read_string(buf)?.to_owned();
        let data_type = read_type_option(buf)?;
        columns.push(ColumnSpec {
            keyspace,
            table,
            name,
            data_type,
        });
    }
    Ok(columns)
}

fn count_of(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn read_count(buf: &mut &[u8]) -> Result<usize, ResponseError> {
    let n = wire::read_int(buf)?;
    usize::try_from(n).map_err(|_| ResponseError::Wire(wire::WireError::NegativeLength(n)))
}

impl ResultMetadata {
    /// Appends Rows metadata; Global_tables_spec is set when every column shares a table.
    pub fn encode(&self, out: &mut impl BufMut) {
        let global = !self.no_metadata && global_spec(&self.columns).is_some();
        let mut flags = 0;
        if global {
            flags |= GLOBAL_TABLES_SPEC;
        }
        if self.paging_state.is_some() {
            flags |= HAS_MORE_PAGES;
        }
        if self.no_metadata {
            flags |= NO_METADATA;
        }
        wire::write_int(out, flags);
        wire::write_int(out, count_of(self.columns.len()));
        if let Some(state) = &self.paging_state {
            wire::write_bytes(out, Some(state));
        }
        if !self.no_metadata {
            write_column_specs(&self.columns, global, out);
        }
    }

    /// Decodes Rows metadata.
    ///
    /// # Errors
    /// A wire error or an invalid type option.
    pub fn decode(buf: &mut &[u8]) -> Result<ResultMetadata, ResponseError> {
        let flags = wire::read_int(buf)?;
        let count = read_count(buf)?;
        let paging_state = if flags & HAS_MORE_PAGES != 0 {
            wire::read_bytes(buf)?.map(Bytes::copy_from_slice)
        } else {
            None
        };
        let no_metadata = flags & NO_METADATA != 0;
        let columns = if no_metadata {
            // Nothing in the input bounds the placeholder count, so cap it explicitly.
            if count > MAX_COLUMNS {
                return Err(ResponseError::LimitExceeded {
                    what: "columns",
                    count,
                });
            }
            let placeholder = ColumnSpec {
                keyspace: String::new(),
                table: String::new(),
                name: String::new(),
                data_type: DataType::Native(NativeType::Blob),
            };
            vec![placeholder; count]
        } else {
            read_column_specs(buf, count, flags & GLOBAL_TABLES_SPEC != 0)?
        };
        Ok(ResultMetadata {
            columns: columns.into(),
            paging_state,
            no_metadata,
        })
    }
}

impl PreparedMetadata {
    /// Appends PREPARED bind metadata; v4 includes the partition-key indexes, v3 does not.
    pub fn encode(&self, version: u8, out: &mut impl BufMut) {
        let global = global_spec(&self.columns).is_some();
        wire::write_int(out, if global { GLOBAL_TABLES_SPEC } else { 0 });
        wire::write_int(out, count_of(self.columns.len()));
        if version >= 4 {
            wire::write_int(out, count_of(self.pk_indexes.len()));
            for i in &self.pk_indexes {
                wire::write_short(out, *i);
            }
        }
        write_column_specs(&self.columns, global, out);
    }

    /// Decodes PREPARED bind metadata.
    ///
    /// # Errors
    /// A wire error or an invalid type option.
    pub fn decode(buf: &mut &[u8], version: u8) -> Result<PreparedMetadata, ResponseError> {
        let flags = wire::read_int(buf)?;
        let count = read_count(buf)?;
        let mut pk_indexes = Vec::new();
        if version >= 4 {
            let pk_count = read_count(buf)?;
            pk_indexes.reserve(pk_count.min(buf.len() / 2));
            for _ in 0..pk_count {
                pk_indexes.push(wire::read_short(buf)?);
            }
        }
        let columns = read_column_specs(buf, count, flags & GLOBAL_TABLES_SPEC != 0)?;
        Ok(PreparedMetadata {
            columns,
            pk_indexes,
        })
    }
}

impl Rows {
    /// Appends the Rows body (metadata, row count, cells).
    pub fn encode(&self, out: &mut impl BufMut) {
        self.metadata.encode(out);
        wire::write_int(out, count_of(self.rows.len()));
        for row in &self.rows {
            for cell in row {
                wire::write_bytes(out, cell.as_deref());
            }
        }
    }

    /// Decodes a Rows body.
    ///
    /// # Errors
    /// A wire error or an invalid type option.
    pub fn decode(buf: &mut &[u8]) -> Result<Rows, ResponseError> {
        let metadata = ResultMetadata::decode(buf)?;
        let n = read_count(buf)?;
        let width = metadata.columns.len();
        if width == 0 && n > MAX_COLUMNS {
            // Zero-width rows take no input bytes: cap them explicitly.
            return Err(ResponseError::LimitExceeded {
                what: "rows",
                count: n,
            });
        }
        let mut rows = Vec::with_capacity(n.min(buf.len() / 4));
        for _ in 0..n {
            let mut row = Vec::with_capacity(width.min(buf.len() / 4));
            for _ in 0..width {
                row.push(wire::read_bytes(buf)?.map(Bytes::copy_from_slice));
            }
            rows.push(row);
        }
        Ok(Rows { metadata, rows })
    }
}

impl ResultBody {
    /// Appends the RESULT body for protocol `version`.
    pub fn encode(&self, version: u8, out: &mut impl BufMut) {
        match self {
            ResultBody::Void => wire::write_int(out, VOID),
            ResultBody::Rows(rows) => {
                wire::write_int(out, ROWS);
                rows.encode(out);
            }
            ResultBody::EncodedRows(rows) => {
                wire::write_int(out, ROWS);
                rows.encode(out);
            }
            ResultBody::SetKeyspace(ks) => {
                wire::write_int(out, SET_KEYSPACE);
                wire::write_string(out, ks);
            }
            ResultBody::Prepared(p) => {
                wire::write_int(out, PREPARED);
                wire::write_short_bytes(out, &p.id);
                p.metadata.encode(version, out);
                p.result_metadata.encode(out);
            }
            ResultBody::SchemaChange(sc) => {
                wire::write_int(out, SCHEMA_CHANGE);
                sc.encode(out);
            }
        }
    }

    /// Decodes a RESULT body.
    ///
    /// # Errors
    /// [`ResponseError::UnknownResultKind`] or a body error.
    pub fn decode(buf: &mut &[u8], version: u8) -> Result<ResultBody, ResponseError> {
        Ok(match wire::read_int(buf)? {
            VOID => ResultBody::Void,
            ROWS => ResultBody::Rows(Rows::decode(buf)?),
            SET_KEYSPACE => ResultBody::SetKeyspace(wire::read_string(buf)?.to_owned()),
            PREPARED => ResultBody::Prepared(Prepared {
                id: Bytes::copy_from_slice(wire::read_short_bytes(buf)?),
                metadata: PreparedMetadata::decode(buf, version)?,
                result_metadata: ResultMetadata::decode(buf)?,
            }),
            SCHEMA_CHANGE => ResultBody::SchemaChange(SchemaChange::decode(buf)?),
            other => return Err(ResponseError::UnknownResultKind(other)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::{SchemaChangeTarget, SchemaChangeType};

    fn col(table: &str, name: &str, t: NativeType) -> ColumnSpec {
        ColumnSpec {
            keyspace: "ks".into(),
            table: table.into(),
            name: name.into(),
            data_type: DataType::Native(t),
        }
    }

    fn round_trip(body: &ResultBody, version: u8) -> Vec<u8> {
        let mut out = Vec::new();
        body.encode(version, &mut out);
        let mut buf = &out[..];
        assert_eq!(ResultBody::decode(&mut buf, version).as_ref(), Ok(body));
        assert!(buf.is_empty());
        for cut in 0..out.len() {
            assert!(ResultBody::decode(&mut &out[..cut], version).is_err());
        }
        out
    }

    #[test]
    fn rows_with_global_spec_layout() {
        let rows = ResultBody::Rows(Rows {
            metadata: ResultMetadata {
                columns: vec![col("t", "k", NativeType::Int)].into(),
                paging_state: None,
                no_metadata: false,
            },
            rows: vec![vec![Some(Bytes::from_static(&[0, 0, 0, 1]))], vec![None]],
        });
        let out = round_trip(&rows, 4);
        let expected: &[u8] = &[
            0, 0, 0, 2, // Rows
            0, 0, 0, 1, // Global_tables_spec
            0, 0, 0, 1, // 1 column
            0, 2, b'k', b's', 0, 1, b't', // ks.t
            0, 1, b'k', 0, 9, // k int
            0, 0, 0, 2, // 2 rows
            0, 0, 0, 4, 0, 0, 0, 1, // 1
            0xFF, 0xFF, 0xFF, 0xFF, // null
        ];
        assert_eq!(out, expected);
    }

    #[test]
    fn encoded_rows_are_the_same_bytes_and_decode_as_rows() {
        let metadata = ResultMetadata {
            columns: vec![
                col("a", "x", NativeType::Text),
                col("a", "y", NativeType::Int),
            ]
            .into(),
            paging_state: Some(Bytes::from_static(b"next")),
            no_metadata: false,
        };
        let cells = vec![
            vec![Some(Bytes::from_static(b"hi")), None],
            vec![Some(Bytes::new()), Some(Bytes::from_static(&[0, 0, 0, 7]))],
        ];
        let mut encoded = EncodedRows {
            metadata: metadata.clone(),
            ..EncodedRows::default()
        };
        for row in &cells {
            for cell in row {
                encoded.push_cell(cell.as_deref());
            }
            encoded.count += 1;
        }
        let rows = ResultBody::Rows(Rows {
            metadata,
            rows: cells,
        });
        let expected = round_trip(&rows, 4);
        let mut out = Vec::new();
        ResultBody::EncodedRows(encoded).encode(4, &mut out);
        assert_eq!(out, expected);
    }

    #[test]
    fn rows_mixed_tables_and_paging() {
        let rows = ResultBody::Rows(Rows {
            metadata: ResultMetadata {
                columns: vec![
                    col("a", "x", NativeType::Text),
                    col("b", "y", NativeType::Uuid),
                ]
                .into(),
                paging_state: Some(Bytes::from_static(b"next")),
                no_metadata: false,
            },
            rows: vec![vec![Some(Bytes::from_static(b"hi")), None]],
        });
        let out = round_trip(&rows, 4);
        assert_eq!(&out[4..8], &[0, 0, 0, HAS_MORE_PAGES as u8]);
        // Zero columns: no global spec.
        let empty = ResultBody::Rows(Rows::default());
        let out = round_trip(&empty, 4);
        assert_eq!(out, [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn rows_no_metadata_keeps_count() {
        let mut meta = ResultMetadata {
            columns: vec![
                col("t", "k", NativeType::Int),
                col("t", "v", NativeType::Int),
            ]
            .into(),
            paging_state: None,
            no_metadata: true,
        };
        let rows = Rows {
            metadata: meta.clone(),
            rows: vec![vec![None, None]],
        };
        let mut out = Vec::new();
        ResultBody::Rows(rows).encode(4, &mut out);
        assert_eq!(&out[4..12], &[0, 0, 0, 4, 0, 0, 0, 2]);
        let ResultBody::Rows(back) = ResultBody::decode(&mut &out[..], 4).unwrap() else {
            panic!("not rows");
        };
        assert_eq!(back.rows, vec![vec![None, None]]);
        assert_eq!(back.metadata.columns.len(), 2);
        meta.columns = Vec::new().into();
        let mut out = Vec::new();
        meta.encode(&mut out);
        assert_eq!(out, [0, 0, 0, 4, 0, 0, 0, 0]);
    }

    #[test]
    fn prepared_v4_and_v3() {
        let prepared = ResultBody::Prepared(Prepared {
            id: Bytes::from_static(&[7; 16]),
            metadata: PreparedMetadata {
                columns: vec![
                    col("t", "k", NativeType::Int),
                    col("t", "c", NativeType::Text),
                ],
                pk_indexes: vec![0],
            },
            result_metadata: ResultMetadata {
                columns: vec![col("t", "v", NativeType::Blob)].into(),
                paging_state: None,
                no_metadata: false,
            },
        });
        let v4 = round_trip(&prepared, 4);
        // kind, id, then flags=global, 2 columns, pk_count 1, pk index 0.
        assert_eq!(&v4[22..36], &[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0]);
        let ResultBody::Prepared(mut p) = prepared else {
            unreachable!()
        };
        p.metadata.pk_indexes.clear();
        let v3 = round_trip(&ResultBody::Prepared(p), 3);
        assert_eq!(v3.len(), v4.len() - 6);
    }

    #[test]
    fn other_kinds_round_trip() {
        round_trip(&ResultBody::Void, 4);
        round_trip(&ResultBody::SetKeyspace("ks".into()), 4);
        round_trip(
            &ResultBody::SchemaChange(SchemaChange {
                change_type: SchemaChangeType::Created,
                target: SchemaChangeTarget::Keyspace("ks".into()),
            }),
            4,
        );
        assert_eq!(
            ResultBody::decode(&mut &[0u8, 0, 0, 9][..], 4),
            Err(ResponseError::UnknownResultKind(9))
        );
    }

    #[test]
    fn hostile_counts_fail_fast() {
        // Rows, no_metadata, 2^31-1 columns.
        let body = [0, 0, 0, 2, 0, 0, 0, 4, 0x7F, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0];
        assert!(ResultBody::decode(&mut &body[..], 4).is_err());
        // Rows, 0 columns, 2^31-1 rows: each row is empty, so this must be bounded too.
        let body = [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 0xFF, 0xFF, 0xFF];
        assert!(ResultBody::decode(&mut &body[..], 4).is_err());
    }
}
