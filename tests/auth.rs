//! Security end to end: password authentication (raw frames and the scylla driver), roles,
//! permissions enforced on open sessions, persistence of roles, and TLS (tokio-rustls client,
//! certificates made at test time with rcgen).

#![allow(clippy::err_expect)]

mod common;

use common::raw::{query_body, string_map, RawClient};
use ringdb::config::{Authenticator, Authorizer, Config};
use ringdb::node::Node;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// A server in this process with its own configuration.
struct SecureServer {
    addr: SocketAddr,
    tls_addr: Option<SocketAddr>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl SecureServer {
    async fn start(dir: &Path, tls_listen: bool, edit: impl FnOnce(&mut Config)) -> SecureServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let tls_listener = if tls_listen {
            Some(TcpListener::bind("127.0.0.1:0").await.expect("bind tls"))
        } else {
            None
        };
        let tls_addr = tls_listener.as_ref().map(|l| l.local_addr().expect("addr"));
        let mut config = Config {
            listen: addr,
            tls_listen: tls_addr,
            data_dir: dir.to_path_buf(),
            shutdown_grace_seconds: 2,
            authenticator: Authenticator::PasswordAuthenticator,
            ..Config::default()
        };
        edit(&mut config);
        let node = tokio::task::spawn_blocking(move || Node::open(config))
            .await
            .expect("join")
            .expect("node opens");
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(ringdb::server::run_with_tls(
            listener,
            tls_listener,
            Arc::new(node),
            async {
                let _ = rx.await;
            },
        ));
        SecureServer {
            addr,
            tls_addr,
            stop: Some(tx),
            task: Some(task),
        }
    }

    async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("server stops within 10 s")
                .expect("server task");
        }
    }

    async fn login(&self, user: &str, password: &str) -> Result<Session, String> {
        SessionBuilder::new()
            .known_node(self.addr.to_string())
            .user(user, password)
            .build()
            .await
            .map_err(|e| e.to_string())
    }
}

fn with_authorizer(c: &mut Config) {
    c.authorizer = Authorizer::CassandraAuthorizer;
}

async fn run(session: &Session, cql: &str) -> Result<Vec<Vec<String>>, String> {
    let result = session
        .query_unpaged(cql, &[])
        .await
        .map_err(|e| e.to_string())?;
    if !result.is_rows() {
        return Ok(Vec::new());
    }
    let rows = result.into_rows_result().map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for row in rows
        .rows::<scylla::value::Row>()
        .map_err(|e| e.to_string())?
    {
        let row = row.map_err(|e| e.to_string())?;
        out.push(
            row.columns
                .iter()
                .map(|c| match c {
                    Some(scylla::value::CqlValue::Text(s)) => s.clone(),
                    Some(scylla::value::CqlValue::Boolean(b)) => b.to_string(),
                    Some(other) => format!("{other:?}"),
                    None => "null".into(),
                })
                .collect(),
        );
    }
    Ok(out)
}

