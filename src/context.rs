//! `SessionContext`: what one request knows about the connection it came on (keyspace, peer,
//! role), handed from the session to the executor and to authorization.

use std::net::SocketAddr;
use std::sync::Arc;

/// What a request needs to know about the connection it came on.
#[derive(Debug, Clone)]
pub struct SessionContext {
    /// The keyspace set by `USE`, if any.
    pub keyspace: Option<Arc<str>>,
    /// The client's address.
    pub peer: SocketAddr,
    /// The role that logged in; `None` for anonymous sessions (`AllowAllAuthenticator`).
    pub user: Option<Arc<str>>,
    /// The request's frame asked for it to be traced.
    pub traced: bool,
}
