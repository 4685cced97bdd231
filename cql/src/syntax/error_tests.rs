//! Error positions and messages, and robustness: the parser must never panic, and whatever it
//! accepts must round-trip.

use proptest::prelude::*;

use crate::{parse_data_type, parse_statement, parse_statements, ParseError};

fn err(cql: &str) -> ParseError {
    match parse_statement(cql) {
        Ok(stmt) => panic!("{cql} parsed as {stmt:?}"),
        Err(e) => e,
    }
}

#[test]
fn error_names_line_and_column_of_offending_token() {
    let e = err("SELECT * FRM t");
    assert_eq!((e.line, e.column), (1, 9));
    assert!(e.message.contains("'FRM'"), "{e}");
    assert!(e.to_string().starts_with("line 1:9 "), "{e}");

    let e = err("SELEC * FROM t");
    assert_eq!(
        e.to_string(),
        "line 1:0 no viable alternative at input 'SELEC'"
    );

    let e = err("SELECT *\nFROM t\nWHERE k = = 1");
    assert_eq!((e.line, e.column), (3, 10));

    let e = err("SELECT * FROM t WHERE");
    assert_eq!((e.line, e.column), (1, 21));
    assert!(e.message.contains("<EOF>"), "{e}");

    let e = err("INSERT INTO t (k) VALUES (1) garbage");
    assert_eq!((e.line, e.column), (1, 29));

    let e = err("DROP TABLE");
    assert_eq!(
        e.to_string(),
        "line 1:10 mismatched input '<EOF>' expecting K_IF or identifier"
    );

    let e = err("SELECT * FROM t WHERE k = 'open");
    assert_eq!((e.line, e.column), (1, 31));

    let e = err("SELECT * FROM t WHERE k = 1 ? 2");
    assert_eq!((e.line, e.column), (1, 28));

    let e = err("SELECT * FROM t; SELECT * FROM u");
    assert_eq!((e.line, e.column), (1, 17));
}

#[test]
fn single_expectation_reads_like_cassandra() {
    let e = err("TRUNCATE");
    assert!(
        e.message.starts_with("mismatched input '<EOF>' expecting"),
        "{e}"
    );
    let e = err("CREATE KEYSPACE ks");
    assert_eq!(
        e.to_string(),
        "line 1:18 mismatched input '<EOF>' expecting K_WITH"
    );
    let e = err("UPDATE t SET c = d + 1 WHERE k = 1");
    assert!(e.message.contains("X = X"), "{e}");
}

#[test]
fn invalid_constants_are_errors() {
    assert!(parse_statement("SELECT * FROM t WHERE b = 0xABC").is_err());
    assert!(parse_statement("SELECT * FROM t WHERE d = 99999999999999999999y").is_err());
    assert!(parse_statement("CREATE TABLE t (k int PRIMARY KEY, v int, PRIMARY KEY (v))").is_err());
    assert!(parse_statement("CREATE INDEX ON t (a, b)").is_err());
    assert!(parse_statement("").is_err());
    assert!(parse_data_type("").is_err());
    assert!(parse_data_type("vector<float, 1.5>").is_err());
    assert!(!err("CREATE TABLE t (k int PRIMARY KEY, v vector<float, 1.5>)").invalid);
}

