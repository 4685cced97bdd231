//! TLS for internode connections (rustls, `ring` provider): the server presents a certificate,
//! the client checks it against a CA, with the peer's IP address as the server name (so node
//! certificates carry their IP addresses as subject alternative names). Optionally mutual: the
//! server then requires a client certificate signed by its CA.

use crate::tls::TlsError;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// The client side of internode TLS: which CA the peers' certificates must be signed by, and
/// the certificate to present when the peers require one.
#[derive(Clone)]
pub struct ClientTls {
    connector: TlsConnector,
}

/// The server side of internode TLS: the certificate this node presents, and optionally the CA
/// that connecting nodes' certificates must be signed by.
#[derive(Clone)]
pub struct ServerTls {
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientTls")
    }
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerTls")
    }
}

impl ClientTls {
    /// Uses a ready rustls configuration.
    pub fn new(config: Arc<ClientConfig>) -> ClientTls {
        ClientTls {
            connector: TlsConnector::from(config),
        }
    }

    /// Trusts the CA certificates of the PEM file `ca_file`; with `client_cert` (certificate
    /// chain and private key PEM files), presents that certificate to peers that ask for one.
    ///
    /// # Errors
    /// When a file cannot be read or parsed, or rustls rejects the certificates or key.
    pub fn from_pem_files(
        ca_file: &Path,
        client_cert: Option<(&Path, &Path)>,
    ) -> Result<ClientTls, TlsError> {
        let mut roots = RootCertStore::empty();
        for cert in crate::tls::read_certs(ca_file)? {
            roots.add(cert).map_err(|e| TlsError::File {
                path: ca_file.to_path_buf(),
                message: e.to_string(),
            })?;
        }
        let builder =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| TlsError::Config(e.to_string()))?
                .with_root_certificates(roots);
        let config = match client_cert {
            Some((cert_file, key_file)) => builder
                .with_client_auth_cert(
                    crate::tls::read_certs(cert_file)?,
                    crate::tls::read_key(key_file)?,
                )
                .map_err(|e| TlsError::Config(e.to_string()))?,
            None => builder.with_no_client_auth(),
        };
        Ok(ClientTls::new(Arc::new(config)))
    }

    /// The TLS handshake over `tcp` to `peer`, whose certificate must name its IP address.
    pub(super) async fn connect(
        &self,
        peer: SocketAddr,
        tcp: TcpStream,
    ) -> std::io::Result<TlsStream<TcpStream>> {
        self.connector
            .connect(ServerName::from(peer.ip()), tcp)
            .await
    }
}

impl ServerTls {
    /// Uses a ready acceptor.
    pub fn new(acceptor: TlsAcceptor) -> ServerTls {
        ServerTls { acceptor }
    }

    /// Presents the certificate chain `cert_file` with its private key `key_file` (PEM files);
    /// with `client_ca_file`, connecting nodes must present a certificate signed by one of its
    /// CAs.
    ///
    /// # Errors
    /// When a file cannot be read or parsed, or the key does not match the certificate.
    pub fn from_pem_files(
        cert_file: &Path,
        key_file: &Path,
        client_ca_file: Option<&Path>,
    ) -> Result<ServerTls, TlsError> {
        crate::tls::acceptor(cert_file, key_file, client_ca_file).map(ServerTls::new)
    }

    /// The acceptor, for the server's connections.
    pub(super) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }
}
