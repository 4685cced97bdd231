//! Native-protocol behaviour over raw frames against a real server: version negotiation,
//! handshake rules, compression, events, multiplexing and bad input.

mod common;

use common::raw::{
    execute_bytes_frame, execute_frame, pipelined_queries, query_body, string_map, RawClient,
    RawFrame,
};
use common::TestServer;
use std::io::Write;
use std::time::{Duration, Instant};

const OPTIONS: u8 = 0x05;
const QUERY: u8 = 0x07;
const REGISTER: u8 = 0x0B;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_versions_get_a_downgrade_error_then_close() {
    let server = TestServer::start().await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        for version in [5u8, 6, 0x41, 0x42, 1, 2] {
            let mut c = RawClient::connect(addr);
            c.send(version, 0, 0, OPTIONS, &[]);
            let f = c.recv().expect("an error frame, not silence");
            assert_eq!(f.version, 0x84, "version byte for v{version}");
            assert_eq!(f.error_code(), Some(0x000A));
            assert!(
                f.error_message()
                    .contains("Invalid or unsupported protocol version"),
                "message: {}",
                f.error_message()
            );
            assert!(c.is_closed(), "connection closed after v{version}");
        }
    })
    .await
    .expect("join");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_lists_compression_and_versions_for_v3_and_v4() {
    let server = TestServer::start().await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        for version in [3u8, 4] {
            let mut c = RawClient::connect(addr);
            c.send(version, 0, 7, OPTIONS, &[]);
            let f = c.recv().expect("SUPPORTED");
            assert_eq!(f.opcode, 0x06);
            assert_eq!(f.version, 0x80 | version);
            assert_eq!(f.stream, 7);
            let text = String::from_utf8_lossy(&f.body).into_owned();
            for key in ["CQL_VERSION", "COMPRESSION", "lz4", "snappy", "4/v4"] {
                assert!(text.contains(key), "SUPPORTED lacks {key}: {text}");
            }
        }
    })
    .await
    .expect("join");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_before_startup_is_a_protocol_error() {
    let server = TestServer::start().await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        let mut c = RawClient::connect(addr);
        c.send(4, 0, 3, QUERY, &query_body("SELECT * FROM system.local"));
        let f = c.recv().expect("error");
        assert_eq!(f.error_code(), Some(0x000A));
        assert!(f.error_message().contains("expecting STARTUP or OPTIONS"));
        // STARTUP without CQL_VERSION.
        c.send(4, 0, 4, 0x01, &string_map(&[("DRIVER_NAME", "x")]));
        let f = c.recv().expect("error");
        assert_eq!(f.error_code(), Some(0x000A));
        assert!(f.error_message().contains("CQL_VERSION"));
    })
    .await
    .expect("join");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lz4_and_snappy_compressed_frames_round_trip() {
    let server = TestServer::start().await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        for algo in ["lz4", "snappy"] {
            let mut c = RawClient::connect(addr);
            c.startup(&[("COMPRESSION", algo)]);
            let body = query_body("SELECT release_version FROM system.local WHERE key = 'local'");
            let packed = match algo {
                "lz4" => {
                    let mut v = (body.len() as i32).to_be_bytes().to_vec();
                    v.extend(lz4_flex::block::compress(&body));
                    v
                }
                _ => snap::raw::Encoder::new()
                    .compress_vec(&body)
                    .expect("snappy"),
            };
            c.send(4, 0x01, 9, QUERY, &packed);
            let f = c.recv().expect("result");
            assert_eq!(f.flags & 0x01, 0x01, "{algo} response is compressed");
            let plain = match algo {
                "lz4" => {
                    let n =
                        i32::from_be_bytes([f.body[0], f.body[1], f.body[2], f.body[3]]) as usize;
                    lz4_flex::block::decompress(&f.body[4..], n).expect("lz4 body")
                }
                _ => snap::raw::Decoder::new()
                    .decompress_vec(&f.body)
                    .expect("snappy body"),
            };
            let plain = f.message(&plain);
            assert_eq!(f.opcode, 0x08, "RESULT for {algo}");
            assert_eq!(&plain[..4], &2i32.to_be_bytes(), "Rows result for {algo}");
            assert!(
                String::from_utf8_lossy(&plain).contains("4."),
                "release_version in rows"
            );
        }
    })
    .await
    .expect("join");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_change_on_one_connection_is_an_event_on_another() {
    let server = TestServer::start().await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        let mut listener = RawClient::connect(addr);
        listener.startup(&[]);
        let mut events = (1u16).to_be_bytes().to_vec();
        events.extend(common::raw::string("SCHEMA_CHANGE"));
        listener.send(4, 0, 2, REGISTER, &events);
        assert_eq!(listener.recv().expect("READY").opcode, 0x02);

        let mut writer = RawClient::connect(addr);
        writer.startup(&[]);
        writer.send(
            4,
            0,
            5,
            QUERY,
            &query_body("CREATE KEYSPACE evks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"),
        );
        let f = writer.recv().expect("schema change result");
        assert_eq!(f.opcode, 0x08, "{:?}", f.error_message());

        let ev = listener.recv().expect("EVENT frame");
        assert_eq!(ev.opcode, 0x0C);
        assert_eq!(ev.stream, -1);
        let text = String::from_utf8_lossy(&ev.body).into_owned();
        assert!(text.contains("SCHEMA_CHANGE") && text.contains("CREATED") && text.contains("evks"), "{text}");
    })
    .await
    .expect("join");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_streams_in_flight_are_each_answered_on_their_stream() {
    let server = TestServer::start().await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        let mut c = RawClient::connect(addr);
        c.startup(&[]);
        c.send_raw(&pipelined_queries(100, "SELECT key FROM system.local"));
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..100 {
            let f = c.recv().expect("response");
            assert_eq!(f.opcode, 0x08);
            seen.insert(f.stream);
        }
        assert_eq!(seen.len(), 100);
        assert_eq!(seen.iter().next(), Some(&0));
        assert_eq!(seen.iter().last(), Some(&99));
    })
    .await
    .expect("join");
    server.stop().await;
}