#[test]
fn vector_types_parse_with_positive_dimensions() {
    use crate::types::{DataType, NativeType};
    let float = |n| DataType::Vector(Box::new(NativeType::Float.into()), n);
    assert_eq!(parse_data_type("vector<float, 3>").unwrap(), float(3));
    assert_eq!(parse_data_type("VECTOR<float,1>").unwrap(), float(1));
    assert_eq!(
        parse_data_type("vector<text, 2>").unwrap(),
        DataType::Vector(Box::new(DataType::TEXT), 2)
    );
    assert_eq!(
        parse_data_type("vector<list<int>, 2>").unwrap(),
        DataType::Vector(
            Box::new(DataType::List(Box::new(NativeType::Int.into()))),
            2
        )
    );
    assert_eq!(
        parse_data_type("list<frozen<vector<float, 2>>>").unwrap(),
        DataType::List(Box::new(DataType::Frozen(Box::new(float(2)))))
    );
    // Cassandra's VectorType constructor: an InvalidRequest, not a syntax error.
    for (text, given) in [("vector<float, 0>", "0"), ("vector<float, -1>", "-1")] {
        let e = parse_data_type(text).unwrap_err();
        assert!(e.invalid, "{text}");
        assert_eq!(
            e.message,
            format!("vectors may only have positive dimensions; given {given}")
        );
    }
    let e = err("CREATE TABLE t (k int PRIMARY KEY, v vector<float, 0>)");
    assert!(e.invalid);
    assert!(parse_data_type("vector<float>").is_err());
    assert!(parse_data_type("vector<float, 99999999999>").is_err());
    // The CQL spelling parses back to the same type.
    let t = float(7);
    assert_eq!(parse_data_type(&t.to_string()).unwrap(), t);
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for (open, close) in [
        ("(", ")"),
        ("[", "]"),
        ("{", "}"),
        ("- ", ""),
        ("(int) ", ""),
        ("f(", ")"),
    ] {
        let deep = format!(
            "SELECT * FROM t WHERE k = {}1{}",
            open.repeat(5000),
            close.repeat(5000)
        );
        assert!(parse_statement(&deep).is_err());
        let ok = format!(
            "SELECT * FROM t WHERE k = {}1{}",
            open.repeat(12),
            close.repeat(12)
        );
        parse_statement(&ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    let deep = format!(
        "SELECT * FROM t WHERE {}k = 1{}",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    assert!(parse_statement(&deep).is_err());
    let deep = format!("{}int{}", "frozen<list<".repeat(3000), ">>".repeat(3000));
    assert!(parse_data_type(&deep).is_err());
    let deep = format!("SELECT {}a{} FROM t", "(".repeat(5000), ")".repeat(5000));
    assert!(parse_statement(&deep).is_err());
}

#[test]
fn frozen_takes_no_nesting_level_unless_it_wraps_another() {
    // Cassandra accepts tuples 32 deep, each written `frozen<tuple<..>>`.
    let deep = |depth: usize| {
        format!(
            "CREATE TABLE t (k int PRIMARY KEY, v {}int{})",
            "frozen<tuple<".repeat(depth),
            ">>".repeat(depth)
        )
    };
    assert!(parse_statements(&deep(32)).is_ok());
    assert!(parse_statements(&deep(60)).is_err());
    let frozen = |depth: usize| {
        format!(
            "CREATE TABLE t (k int PRIMARY KEY, v {}list<int>{})",
            "frozen<".repeat(depth),
            ">".repeat(depth)
        )
    };
    assert!(parse_statements(&frozen(2)).is_ok());
    let e = parse_statements(&frozen(200)).unwrap_err();
    assert!(e.to_string().contains("nested too deeply"), "{e}");
}

#[test]
fn deepest_accepted_nesting_fits_the_stack() {
    // Run on a small stack to leave room for the caller: the deepest nesting the parser
    // accepts must not overflow it.
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            for (open, close) in [("[", "]"), ("(", ")"), ("{", "}"), ("- ", "")] {
                for depth in [20, 40, 46, 47, 60] {
                    let q = format!(
                        "SELECT {}a{} FROM t WHERE k = {}1{}",
                        open.repeat(depth),
                        close.repeat(depth),
                        open.repeat(depth),
                        close.repeat(depth)
                    );
                    let _ = parse_statements(&q);
                }
            }
            for (open, close) in [
                ("frozen<tuple<", ">>"),
                ("frozen<frozen<tuple<", ">>>"),
                ("list<frozen<", ">>"),
                ("frozen<", ">"),
            ] {
                for depth in [20, 32, 46, 47, 60] {
                    let q = format!(
                        "CREATE TABLE t (k int PRIMARY KEY, v {}int{})",
                        open.repeat(depth),
                        close.repeat(depth)
                    );
                    let _ = parse_statements(&q);
                }
            }
        })
        .expect("spawn");
    handle.join().expect("parser overflowed a 1 MiB stack");
}

const VOCABULARY: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "AND",
    "INSERT",
    "INTO",
    "VALUES",
    "UPDATE",
    "SET",
    "DELETE",
    "BEGIN",
    "BATCH",
    "APPLY",
    "UNLOGGED",
    "COUNTER",
    "CREATE",
    "ALTER",
    "DROP",
    "TABLE",
    "KEYSPACE",
    "TYPE",
    "INDEX",
    "ON",
    "WITH",
    "PRIMARY",
    "KEY",
    "IF",
    "NOT",
    "EXISTS",
    "IN",
    "CONTAINS",
    "LIMIT",
    "ORDER",
    "BY",
    "ASC",
    "DESC",
    "DESCRIBE",
    "USING",
    "TTL",
    "TIMESTAMP",
    "TOKEN",
    "COUNT",
    "JSON",
    "DISTINCT",
    "AS",
    "CAST",
    "NULL",
    "IS",
    "ALLOW",
    "FILTERING",
    "GRANT",
    "ROLE",
    "LIST",
    "ROLES",
    "frozen",
    "map",
    "list",
    "tuple",
    "int",
    "text",
    "k",
    "v",
    "ks",
    "t",
    "\"Q\"",
    "'s'",
    "$$x$$",
    "1",
    "-2",
    "1.5",
    "1h",
    "P1D",
    "0xab",
    "true",
    "NaN",
    "-Infinity",
    "123e4567-e89b-12d3-a456-426614174000",
    "?",
    ":m",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ";",
    ".",
    ":",
    "=",
    "<",
    ">",
    "<=",
    ">=",
    "!=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "+=",
    "-=",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC*") {
        let _ = parse_statements(&text);
        let _ = parse_data_type(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse_statements(&text);
    }

    #[test]
    fn odd_characters_never_panic(text in "[\\x00-\\x7f😀µé\u{feff}\u{2028}]{0,60}") {
        let _ = parse_statements(&text);
    }

    #[test]
    fn accepted_token_soup_round_trips(
        words in proptest::collection::vec(proptest::sample::select(VOCABULARY), 0..25)
    ) {
        let text = words.join(" ");
        if let Ok(stmts) = parse_statements(&text) {
            for stmt in stmts {
                let printed = stmt.to_string();
                let again = parse_statement(&printed);
                prop_assert_eq!(Ok(&stmt), again.as_ref(), "{} printed as {}", text, printed);
            }
        }
    }

    #[test]
    fn accepted_select_shapes_round_trip(
        sel in proptest::collection::vec(proptest::sample::select(VOCABULARY), 1..6),
        rel in proptest::collection::vec(proptest::sample::select(VOCABULARY), 1..8),
    ) {
        let text = format!("SELECT {} FROM t WHERE {}", sel.join(" "), rel.join(" "));
        if let Ok(stmt) = parse_statement(&text) {
            let printed = stmt.to_string();
            let again = parse_statement(&printed);
            prop_assert_eq!(Ok(&stmt), again.as_ref(), "{} printed as {}", text, printed);
        }
    }
}

