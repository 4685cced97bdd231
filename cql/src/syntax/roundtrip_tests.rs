//! Grammar tests in the sqlparser style: every statement must survive
//! `parse → Display → parse` unchanged, and printing must be stable.

use crate::ast::*;
use crate::types::{DataType, NativeType, UserType};
use crate::{parse_data_type, parse_statement, parse_statements, parse_term};

/// Parses `cql`, prints it, parses the print, and checks both trees are equal.
fn verified(cql: &str) -> Statement {
    let stmt = parse_statement(cql).unwrap_or_else(|e| panic!("{cql}: {e}"));
    let printed = stmt.to_string();
    let again = parse_statement(&printed).unwrap_or_else(|e| panic!("{printed}: {e}"));
    assert_eq!(stmt, again, "round trip of {cql} via {printed}");
    assert_eq!(printed, again.to_string(), "printing is not stable");
    stmt
}

/// Like [`verified`], and the canonical print must be exactly `canonical`.
fn prints_as(cql: &str, canonical: &str) -> Statement {
    let stmt = verified(cql);
    assert_eq!(stmt.to_string(), canonical);
    stmt
}

fn select(cql: &str) -> Select {
    match verified(cql) {
        Statement::Select(s) => *s,
        other => panic!("not a select: {other:?}"),
    }
}

fn native(t: NativeType) -> DataType {
    DataType::Native(t)
}

#[test]
fn driver_queries_round_trip() {
    for q in [
        "SELECT * FROM system.local WHERE key='local'",
        "select * from system.local where key = 'local'",
        "SELECT * from system_virtual_schema.keyspaces",
        "SELECT * FROM system_schema.functions WHERE keyspace_name = 'ks' AND function_name = 'f' AND argument_types = ['int', 'text']",
        "SELECT keyspace_name, table_name FROM system_schema.columns where keyspace_name in ?",
        "SELECT \"c1\", \"c2\" FROM \"ks\".\"t\" WHERE token(\"pk1\", \"pk2\") > ? AND token(\"pk1\", \"pk2\") <= ?   ALLOW FILTERING",
        "SELECT peer, data_center, host_id, preferred_ip, rack, release_version, rpc_address, schema_version, tokens FROM system.peers",
        "SELECT * FROM system.peers_v2",
        "SELECT cluster_name, release_version FROM system.local",
        "SELECT * FROM system_schema.keyspaces",
        "SELECT * FROM system_schema.tables WHERE keyspace_name = ?",
        "SELECT schema_version FROM system.local WHERE key='local'",
        "UPDATE t SET \"C\" = \"C\" + 1, m = m + {'a': 1} WHERE k = ? AND c IN :list\r\n",
    ] {
        verified(q);
    }
    for table in [
        "keyspaces",
        "tables",
        "columns",
        "dropped_columns",
        "triggers",
        "views",
        "types",
        "functions",
        "aggregates",
        "indexes",
    ] {
        let q = format!("SELECT * FROM system_schema.{table} WHERE keyspace_name = 'ks'");
        verified(&q);
    }
    let s = select("SELECT * FROM system.local WHERE key='local'");
    assert_eq!(s.table, QualifiedName::qualified("system", "local"));
    assert!(s.selectors.is_empty());
    assert_eq!(
        s.where_clause,
        vec![Relation::Simple {
            column: "key".into(),
            op: Operator::Eq,
            value: Expr::Literal(Literal::String("local".into())),
        }]
    );
    let s = select(
        "SELECT \"c1\", \"c2\" FROM \"ks\".\"t\" WHERE token(\"pk1\", \"pk2\") > ? ALLOW FILTERING",
    );
    assert!(s.allow_filtering);
    assert!(
        matches!(&s.where_clause[0], Relation::Token { columns, op: Operator::Gt, value: Expr::BindMarker(None) } if columns == &["pk1", "pk2"])
    );
    let s = select("SELECT keyspace_name FROM system_schema.columns where keyspace_name in ?");
    assert!(matches!(
        &s.where_clause[0],
        Relation::Simple {
            op: Operator::In,
            value: Expr::BindMarker(None),
            ..
        }
    ));
}

