//! Writes the seed corpus, `fuzz/corpus/<target>/`, from valid frames, requests, statements and
//! values: `cargo run --example seeds` (from `fuzz/`). Files are named by content hash, so
//! rerunning adds nothing twice. The statements come from `tests/cql/*.cql` and a list below.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use bytes::{Bytes, BytesMut};
use cql::compression::Compression;
use cql::frame::{flags, FrameHeader, Opcode};
use cql::request::{
    Batch, BatchStatement, BatchStatementKind, BatchType, Consistency, Execute, Prepare, Query,
    QueryParameters, RawValue, Request,
};
use cql::types::{DataType, NativeType, UserType, Value, DURATION_CLASS};

fn write_seed(dir: &Path, data: &[u8]) {
    let mut h = DefaultHasher::new();
    data.hash(&mut h);
    std::fs::create_dir_all(dir).expect("corpus dir");
    std::fs::write(dir.join(format!("seed-{:016x}", h.finish())), data).expect("write seed");
}

fn requests() -> Vec<Request> {
    let mut params = QueryParameters::new(Consistency::LocalQuorum);
    params.values = vec![
        RawValue::Bytes(Bytes::from_static(&[0, 0, 0, 7])),
        RawValue::Null,
        RawValue::Unset,
        RawValue::Bytes(Bytes::from_static(b"text")),
    ];
    params.page_size = Some(100);
    params.paging_state = Some(Bytes::from_static(&[1, 2, 3, 4]));
    params.serial_consistency = Some(Consistency::LocalSerial);
    params.timestamp = Some(1_700_000_000_000_000);
    params.flags = params.derived_flags();
    let mut named = QueryParameters::new(Consistency::One);
    named.values = vec![RawValue::Bytes(Bytes::from_static(&[0, 0, 0, 1]))];
    named.names = Some(vec!["k".into()]);
    named.skip_metadata = true;
    named.flags = named.derived_flags();
    let plain = QueryParameters::new(Consistency::One);
    vec![
        Request::Options,
        Request::Startup(vec![("CQL_VERSION".into(), "3.0.0".into())]),
        Request::Startup(vec![
            ("CQL_VERSION".into(), "3.4.5".into()),
            ("COMPRESSION".into(), "lz4".into()),
            ("DRIVER_NAME".into(), "seed".into()),
        ]),
        Request::Query(Query {
            query: "SELECT * FROM system.local WHERE key = 'local'".into(),
            params: plain.clone(),
        }),
        Request::Query(Query {
            query: "INSERT INTO ks.t (k, c, v, x) VALUES (?, ?, ?, ?)".into(),
            params: params.clone(),
        }),
        Request::Query(Query {
            query: "SELECT * FROM ks.t WHERE k = :k".into(),
            params: named.clone(),
        }),
        Request::Prepare(Prepare {
            query: "UPDATE ks.c SET n = n + ? WHERE k = ?".into(),
        }),
        Request::Execute(Execute {
            id: Bytes::from_static(&[0xab; 16]),
            params: params.clone(),
        }),
        Request::Execute(Execute {
            id: Bytes::from_static(&[0x01; 16]),
            params: named,
        }),
        Request::Batch(Batch {
            batch_type: BatchType::Logged,
            statements: vec![
                BatchStatement {
                    kind: BatchStatementKind::Query(
                        "INSERT INTO ks.t (k, v) VALUES (1, 'a')".into(),
                    ),
                    values: vec![],
                },
                BatchStatement {
                    kind: BatchStatementKind::Prepared(Bytes::from_static(&[7; 16])),
                    values: vec![
                        RawValue::Bytes(Bytes::from_static(&[0, 0, 0, 2])),
                        RawValue::Null,
                    ],
                },
            ],
            consistency: Consistency::Quorum,
            serial_consistency: Some(Consistency::Serial),
            timestamp: Some(42),
        }),
        Request::Batch(Batch {
            batch_type: BatchType::Counter,
            statements: vec![BatchStatement {
                kind: BatchStatementKind::Query("UPDATE ks.c SET n = n + 1 WHERE k = 1".into()),
                values: vec![],
            }],
            consistency: Consistency::One,
            serial_consistency: None,
            timestamp: None,
        }),
        Request::Register(vec![
            "TOPOLOGY_CHANGE".into(),
            "STATUS_CHANGE".into(),
            "SCHEMA_CHANGE".into(),
        ]),
        Request::AuthResponse(Some(b"\0cassandra\0cassandra".to_vec())),
        Request::AuthResponse(None),
    ]
}