#[test]
fn error_messages_snapshot() {
    for (q, expected) in [
        (
            "SELECT * FRM t",
            "line 1:9 mismatched input 'FRM' expecting K_FROM",
        ),
        (
            "SELECT a b FROM t",
            "line 1:9 mismatched input 'b' expecting K_AS, ',' or K_FROM",
        ),
        (
            "SELECT * FROM t WHERE",
            "line 1:21 mismatched input '<EOF>' expecting K_TOKEN, '(' or identifier",
        ),
        (
            "INSERT INTO t (k) VALUES (1) garbage",
            "line 1:29 no viable alternative at input 'garbage'",
        ),
        (
            "SELECT * FROM t WHERE k = 'open",
            "line 1:31 mismatched character '<EOF>' expecting '''",
        ),
        (
            "UPDATE t SET WHERE k = 1",
            "line 1:13 mismatched input 'WHERE' expecting identifier",
        ),
        (
            "CREATE TABLE t (k int PRIMARY KEY",
            "line 1:33 mismatched input '<EOF>' expecting ')'",
        ),
        (
            "SELECT * FROM t WHERE k = 0xabc",
            "line 1:26 Invalid hex literal 0xabc: odd number of digits",
        ),
        (
            "BEGIN BATCH SELECT * FROM t APPLY BATCH",
            "line 1:12 no viable alternative at input 'SELECT'",
        ),
        (
            "SELECT * FROM t LIMIT 'a'",
            "line 1:22 mismatched input ''a'' expecting INTEGER",
        ),
        (
            "SELECT * FROM t ORDER c",
            "line 1:22 mismatched input 'c' expecting K_BY",
        ),
        (
            "SELECT 1 # 2",
            "line 1:9 no viable alternative at character '#'",
        ),
    ] {
        assert_eq!(parse_statement(q).unwrap_err().to_string(), expected, "{q}");
    }
}