async fn ok(session: &Session, cql: &str) -> Vec<Vec<String>> {
    run(session, cql)
        .await
        .unwrap_or_else(|e| panic!("{cql}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_handshake_authenticates_with_sasl_plain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = SecureServer::start(dir.path(), false, |_| {}).await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        let mut c = RawClient::connect(addr);
        c.send(4, 0, 1, 0x01, &string_map(&[("CQL_VERSION", "3.0.0")]));
        let f = c.recv().expect("AUTHENTICATE");
        assert_eq!(f.opcode, 0x03, "AUTHENTICATE expected: {f:?}");
        assert!(String::from_utf8_lossy(&f.body)
            .contains("org.apache.cassandra.auth.PasswordAuthenticator"));

        c.send(4, 0, 2, 0x07, &query_body("SELECT * FROM system.local"));
        let f = c.recv().expect("error");
        assert_eq!(f.error_code(), Some(0x000A));
        assert_eq!(
            f.error_message(),
            "Unexpected message QUERY, expecting SASL_RESPONSE"
        );

        let token = |t: &[u8]| {
            let mut v = (t.len() as i32).to_be_bytes().to_vec();
            v.extend_from_slice(t);
            v
        };
        c.send(4, 0, 3, 0x0F, &token(b"\0cassandra\0wrong"));
        let f = c.recv().expect("bad credentials");
        assert_eq!(f.error_code(), Some(0x0100));
        assert_eq!(
            f.error_message(),
            "Provided username cassandra and/or password are incorrect"
        );

        c.send(4, 0, 4, 0x0F, &token(b"\0cassandra\0cassandra"));
        let f = c.recv().expect("AUTH_SUCCESS");
        assert_eq!(f.opcode, 0x10, "AUTH_SUCCESS expected: {f:?}");

        c.send(4, 0, 5, 0x07, &query_body("SELECT key FROM system.local"));
        let f = c.recv().expect("rows");
        assert_eq!(f.opcode, 0x08, "RESULT expected: {f:?}");
    })
    .await
    .expect("raw client");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_logs_in_with_the_right_password_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = SecureServer::start(dir.path(), false, |c| {
        c.superuser_name = "admin".into();
        c.superuser_password = ringdb::config::Secret::new("hunter2");
    })
    .await;
    let admin = server
        .login("admin", "hunter2")
        .await
        .expect("admin logs in");
    let rows = ok(&admin, "SELECT key FROM system.local").await;
    assert_eq!(rows, [["local"]]);

    let err = server
        .login("admin", "nope")
        .await
        .err()
        .expect("wrong password");
    assert!(
        err.contains("Provided username admin and/or password are incorrect"),
        "{err}"
    );
    let err = server
        .login("ghost", "x")
        .await
        .err()
        .expect("unknown user");
    assert!(err.contains("Provided username ghost"), "{err}");
    assert!(
        server.login("cassandra", "cassandra").await.is_err(),
        "no default role when another superuser is configured"
    );

    // Users created with CQL log in; LOGIN = false roles do not.
    ok(
        &admin,
        "CREATE ROLE alice WITH PASSWORD = 'pw' AND LOGIN = true",
    )
    .await;
    ok(&admin, "CREATE ROLE nologin WITH PASSWORD = 'pw'").await;
    ok(&admin, "CREATE USER 'Bob' WITH PASSWORD 'pw2' NOSUPERUSER").await;
    server.login("alice", "pw").await.expect("alice logs in");
    server.login("Bob", "pw2").await.expect("Bob logs in");
    let err = server.login("nologin", "pw").await.err().expect("no login");
    assert!(err.contains("nologin is not permitted to log in"), "{err}");

    ok(&admin, "ALTER ROLE alice WITH PASSWORD = 'new'").await;
    assert!(server.login("alice", "pw").await.is_err());
    server.login("alice", "new").await.expect("new password");

    let roles = ok(&admin, "LIST ROLES").await;
    let names: Vec<&str> = roles.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["Bob", "admin", "alice", "nologin"]);
    assert_eq!(roles[1][1..], ["true", "true", "Map([])", "ALL"]);
    let users = ok(&admin, "LIST USERS").await;
    assert_eq!(
        users,
        [
            ["Bob", "false", "ALL"],
            ["admin", "true", "ALL"],
            ["alice", "false", "ALL"]
        ]
    );
    let stored = ok(
        &admin,
        "SELECT role, can_login, is_superuser, salted_hash FROM system_auth.roles WHERE role = 'alice'",
    )
    .await;
    assert_eq!(stored, [["alice", "true", "false", "null"]]);

    let err = run(&admin, "CREATE ROLE alice").await.expect_err("exists");
    assert!(err.contains("alice already exists"), "{err}");
    ok(&admin, "CREATE ROLE IF NOT EXISTS alice").await;
    let err = run(&admin, "DROP ROLE admin").await.expect_err("self");
    assert!(
        err.contains("Cannot DROP primary role for current login"),
        "{err}"
    );
    ok(&admin, "DROP ROLE alice").await;
    assert!(server.login("alice", "new").await.is_err());
    ok(&admin, "DROP ROLE IF EXISTS alice").await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_are_enforced_and_grants_reach_open_sessions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = SecureServer::start(dir.path(), false, with_authorizer).await;
    let admin = server.login("cassandra", "cassandra").await.expect("login");
    for cql in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
        "INSERT INTO ks.t (k, v) VALUES (1, 'one')",
        "CREATE ROLE bob WITH PASSWORD = 'pw' AND LOGIN = true",
        "CREATE ROLE writer",
    ] {
        ok(&admin, cql).await;
    }
    // bob connects (the driver reads system tables, which stay readable) but has no grant yet.
    let bob = server.login("bob", "pw").await.expect("bob logs in");
    let err = run(&bob, "SELECT * FROM ks.t")
        .await
        .expect_err("no SELECT");
    assert!(
        err.contains("User bob has no SELECT permission on <table ks.t> or any of its parents"),
        "{err}"
    );
    let err = run(&bob, "CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        .await
        .expect_err("no CREATE");
    assert!(
        err.contains("User bob has no CREATE permission on <all keyspaces>"),
        "{err}"
    );
    let err = run(&bob, "SELECT * FROM system_auth.roles")
        .await
        .expect_err("system_auth is guarded");
    assert!(
        err.contains("no SELECT permission on <table system_auth.roles>"),
        "{err}"
    );

    // A grant on the keyspace reaches bob's open session.
    ok(&admin, "GRANT SELECT ON KEYSPACE ks TO bob").await;
    assert_eq!(ok(&bob, "SELECT k, v FROM ks.t").await, [["Int(1)", "one"]]);
    let err = run(&bob, "INSERT INTO ks.t (k, v) VALUES (2, 'two')")
        .await
        .expect_err("no MODIFY");
    assert!(
        err.contains("User bob has no MODIFY permission on <table ks.t>"),
        "{err}"
    );

    // Inherited through a role.
    ok(&admin, "GRANT MODIFY ON TABLE ks.t TO writer").await;
    ok(&admin, "GRANT writer TO bob").await;
    ok(&bob, "INSERT INTO ks.t (k, v) VALUES (2, 'two')").await;
    let prepared = bob
        .prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        .await
        .expect("prepare");
    bob.execute_unpaged(&prepared, (3, "three"))
        .await
        .expect("execute with MODIFY");

    let perms = ok(&admin, "LIST ALL PERMISSIONS OF bob").await;
    assert_eq!(
        perms,
        [
            ["bob", "bob", "<keyspace ks>", "SELECT"],
            ["writer", "writer", "<table ks.t>", "MODIFY"]
        ]
    );
    let roles = ok(&bob, "LIST ROLES").await;
    let names: Vec<&str> = roles.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["bob", "writer"]);
    let err = run(&bob, "LIST ALL PERMISSIONS")
        .await
        .expect_err("not super");
    assert!(
        err.contains("You are not authorized to view everyone's permissions"),
        "{err}"
    );

    // Revoking takes effect at once too, for prepared statements as well.
    ok(&admin, "REVOKE writer FROM bob").await;
    let err = bob
        .execute_unpaged(&prepared, (4, "four"))
        .await
        .expect_err("MODIFY revoked")
        .to_string();
    assert!(err.contains("has no MODIFY permission"), "{err}");
    ok(&admin, "REVOKE SELECT ON KEYSPACE ks FROM bob").await;
    assert!(run(&bob, "SELECT * FROM ks.t").await.is_err());

    // Non-superusers cannot grant what they lack, nor create superusers.
    let err = run(&bob, "GRANT SELECT ON KEYSPACE ks TO bob")
        .await
        .expect_err("no AUTHORIZE");
    assert!(
        err.contains("has no AUTHORIZE permission on <keyspace ks>"),
        "{err}"
    );
    let err = run(&admin, "GRANT DESCRIBE ON KEYSPACE ks TO bob")
        .await
        .expect_err("not applicable");
    assert!(
        err.contains("does not support any of the requested permissions"),
        "{err}"
    );

    // The creator of a keyspace gets every permission on it.
    ok(&admin, "GRANT CREATE ON ALL KEYSPACES TO bob").await;
    ok(&bob, "CREATE KEYSPACE mine WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
    ok(&bob, "CREATE TABLE mine.x (k int PRIMARY KEY)").await;
    ok(&bob, "INSERT INTO mine.x (k) VALUES (1)").await;
    ok(&bob, "DROP KEYSPACE mine").await;
    let left = ok(
        &admin,
        "SELECT role, resource FROM system_auth.role_permissions",
    )
    .await;
    assert!(
        left.iter().all(|r| !r[1].starts_with("data/mine")),
        "grants on a dropped keyspace go away: {left:?}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_and_grants_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = SecureServer::start(dir.path(), false, with_authorizer).await;
    let admin = server.login("cassandra", "cassandra").await.expect("login");
    ok(
        &admin,
        "CREATE ROLE carol WITH PASSWORD = 'pw' AND LOGIN = true AND OPTIONS = {'team': 'blue'}",
    )
    .await;
    ok(&admin, "GRANT DESCRIBE ON ALL ROLES TO carol").await;
    ok(&admin, "ALTER ROLE cassandra WITH PASSWORD = 'changed'").await;
    drop(admin);
    server.stop().await;

    let server = SecureServer::start(dir.path(), false, with_authorizer).await;
    assert!(server.login("cassandra", "cassandra").await.is_err());
    server
        .login("cassandra", "changed")
        .await
        .expect("changed password persisted");
    let carol = server.login("carol", "pw").await.expect("carol persisted");
    let roles = ok(&carol, "LIST ROLES").await;
    assert_eq!(
        roles.len(),
        2,
        "DESCRIBE on ALL ROLES lists every role: {roles:?}"
    );
    assert!(roles
        .iter()
        .any(|r| r[0] == "carol" && r[3].contains("team")));
    let text = std::fs::read_to_string(dir.path().join("auth.json")).expect("auth.json");
    assert!(!text.contains("\"pw\"") && !text.contains("changed"));
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// TLS

struct Pki {
    ca_pem: String,
    ca_der: CertificateDer<'static>,
    ca_cert: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
}

impl Pki {
    fn new() -> Pki {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "ringdb test CA");
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let ca_cert = params.self_signed(&ca_key).expect("CA");
        Pki {
            ca_pem: ca_cert.pem(),
            ca_der: ca_cert.der().clone(),
            ca_cert,
            ca_key,
        }
    }

    /// A leaf certificate and key signed by the CA, as PEM.
    fn leaf(&self, names: &[&str]) -> (String, String) {
        let params =
            rcgen::CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .expect("params");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params
            .signed_by(&key, &self.ca_cert, &self.ca_key)
            .expect("sign");
        (cert.pem(), key.serialize_pem())
    }

    fn write_server_files(&self, dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let (cert, key) = self.leaf(&["localhost", "127.0.0.1"]);
        let cert_path = dir.join("server.pem");
        let key_path = dir.join("server.key");
        std::fs::write(&cert_path, cert).expect("write cert");
        std::fs::write(&key_path, key).expect("write key");
        (cert_path, key_path)
    }

    fn client_config(&self, client_cert: Option<(String, String)>) -> rustls::ClientConfig {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca_der.clone()).expect("root");
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots);
        match client_cert {
            Some((cert, key)) => {
                use rustls::pki_types::pem::PemObject;
                let cert = CertificateDer::from_pem_slice(cert.as_bytes()).expect("cert pem");
                let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key pem");
                builder
                    .with_client_auth_cert(vec![cert], key)
                    .expect("client auth")
            }
            None => builder.with_no_client_auth(),
        }
    }
}

