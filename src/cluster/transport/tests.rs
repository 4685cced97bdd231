//! Tests of the internode transport over real TCP on 127.0.0.1.

#![allow(clippy::unwrap_used)]

use super::handshake::{self, Hello, Reply, MAGIC};
use super::server::serve_with;
use super::*;
use futures::FutureExt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const CLUSTER: &str = "Test Cluster";
const TIMEOUT: Duration = Duration::from_secs(5);

fn identity(cluster_name: &str, node_id: u64) -> Identity {
    Identity {
        cluster_name: cluster_name.into(),
        node_id,
    }
}

/// Answers `"<from>:"` followed by the request reversed; `"hang"` never gets an answer,
/// `"panic"` makes the handler panic and `"huge"` gets an answer over the size limit.
#[derive(Default)]
struct Echo {
    /// Told of each `"hang"` request as it arrives.
    hanging: Arc<tokio::sync::Notify>,
}

impl Echo {
    fn new() -> Arc<Echo> {
        Arc::new(Echo::default())
    }
}

impl Handler for Echo {
    fn handle(&self, from: u64, payload: Vec<u8>) -> BoxFuture<'static, Vec<u8>> {
        let hanging = Arc::clone(&self.hanging);
        async move {
            match payload.as_slice() {
                b"hang" => {
                    hanging.notify_one();
                    futures::future::pending::<()>().await;
                }
                b"panic" => panic!("test handler panics"),
                b"huge" => return vec![0; MAX_PAYLOAD_BYTES + 1],
                _ => {}
            }
            let mut answer = format!("{from}:").into_bytes();
            answer.extend(payload.iter().rev());
            answer
        }
        .boxed()
    }
}

fn echoed(from: u64, payload: &[u8]) -> Vec<u8> {
    let mut answer = format!("{from}:").into_bytes();
    answer.extend(payload.iter().rev());
    answer
}