fn frame(version: u8, frame_flags: u8, stream: i16, opcode: u8, body: &[u8]) -> Vec<u8> {
    let mut out = BytesMut::new();
    FrameHeader {
        version,
        is_response: false,
        flags: frame_flags,
        stream,
        opcode,
        length: body.len() as u32,
    }
    .encode(&mut out);
    out.extend_from_slice(body);
    out.to_vec()
}

/// The byte sequence `ringdb_fuzz::checks::data_type` reads back as `ty`.
fn type_bytes(ty: &DataType, out: &mut Vec<u8>) {
    match ty {
        DataType::Native(n) => {
            let i = NativeType::ALL.iter().position(|t| t == n).expect("native");
            out.push(i as u8);
        }
        DataType::List(e) => {
            out.push(20);
            type_bytes(e, out);
        }
        DataType::Set(e) => {
            out.push(21);
            type_bytes(e, out);
        }
        DataType::Map(k, v) => {
            out.push(22);
            type_bytes(k, out);
            type_bytes(v, out);
        }
        DataType::Tuple(ts) => {
            out.extend([23, ts.len() as u8 - 1]);
            ts.iter().for_each(|t| type_bytes(t, out));
        }
        DataType::Udt(u) => {
            out.extend([24, u.fields.len() as u8 - 1]);
            u.fields.iter().for_each(|(_, t)| type_bytes(t, out));
        }
        DataType::Frozen(inner) => {
            out.push(25);
            type_bytes(inner, out);
        }
        DataType::Custom(c) if c == DURATION_CLASS => out.push(28),
        DataType::Custom(_) => out.push(29),
    }
}

fn values() -> Vec<(DataType, Value)> {
    use NativeType as N;
    let n = |t| DataType::Native(t);
    let uuid = uuid::Uuid::from_u128(0x1234_5678_9abc_4def_8123_4567_89ab_cdef);
    let timeuuid = uuid::Uuid::from_u128(0x5b6f_3a10_8c2e_11ee_8000_0242_ac12_0002);
    let mut v = vec![
        (n(N::Ascii), Value::Ascii("hello".into())),
        (n(N::Bigint), Value::Bigint(-1_234_567_890_123)),
        (n(N::Blob), Value::Blob(vec![0, 1, 0, 0xff])),
        (n(N::Boolean), Value::Boolean(true)),
        (n(N::Counter), Value::Counter(42)),
        (n(N::Date), Value::Date((1u32 << 31) + 19_000)),
        (
            n(N::Decimal),
            Value::Decimal {
                scale: 2,
                unscaled: vec![0x30, 0x39],
            },
        ),
        (
            n(N::Decimal),
            Value::Decimal {
                scale: -3,
                unscaled: vec![0xff, 0x00],
            },
        ),
        (n(N::Double), Value::Double(-0.0)),
        (n(N::Double), Value::Double(f64::NAN)),
        (
            n(N::Duration),
            Value::Duration {
                months: 1,
                days: 2,
                nanos: 3_000_000_000,
            },
        ),
        (n(N::Float), Value::Float(1.5)),
        (
            n(N::Inet),
            Value::Inet(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1))),
        ),
        (n(N::Inet), Value::Inet(IpAddr::V6(Ipv6Addr::LOCALHOST))),
        (n(N::Int), Value::Int(-7)),
        (n(N::Smallint), Value::Smallint(300)),
        (n(N::Text), Value::Text("héllo\0wörld".into())),
        (n(N::Time), Value::Time(43_200_000_000_000)),
        (n(N::Timestamp), Value::Timestamp(1_700_000_000_000)),
        (n(N::Timeuuid), Value::Timeuuid(timeuuid)),
        (n(N::Tinyint), Value::Tinyint(-128)),
        (n(N::Uuid), Value::Uuid(uuid)),
        (n(N::Varint), Value::Varint(vec![0x00, 0xff])),
        (n(N::Varint), Value::Varint(vec![0x80, 0x00, 0x01])),
        (n(N::Int), Value::Empty),
        (
            DataType::Custom(DURATION_CLASS.into()),
            Value::Duration {
                months: -1,
                days: 0,
                nanos: -5,
            },
        ),
        (
            DataType::Custom("org.example.SomeType".into()),
            Value::Blob(vec![9, 9]),
        ),
    ];
    let list = DataType::List(Box::new(n(N::Int)));
    let set = DataType::Set(Box::new(n(N::Text)));
    let map = DataType::Map(Box::new(n(N::Text)), Box::new(n(N::Bigint)));
    let tuple = DataType::Tuple(vec![n(N::Int), n(N::Text), n(N::Double)]);
    let udt = DataType::Udt(Box::new(UserType {
        keyspace: Some("ks".into()),
        name: "u".into(),
        fields: vec![("f0".into(), n(N::Int)), ("f1".into(), n(N::Text))],
    }));
    let ints = Value::List(vec![Value::Int(3), Value::Int(1), Value::Int(2)]);
    let texts = Value::Set(vec![Value::Text("b".into()), Value::Text("a".into())]);
    let entries = Value::Map(vec![
        (Value::Text("x".into()), Value::Bigint(1)),
        (Value::Text("a".into()), Value::Bigint(-1)),
    ]);
    let tup = Value::Tuple(vec![Some(Value::Int(1)), None, Some(Value::Double(2.5))]);
    let udt_value = Value::Udt(vec![
        ("f0".into(), Some(Value::Int(5))),
        ("f1".into(), None),
    ]);
    v.extend([
        (list.clone(), ints.clone()),
        (set.clone(), texts.clone()),
        (map.clone(), entries.clone()),
        (tuple.clone(), tup.clone()),
        (udt.clone(), udt_value.clone()),
        (DataType::Frozen(Box::new(list)), ints),
        (DataType::Frozen(Box::new(set)), texts.clone()),
        (DataType::Frozen(Box::new(map)), entries),
        (DataType::Frozen(Box::new(udt)), udt_value),
        (
            DataType::Frozen(Box::new(DataType::List(Box::new(DataType::Frozen(
                Box::new(DataType::Set(Box::new(n(N::Text)))),
            ))))),
            Value::List(vec![texts]),
        ),
        (
            DataType::Tuple(vec![tuple, n(N::Uuid)]),
            Value::Tuple(vec![Some(tup), None]),
        ),
    ]);
    v
}