/// The bigint cells of a ROWS result without metadata: one entry per row.
fn bigint_rows(f: &RawFrame) -> Vec<i64> {
    let b = &f.body;
    let int = |at: usize| i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    assert_eq!(int(0), 2, "a Rows result: {f:?}");
    assert_eq!(int(4) & 0x0004, 0x0004, "no metadata, as asked");
    assert_eq!(int(8), 1, "one column");
    let rows = int(12) as usize;
    let mut at = 16;
    let mut out = Vec::new();
    for _ in 0..rows {
        assert_eq!(int(at), 8);
        out.push(i64::from_be_bytes(
            b[at + 4..at + 12].try_into().expect("8 bytes"),
        ));
        at += 12;
    }
    out
}

/// A burst of prepared point reads and writes sent in one socket write: the server answers
/// reads inline and sends them out in groups while it works through the rest of the burst
/// (writes wait for their journal flush). Every request is answered once, on its own stream,
/// with its own row, and every write is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipelined_burst_of_reads_and_writes_is_answered_request_by_request() {
    let server = TestServer::start().await;
    let session = server
        .session_with_keyspace(
            "burst",
            &["CREATE TABLE burst.t (pk bigint PRIMARY KEY, v bigint)"],
        )
        .await;
    let insert = session
        .prepare("INSERT INTO burst.t (pk, v) VALUES (?, ?)")
        .await
        .expect("prepare");
    for pk in 0..200i64 {
        session
            .execute_unpaged(&insert, (pk, pk * 7))
            .await
            .expect("insert");
    }
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        let mut c = RawClient::connect(addr);
        c.startup(&[]);
        let select = c.prepare("SELECT v FROM burst.t WHERE pk = ?");
        let write = c.prepare("INSERT INTO burst.t (pk, v) VALUES (?, ?)");
        // Streams 0..300: runs of reads (longer than a group) with a write every 20th
        // request (new rows 1000.. with v = -pk), and reads of keys never written.
        let mut burst = Vec::new();
        for stream in 0..300i16 {
            let n = i64::from(stream);
            burst.extend(if stream % 20 == 19 {
                execute_frame(stream, &write, &[1000 + n, -(1000 + n)])
            } else {
                execute_frame(stream, &select, &[n])
            });
        }
        c.send_raw(&burst);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..300 {
            let f = c.recv().expect("every request answered");
            assert_eq!(f.opcode, 0x08, "RESULT expected, got {f:?}");
            assert!(seen.insert(f.stream), "stream {} answered twice", f.stream);
            let n = i64::from(f.stream);
            if f.stream % 20 == 19 {
                assert_eq!(f.body, 1i32.to_be_bytes(), "a write is answered Void");
            } else if n < 200 {
                assert_eq!(bigint_rows(&f), vec![n * 7], "stream {n} reads its own row");
            } else {
                assert_eq!(
                    bigint_rows(&f),
                    Vec::<i64>::new(),
                    "key {n} was never written"
                );
            }
        }
        assert_eq!(seen.len(), 300);
    })
    .await
    .expect("join");
    let select = session
        .prepare("SELECT v FROM burst.t WHERE pk = ?")
        .await
        .expect("prepare");
    for stream in (19..300i64).step_by(20) {
        let (v,): (i64,) = session
            .execute_unpaged(&select, (1000 + stream,))
            .await
            .expect("select")
            .into_rows_result()
            .expect("rows")
            .single_row()
            .expect("one row");
        assert_eq!(v, -(1000 + stream));
    }
    server.stop().await;
}

