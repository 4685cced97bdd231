//! Criterion micro-benchmarks of the protocol layer: frame + request decode, CQL parse, value codec.

use bytes::BytesMut;
use cql::types::{DataType, NativeType, Value};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

fn query_frame() -> BytesMut {
    let text = "SELECT pk, c, v FROM ks.t WHERE pk = ? AND c > ? LIMIT 10";
    let mut body = Vec::new();
    body.extend_from_slice(&(text.len() as i32).to_be_bytes());
    body.extend_from_slice(text.as_bytes());
    body.extend_from_slice(&1u16.to_be_bytes());
    body.push(0x01);
    body.extend_from_slice(&2u16.to_be_bytes());
    for v in [7i64.to_be_bytes().to_vec(), 3i32.to_be_bytes().to_vec()] {
        body.extend_from_slice(&(v.len() as i32).to_be_bytes());
        body.extend_from_slice(&v);
    }
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&[4, 0, 0, 1, 0x07]);
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

fn benches(c: &mut Criterion) {
    let frame = query_frame();
    c.bench_function("cql/frame_and_query_decode", |b| {
        b.iter(|| {
            let mut buf = frame.clone();
            let f = cql::frame::decode(&mut buf, 1 << 20)
                .expect("frame")
                .expect("whole");
            black_box(cql::request::Request::decode(f.header.opcode, 4, &f.body).expect("request"))
        })
    });
    let stmt = "SELECT pk, c, writetime(v) AS w FROM ks.t WHERE pk = ? AND c >= 10 AND c < 20 ORDER BY c DESC LIMIT 100 ALLOW FILTERING";
    c.bench_function("cql/parse_select", |b| {
        b.iter(|| black_box(cql::parse_statement(black_box(stmt)).expect("parse")))
    });
    let ty = DataType::Map(
        Box::new(DataType::Native(NativeType::Text)),
        Box::new(DataType::List(Box::new(DataType::Native(NativeType::Int)))),
    );
    let value = Value::Map(
        (0..10)
            .map(|i| {
                (
                    Value::Text(format!("key{i}")),
                    Value::List(vec![Value::Int(i); 5]),
                )
            })
            .collect(),
    );
    let bytes = value.to_bytes();
    c.bench_function("cql/value_decode_map_of_lists", |b| {
        b.iter(|| black_box(Value::decode(&ty, black_box(&bytes)).expect("decode")))
    });
}

criterion_group!(cql_benches, benches);
criterion_main!(cql_benches);