/// A running server; cancelled (and its connections closed) on drop.
struct Server {
    addr: SocketAddr,
    shutdown: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl Server {
    async fn start(handler: Arc<dyn Handler>, tls: Option<ServerTls>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        Server::on(listener, handler, tls, HELLO_TIMEOUT)
    }

    fn on(
        listener: TcpListener,
        handler: Arc<dyn Handler>,
        tls: Option<ServerTls>,
        hello_timeout: Duration,
    ) -> Server {
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(serve_with(
            listener,
            identity(CLUSTER, 1),
            handler,
            tls,
            shutdown.clone(),
            hello_timeout,
        ));
        Server {
            addr,
            shutdown,
            task: Some(task),
        }
    }

    /// Cancels the server and waits until it and its connections are gone.
    async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            tokio::time::timeout(TIMEOUT, task).await.unwrap().unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A client of the test cluster, node 2.
fn client() -> Transport {
    Transport::new(identity(CLUSTER, 2), None)
}

async fn assert_served(addr: SocketAddr) {
    let answer = client()
        .call(addr, b"still there".to_vec(), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(answer, echoed(2, b"still there"));
}

/// Writes `bytes` on a raw connection, closes its sending side and reads until the server
/// closes the connection (a reset counts as closed); returns what the server sent.
async fn raw_exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    // Ignored: the server may have reset the connection already.
    let _ = stream.shutdown().await;
    let mut received = Vec::new();
    let read = tokio::time::timeout(TIMEOUT, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server did not close the connection");
    received
}

/// Decodes the handshake answer frame at the start of `received`.
fn decode_reply(received: &[u8]) -> Reply {
    assert!(received.len() >= 4, "no answer frame: {received:?}");
    let len = u32::from_be_bytes([received[0], received[1], received[2], received[3]]) as usize;
    postcard::from_bytes(&received[4..4 + len]).unwrap()
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut framed = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    framed.extend_from_slice(body);
    framed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_concurrent_calls_share_one_connection() {
    let server = Server::start(Echo::new(), None).await;
    let transport = client();
    let calls = (0..500u32).map(|i| {
        let transport = transport.clone();
        let addr = server.addr;
        // Spawned, so that the calls also run in parallel and the future is shown to be Send.
        tokio::spawn(async move {
            let payload = format!("request {i}").into_bytes();
            let answer = transport
                .call(addr, payload.clone(), TIMEOUT)
                .await
                .unwrap();
            assert_eq!(answer, echoed(2, &payload));
        })
    });
    for call in futures::future::join_all(calls).await {
        call.unwrap();
    }
    // Empty and large payloads too.
    assert_eq!(
        transport
            .call(server.addr, Vec::new(), TIMEOUT)
            .await
            .unwrap(),
        b"2:".to_vec()
    );
    let large: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(
        transport
            .call(server.addr, large.clone(), TIMEOUT)
            .await
            .unwrap(),
        echoed(2, &large)
    );
    assert_eq!(transport.connections_made(), 1);
    server.stop().await;
}

/// Each request waits until all of them have arrived: this passes only if the server runs the
/// requests of one connection at the same time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_on_one_connection_run_concurrently() {
    const N: usize = 32;
    struct AllAtOnce(Arc<tokio::sync::Barrier>);
    impl Handler for AllAtOnce {
        fn handle(&self, _from: u64, payload: Vec<u8>) -> BoxFuture<'static, Vec<u8>> {
            let barrier = Arc::clone(&self.0);
            async move {
                barrier.wait().await;
                payload
            }
            .boxed()
        }
    }
    let server = Server::start(
        Arc::new(AllAtOnce(Arc::new(tokio::sync::Barrier::new(N)))),
        None,
    )
    .await;
    let transport = client();
    let answers = futures::future::join_all(
        (0..N).map(|i| transport.call(server.addr, vec![i as u8], TIMEOUT)),
    )
    .await;
    for (i, answer) in answers.into_iter().enumerate() {
        assert_eq!(answer.unwrap(), vec![i as u8]);
    }
    assert_eq!(transport.connections_made(), 1);
    server.stop().await;
}

#[tokio::test]
async fn other_cluster_is_refused_and_others_still_served() {
    let server = Server::start(Echo::new(), None).await;
    let stranger = Transport::new(identity("other", 7), None);
    match stranger.call(server.addr, b"hi".to_vec(), TIMEOUT).await {
        Err(TransportError::Refused(reason)) => {
            assert_eq!(reason, r#"cluster name "other" is not "Test Cluster""#);
        }
        other => panic!("expected Refused, got {other:?}"),
    }
    // Refused again on the next call (nothing cached).
    assert!(matches!(
        stranger.call(server.addr, b"hi".to_vec(), TIMEOUT).await,
        Err(TransportError::Refused(_))
    ));
    assert_served(server.addr).await;
    server.stop().await;
}

#[tokio::test]
async fn other_protocol_version_is_refused() {
    let server = Server::start(Echo::new(), None).await;
    let hello = Hello {
        magic: MAGIC,
        protocol_version: PROTOCOL_VERSION + 1,
        cluster_name: CLUSTER.into(),
        node_id: 9,
    };
    let received = raw_exchange(server.addr, &frame(&postcard::to_allocvec(&hello).unwrap())).await;
    assert_eq!(
        decode_reply(&received),
        Reply::Refused {
            reason: format!(
                "protocol version {} is not {PROTOCOL_VERSION}",
                PROTOCOL_VERSION + 1
            )
        }
    );
    // A later version's hello may differ past the version: still told the versions differ.
    let mut future_hello = postcard::to_allocvec(&(MAGIC, 2u32)).unwrap();
    future_hello.extend_from_slice(&[0xff; 9]);
    let received = raw_exchange(server.addr, &frame(&future_hello)).await;
    assert!(matches!(
        decode_reply(&received),
        Reply::Refused { reason } if reason.starts_with("protocol version 2 is not")
    ));
    assert_served(server.addr).await;
    server.stop().await;
}

#[tokio::test]
async fn garbage_is_dropped_and_others_still_served() {
    let server = Server::start(Echo::new(), None).await;
    let bad_magic = Hello {
        magic: *b"CASSANDR",
        ..Hello::new(&identity(CLUSTER, 3))
    };
    // What is sent, and how the refusal's reason starts.
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            concat!(
                "hello frame of 1195725856 bytes announced, more than 65536 ",
                r#"(the connection starts with "GET ": not a ringdb internode peer)"#
            ),
        ),
        (
            vec![0x80, 0, 0, 0, 1, 2, 3],
            "hello frame of 2147483648 bytes announced",
        ),
        (
            ((MAX_HELLO_BYTES + 1) as u32).to_be_bytes().to_vec(),
            "hello frame of 65537 bytes announced",
        ),
        (frame(&[0xff; 5]), "not an internode hello (5 bytes)"),
        (frame(&[]), "not an internode hello (0 bytes)"),
        (
            frame(&postcard::to_allocvec(&bad_magic).unwrap()),
            r#"bad magic "CASSANDR""#,
        ),
        // Right magic and version, nothing after.
        (
            frame(&postcard::to_allocvec(&(MAGIC, PROTOCOL_VERSION)).unwrap()),
            "undecodable hello",
        ),
        // Half a length prefix, then the client's side closes.
        (vec![0], "connection closed in the middle of the hello"),
    ];
    for (bytes, expected) in &cases {
        let received = raw_exchange(server.addr, bytes).await;
        match decode_reply(&received) {
            Reply::Refused { reason } => {
                assert!(reason.starts_with(expected), "{bytes:?}: {reason}");
            }
            other => panic!("{bytes:?} got {other:?}"),
        }
    }
    assert_served(server.addr).await;
    server.stop().await;
}

#[tokio::test]
async fn silent_peer_is_dropped_after_the_hello_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server::on(listener, Echo::new(), None, Duration::from_millis(200));
    let started = Instant::now();
    let silent = TcpStream::connect(server.addr).await.unwrap();
    // Meanwhile others are served.
    assert_served(server.addr).await;
    let received = raw_exchange_on(silent).await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        decode_reply(&received),
        Reply::Refused {
            reason: "no hello within 200ms".into()
        }
    );
    assert_served(server.addr).await;
    server.stop().await;
}