const STATEMENTS: &[&str] = &[
    "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND durable_writes = true",
    "CREATE TABLE ks.t (k int, c timeuuid, v text, s int STATIC, m map<text, frozen<list<int>>>, PRIMARY KEY ((k, v), c)) WITH CLUSTERING ORDER BY (c DESC) AND comment = 'x'",
    "CREATE TYPE ks.address (street text, zip int)",
    "CREATE INDEX ON ks.t (v)",
    "ALTER TABLE ks.t ADD n set<bigint>",
    "DROP TABLE IF EXISTS ks.t",
    "BEGIN BATCH USING TIMESTAMP 5 INSERT INTO t (k) VALUES (1); UPDATE t SET v = 'a' WHERE k = 2; APPLY BATCH",
    "BEGIN COUNTER BATCH UPDATE c SET n = n + 1 WHERE k = 1 APPLY BATCH",
    "INSERT INTO t (k, v) VALUES (1, 'x') IF NOT EXISTS USING TTL 86400",
    "INSERT INTO t JSON '{\"k\": 1}' DEFAULT UNSET",
    "UPDATE t USING TTL 10 AND TIMESTAMP 3 SET l = l + [1], m['a'] = 2, n = n - 1 WHERE k IN (1, 2) IF v = 'a' AND l[0] > 3",
    "DELETE v, l[1], m['x'] FROM t USING TIMESTAMP 9 WHERE k = 1 AND c >= 2 IF EXISTS",
    "SELECT DISTINCT k, token(k), writetime(v), ttl(v), CAST(v AS text) AS x FROM ks.t WHERE k = ? AND c > minTimeuuid('2024-01-01') ORDER BY c ASC LIMIT 10 ALLOW FILTERING",
    "SELECT JSON count(*), max(c), sum(n) FROM t WHERE token(k) > -9223372036854775808 AND v CONTAINS KEY 'a' GROUP BY k PER PARTITION LIMIT 2",
    "SELECT * FROM t WHERE (c, d) > (1, 'a') AND (c, d) <= (5, 'z') AND e = 0x00ff AND f = 1.5e-3 AND g = -NaN AND h = 1h30m AND u = 6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    "USE \"MyKs\"",
    "TRUNCATE TABLE ks.t",
    "DESCRIBE KEYSPACE ks",
    "DESC TABLES",
    "CREATE ROLE r WITH PASSWORD = 'p' AND LOGIN = true",
    "GRANT SELECT ON KEYSPACE ks TO r",
    "LIST ROLES",
    "CREATE FUNCTION f (a int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS $$ return a; $$",
    "SELECT * FROM t WHERE k = 1 -- comment\n/* block */ ;",
];

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");

    // request: [opcode, version bit | flags << 1, body...]
    for req in requests() {
        for version in [3u8, 4] {
            if version == 3 && format!("{req:?}").contains("Unset") {
                continue;
            }
            let mut body = Vec::new();
            req.encode_body(version, &mut body);
            let mut seed = vec![req.opcode() as u8, version & 1];
            seed.extend_from_slice(&body);
            write_seed(&root.join("request"), &seed);
        }
    }
    // A custom payload before a QUERY body.
    let mut with_payload = vec![Opcode::Query as u8, 1 | (flags::CUSTOM_PAYLOAD << 1)];
    with_payload.extend_from_slice(&[0, 1, 0, 1, b'k', 0, 0, 0, 1, b'v']);
    let mut q = Vec::new();
    requests()[3].encode_body(4, &mut q);
    with_payload.extend_from_slice(&q);
    write_seed(&root.join("request"), &with_payload);

    // frame: [max-body selector (0 = 1 MiB)] then frames, one per request, plus compressed and
    // concatenated ones.
    let reqs = requests();
    let mut stream_of_all = vec![0u8];
    for (i, req) in reqs.iter().enumerate() {
        let mut body = Vec::new();
        req.encode_body(4, &mut body);
        let f = frame(4, 0, i as i16, req.opcode() as u8, &body);
        stream_of_all.extend_from_slice(&f);
        let mut seed = vec![0u8];
        seed.extend_from_slice(&f);
        write_seed(&root.join("frame"), &seed);
        if i % 3 == 0 {
            for c in [Compression::Lz4, Compression::Snappy] {
                let mut seed = vec![0u8];
                seed.extend(frame(
                    4,
                    flags::COMPRESSION,
                    1,
                    req.opcode() as u8,
                    &c.compress(&body),
                ));
                write_seed(&root.join("frame"), &seed);
            }
        }
    }
    write_seed(&root.join("frame"), &stream_of_all);
    let mut v3 = vec![0u8];
    v3.extend(frame(3, flags::TRACING, 5, Opcode::Options as u8, &[]));
    write_seed(&root.join("frame"), &v3);
    // A frame over a small max body (selector 0x81 = 8 bytes) and a v5 header.
    let mut big = vec![0x81u8];
    big.extend(frame(4, 0, 2, Opcode::Query as u8, &[0; 16]));
    write_seed(&root.join("frame"), &big);
    write_seed(&root.join("frame"), &[0, 5, 0, 0, 1, 5, 0, 0, 0, 0]);

    // parser: statements from tests/cql/*.cql and the list above.
    let cql_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/cql");
    let mut statements: Vec<String> = STATEMENTS.iter().map(|s| s.to_string()).collect();
    if let Ok(entries) = std::fs::read_dir(&cql_dir) {
        let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let mut current = String::new();
            for line in text.lines() {
                if line.trim_start().starts_with("--") || line.trim().is_empty() {
                    continue;
                }
                current.push_str(line);
                current.push('\n');
                if line.trim_end().ends_with(';') {
                    statements.push(std::mem::take(&mut current));
                }
            }
        }
    }
    // Keep distinct statement shapes (first words) so the corpus stays small.
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for s in &statements {
        let shape: String = s
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        let count = seen.entry(shape).or_default();
        if *count < 4 {
            *count += 1;
            write_seed(&root.join("parser"), s.as_bytes());
        }
    }

    // values: type selector bytes, order byte, value bytes.
    for (i, (ty, value)) in values().into_iter().enumerate() {
        let mut seed = Vec::new();
        type_bytes(&ty, &mut seed);
        seed.push((i % 2) as u8);
        seed.extend(value.to_bytes());
        write_seed(&root.join("values"), &seed);
    }
}