#[test]
fn select_clauses_round_trip() {
    prints_as(
        "select token(k), writetime(v) as w, ttl(v), COUNT(*) from t",
        "SELECT token(k), writetime(v) AS w, ttl(v), count(*) FROM t",
    );
    for q in [
        "SELECT DISTINCT k FROM t",
        "SELECT JSON * FROM t",
        "SELECT JSON DISTINCT a, b FROM ks.t",
        "SELECT json FROM t",
        "SELECT distinct FROM t",
        "SELECT json, distinct FROM t",
        "SELECT \"json\" - a FROM t",
        "SELECT JSON \"distinct\" - a FROM t",
        "SELECT DISTINCT json - a FROM t",
        "SELECT json(a), distinct.f FROM t",
        "SELECT a, b FROM t WHERE a = 1 AND b > 2 AND b <= 5 AND c != 3 ORDER BY b DESC, c ASC LIMIT 10",
        "SELECT * FROM t ORDER BY v ANN OF [1.0, 2.0] LIMIT 3",
        "SELECT k FROM t WHERE k = ? ORDER BY v ANN OF ? DESC LIMIT ?",
        "SELECT * FROM t ORDER BY c ASC, v ANN OF (vector<float, 1>) [1.0], w ANN OF [2.0] LIMIT 2",
        "SELECT * FROM t WHERE a IN (1, 2, 3) AND b IN () PER PARTITION LIMIT 2 LIMIT ?",
        "SELECT * FROM t WHERE (a, b) > (1, 2) AND (a, b) <= ?",
        "SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, 4))",
        "SELECT * FROM t WHERE (a, b) IN (?, ?)",
        "SELECT * FROM t WHERE (a, b) IN ?",
        "SELECT * FROM t WHERE (a) IN ()",
        "SELECT * FROM t WHERE m CONTAINS 1 AND m CONTAINS KEY 'k' AND s LIKE 'a%' ALLOW FILTERING",
        "SELECT * FROM t WHERE v IS NOT NULL",
        "SELECT * FROM t WHERE m['key'] = 'v'",
        "SELECT * FROM t WHERE a = :named AND b = :\"Named\"",
        "SELECT * FROM t WHERE k = 1 GROUP BY k, c",
        "SELECT a.field, m['key'], l[0], m[?], f(a, 1), ks.f(), CAST(a AS text), (int) ?, [1, 2], {1, 2}, {'a': 1}, (1, 'x') FROM t",
        "SELECT a + b, a - 1, a * 2 / 3 % 4, - a FROM t",
        "SELECT count(1), min(v), max(v), avg(v), sum(v), now(), uuid(), toTimestamp(now()) FROM t",
        "SELECT \"token\"(a) FROM t",
        "SELECT a AS \"Alias\" FROM t WHERE ((k = 1))",
        "SELECT {f1: 1, f2: 'x'} FROM t",
        "SELECT * FROM t WHERE t = 0x AND u = 0xCAFEbabe",
    ] {
        verified(q);
    }
    let s = select("SELECT JSON DISTINCT a FROM t");
    assert!(s.json && s.distinct);
    let s = select("SELECT json FROM t");
    assert!(!s.json);
    assert_eq!(s.selectors[0].expr, Expr::Column("json".into()));
    let s = select("SELECT token(k), count(*) AS n FROM t");
    assert_eq!(
        s.selectors[0].expr,
        Expr::FunctionCall {
            name: QualifiedName::unqualified("token"),
            args: vec![Expr::Column("k".into())]
        }
    );
    assert_eq!(s.selectors[1].alias.as_deref(), Some("n"));
    assert_eq!(
        s.selectors[1].expr,
        Expr::FunctionCall {
            name: QualifiedName::unqualified("count"),
            args: vec![Expr::Star]
        }
    );
}

