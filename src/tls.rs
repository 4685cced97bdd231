//! TLS for client connections (Cassandra's `client_encryption_options`), with rustls and the
//! `ring` crypto provider: the server certificate and key from PEM files, and optionally a CA
//! whose signature every client certificate must carry.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

/// A TLS setting that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file is missing, unreadable or holds nothing usable.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// rustls rejected the certificate, key or CA.
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// Builds the acceptor from `cert_file` and `key_file`; with `client_ca_file`, clients must
/// present a certificate signed by one of its CAs.
///
/// # Errors
/// When a file cannot be read or parsed, or the key does not match the certificate.
pub fn acceptor(
    cert_file: &Path,
    key_file: &Path,
    client_ca_file: Option<&Path>,
) -> Result<TlsAcceptor, TlsError> {
    let certs = read_certs(cert_file)?;
    let key = read_key(key_file)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let builder = match client_ca_file {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for cert in read_certs(ca)? {
                roots.add(cert).map_err(|e| TlsError::File {
                    path: ca.to_path_buf(),
                    message: e.to_string(),
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| TlsError::Config(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The PEM private key in `path`.
///
/// # Errors
/// When the file holds no usable key.
pub(crate) fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| TlsError::File {
        path: path.to_path_buf(),
        message: format!("no usable private key: {e}"),
    })
}

/// The PEM certificates in `path` (at least one).
///
/// # Errors
/// When the file cannot be read or holds none.
pub(crate) fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let err = |message: String| TlsError::File {
        path: path.to_path_buf(),
        message,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| err(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(e.to_string()))?;
    if certs.is_empty() {
        return Err(err("no PEM certificate found".into()));
    }
    Ok(certs)
}