/// Reads from `stream` until the server closes it.
async fn raw_exchange_on(mut stream: TcpStream) -> Vec<u8> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut received)).await;
    assert!(read.is_ok(), "the server did not close the connection");
    received
}

#[tokio::test]
async fn down_peer_fails_fast_then_reconnects() {
    // A free port: bound, then released.
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let transport = client();
    let started = Instant::now();
    match transport.call(addr, b"anyone?".to_vec(), TIMEOUT).await {
        Err(TransportError::Connect(_)) => {}
        other => panic!("expected Connect, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    let server = Server::on(
        TcpListener::bind(addr).await.unwrap(),
        Echo::new(),
        None,
        HELLO_TIMEOUT,
    );
    let answer = transport
        .call(addr, b"now".to_vec(), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(answer, echoed(2, b"now"));
    server.stop().await;
}

#[tokio::test]
async fn frozen_peer_fails_within_the_timeout() {
    // A listener that never accepts, as a SIGSTOPped node: the kernel completes the TCP
    // handshake, nothing answers the hello, and the call ends by its timeout. Loopback only.
    let frozen = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = frozen.local_addr().unwrap();
    let started = Instant::now();
    let result = client()
        .call(addr, b"x".to_vec(), Duration::from_millis(300))
        .await;
    assert!(
        matches!(result, Err(TransportError::Connect(_))),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    drop(frozen);
}

#[tokio::test]
async fn server_death_breaks_calls_until_a_new_server_listens() {
    let echo = Echo::new();
    let server = Server::start(echo.clone(), None).await;
    let addr = server.addr;
    let transport = client();
    assert_eq!(
        transport
            .call(addr, b"one".to_vec(), TIMEOUT)
            .await
            .unwrap(),
        echoed(2, b"one")
    );
    // A call in flight when the server dies gets an error too.
    let hanging = tokio::spawn({
        let transport = transport.clone();
        async move { transport.call(addr, b"hang".to_vec(), TIMEOUT).await }
    });
    echo.hanging.notified().await;
    server.stop().await;
    let started = Instant::now();
    assert!(matches!(
        hanging.await.unwrap(),
        Err(TransportError::Closed)
    ));
    match transport.call(addr, b"two".to_vec(), TIMEOUT).await {
        Err(TransportError::Closed | TransportError::Connect(_)) => {}
        other => panic!("expected an error, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    let server = Server::on(
        TcpListener::bind(addr).await.unwrap(),
        Echo::new(),
        None,
        HELLO_TIMEOUT,
    );
    assert_eq!(
        transport
            .call(addr, b"three".to_vec(), TIMEOUT)
            .await
            .unwrap(),
        echoed(2, b"three")
    );
    assert_eq!(transport.connections_made(), 2);
    server.stop().await;
}

#[tokio::test]
async fn unanswered_call_times_out_and_the_connection_stays() {
    let server = Server::start(Echo::new(), None).await;
    let transport = client();
    let started = Instant::now();
    let result = transport
        .call(server.addr, b"hang".to_vec(), Duration::from_millis(200))
        .await;
    assert!(matches!(result, Err(TransportError::Timeout)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        transport
            .call(server.addr, b"ok".to_vec(), TIMEOUT)
            .await
            .unwrap(),
        echoed(2, b"ok")
    );
    assert_eq!(transport.connections_made(), 1);
    server.stop().await;
}

#[tokio::test]
async fn handler_failures_reach_the_caller() {
    let server = Server::start(Echo::new(), None).await;
    let transport = client();
    let result = transport
        .call(server.addr, b"panic".to_vec(), TIMEOUT)
        .await;
    assert!(
        matches!(&result, Err(TransportError::Remote(reason)) if reason.contains("panicked")),
        "{result:?}"
    );
    let result = transport.call(server.addr, b"huge".to_vec(), TIMEOUT).await;
    assert!(
        matches!(&result, Err(TransportError::Remote(reason))
            if reason.contains("over the internode limit")),
        "{result:?}"
    );
    assert_eq!(
        transport
            .call(server.addr, b"ok".to_vec(), TIMEOUT)
            .await
            .unwrap(),
        echoed(2, b"ok")
    );
    assert_eq!(transport.connections_made(), 1);
    server.stop().await;
}

#[tokio::test]
async fn oversized_request_is_not_sent() {
    let transport = client();
    // No server: the size is checked before connecting.
    let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let result = transport
        .call(addr, vec![0; MAX_PAYLOAD_BYTES + 1], TIMEOUT)
        .await;
    assert!(
        matches!(result, Err(TransportError::TooLarge(n)) if n == MAX_PAYLOAD_BYTES + 1),
        "{result:?}"
    );
    assert_eq!(transport.connections_made(), 0);
}

#[test]
fn hello_checks() {
    let me = identity(CLUSTER, 1);
    let good = Hello::new(&identity(CLUSTER, 2));
    let encode = |hello: &Hello| postcard::to_allocvec(hello).unwrap();
    assert_eq!(
        handshake::check_hello(&encode(&good), &me),
        Ok(good.clone())
    );
    let other_cluster = Hello {
        cluster_name: "other".into(),
        ..good.clone()
    };
    assert_eq!(
        handshake::check_hello(&encode(&other_cluster), &me),
        Err(r#"cluster name "other" is not "Test Cluster""#.into())
    );
    let bad_magic = Hello {
        magic: *b"GET / HT",
        ..good.clone()
    };
    assert_eq!(
        handshake::check_hello(&encode(&bad_magic), &me),
        Err(r#"bad magic "GET / HT": not a ringdb internode peer"#.into())
    );
    assert!(handshake::check_hello(b"short", &me).is_err());
    assert!(handshake::check_hello(&[], &me).is_err());
}

#[test]
fn payload_is_one_byte_string_on_the_wire() {
    use bincode_options::*;
    let payload = Payload(vec![7; 1000]);
    let encoded = encode(&payload);
    // A varint length (3 bytes for 1000) and the bytes.
    assert_eq!(encoded.len(), 1003);
    assert_eq!(decode(&encoded), payload);
}

/// Encodes and decodes as the tarpc transport's codec does.
mod bincode_options {
    use super::Payload;
    use tarpc::tokio_serde::{Deserializer, Serializer};

    pub(super) fn encode(payload: &Payload) -> Vec<u8> {
        let mut codec = super::super::Codec::<Payload, Payload>::default();
        std::pin::Pin::new(&mut codec)
            .serialize(payload)
            .unwrap()
            .to_vec()
    }

    pub(super) fn decode(bytes: &[u8]) -> Payload {
        let mut codec = super::super::Codec::<Payload, Payload>::default();
        std::pin::Pin::new(&mut codec)
            .deserialize(&bytes::BytesMut::from(bytes))
            .unwrap()
    }
}

// ---------------------------------------------------------------------------------------------
// TLS

/// A CA and node certificates signed by it, written as PEM files in a temporary directory.
struct Pki {
    dir: tempfile::TempDir,
    ca_cert: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
}

impl Pki {
    fn new() -> Pki {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "ringdb internode test CA");
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca_cert = params.self_signed(&ca_key).unwrap();
        let pki = Pki {
            dir: tempfile::tempdir().unwrap(),
            ca_cert,
            ca_key,
        };
        std::fs::write(pki.path("ca.pem"), pki.ca_cert.pem()).unwrap();
        pki
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// Writes `<name>.pem` and `<name>.key`: a certificate for `ip` signed by the CA.
    fn node(&self, name: &str, ip: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let params = rcgen::CertificateParams::new(vec![ip.to_string()]).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca_cert, &self.ca_key).unwrap();
        let (cert_path, key_path) = (
            self.path(&format!("{name}.pem")),
            self.path(&format!("{name}.key")),
        );
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        (cert_path, key_path)
    }
}

#[tokio::test]
async fn tls_round_trip_with_client_certificates() {
    let pki = Pki::new();
    let (server_cert, server_key) = pki.node("server", "127.0.0.1");
    let (client_cert, client_key) = pki.node("client", "127.0.0.1");
    let ca = pki.path("ca.pem");
    let server_tls = ServerTls::from_pem_files(&server_cert, &server_key, Some(&ca)).unwrap();
    let server = Server::start(Echo::new(), Some(server_tls)).await;

    let client_tls =
        ClientTls::from_pem_files(&ca, Some((client_cert.as_path(), client_key.as_path())))
            .unwrap();
    let transport = Transport::new(identity(CLUSTER, 2), Some(client_tls));
    let calls = (0..50u8).map(|i| transport.call(server.addr, vec![i, i + 1], TIMEOUT));
    for (i, answer) in futures::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        let i = i as u8;
        assert_eq!(answer.unwrap(), echoed(2, &[i, i + 1]));
    }
    assert_eq!(transport.connections_made(), 1);

    // Without a client certificate, over plain TCP, or trusting another CA: no connection.
    let no_client_cert = Transport::new(
        identity(CLUSTER, 3),
        Some(ClientTls::from_pem_files(&ca, None).unwrap()),
    );
    let plain = client();
    let other_pki = Pki::new();
    let other_ca = Transport::new(
        identity(CLUSTER, 4),
        Some(ClientTls::from_pem_files(&other_pki.path("ca.pem"), None).unwrap()),
    );
    for stranger in [no_client_cert, plain, other_ca] {
        let result = stranger.call(server.addr, b"x".to_vec(), TIMEOUT).await;
        assert!(
            matches!(result, Err(TransportError::Connect(_))),
            "{result:?}"
        );
    }
    // The server still serves its own.
    assert_eq!(
        transport
            .call(server.addr, b"ok".to_vec(), TIMEOUT)
            .await
            .unwrap(),
        echoed(2, b"ok")
    );
    server.stop().await;
}

#[tokio::test]
async fn tls_client_checks_the_peer_ip_in_the_certificate() {
    let pki = Pki::new();
    let (server_cert, server_key) = pki.node("server", "127.0.0.2");
    let server_tls = ServerTls::from_pem_files(&server_cert, &server_key, None).unwrap();
    let server = Server::start(Echo::new(), Some(server_tls)).await;
    let transport = Transport::new(
        identity(CLUSTER, 2),
        Some(ClientTls::from_pem_files(&pki.path("ca.pem"), None).unwrap()),
    );
    let result = transport.call(server.addr, b"x".to_vec(), TIMEOUT).await;
    assert!(
        matches!(result, Err(TransportError::Connect(_))),
        "{result:?}"
    );
    server.stop().await;
}