/// Connects over TLS and exchanges OPTIONS → SUPPORTED; returns the response opcode.
async fn tls_options(addr: SocketAddr, config: rustls::ClientConfig) -> std::io::Result<u8> {
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").expect("name");
    let mut tls = connector.connect(name, tcp).await?;
    tls.write_all(&[4, 0, 0, 1, 0x05, 0, 0, 0, 0]).await?;
    tls.flush().await?;
    let mut header = [0u8; 9];
    tls.read_exact(&mut header).await?;
    Ok(header[4])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_listener_serves_cql_and_closes_plaintext_clients() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pki = Pki::new();
    let (cert, key) = pki.write_server_files(dir.path());
    let server = SecureServer::start(dir.path(), true, |c| {
        c.authenticator = Authenticator::AllowAllAuthenticator;
        c.tls_cert_file = Some(cert);
        c.tls_key_file = Some(key);
        c.tls_handshake_timeout_seconds = 1;
    })
    .await;
    let tls_addr = server.tls_addr.expect("tls listener");
    let opcode = tls_options(tls_addr, pki.client_config(None))
        .await
        .expect("TLS OPTIONS");
    assert_eq!(opcode, 0x06, "SUPPORTED over TLS");

    // The plain port still speaks plain CQL.
    let plain = server.addr;
    tokio::task::spawn_blocking(move || {
        let mut c = RawClient::connect(plain);
        c.send(4, 0, 0, 0x05, &[]);
        assert_eq!(c.recv().expect("SUPPORTED").opcode, 0x06);

        // A plaintext client on the TLS port is disconnected, not left hanging.
        let started = std::time::Instant::now();
        let mut c = RawClient::connect(tls_addr);
        c.send(4, 0, 0, 0x05, &[]);
        assert!(c.recv().is_none(), "no CQL answer on the TLS port");
        assert!(started.elapsed() < Duration::from_secs(4));

        // A client that says nothing is dropped after the handshake timeout.
        let started = std::time::Instant::now();
        let mut c = RawClient::connect(tls_addr);
        assert!(c.is_closed(), "silent client closed");
        assert!(started.elapsed() < Duration::from_secs(4));
    })
    .await
    .expect("raw clients");

    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_only_port_with_client_certificates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pki = Pki::new();
    let (cert, key) = pki.write_server_files(dir.path());
    let ca_path = dir.path().join("ca.pem");
    std::fs::write(&ca_path, &pki.ca_pem).expect("write ca");
    let server = SecureServer::start(dir.path(), false, |c| {
        c.authenticator = Authenticator::AllowAllAuthenticator;
        c.tls_only = true;
        c.tls_cert_file = Some(cert);
        c.tls_key_file = Some(key);
        c.tls_client_ca_file = Some(ca_path);
    })
    .await;
    let opcode = tls_options(server.addr, pki.client_config(Some(pki.leaf(&["client"]))))
        .await
        .expect("client certificate accepted");
    assert_eq!(opcode, 0x06);

    let without = tls_options(server.addr, pki.client_config(None)).await;
    assert!(without.is_err(), "no client certificate: refused");

    let other = Pki::new();
    // Trusts the server's CA but presents a certificate from another CA.
    let foreign = tls_options(
        server.addr,
        pki.client_config(Some(other.leaf(&["client"]))),
    )
    .await;
    assert!(foreign.is_err(), "certificate from an unknown CA: refused");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_security_settings_stop_startup() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config {
        data_dir: dir.path().to_path_buf(),
        authorizer: Authorizer::CassandraAuthorizer,
        ..Config::default()
    };
    let err = Node::open(config)
        .err()
        .expect("AllowAll + CassandraAuthorizer");
    assert!(err.to_string().contains("AllowAllAuthenticator"), "{err}");
    let config = Config {
        data_dir: dir.path().to_path_buf(),
        tls_only: true,
        tls_cert_file: Some(dir.path().join("missing.pem")),
        tls_key_file: Some(dir.path().join("missing.key")),
        ..Config::default()
    };
    let err = Node::open(config).err().expect("missing certificate");
    assert!(err.to_string().contains("missing.pem"), "{err}");
}
