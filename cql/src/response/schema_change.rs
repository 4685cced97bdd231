//! The schema-change description shared by RESULT kind 5 and the SCHEMA_CHANGE event
//! (`native_protocol_v4.spec` §4.2.5.5, §4.2.6): `[string change][string target]` then
//! `[string ks]` (KEYSPACE), `[string ks][string name]` (TABLE, TYPE) or
//! `[string ks][string name][string list arg types]` (FUNCTION, AGGREGATE).

use bytes::BufMut;

use super::ResponseError;
use crate::wire;

/// What happened to the schema element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaChangeType {
    /// `CREATED`.
    Created,
    /// `UPDATED`.
    Updated,
    /// `DROPPED`.
    Dropped,
}

impl SchemaChangeType {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaChangeType::Created => "CREATED",
            SchemaChangeType::Updated => "UPDATED",
            SchemaChangeType::Dropped => "DROPPED",
        }
    }
}

/// The schema element that changed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SchemaChangeTarget {
    /// A keyspace.
    Keyspace(String),
    /// A table (index changes are reported as an updated table).
    Table {
        /// Keyspace.
        keyspace: String,
        /// Table name.
        name: String,
    },
    /// A user-defined type.
    Type {
        /// Keyspace.
        keyspace: String,
        /// Type name.
        name: String,
    },
    /// A user-defined function.
    Function {
        /// Keyspace.
        keyspace: String,
        /// Function name.
        name: String,
        /// Argument CQL types.
        arg_types: Vec<String>,
    },
    /// A user-defined aggregate.
    Aggregate {
        /// Keyspace.
        keyspace: String,
        /// Aggregate name.
        name: String,
        /// Argument CQL types.
        arg_types: Vec<String>,
    },
}

/// A schema change, as a RESULT or an EVENT.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SchemaChange {
    /// Created, updated or dropped.
    pub change_type: SchemaChangeType,
    /// What changed.
    pub target: SchemaChangeTarget,
}

impl SchemaChange {
    /// Appends the schema-change body.
    pub fn encode(&self, out: &mut impl BufMut) {
        wire::write_string(out, self.change_type.as_str());
        match &self.target {
            SchemaChangeTarget::Keyspace(ks) => {
                wire::write_string(out, "KEYSPACE");
                wire::write_string(out, ks);
            }
            SchemaChangeTarget::Table { keyspace, name } => {
                wire::write_string(out, "TABLE");
                wire::write_string(out, keyspace);
                wire::write_string(out, name);
            }
            SchemaChangeTarget::Type { keyspace, name } => {
                wire::write_string(out, "TYPE");
                wire::write_string(out, keyspace);
                wire::write_string(out, name);
            }
            SchemaChangeTarget::Function {
                keyspace,
                name,
                arg_types,
            } => {
                wire::write_string(out, "FUNCTION");
                wire::write_string(out, keyspace);
                wire::write_string(out, name);
                wire::write_string_list(out, arg_types);
            }
            SchemaChangeTarget::Aggregate {
                keyspace,
                name,
                arg_types,
            } => {
                wire::write_string(out, "AGGREGATE");
                wire::write_string(out, keyspace);
                wire::write_string(out, name);
                wire::write_string_list(out, arg_types);
            }
        }
    }

    /// Decodes a schema-change body.
    ///
    /// # Errors
    /// [`ResponseError::InvalidSchemaChange`] for an unknown change or target, or a wire error.
    pub fn decode(buf: &mut &[u8]) -> Result<SchemaChange, ResponseError> {
        let change_type = match wire::read_string(buf)? {
            "CREATED" => SchemaChangeType::Created,
            "UPDATED" => SchemaChangeType::Updated,
            "DROPPED" => SchemaChangeType::Dropped,
            other => return Err(ResponseError::InvalidSchemaChange(other.to_owned())),
        };
        let target = wire::read_string(buf)?;
        let ks = wire::read_string(buf)?.to_owned();
        let target = match target {
            "KEYSPACE" => SchemaChangeTarget::Keyspace(ks),
            "TABLE" => SchemaChangeTarget::Table {
                keyspace: ks,
                name: wire::read_string(buf)?.to_owned(),
            },
            "TYPE" => SchemaChangeTarget::Type {
                keyspace: ks,
                name: wire::read_string(buf)?.to_owned(),
            },
            "FUNCTION" => SchemaChangeTarget::Function {
                keyspace: ks,
                name: wire::read_string(buf)?.to_owned(),
                arg_types: wire::read_string_list(buf)?,
            },
            "AGGREGATE" => SchemaChangeTarget::Aggregate {
                keyspace: ks,
                name: wire::read_string(buf)?.to_owned(),
                arg_types: wire::read_string_list(buf)?,
            },
            other => return Err(ResponseError::InvalidSchemaChange(other.to_owned())),
        };
        Ok(SchemaChange {
            change_type,
            target,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_changes_round_trip() {
        let targets = [
            SchemaChangeTarget::Keyspace("ks".into()),
            SchemaChangeTarget::Table {
                keyspace: "ks".into(),
                name: "t".into(),
            },
            SchemaChangeTarget::Type {
                keyspace: "ks".into(),
                name: "ty".into(),
            },
            SchemaChangeTarget::Function {
                keyspace: "ks".into(),
                name: "f".into(),
                arg_types: vec!["int".into()],
            },
            SchemaChangeTarget::Aggregate {
                keyspace: "ks".into(),
                name: "a".into(),
                arg_types: vec![],
            },
        ];
        for (i, target) in targets.into_iter().enumerate() {
            let change_type = [
                SchemaChangeType::Created,
                SchemaChangeType::Updated,
                SchemaChangeType::Dropped,
            ][i % 3];
            let sc = SchemaChange {
                change_type,
                target,
            };
            let mut out = Vec::new();
            sc.encode(&mut out);
            let mut buf = &out[..];
            assert_eq!(SchemaChange::decode(&mut buf), Ok(sc));
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn keyspace_change_bytes() {
        let sc = SchemaChange {
            change_type: SchemaChangeType::Created,
            target: SchemaChangeTarget::Keyspace("k".into()),
        };
        let mut out = Vec::new();
        sc.encode(&mut out);
        let mut expected = vec![0, 7];
        expected.extend_from_slice(b"CREATED");
        expected.extend_from_slice(&[0, 8]);
        expected.extend_from_slice(b"KEYSPACE");
        expected.extend_from_slice(&[0, 1, b'k']);
        assert_eq!(out, expected);
    }
}
