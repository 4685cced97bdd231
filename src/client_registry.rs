//! `ClientRegistry`: the node's open client connections, for `system_views.clients` (what
//! each connected as, with which driver, how many requests it sent).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// One connection as `system_views.clients` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientInfo {
    /// The client's address and port.
    pub peer: SocketAddr,
    /// The role logged in, if any.
    pub username: Option<String>,
    /// `established`, `authenticating` or `ready`.
    pub stage: &'static str,
    /// The protocol version (0 before STARTUP).
    pub protocol_version: u8,
    /// The STARTUP options (DRIVER_NAME, DRIVER_VERSION, CQL_VERSION...).
    pub options: Vec<(String, String)>,
    /// Requests received.
    pub requests: u64,
    /// Whether the connection uses TLS.
    pub tls: bool,
}

impl ClientInfo {
    /// The STARTUP option `key`, if the client sent it.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }
}

/// A connection the registry lists (a session).
pub trait Client: Send + Sync {
    /// The connection as `system_views.clients` shows it.
    fn client_info(&self) -> ClientInfo;
}

/// The open connections.
#[derive(Default)]
pub struct ClientRegistry {
    next: AtomicU64,
    open: Mutex<HashMap<u64, Weak<dyn Client>>>,
}

/// A registered connection; dropping it takes the connection off the registry.
pub struct Registration<'a> {
    registry: &'a ClientRegistry,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut open = self.registry.open.lock().unwrap_or_else(|p| p.into_inner());
        open.remove(&self.id);
    }
}

impl ClientRegistry {
    /// Registers `client` until the returned registration is dropped.
    pub fn register(&self, client: Arc<dyn Client>) -> Registration<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.insert(id, Arc::downgrade(&client));
        Registration { registry: self, id }
    }

    /// Every open connection, by address.
    pub fn all(&self) -> Vec<ClientInfo> {
        let sessions: Vec<Arc<dyn Client>> = {
            let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            open.values().filter_map(Weak::upgrade).collect()
        };
        let mut out: Vec<ClientInfo> = sessions.iter().map(|s| s.client_info()).collect();
        out.sort_by_key(|c| c.peer);
        out
    }
}