#[test]
fn literals_round_trip_with_their_values() {
    let lit = |q: &str| -> Literal {
        match &select(&format!("SELECT * FROM t WHERE a = {q}")).where_clause[0] {
            Relation::Simple {
                value: Expr::Literal(l),
                ..
            } => l.clone(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(lit("'it''s'"), Literal::String("it's".into()));
    assert_eq!(lit("$$it's$$"), Literal::String("it's".into()));
    assert_eq!(lit("-5"), Literal::Integer("-5".into()));
    assert_eq!(lit("-1.5e3"), Literal::Float("-1.5e3".into()));
    assert_eq!(lit("TRUE"), Literal::Boolean(true));
    assert_eq!(lit("NaN"), Literal::NaN);
    assert_eq!(lit("-NaN"), Literal::NaN);
    assert_eq!(lit("-Infinity"), Literal::Infinity { negative: true });
    assert_eq!(lit("infinity"), Literal::Infinity { negative: false });
    assert_eq!(lit("null"), Literal::Null);
    assert_eq!(lit("0xCAFE"), Literal::Blob(vec![0xca, 0xfe]));
    assert_eq!(
        lit("123e4567-E89B-12d3-a456-426614174000"),
        Literal::Uuid(uuid::Uuid::parse_str("123e4567-e89b-12d3-a456-426614174000").unwrap())
    );
    let dur = |months, days, nanos| Literal::Duration {
        months,
        days,
        nanos,
    };
    const H: i64 = 3_600_000_000_000;
    const M: i64 = 60_000_000_000;
    const S: i64 = 1_000_000_000;
    assert_eq!(lit("1h30m"), dur(0, 0, H + 30 * M));
    assert_eq!(lit("2d"), dur(0, 2, 0));
    assert_eq!(lit("3w"), dur(0, 21, 0));
    assert_eq!(lit("1y2mo"), dur(14, 0, 0));
    assert_eq!(lit("10us"), dur(0, 0, 10_000));
    assert_eq!(lit("10µs"), dur(0, 0, 10_000));
    assert_eq!(lit("5ns"), dur(0, 0, 5));
    assert_eq!(lit("7ms"), dur(0, 0, 7_000_000));
    assert_eq!(lit("-1d2h"), dur(0, -1, -2 * H));
    assert_eq!(lit("P1Y2M3DT4H5M6S"), dur(14, 3, 4 * H + 5 * M + 6 * S));
    assert_eq!(lit("P2W"), dur(0, 14, 0));
    assert_eq!(lit("PT10M"), dur(0, 0, 10 * M));
    assert_eq!(
        lit("P0001-02-03T04:05:06"),
        dur(14, 3, 4 * H + 5 * M + 6 * S)
    );
    assert_eq!(lit("-P1D"), dur(0, -1, 0));
    assert_eq!(
        lit("1y2mo3w4d5h6m7s8ms9us10ns").to_string(),
        "1y2mo25d5h6m7s8ms9us10ns"
    );
}

#[test]
fn insert_update_delete_round_trip() {
    for q in [
        "INSERT INTO ks.t (k, v) VALUES (1, 'a')",
        "INSERT INTO t (k, v) VALUES (?, ?) IF NOT EXISTS USING TTL 86400 AND TIMESTAMP 123",
        "INSERT INTO t (k, l, s, m, tu, u) VALUES (1, [1, 2], {'a'}, {'k': 1.5}, (1, 'a'), {f: 1, \"G\": 'x'})",
        "INSERT INTO t (k, v) VALUES (:k, (int) :v) USING TIMESTAMP ?",
        "INSERT INTO t JSON '{\"k\": 1}'",
        "INSERT INTO t JSON ? DEFAULT UNSET IF NOT EXISTS USING TTL 5",
        "INSERT INTO t (k, v) VALUES (now(), toTimestamp(now()))",
        "INSERT INTO t (k, v) VALUES (1, {})",
        "UPDATE t SET v = 1 WHERE k = 1",
        "UPDATE ks.t USING TTL 10 AND TIMESTAMP 20 SET a = 'x', b = b + 1, c = c - 2, l = [0] + l, m['k'] = 'v', u.f = 3 WHERE k IN (1, 2) IF a = 'y' AND m['k'] != 'z' AND u.f > 1",
        "UPDATE t SET s = s + {'a'}, s = s - {'b'}, l[1] = 'x' WHERE k = 1 IF EXISTS",
        "UPDATE t SET c += 1, d -= 2 WHERE k = 1",
        "UPDATE t SET v = 1 WHERE k = 1 IF v IN (1, 2) AND w CONTAINS 3 AND \"exists\" = 1",
        "DELETE FROM t WHERE k = 1",
        "DELETE a, m['k'], u.f, l[0] FROM ks.t USING TIMESTAMP 123 WHERE k = 1 AND c > 2 IF EXISTS",
        "DELETE FROM t WHERE k = ? IF v = 3",
    ] {
        verified(q);
    }
    match verified("UPDATE t SET c = c -5, l = [1] + l WHERE k = 1") {
        Statement::Update(u) => {
            assert_eq!(
                u.assignments,
                vec![
                    Assignment::Add {
                        column: "c".into(),
                        value: Expr::Literal(Literal::Integer("-5".into()))
                    },
                    Assignment::Prepend {
                        column: "l".into(),
                        value: Expr::List(vec![Expr::Literal(Literal::Integer("1".into()))])
                    }
                ]
            );
        }
        other => panic!("{other:?}"),
    }
    match verified("INSERT INTO t JSON ? DEFAULT UNSET") {
        Statement::Insert(i) => {
            assert!(i.default_unset);
            assert_eq!(i.values, InsertValues::Json(Expr::BindMarker(None)));
        }
        other => panic!("{other:?}"),
    }
    match verified("DELETE v FROM t USING TIMESTAMP 5 WHERE k = 1") {
        Statement::Delete(d) => {
            assert_eq!(d.columns, vec![DeleteTarget::Column("v".into())]);
            assert_eq!(
                d.using.timestamp,
                Some(Expr::Literal(Literal::Integer("5".into())))
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn using_keeps_the_written_order_of_ttl_and_timestamp() {
    let using = |stmt: Statement| match stmt {
        Statement::Insert(i) => i.using,
        Statement::Update(u) => u.using,
        Statement::Batch(b) => b.using,
        other => panic!("{other:?}"),
    };
    let ts_first = using(prints_as(
        "INSERT INTO t (k) VALUES (1) USING TIMESTAMP ? AND TTL ?",
        "INSERT INTO t (k) VALUES (1) USING TIMESTAMP ? AND TTL ?",
    ));
    assert!(ts_first.timestamp_first);
    let ttl_first = using(prints_as(
        "INSERT INTO t (k) VALUES (1) USING TTL ? AND TIMESTAMP ?",
        "INSERT INTO t (k) VALUES (1) USING TTL ? AND TIMESTAMP ?",
    ));
    assert!(!ttl_first.timestamp_first);
    assert_eq!(ts_first.ttl, ttl_first.ttl);
    assert_eq!(ts_first.timestamp, ttl_first.timestamp);
    assert_ne!(ts_first, ttl_first);
    assert!(
        using(prints_as(
            "UPDATE t USING timestamp 5 and ttl 7 SET v = 1 WHERE k = 1",
            "UPDATE t USING TIMESTAMP 5 AND TTL 7 SET v = 1 WHERE k = 1",
        ))
        .timestamp_first
    );
    assert!(
        using(prints_as(
            "BEGIN BATCH USING TIMESTAMP 5 AND TTL 7 APPLY BATCH",
            "BEGIN BATCH USING TIMESTAMP 5 AND TTL 7 APPLY BATCH",
        ))
        .timestamp_first
    );
    // Only one of the two: nothing to order.
    assert!(!using(verified("INSERT INTO t (k) VALUES (1) USING TIMESTAMP 5")).timestamp_first);
    // A repeated option replaces the earlier one; the order is that of the options kept.
    let repeated = using(prints_as(
        "INSERT INTO t (k) VALUES (1) USING TIMESTAMP 1 AND TTL 2 AND TIMESTAMP 3",
        "INSERT INTO t (k) VALUES (1) USING TTL 2 AND TIMESTAMP 3",
    ));
    assert!(!repeated.timestamp_first);
    assert_eq!(
        repeated.timestamp,
        Some(Expr::Literal(Literal::Integer("3".into())))
    );
}

#[test]
fn batches_round_trip() {
    let b = verified(
        "BEGIN BATCH
           INSERT INTO t (k, v) VALUES (1, 'a');
           UPDATE t SET v = 'b' WHERE k = 2
           DELETE FROM t WHERE k = 3;
         APPLY BATCH;",
    );
    match b {
        Statement::Batch(b) => {
            assert_eq!(b.batch_type, BatchType::Logged);
            assert_eq!(b.statements.len(), 3);
        }
        other => panic!("{other:?}"),
    }
    verified("BEGIN UNLOGGED BATCH USING TIMESTAMP 1 INSERT INTO t (k) VALUES (1) APPLY BATCH");
    verified("BEGIN COUNTER BATCH UPDATE t SET c = c + 1 WHERE k = 1; APPLY BATCH");
    verified("BEGIN BATCH APPLY BATCH");
}

#[test]
fn keyspace_ddl_round_trips() {
    let stmt = prints_as(
        "create keyspace if not exists ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND durable_writes = true",
        "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND durable_writes = true",
    );
    match stmt {
        Statement::CreateKeyspace(c) => {
            assert_eq!(c.name, "ks");
            assert!(c.if_not_exists);
            assert_eq!(
                c.options[0],
                (
                    "replication".to_string(),
                    OptionValue::Map(vec![
                        (
                            OptionValue::String("class".into()),
                            OptionValue::String("SimpleStrategy".into())
                        ),
                        (
                            OptionValue::String("replication_factor".into()),
                            OptionValue::Constant("1".into())
                        ),
                    ])
                )
            );
            assert_eq!(
                c.options[1],
                (
                    "durable_writes".to_string(),
                    OptionValue::Constant("true".into())
                )
            );
        }
        other => panic!("{other:?}"),
    }
    verified("CREATE SCHEMA \"MyKs\" WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': '2'}");
    verified("ALTER KEYSPACE ks WITH durable_writes = false");
    verified("ALTER KEYSPACE IF EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}");
    verified("DROP KEYSPACE ks");
    verified("DROP KEYSPACE IF EXISTS ks");
    verified("USE ks");
    verified("USE \"MyKs\"");
    prints_as("TRUNCATE ks.t", "TRUNCATE TABLE ks.t");
    verified("TRUNCATE TABLE t");
}

#[test]
fn create_table_forms_round_trip() {
    let t = match verified("CREATE TABLE t (k int PRIMARY KEY, v text)") {
        Statement::CreateTable(t) => t,
        other => panic!("{other:?}"),
    };
    assert_eq!(t.partition_key, vec!["k"]);
    assert!(t.clustering_key.is_empty());
    assert_eq!(t.columns.len(), 2);
    assert_eq!(
        t.to_string(),
        "CREATE TABLE t (k int, v text, PRIMARY KEY (k))"
    );

    let t = match verified(
        "CREATE COLUMNFAMILY IF NOT EXISTS ks.t (p1 int, p2 text, c1 int, c2 int, s int static, v text, PRIMARY KEY ((p1, p2), c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC) AND comment = 'hi' AND gc_grace_seconds = 0 AND compaction = {'class': 'LeveledCompactionStrategy'}",
    ) {
        Statement::CreateTable(t) => t,
        other => panic!("{other:?}"),
    };
    assert_eq!(t.partition_key, vec!["p1", "p2"]);
    assert_eq!(t.clustering_key, vec!["c1", "c2"]);
    assert!(t.columns[4].is_static);
    assert_eq!(
        t.options.clustering_order,
        vec![
            ("c1".to_string(), Order::Desc),
            ("c2".to_string(), Order::Asc)
        ]
    );
    assert_eq!(t.options.properties.len(), 3);

    verified("CREATE TABLE t (pk int, c int, v int, PRIMARY KEY (pk, c)) WITH COMPACT STORAGE");
    verified("CREATE TABLE t (k int, PRIMARY KEY (k),)");
    verified("CREATE TABLE \"Ks\".\"Tab\" (\"Key\" int PRIMARY KEY, \"Val\" text)");
}

#[test]
fn every_type_round_trips_in_create_table() {
    let types = [
        "ascii",
        "bigint",
        "blob",
        "boolean",
        "counter",
        "date",
        "decimal",
        "double",
        "duration",
        "float",
        "inet",
        "int",
        "smallint",
        "text",
        "time",
        "timestamp",
        "timeuuid",
        "tinyint",
        "uuid",
        "varint",
        "list<int>",
        "set<text>",
        "map<text, int>",
        "frozen<list<int>>",
        "frozen<map<text, list<int>>>",
        "tuple<int, text>",
        "frozen<tuple<int, frozen<set<uuid>>>>",
        "my_type",
        "frozen<my_type>",
        "ks.my_type",
        "frozen<\"Ks\".\"MyType\">",
        "'org.apache.cassandra.db.marshal.UTF8Type'",
        "list<frozen<map<int, tuple<int, int>>>>",
    ];
    let columns: Vec<String> = types
        .iter()
        .enumerate()
        .map(|(n, t)| format!("c{n} {t}"))
        .collect();
    let cql = format!("CREATE TABLE t (k int PRIMARY KEY, {})", columns.join(", "));
    match verified(&cql) {
        Statement::CreateTable(t) => {
            for (col, ty) in t.columns[1..].iter().zip(types) {
                assert_eq!(col.data_type, parse_data_type(ty).unwrap(), "{ty}");
            }
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        parse_data_type("varchar").unwrap(),
        native(NativeType::Text)
    );
    assert_eq!(
        parse_data_type("frozen<map<text, list<int>>>").unwrap(),
        DataType::Frozen(Box::new(DataType::Map(
            Box::new(native(NativeType::Text)),
            Box::new(DataType::List(Box::new(native(NativeType::Int))))
        )))
    );
    assert_eq!(
        parse_data_type("tuple<int,text>").unwrap(),
        DataType::Tuple(vec![native(NativeType::Int), native(NativeType::Text)])
    );
    assert_eq!(
        parse_data_type("ks.Address").unwrap(),
        DataType::Udt(Box::new(UserType {
            keyspace: Some("ks".into()),
            name: "address".into(),
            fields: vec![]
        }))
    );
    assert_eq!(
        parse_data_type("'custom.Class'").unwrap(),
        DataType::Custom("custom.Class".into())
    );
    assert!(parse_data_type("map<int>").is_err());
    assert!(parse_data_type("int int").is_err());
}

#[test]
fn alter_and_drop_table_round_trip() {
    for q in [
        "ALTER TABLE t ADD v int",
        "ALTER TABLE IF EXISTS ks.t ADD IF NOT EXISTS (a int, b list<text> static)",
        "ALTER TABLE t DROP v",
        "ALTER TABLE t DROP IF EXISTS (a, b) USING TIMESTAMP 123",
        "ALTER TABLE t RENAME a TO b AND c TO d",
        "ALTER TABLE t ALTER v MASKED WITH mask_inner(1, null)",
        "ALTER TABLE t ALTER v MASKED WITH system.mask_default()",
        "ALTER TABLE t ALTER v DROP MASKED",
        "ALTER TABLE t ADD w text MASKED WITH mask_replace('x')",
        "CREATE TABLE t (k int PRIMARY KEY, v text static MASKED WITH mask_outer(2, 1, '#'), \
         w int MASKED WITH DEFAULT)",
        "ALTER TABLE t RENAME IF EXISTS a TO b",
        "ALTER TABLE t ALTER v TYPE blob",
        "ALTER TABLE t DROP COMPACT STORAGE",
        "ALTER TABLE t WITH comment = 'x' AND default_time_to_live = 10",
        "ALTER COLUMNFAMILY t DROP compact",
        "DROP TABLE t",
        "DROP TABLE IF EXISTS ks.t",
        "DROP COLUMNFAMILY t",
    ] {
        verified(q);
    }
    match verified("ALTER TABLE t ADD v int static") {
        Statement::AlterTable(a) => assert_eq!(
            a.op,
            AlterTableOp::Add {
                columns: vec![ColumnDef {
                    name: "v".into(),
                    data_type: native(NativeType::Int),
                    is_static: true,
                    mask: None
                }],
                if_not_exists: false
            }
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn types_and_indexes_round_trip() {
    for q in [
        "CREATE TYPE address (street text, city text, zip int)",
        "CREATE TYPE IF NOT EXISTS ks.\"Addr\" (\"Street\" text, tags frozen<set<text>>,)",
        "ALTER TYPE address ADD country text",
        "ALTER TYPE IF EXISTS ks.address ADD IF NOT EXISTS country text",
        "ALTER TYPE address RENAME street TO road AND city TO town",
        "ALTER TYPE address ALTER zip TYPE bigint",
        "DROP TYPE address",
        "DROP TYPE IF EXISTS ks.address",
        "CREATE INDEX ON t (v)",
        "CREATE INDEX IF NOT EXISTS idx ON ks.t (keys(m))",
        "CREATE INDEX ON t (VALUES(l))",
        "CREATE INDEX ON t (entries(m))",
        "CREATE INDEX ON t (full(fl))",
        "CREATE INDEX ON t (keys)",
        "CREATE CUSTOM INDEX idx ON t (v) USING 'org.apache.cassandra.index.sasi.SASIIndex' WITH options = {'mode': 'CONTAINS'}",
        "DROP INDEX idx",
        "DROP INDEX IF EXISTS ks.idx",
    ] {
        verified(q);
    }
    match verified("CREATE INDEX idx ON t (keys(m))") {
        Statement::CreateIndex(c) => {
            assert_eq!(c.name.as_deref(), Some("idx"));
            assert_eq!(c.target, IndexTarget::Keys("m".into()));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn describe_round_trips() {
    let d = |q: &str| match verified(q) {
        Statement::Describe(d) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(d("DESCRIBE KEYSPACES;").target, DescribeTarget::Keyspaces);
    assert_eq!(
        d("DESC TABLE ks.\"MyTable\"").target,
        DescribeTarget::Table(QualifiedName::qualified("ks", "MyTable"))
    );
    assert_eq!(d("describe cluster").target, DescribeTarget::Cluster);
    assert_eq!(
        d("DESCRIBE FULL SCHEMA").target,
        DescribeTarget::Schema { full: true }
    );
    assert_eq!(
        d("DESCRIBE SCHEMA").target,
        DescribeTarget::Schema { full: false }
    );
    assert_eq!(
        d("DESCRIBE ONLY KEYSPACE ks").target,
        DescribeTarget::Keyspace {
            name: Some("ks".into()),
            only: true
        }
    );
    assert_eq!(
        d("DESCRIBE KEYSPACE").target,
        DescribeTarget::Keyspace {
            name: None,
            only: false
        }
    );
    assert_eq!(d("DESC TABLES").target, DescribeTarget::Tables);
    assert_eq!(
        d("DESC COLUMNFAMILY t").target,
        DescribeTarget::Table(QualifiedName::unqualified("t"))
    );
    assert_eq!(d("DESC TYPES").target, DescribeTarget::Types);
    assert_eq!(
        d("DESC TYPE ks.addr").target,
        DescribeTarget::Type(QualifiedName::qualified("ks", "addr"))
    );
    assert_eq!(d("DESC FUNCTIONS").target, DescribeTarget::Functions);
    assert_eq!(
        d("DESC FUNCTION ks.f").target,
        DescribeTarget::Function(QualifiedName::qualified("ks", "f"))
    );
    assert_eq!(d("DESC AGGREGATES").target, DescribeTarget::Aggregates);
    assert_eq!(
        d("DESC AGGREGATE a").target,
        DescribeTarget::Aggregate(QualifiedName::unqualified("a"))
    );
    assert_eq!(
        d("DESC INDEX ks.i").target,
        DescribeTarget::Index(QualifiedName::qualified("ks", "i"))
    );
    assert_eq!(
        d("DESC MATERIALIZED VIEW v").target,
        DescribeTarget::MaterializedView(QualifiedName::unqualified("v"))
    );
    assert_eq!(
        d("DESCRIBE ks.t").target,
        DescribeTarget::Generic(QualifiedName::qualified("ks", "t"))
    );
    assert_eq!(
        d("DESCRIBE \"tables\"").target,
        DescribeTarget::Generic(QualifiedName::unqualified("tables"))
    );
    assert_eq!(
        d("DESCRIBE type").target,
        DescribeTarget::Generic(QualifiedName::unqualified("type"))
    );
    let with = d("DESCRIBE TABLE t WITH INTERNALS");
    assert!(with.with_internals);
}

#[test]
fn security_statements_round_trip() {
    for q in [
        "CREATE ROLE alice",
        "CREATE ROLE IF NOT EXISTS alice WITH PASSWORD = 'pw' AND LOGIN = true AND SUPERUSER = false",
        "CREATE ROLE bob WITH OPTIONS = {'a': 1} AND ACCESS TO ALL DATACENTERS",
        "CREATE ROLE bob WITH ACCESS TO DATACENTERS {'dc1', 'dc2'} AND ACCESS FROM CIDRS {'r1'}",
        "CREATE ROLE bob WITH HASHED PASSWORD = 'x' AND ACCESS FROM ALL CIDRS",
        "CREATE ROLE 'Quoted Role' WITH GENERATED PASSWORD",
        "ALTER ROLE alice WITH PASSWORD = 'new'",
        "ALTER ROLE IF EXISTS alice WITH SUPERUSER = true",
        "DROP ROLE alice",
        "DROP ROLE IF EXISTS \"Alice\"",
        "CREATE USER bob WITH PASSWORD 'pw' SUPERUSER",
        "CREATE USER IF NOT EXISTS 'Bob' NOSUPERUSER",
        "ALTER USER bob WITH PASSWORD 'x'",
        "DROP USER IF EXISTS bob",
        "GRANT SELECT ON KEYSPACE ks TO alice",
        "GRANT ALL PERMISSIONS ON ALL KEYSPACES TO alice",
        "GRANT MODIFY, SELECT PERMISSION ON TABLE ks.t TO alice",
        "GRANT EXECUTE ON FUNCTION ks.f(int, text) TO alice",
        "GRANT ALTER ON ALL TABLES IN KEYSPACE ks TO alice",
        "GRANT DESCRIBE ON ALL ROLES TO alice",
        "GRANT AUTHORIZE ON ROLE bob TO alice",
        "GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE ks TO alice",
        "GRANT SELECT ON ALL MBEANS TO alice",
        "GRANT SELECT ON MBEAN 'org.apache:type=Foo' TO alice",
        "REVOKE SELECT ON ks.t FROM alice",
        "GRANT admin TO alice",
        "REVOKE admin FROM alice",
        "LIST ALL",
        "LIST ALL PERMISSIONS ON KEYSPACE ks OF alice NORECURSIVE",
        "LIST SELECT OF alice",
        "LIST ROLES",
        "LIST ROLES OF alice NORECURSIVE",
        "LIST USERS",
        "LIST SUPERUSERS",
    ] {
        verified(q);
    }
    match verified("GRANT SELECT ON KEYSPACE ks TO alice") {
        Statement::GrantPermissions(g) => {
            assert_eq!(g.permissions, Permissions::List(vec![Permission::Select]));
            assert_eq!(g.resource, Resource::Keyspace("ks".into()));
            assert_eq!(g.grantee, "alice");
        }
        other => panic!("{other:?}"),
    }
    match verified("CREATE USER Bob WITH PASSWORD 'pw'") {
        Statement::CreateUser(u) => assert_eq!(u.name, "Bob"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unsupported_statements_are_recognised() {
    let stmts = parse_statements(
        "CREATE OR REPLACE FUNCTION ks.f (a int) CALLED ON NULL INPUT RETURNS int LANGUAGE java AS $$ return a; $$;
         CREATE TRIGGER trig ON t USING 'org.example.Trigger';
         DROP AGGREGATE ks.agg;
         SELECT * FROM t",
    )
    .unwrap();
    assert_eq!(stmts.len(), 4);
    assert!(
        matches!(&stmts[0], Statement::CreateFunction(_)),
        "{:?}",
        stmts[0]
    );
    match &stmts[1] {
        Statement::Unsupported(u) => assert_eq!(u.kind, "CREATE TRIGGER"),
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&stmts[2], Statement::DropAggregate(_)),
        "{:?}",
        stmts[2]
    );
}

#[test]
fn statements_split_on_semicolons_and_skip_comments() {
    let stmts = parse_statements(
        "-- leading comment\n;; USE ks; /* block\n comment */ SELECT * FROM t; // trailing\n ;",
    )
    .unwrap();
    assert_eq!(stmts.len(), 2);
    assert_eq!(stmts[0], Statement::Use("ks".into()));
    assert!(parse_statements("").unwrap().is_empty());
    assert!(parse_statements(" ; ; -- nothing").unwrap().is_empty());
    assert!(parse_statement("SELECT * FROM t;").is_ok());
    assert!(parse_statement("SELECT * FROM t; SELECT * FROM u").is_err());
}

#[test]
fn keywords_work_as_identifiers_where_cassandra_allows() {
    let words = [
        "key",
        "type",
        "keys",
        "values",
        "ttl",
        "writetime",
        "count",
        "filtering",
        "static",
        "list",
        "map",
        "frozen",
        "json",
        "distinct",
        "timestamp",
        "date",
        "time",
        "text",
        "int",
        "custom",
        "login",
        "password",
        "options",
        "role",
        "roles",
        "user",
        "users",
        "superuser",
        "function",
        "functions",
        "aggregate",
        "aggregates",
        "cluster",
        "keyspaces",
        "tables",
        "types",
        "as",
        "all",
        "exists",
        "contains",
        "like",
        "per",
        "partition",
        "group",
        "cast",
        "tuple",
        "trigger",
        "clustering",
        "compact",
        "storage",
        "permissions",
        "default",
        "unset",
        "replace",
        "mbean",
        "counter",
        "ascii",
        "blob",
        "duration",
        "only",
        "internals",
    ];
    for w in words {
        verified(&format!("SELECT {w} FROM {w} WHERE {w} = 1"));
        verified(&format!(
            "CREATE TABLE {w}.{w} ({w} int PRIMARY KEY, v {w})"
        ));
        verified(&format!("INSERT INTO {w} ({w}) VALUES (1)"));
        verified(&format!("UPDATE {w} SET {w} = {w} + 1 WHERE {w} = 1"));
        verified(&format!("SELECT a AS {w} FROM t"));
    }
    match verified("SELECT key FROM t WHERE key = 'local'") {
        Statement::Select(s) => assert_eq!(s.selectors[0].expr, Expr::Column("key".into())),
        other => panic!("{other:?}"),
    }
    for reserved in [
        "select", "from", "where", "table", "keyspace", "token", "set", "in",
    ] {
        assert!(
            parse_statement(&format!("SELECT {reserved} FROM t")).is_err(),
            "{reserved}"
        );
        verified(&format!("SELECT \"{reserved}\" FROM t"));
    }
}

#[test]
fn identifiers_are_case_folded_unless_quoted() {
    let s = select("SELECT MyCol, \"MyCol\", \"with \"\" quote\" FROM MyKs.MyTable");
    assert_eq!(s.selectors[0].expr, Expr::Column("mycol".into()));
    assert_eq!(s.selectors[1].expr, Expr::Column("MyCol".into()));
    assert_eq!(s.selectors[2].expr, Expr::Column("with \" quote".into()));
    assert_eq!(s.table, QualifiedName::qualified("myks", "mytable"));
    verified("SELECT \"true\", \"false\", \"\" FROM t");
}

#[test]
fn terms_parse_alone_and_print_back() {
    // An aggregate's INITCOND as system_schema.aggregates keeps it.
    for text in ["0", "(0, 0)", "{'a': 1}", "[1, 2]", "'x'", "null", "{f: 1}"] {
        let term = parse_term(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(parse_term(&term.to_string()).ok(), Some(term), "{text}");
    }
    assert!(parse_term("1 2").is_err());
    assert!(parse_term("").is_err());
}
