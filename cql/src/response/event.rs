//! EVENT (opcode 0x0C, `native_protocol_v4.spec` §4.2.6), pushed on stream -1 to connections
//! that REGISTERed: `[string event type]` then the event body.

use std::net::SocketAddr;

use bytes::BufMut;

use super::{ResponseError, SchemaChange};
use crate::wire;

/// Event type name of [`Event::TopologyChange`].
pub const TOPOLOGY_CHANGE: &str = "TOPOLOGY_CHANGE";
/// Event type name of [`Event::StatusChange`].
pub const STATUS_CHANGE: &str = "STATUS_CHANGE";
/// Event type name of [`Event::SchemaChange`].
pub const SCHEMA_CHANGE: &str = "SCHEMA_CHANGE";

/// A server-pushed event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A schema element was created, updated or dropped.
    SchemaChange(SchemaChange),
    /// `NEW_NODE` or `REMOVED_NODE` with the node's native-protocol address.
    TopologyChange {
        /// `NEW_NODE` or `REMOVED_NODE`.
        change: String,
        /// The node's address.
        address: SocketAddr,
    },
    /// `UP` or `DOWN` with the node's native-protocol address.
    StatusChange {
        /// `UP` or `DOWN`.
        status: String,
        /// The node's address.
        address: SocketAddr,
    },
}

impl Event {
    /// The event type name clients REGISTER for.
    pub fn event_type(&self) -> &'static str {
        match self {
            Event::SchemaChange(_) => SCHEMA_CHANGE,
            Event::TopologyChange { .. } => TOPOLOGY_CHANGE,
            Event::StatusChange { .. } => STATUS_CHANGE,
        }
    }

    /// Appends the EVENT body.
    pub fn encode(&self, out: &mut impl BufMut) {
        wire::write_string(out, self.event_type());
        match self {
            Event::SchemaChange(sc) => sc.encode(out),
            Event::TopologyChange { change, address } => {
                wire::write_string(out, change);
                wire::write_inet(out, *address);
            }
            Event::StatusChange { status, address } => {
                wire::write_string(out, status);
                wire::write_inet(out, *address);
            }
        }
    }

    /// Decodes an EVENT body.
    ///
    /// # Errors
    /// [`ResponseError::UnknownEvent`] or a body error.
    pub fn decode(buf: &mut &[u8]) -> Result<Event, ResponseError> {
        Ok(match wire::read_string(buf)? {
            SCHEMA_CHANGE => Event::SchemaChange(SchemaChange::decode(buf)?),
            TOPOLOGY_CHANGE => Event::TopologyChange {
                change: wire::read_string(buf)?.to_owned(),
                address: wire::read_inet(buf)?,
            },
            STATUS_CHANGE => Event::StatusChange {
                status: wire::read_string(buf)?.to_owned(),
                address: wire::read_inet(buf)?,
            },
            other => return Err(ResponseError::UnknownEvent(other.to_owned())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::{SchemaChangeTarget, SchemaChangeType};

    #[test]
    fn events_round_trip() {
        let addr: SocketAddr = "[::1]:9042".parse().unwrap();
        let events = [
            Event::SchemaChange(SchemaChange {
                change_type: SchemaChangeType::Dropped,
                target: SchemaChangeTarget::Table {
                    keyspace: "ks".into(),
                    name: "t".into(),
                },
            }),
            Event::TopologyChange {
                change: "NEW_NODE".into(),
                address: addr,
            },
            Event::StatusChange {
                status: "UP".into(),
                address: "127.0.0.1:9042".parse().unwrap(),
            },
        ];
        for e in events {
            let mut out = Vec::new();
            e.encode(&mut out);
            let mut buf = &out[..];
            assert_eq!(Event::decode(&mut buf), Ok(e));
            assert!(buf.is_empty());
        }
        assert!(matches!(
            Event::decode(&mut &[0u8, 1, b'X'][..]),
            Err(ResponseError::UnknownEvent(_))
        ));
    }
}