/// Bound text, ascii and blob values are stored with the bytes the client sent (the server
/// takes them from the frame without decoding them into strings), and invalid ones are
/// refused with the column named, on a connection that keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bound_text_ascii_and_blob_values_are_stored_as_sent_or_refused() {
    let server = TestServer::start().await;
    let session = server
        .session_with_keyspace(
            "sent",
            &["CREATE TABLE sent.t (pk bigint PRIMARY KEY, t text, a ascii, b blob)"],
        )
        .await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        let mut c = RawClient::connect(addr);
        c.startup(&[]);
        let insert = c.prepare("INSERT INTO sent.t (pk, t, a, b) VALUES (?, ?, ?, ?)");
        let pk = |n: i64| n.to_be_bytes();
        let text = "h\u{e9}llo w\u{f6}rld \u{1f600}".as_bytes();
        // (pk, t, a, b, the error's text when refused)
        type Case<'a> = (i64, &'a [u8], &'a [u8], &'a [u8], Option<&'a str>);
        let cases: [Case; 4] = [
            (1, text, b"plain ascii", &[0xFF, 0x00, 0xC3], None),
            (
                2,
                &[0xC3, 0x28],
                b"ok",
                b"",
                Some("Invalid value for column t"),
            ),
            (
                3,
                b"ok",
                &[b'a', 0xC3],
                b"",
                Some("Invalid value for column a"),
            ),
            (4, b"", b"", b"", None),
        ];
        for (n, (key, t, a, b, refused)) in cases.iter().enumerate() {
            let key = pk(*key);
            c.send_raw(&execute_bytes_frame(n as i16, &insert, &[&key, t, a, b]));
            let f = c.recv().expect("answered");
            match refused {
                None => assert_eq!(f.body, 1i32.to_be_bytes(), "case {n}: Void, got {f:?}"),
                Some(message) => {
                    assert_eq!(f.error_code(), Some(0x2200), "case {n}: {f:?}");
                    assert!(
                        f.error_message().contains(message),
                        "case {n}: {}",
                        f.error_message()
                    );
                }
            }
        }
    })
    .await
    .expect("join");
    type Row = (i64, Option<String>, Option<String>, Option<Vec<u8>>);
    let mut rows: Vec<Row> = session
        .query_unpaged("SELECT pk, t, a, b FROM sent.t", ())
        .await
        .expect("select")
        .into_rows_result()
        .expect("rows")
        .rows::<Row>()
        .expect("typed rows")
        .collect::<Result<_, _>>()
        .expect("decoded");
    rows.sort();
    assert_eq!(
        rows,
        vec![
            (
                1,
                Some("h\u{e9}llo w\u{f6}rld \u{1f600}".to_string()),
                Some("plain ascii".to_string()),
                Some(vec![0xFF, 0x00, 0xC3]),
            ),
            (
                4,
                Some(String::new()),
                Some(String::new()),
                Some(Vec::new())
            ),
        ]
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_frames_get_an_error_or_close_and_others_keep_working() {
    let server = TestServer::start().await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        // Oversized length: rejected at once, before any body arrives.
        let mut c = RawClient::connect(addr);
        c.send_raw(&[4, 0, 0, 1, QUERY, 0x7f, 0xff, 0xff, 0xff]);
        let start = Instant::now();
        if let Some(f) = c.recv() {
            assert_eq!(f.error_code(), Some(0x000A))
        }
        assert!(start.elapsed() < Duration::from_secs(5));

        // Unknown opcode: an error, and the connection keeps answering.
        let mut c = RawClient::connect(addr);
        c.startup(&[]);
        c.send(4, 0, 11, 0x33, &[1, 2, 3]);
        let f = c.recv().expect("error for unknown opcode");
        assert_eq!(f.stream, 11);
        assert_eq!(f.error_code(), Some(0x000A));
        c.send(4, 0, 12, OPTIONS, &[]);
        assert_eq!(c.recv().expect("still serving").opcode, 0x06);

        // Truncated body inside a well-formed frame.
        c.send(4, 0, 13, QUERY, &[0, 0, 0, 50, b'S']);
        let f = c.recv().expect("error for truncated body");
        assert_eq!(f.stream, 13);
        assert!(f.error_code().is_some());

        // Odd query texts: an answer, and the connection lives on.
        for text in [
            "SELECT \0 FROM x",
            "SELECT 😀 FROM system.local",
            "ÄÖÜ ☃",
            "",
            ";;;",
            "SELECT * FROM system.\"nö\"",
        ] {
            c.send(4, 0, 14, QUERY, &query_body(text));
            let f = c.recv().expect("an answer for odd text");
            assert!(f.opcode == 0x00 || f.opcode == 0x08, "{text}: {f:?}");
        }
        c.send(4, 0, 15, OPTIONS, &[]);
        assert_eq!(c.recv().expect("still serving").opcode, 0x06);

        // Random bytes, a short frame, and a client vanishing mid-frame.
        let mut c = RawClient::connect(addr);
        c.send_raw(&[
            0x99, 0x12, 0x00, 0x00, 0x07, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3,
        ]);
        let _ = c.recv();
        let mut c = RawClient::connect(addr);
        c.send_raw(&[4, 0, 0]);
        drop(c);
        let mut c = RawClient::connect(addr);
        c.startup(&[]);
        let _ = c.stream.write_all(&[4, 0, 0, 9, QUERY, 0, 0, 1, 0, 1, 2]);
        drop(c);

        // The server still serves new clients.
        let mut c = RawClient::connect(addr);
        c.startup(&[]);
        c.send(4, 0, 1, QUERY, &query_body("SELECT key FROM system.local"));
        assert_eq!(c.recv().expect("serving").opcode, 0x08);
    })
    .await
    .expect("join");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saturation_answers_overloaded() {
    // One request slot: a burst of pipelined queries must see Overloaded, never a silent queue.
    let server = TestServer::start_with(|c| c.max_concurrent_requests = 1).await;
    let addr = server.addr;
    tokio::task::spawn_blocking(move || {
        let mut c = RawClient::connect(addr);
        c.startup(&[]);
        c.send_raw(&pipelined_queries(
            200,
            "SELECT * FROM system_schema.columns",
        ));
        let (mut ok, mut overloaded) = (0, 0);
        for _ in 0..200 {
            let f = c.recv().expect("every request is answered");
            match f.error_code() {
                None => ok += 1,
                Some(0x1001) => overloaded += 1,
                Some(other) => panic!("unexpected error {other:#x}: {}", f.error_message()),
            }
        }
        assert!(ok >= 1, "some requests ran");
        assert!(overloaded >= 1, "a saturated node answers Overloaded");
    })
    .await
    .expect("join");
    server.stop().await;
}
