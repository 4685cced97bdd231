"""User-defined functions and aggregates through the python driver: the
`user_defined_functions_enabled` gate, CREATE/DROP FUNCTION and AGGREGATE with Cassandra 5.0's
checks and messages, calls in selectors (qualified, unqualified, nested, prepared with markers),
user aggregates, Lua failures and timeouts as FunctionFailure, `system_schema.functions` /
`aggregates`, the driver's metadata, SCHEMA_CHANGE events, DESCRIBE, and a restart.

Sources of the expectations (Apache Cassandra 5.0):
- CS = src/java/org/apache/cassandra/cql3/statements/schema/CreateFunctionStatement.java
- CA = .../schema/CreateAggregateStatement.java
- DF = .../schema/DropFunctionStatement.java, DA = .../schema/DropAggregateStatement.java
- UDF = src/java/org/apache/cassandra/cql3/functions/UDFunction.java (null handling,
  isCallableWrtNullable), UDA = .../functions/UDAggregate.java (state folding)
- FE = src/java/org/apache/cassandra/exceptions/FunctionExecutionException.java (0x1400,
  "execution of '%s[%s]' failed: %s")
- FR = src/java/org/apache/cassandra/cql3/functions/FunctionResolver.java (makeArgSpec:
  marker names "arg%d(ks.f)")
- SK = src/java/org/apache/cassandra/schema/SchemaKeyspace.java (system_schema.functions,
  aggregates columns)
- Event = native_protocol_v4.spec section 4.2.6 (SCHEMA_CHANGE FUNCTION/AGGREGATE)
- doc/modules/cassandra/pages/developing/cql/functions.adoc (the average aggregate example)
"""

from __future__ import annotations

import time

import pytest
from cassandra import FunctionFailure, InvalidRequest

import cqlwire
from conftest import RingServer, make_cluster, new_keyspace, run_cqlsh, stop_and_check

# CS/CA (5.0 UDFunction.assertUdfsEnabled): the refusal while UDFs are off names the 5.0
# setting.
DISABLED = ("User-defined functions are disabled in cassandra.yaml - set "
            "user_defined_functions_enabled=true to enable")

FUNC = ("CREATE FUNCTION {ks}.plus(a int, b int) RETURNS NULL ON NULL INPUT "
        "RETURNS int LANGUAGE {lang} AS $$ return a + b $$")


def start_with(request, tmp_path, settings: str, data=None) -> RingServer:
    cfg = tmp_path / "ringdb.toml"
    cfg.write_text(settings)
    return RingServer(data or tmp_path / "data", tmp_path / "stderr.log", request.node.nodeid,
                      extra_args=("--config", str(cfg), "--metrics-listen", "")).start()


# ---------------------------------------------------------------- disabled (the default)

@pytest.fixture(scope="module")
def off_ks(session):
    name = new_keyspace(session, "udfoff")
    yield name
    session.execute(f"DROP KEYSPACE {name}")


def test_create_function_is_refused_while_udfs_are_disabled(session, off_ks):
    # Default off, as Cassandra's user_defined_functions_enabled (cassandra.yaml).
    with pytest.raises(InvalidRequest) as e:
        session.execute(FUNC.format(ks=off_ks, lang="lua"))
    assert DISABLED in str(e.value)


def test_create_aggregate_is_refused_while_udfs_are_disabled(session, off_ks):
    with pytest.raises(InvalidRequest, match="User-defined functions are disabled"):
        session.execute(f"CREATE AGGREGATE {off_ks}.total(int) SFUNC plus STYPE int INITCOND 0")


def test_drop_function_if_exists_of_a_missing_function_succeeds(session, off_ks):
    # DF/DA: IF EXISTS on a missing function is no change (and needs no setting).
    session.execute(f"DROP FUNCTION IF EXISTS {off_ks}.nothing")
    session.execute(f"DROP AGGREGATE IF EXISTS {off_ks}.nothing(int)")


def test_drop_of_a_missing_function_is_invalid(session, off_ks):
    # DF: "Function '%s' doesn't exist", the name keyspace-qualified; DA likewise.
    with pytest.raises(InvalidRequest, match=f"Function '{off_ks}.nothing' doesn't exist"):
        session.execute(f"DROP FUNCTION {off_ks}.nothing")
    with pytest.raises(InvalidRequest,
                       match=rf"Aggregate '{off_ks}.nothing\(int\)' doesn't exist"):
        session.execute(f"DROP AGGREGATE {off_ks}.nothing(int)")


def test_a_malformed_create_function_is_a_syntax_error(session, off_ks):
    # Parser.g createFunctionStatement requires the ON NULL INPUT clause.
    from cassandra.protocol import SyntaxException
    with pytest.raises(SyntaxException):
        session.execute(f"CREATE FUNCTION {off_ks}.f(a int) RETURNS int LANGUAGE lua AS 'return a'")


# ---------------------------------------------------------------- enabled

@pytest.fixture(scope="module")
def udf_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("udf_on")
    srv = start_with(request, tmp, "user_defined_functions_enabled = true\n")
    yield srv
    stop_and_check(srv)


@pytest.fixture(scope="module")
def udf_cluster(udf_server):
    c = make_cluster(udf_server)
    yield c
    c.shutdown()


@pytest.fixture(scope="module")
def s(udf_cluster):
    return udf_cluster.connect()


@pytest.fixture
def k(s):
    """A fresh keyspace with t(pk, ck, v, x) holding pk 1: v = 0, 10, 20, 30 and a null v."""
    name = new_keyspace(s, "udf")
    s.execute(f"CREATE TABLE {name}.t (pk int, ck int, v int, x text, PRIMARY KEY (pk, ck))")
    for i in range(4):
        s.execute(f"INSERT INTO {name}.t (pk, ck, v, x) VALUES (1, {i}, {i * 10}, 'r{i}')")
    s.execute(f"INSERT INTO {name}.t (pk, ck, x) VALUES (1, 4, 'r4')")
    s.execute(FUNC.format(ks=name, lang="lua"))
    yield name
    s.execute(f"DROP KEYSPACE {name}")


def test_settings_show_in_system_views(s):
    rows = {r.name: r.value for r in s.execute("SELECT name, value FROM system_views.settings")}
    assert rows.get("user_defined_functions_enabled") == "true"
    assert rows.get("user_defined_functions_java_schema") == "false"


def test_create_checks_keyspace_and_language(s, k):
    # CS: "Keyspace '%s' doesn't exist".
    with pytest.raises(InvalidRequest, match="Keyspace 'nope' doesn't exist"):
        s.execute(FUNC.format(ks="nope", lang="lua"))
    # Java is not run by ringdb: refused unless user_defined_functions_java_schema is set,
    # with Cassandra 3.x-4.0 UDFunction.create's message for a language it has no engine for.
    with pytest.raises(InvalidRequest, match="Invalid language 'java'"):
        s.execute(FUNC.format(ks=k, lang="java").replace("plus", "jplus"))
    with pytest.raises(InvalidRequest, match="Invalid language 'javascript'"):
        s.execute(FUNC.format(ks=k, lang="javascript").replace("plus", "jsplus"))


def test_call_qualified_unqualified_and_nested(s, k):
    rows = list(s.execute(f"SELECT ck, {k}.plus(v, 1) AS p FROM {k}.t WHERE pk = 1"))
    assert [(r.ck, r.p) for r in rows] == [(0, 1), (1, 11), (2, 21), (3, 31), (4, None)]
    # Unqualified: found in the statement's keyspace (FR: the keyspace of the table).
    s.execute(f"USE {k}")
    rows = list(s.execute("SELECT plus(v, ck) AS p FROM t WHERE pk = 1 AND ck = 2"))
    assert rows[0].p == 22
    # Nested with native functions, either way round.
    rows = list(s.execute(
        "SELECT blobasint(intasblob(plus(v, 2))) AS a, plus(blobasint(intasblob(v)), 3) AS b "
        "FROM t WHERE pk = 1 AND ck = 1"))
    assert (rows[0].a, rows[0].b) == (12, 13)
    # Nested in itself, with a literal argument.
    rows = list(s.execute("SELECT plus(plus(v, 1), 100) AS c FROM t WHERE pk = 1 AND ck = 3"))
    assert rows[0].c == 131
    # Result column names are the qualified function name and the argument names.
    rs = s.execute(f"SELECT {k}.plus(v, ck) FROM {k}.t WHERE pk = 1 AND ck = 0")
    assert rs.column_names == [f"{k}.plus(v, ck)"]


def test_unknown_functions_are_invalid(s, k):
    # Selectable.WithFunction.Raw.prepare: "Unknown function '%s'".
    with pytest.raises(InvalidRequest, match=f"Unknown function '{k}.nope'"):
        s.execute(f"SELECT {k}.nope(v) FROM {k}.t WHERE pk = 1")
    with pytest.raises(InvalidRequest, match="Unknown function 'nope'"):
        s.execute(f"SELECT nope(v) FROM {k}.t WHERE pk = 1")
    # FR: a single overload checks arity.
    with pytest.raises(InvalidRequest, match="Invalid number of arguments in call to function "
                                             f"{k}.plus: 2 required but 1 provided"):
        s.execute(f"SELECT {k}.plus(v) FROM {k}.t WHERE pk = 1")
    # ... and types (a text column is no int).
    with pytest.raises(InvalidRequest, match="Type error: x cannot be passed as argument 1"):
        s.execute(f"SELECT {k}.plus(v, x) FROM {k}.t WHERE pk = 1")


def test_null_input_handling(s, k):
    # UDF.isCallableWrtNullable: RETURNS NULL ON NULL INPUT answers null without running;
    # CALLED ON NULL INPUT runs with nil.
    s.execute(f"CREATE FUNCTION {k}.orzero(a int) CALLED ON NULL INPUT RETURNS int "
              "LANGUAGE lua AS 'if a == nil then return 0 end return a'")
    rows = list(s.execute(f"SELECT {k}.plus(v, 1) AS p, {k}.orzero(v) AS z "
                          f"FROM {k}.t WHERE pk = 1 AND ck = 4"))
    assert (rows[0].p, rows[0].z) == (None, 0)


def test_create_duplicates_replace_and_if_not_exists(s, k):
    # CS: "Function '%s' already exists".
    with pytest.raises(InvalidRequest, match="Function 'plus' already exists"):
        s.execute(FUNC.format(ks=k, lang="lua"))
    s.execute(FUNC.format(ks=k, lang="lua").replace("CREATE FUNCTION", "CREATE FUNCTION IF NOT EXISTS"))
    # CS: both directives at once.
    with pytest.raises(InvalidRequest,
                       match="Cannot use both 'OR REPLACE' and 'IF NOT EXISTS' directives"):
        s.execute(FUNC.format(ks=k, lang="lua").replace(
            "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION IF NOT EXISTS"))
    # CS: a replacement keeps the null-input directive ...
    with pytest.raises(InvalidRequest,
                       match="Function 'plus' must have CALLED ON NULL INPUT directive"):
        s.execute(f"CREATE OR REPLACE FUNCTION {k}.plus(a int, b int) CALLED ON NULL INPUT "
                  "RETURNS int LANGUAGE lua AS 'return 0'")
    # ... and a compatible return type.
    with pytest.raises(InvalidRequest, match="Cannot replace function 'plus', the new return "
                                             "type text is not compatible"):
        s.execute(f"CREATE OR REPLACE FUNCTION {k}.plus(a int, b int) RETURNS NULL ON NULL "
                  "INPUT RETURNS text LANGUAGE lua AS 'return \"x\"'")
    s.execute(f"CREATE OR REPLACE FUNCTION {k}.plus(a int, b int) RETURNS NULL ON NULL INPUT "
              "RETURNS int LANGUAGE lua AS 'return a + b + 1000'")
    rows = list(s.execute(f"SELECT {k}.plus(v, 0) AS p FROM {k}.t WHERE pk = 1 AND ck = 1"))
    assert rows[0].p == 1010
    # CS: duplicate argument names.
    with pytest.raises(InvalidRequest, match="Duplicate argument names"):
        s.execute(f"CREATE FUNCTION {k}.dup(a int, a int) CALLED ON NULL INPUT RETURNS int "
                  "LANGUAGE lua AS 'return a'")


def test_overloads_and_drop(s, k):
    s.execute(f"CREATE FUNCTION {k}.plus(a text, b text) RETURNS NULL ON NULL INPUT "
              "RETURNS text LANGUAGE lua AS 'return a .. b'")
    rows = list(s.execute(f"SELECT {k}.plus(x, x) AS t2, {k}.plus(v, v) AS i2 "
                          f"FROM {k}.t WHERE pk = 1 AND ck = 2"))
    assert (rows[0].t2, rows[0].i2) == ("r2r2", 40)
    # DF: several overloads need the argument types.
    with pytest.raises(InvalidRequest, match="'DROP FUNCTION plus' matches multiple function "
                                             "definitions"):
        s.execute(f"DROP FUNCTION {k}.plus")
    with pytest.raises(InvalidRequest, match=rf"Function '{k}.plus\(bigint\)' doesn't exist"):
        s.execute(f"DROP FUNCTION {k}.plus(bigint)")
    s.execute(f"DROP FUNCTION {k}.plus(text, text)")
    s.execute(f"DROP FUNCTION {k}.plus")
    with pytest.raises(InvalidRequest, match=f"Unknown function '{k}.plus'"):
        s.execute(f"SELECT {k}.plus(v, v) FROM {k}.t WHERE pk = 1")


def test_user_aggregates(s, k):
    s.execute(f"CREATE FUNCTION {k}.show(s int) RETURNS NULL ON NULL INPUT RETURNS text "
              "LANGUAGE lua AS 'return \"total=\" .. s'")
    # The state function skips null rows (UDA: RETURNS NULL ON NULL INPUT state function).
    s.execute(f"CREATE AGGREGATE {k}.total(int) SFUNC plus STYPE int INITCOND 0")
    s.execute(f"CREATE AGGREGATE {k}.shown(int) SFUNC plus STYPE int FINALFUNC show INITCOND 100")
    rows = list(s.execute(f"SELECT {k}.total(v) AS t, shown(v) AS sh, count(*) AS n "
                          f"FROM {k}.t WHERE pk = 1"))
    assert (rows[0].t, rows[0].sh, rows[0].n) == (60, "total=160", 5)
    # Functions over aggregates (Selectable.WithFunction over aggregate selectors): the
    # aggregates fold first, then the function runs on their results.
    rows = list(s.execute(f"SELECT {k}.plus(total(v), 1) AS a, {k}.plus(max(v), ck) AS b, "
                          f"blobasint(intasblob(max(v))) AS c FROM {k}.t WHERE pk = 1"))
    assert (rows[0].a, rows[0].b, rows[0].c) == (61, 30, 30)
    # Over no rows: the initial state (finished).
    rows = list(s.execute(f"SELECT {k}.total(v) AS t FROM {k}.t WHERE pk = 2"))
    assert rows[0].t == 0
    # Prepared, with the partition bound.
    p = s.prepare(f"SELECT {k}.total(v) AS t FROM {k}.t WHERE pk = ?")
    assert s.execute(p, (1,)).one().t == 60


def test_average_aggregate_with_a_tuple_state(s, k):
    # functions.adoc's average example, in Lua: a tuple<int, bigint> state (count, sum).
    s.execute(f"CREATE FUNCTION {k}.avg_state(state tuple<int, bigint>, val int) CALLED ON "
              "NULL INPUT RETURNS tuple<int, bigint> LANGUAGE lua AS $$ "
              "if val ~= nil then state[1] = state[1] + 1 state[2] = state[2] + val end "
              "return state $$")
    s.execute(f"CREATE FUNCTION {k}.avg_final(state tuple<int, bigint>) CALLED ON NULL INPUT "
              "RETURNS double LANGUAGE lua AS $$ "
              "if state[1] == 0 then return nil end return state[2] / state[1] $$")
    s.execute(f"CREATE AGGREGATE {k}.average(int) SFUNC avg_state STYPE tuple<int, bigint> "
              "FINALFUNC avg_final INITCOND (0, 0)")
    rows = list(s.execute(f"SELECT {k}.average(v) AS a FROM {k}.t WHERE pk = 1"))
    assert rows[0].a == 15.0
    agg = list(s.execute("SELECT * FROM system_schema.aggregates WHERE keyspace_name = %s "
                         "AND aggregate_name = 'average'", (k,)))
    assert agg[0].initcond == "(0, 0)"
    assert agg[0].state_type == "frozen<tuple<int, bigint>>"


def test_aggregate_errors_and_dependencies(s, k):
    # CA: the state function must exist with (stype, args...).
    with pytest.raises(InvalidRequest,
                       match=rf"State function {k}.nope\(int, int\) doesn't exist"):
        s.execute(f"CREATE AGGREGATE {k}.a1(int) SFUNC nope STYPE int INITCOND 0")
    # CA: its return type must be the state type.
    s.execute(f"CREATE FUNCTION {k}.tostr(s int, v int) CALLED ON NULL INPUT RETURNS text "
              "LANGUAGE lua AS 'return \"x\"'")
    with pytest.raises(InvalidRequest, match="return type must be the same as the first "
                                             "argument type"):
        s.execute(f"CREATE AGGREGATE {k}.a2(int) SFUNC tostr STYPE int")
    # CA: the final function must exist with (stype).
    with pytest.raises(InvalidRequest, match=rf"Final function {k}.nope\(int\) doesn't exist"):
        s.execute(f"CREATE AGGREGATE {k}.a3(int) SFUNC plus STYPE int FINALFUNC nope INITCOND 0")
    # CA: a RETURNS NULL ON NULL INPUT state function needs an INITCOND.
    with pytest.raises(InvalidRequest, match="Cannot create aggregate 'a4' without INITCOND"):
        s.execute(f"CREATE AGGREGATE {k}.a4(int) SFUNC plus STYPE int")
    # CA: the INITCOND must be a value of the state type.
    with pytest.raises(InvalidRequest, match="Invalid value for INITCOND of type int"):
        s.execute(f"CREATE AGGREGATE {k}.a5(int) SFUNC plus STYPE int INITCOND 'x'")
    s.execute(f"CREATE AGGREGATE {k}.total(int) SFUNC plus STYPE int INITCOND 0")
    # CA: "Aggregate '%s' already exists"; a function cannot take an aggregate's place.
    with pytest.raises(InvalidRequest, match="Aggregate 'total' already exists"):
        s.execute(f"CREATE AGGREGATE {k}.total(int) SFUNC plus STYPE int INITCOND 0")
    with pytest.raises(InvalidRequest, match="Function 'total' cannot replace an aggregate"):
        s.execute(f"CREATE FUNCTION {k}.total(a int) CALLED ON NULL INPUT RETURNS int "
                  "LANGUAGE lua AS 'return a'")
    # DF: a function an aggregate uses cannot be dropped.
    with pytest.raises(InvalidRequest, match=f"Function '{k}.plus' is still referenced by "
                                             f"aggregates {k}.total"):
        s.execute(f"DROP FUNCTION {k}.plus")
    # An aggregate of an aggregate is refused.
    with pytest.raises(InvalidRequest, match="Aggregate functions cannot be used as arguments"):
        s.execute(f"SELECT {k}.total(max(v)) FROM {k}.t WHERE pk = 1")
    s.execute(f"DROP AGGREGATE {k}.total")
    s.execute(f"DROP FUNCTION {k}.plus")


def test_user_types_as_arguments(s, k):
    s.execute(f"CREATE TYPE {k}.addr (street text, no int)")
    s.execute(f"CREATE TABLE {k}.people (id int PRIMARY KEY, home frozen<addr>)")
    s.execute(f"INSERT INTO {k}.people (id, home) VALUES (1, {{street: 'Main', no: 7}})")
    # CS: an argument type may not be frozen<>; a UDT argument reads a frozen column.
    with pytest.raises(InvalidRequest, match="Argument 'frozen<addr>' cannot be frozen"):
        s.execute(f"CREATE FUNCTION {k}.label(a frozen<addr>) CALLED ON NULL INPUT "
                  "RETURNS text LANGUAGE lua AS 'return a.street'")
    s.execute(f"CREATE FUNCTION {k}.label(a addr) RETURNS NULL ON NULL INPUT RETURNS text "
              "LANGUAGE lua AS $$ return a.street .. ' ' .. a.no $$")
    assert s.execute(f"SELECT {k}.label(home) AS l FROM {k}.people WHERE id = 1").one().l == "Main 7"
    # DropTypeStatement: a type a function uses cannot be dropped.
    s.execute(f"DROP TABLE {k}.people")
    with pytest.raises(InvalidRequest, match=f"Cannot drop user type '{k}.addr' as it is still "
                                             f"used by functions {k}.label"):
        s.execute(f"DROP TYPE {k}.addr")
    s.execute(f"DROP FUNCTION {k}.label")
    s.execute(f"DROP TYPE {k}.addr")


def test_decimal_varint_date_time_inet_and_duration_values(s, k):
    # ScyllaDB's Lua bridge carries every CQL type; here decimals travel as their exact text,
    # varints as integers, dates as 'YYYY-MM-DD', times as nanoseconds of the day, inets as
    # their address and durations as {months, days, nanoseconds}.
    import datetime
    import decimal
    from cassandra.util import Date, Duration, Time
    s.execute(f"CREATE TABLE {k}.kinds (k int PRIMARY KEY, d decimal, n varint, day date, "
              "tm time, ip inet, du duration)")
    s.execute(f"INSERT INTO {k}.kinds (k, d, n, day, tm, ip, du) VALUES (1, 12.50, "
              "123456789012345678901234567890, '2024-02-28', '10:00:00', '10.0.0.1', 1mo2d3ns)")
    body = {
        "dplus(x decimal) RETURNS NULL ON NULL INPUT RETURNS decimal": "return x + 1",
        "dtext(x decimal) RETURNS NULL ON NULL INPUT RETURNS text": "return x",
        "nhalf(x varint) RETURNS NULL ON NULL INPUT RETURNS varint": "return 21",
        "ntext(x varint) RETURNS NULL ON NULL INPUT RETURNS text": "return x",
        "nextday(x date) RETURNS NULL ON NULL INPUT RETURNS date": "return '2024-02-29'",
        "dayof(x date) RETURNS NULL ON NULL INPUT RETURNS text": "return x",
        "later(x time) RETURNS NULL ON NULL INPUT RETURNS time": "return x + 1000000000",
        "ipof(x inet) RETURNS NULL ON NULL INPUT RETURNS text": "return x",
        "toip(x inet) RETURNS NULL ON NULL INPUT RETURNS inet": "return '::1'",
        "moredays(x duration) RETURNS NULL ON NULL INPUT RETURNS duration":
            "return {months = x.months, days = x.days + 5, nanoseconds = x.nanoseconds}",
    }
    for sig, code in body.items():
        s.execute(f"CREATE FUNCTION {k}.{sig} LANGUAGE lua AS $${code}$$")
    row = s.execute(f"SELECT {k}.dplus(d), {k}.dtext(d), {k}.nhalf(n), {k}.ntext(n), "
                    f"{k}.nextday(day), {k}.dayof(day), {k}.later(tm), {k}.ipof(ip), "
                    f"{k}.toip(ip), {k}.moredays(du) FROM {k}.kinds WHERE k = 1").one()
    assert tuple(row) == (
        decimal.Decimal("13.5"), "12.50", 21, "123456789012345678901234567890",
        Date(datetime.date(2024, 2, 29)), "2024-02-28", Time(datetime.time(10, 0, 1)),
        "10.0.0.1", __import__("ipaddress").ip_address("::1").compressed,
        Duration(1, 7, 3))


def test_calls_in_values_and_where_clauses(s, k):
    # Cassandra resolves function calls in terms too: INSERT values, UPDATE assignments and
    # WHERE restrictions call user functions, evaluated at each execution, with bind markers
    # as arguments (named arg0(ks.f), as FunctionResolver.makeArgSpec names them).
    s.execute(f"CREATE FUNCTION {k}.twice(x int) RETURNS NULL ON NULL INPUT RETURNS int "
              "LANGUAGE lua AS 'return x * 2'")
    s.execute(f"CREATE FUNCTION {k}.label(x int) CALLED ON NULL INPUT RETURNS text "
              "LANGUAGE lua AS $$ if x == nil then return 'none' end return 'n' .. x $$")
    s.execute(f"INSERT INTO {k}.t (pk, ck, v, x) VALUES (7, {k}.twice(3), {k}.twice(5), "
              f"{k}.label(null))")
    assert tuple(s.execute(f"SELECT ck, v, x FROM {k}.t WHERE pk = 7").one()) == (6, 10, "none")
    s.execute(f"UPDATE {k}.t SET x = {k}.label(4) WHERE pk = 7 AND ck = {k}.twice(3)")
    assert s.execute(f"SELECT x FROM {k}.t WHERE pk = 7 AND ck = 6").one().x == "n4"
    prepared = s.prepare(f"INSERT INTO {k}.t (pk, ck, v) VALUES (?, ?, {k}.twice(?))")
    assert [c.name for c in prepared.column_metadata] == ["pk", "ck", f"arg0({k}.twice)"]
    s.execute(prepared, (8, 1, 21))
    assert s.execute(f"SELECT v FROM {k}.t WHERE pk = 8 AND ck = 1").one().v == 42
    sel = s.prepare(f"SELECT v FROM {k}.t WHERE pk = 8 AND ck = {k}.twice(?)")
    assert list(s.execute(sel, (0,))) == [] and s.execute(
        s.prepare(f"SELECT v FROM {k}.t WHERE pk = ? AND ck IN ({k}.twice(0), 1)"), (8,)
    ).one().v == 42
    with pytest.raises(InvalidRequest, match="Type error"):
        s.execute(f"INSERT INTO {k}.t (pk, ck, x) VALUES (9, 1, {k}.twice(1))")
    with pytest.raises(InvalidRequest, match=r"Unknown function|nope"):
        s.execute(f"INSERT INTO {k}.t (pk, ck, v) VALUES (9, 1, {k}.nope(1))")


def test_prepared_statements_with_marker_arguments(s, k):
    p = s.prepare(f"SELECT {k}.plus(v, ?) AS p FROM {k}.t WHERE pk = ? AND ck = ?")
    # FR.makeArgSpec: an argument's marker is named arg<i>(ks.f) and has the argument's type.
    names = [c.name for c in p.column_metadata]
    assert names == [f"arg1({k}.plus)", "pk", "ck"]
    assert s.execute(p, (5, 1, 3)).one().p == 35
    assert s.execute(p, (None, 1, 3)).one().p is None


def test_a_prepared_call_follows_a_replaced_body(s, k):
    p = s.prepare(f"SELECT {k}.plus(v, 1) AS p FROM {k}.t WHERE pk = 1 AND ck = 1")
    assert s.execute(p).one().p == 11
    s.execute(f"CREATE OR REPLACE FUNCTION {k}.plus(a int, b int) RETURNS NULL ON NULL INPUT "
              "RETURNS int LANGUAGE lua AS 'return a * 100 + b'")
    assert s.execute(p).one().p == 1001
    # Dropped, the function is unknown to the prepared statement too.
    s.execute(f"DROP FUNCTION {k}.plus")
    with pytest.raises(InvalidRequest, match=f"Unknown function '{k}.plus'"):
        s.execute(p)


def test_failures_and_timeouts_are_function_failures(s, k):
    s.execute(f"CREATE FUNCTION {k}.boom(a int) CALLED ON NULL INPUT RETURNS int "
              "LANGUAGE lua AS $$ error('kaboom') $$")
    s.execute(f"CREATE FUNCTION {k}.spin(a int) CALLED ON NULL INPUT RETURNS int "
              "LANGUAGE lua AS $$ while true do end $$")
    s.execute(f"CREATE FUNCTION {k}.bad(a int) CALLED ON NULL INPUT RETURNS int "
              "LANGUAGE lua AS $$ return 'not a number' $$")
    s.execute(f"CREATE FUNCTION {k}.escape(a int) CALLED ON NULL INPUT RETURNS int "
              "LANGUAGE lua AS $$ return os.exit(1) $$")
    # FE: FunctionFailure (0x1400), "execution of 'ks.f[types]' failed: <reason>".
    with pytest.raises(FunctionFailure) as e:
        s.execute(f"SELECT {k}.boom(v) FROM {k}.t WHERE pk = 1")
    assert f"execution of '{k}.boom[int]' failed" in str(e.value)
    assert "kaboom" in str(e.value) and "traceback" not in str(e.value)
    assert e.value.keyspace == k and e.value.function == "boom" and e.value.arg_types == ["int"]
    started = time.monotonic()
    with pytest.raises(FunctionFailure, match="time limit exceeded"):
        s.execute(f"SELECT {k}.spin(v) FROM {k}.t WHERE pk = 1 AND ck = 0")
    assert time.monotonic() - started < 5
    with pytest.raises(FunctionFailure, match="cannot convert Lua string to int"):
        s.execute(f"SELECT {k}.bad(v) FROM {k}.t WHERE pk = 1 AND ck = 0")
    # The sandbox has no `os`.
    with pytest.raises(FunctionFailure):
        s.execute(f"SELECT {k}.escape(v) FROM {k}.t WHERE pk = 1 AND ck = 0")
    # The server keeps serving.
    assert s.execute(f"SELECT {k}.plus(v, 1) AS p FROM {k}.t WHERE pk = 1 AND ck = 1").one().p == 11


def test_schema_tables_driver_metadata_and_describe(s, udf_cluster, k):
    s.execute(f"CREATE AGGREGATE {k}.total(int) SFUNC plus STYPE int INITCOND 0")
    # SK: system_schema.functions and system_schema.aggregates.
    f = s.execute("SELECT * FROM system_schema.functions WHERE keyspace_name = %s", (k,)).one()
    assert (f.function_name, f.argument_types, f.argument_names) == ("plus", ["int", "int"], ["a", "b"])
    assert (f.return_type, f.language, f.called_on_null_input) == ("int", "lua", False)
    assert f.body == " return a + b "
    a = s.execute("SELECT * FROM system_schema.aggregates WHERE keyspace_name = %s", (k,)).one()
    assert (a.aggregate_name, a.argument_types, a.state_func, a.state_type) == ("total", ["int"], "plus", "int")
    assert (a.final_func, a.initcond, a.return_type) == (None, "0", "int")
    # The driver builds its metadata from those rows.
    udf_cluster.refresh_schema_metadata()
    meta = udf_cluster.metadata.keyspaces[k]
    assert list(meta.functions) == ["plus(int,int)"]
    assert list(meta.aggregates) == ["total(int)"]
    assert meta.functions["plus(int,int)"].body == " return a + b "
    assert meta.aggregates["total(int)"].initial_condition == "0"
    # DESCRIBE FUNCTION / AGGREGATE and in DESCRIBE KEYSPACE (cqlsh's server-side DESCRIBE).
    d = s.execute(f"DESCRIBE FUNCTION {k}.plus").one()
    assert (d.type, d.name) == ("function", "plus(int, int)")
    assert d.create_statement == (f"CREATE FUNCTION {k}.plus(a int, b int)\n"
                                  "    RETURNS NULL ON NULL INPUT\n    RETURNS int\n"
                                  "    LANGUAGE lua\n    AS $$ return a + b $$;")
    d = s.execute(f"DESCRIBE AGGREGATE {k}.total").one()
    assert d.create_statement == (f"CREATE AGGREGATE {k}.total(int)\n    SFUNC plus\n"
                                  "    STYPE int\n    INITCOND 0;")
    kinds = [r.type for r in s.execute(f"DESCRIBE KEYSPACE {k}")]
    assert kinds == ["keyspace", "function", "aggregate", "table"]


def test_cqlsh_describes_and_calls_functions(udf_server, s, k):
    # cqlsh 6's DESCRIBE FUNCTIONS/AGGREGATE(S) read the server's DESCRIBE rows
    # (DescribeStatement); results of calls print like any column.
    s.execute(f"CREATE AGGREGATE {k}.total(int) SFUNC plus STYPE int INITCOND 0")
    out = run_cqlsh(udf_server, "-e", f"DESCRIBE FUNCTIONS; DESCRIBE AGGREGATE {k}.total; "
                                      f"SELECT {k}.total(v) FROM {k}.t WHERE pk = 1;").stdout
    assert "plus(int, int)" in out
    assert f"CREATE AGGREGATE {k}.total(int)" in out and "INITCOND 0;" in out
    assert f"{k}.total(v)" in out and " 60" in out


def test_schema_change_events(udf_server, s, k):
    listener = cqlwire.connect_ready(udf_server.host, udf_server.port)
    try:
        assert listener.register(["SCHEMA_CHANGE"]).opcode == cqlwire.READY
        # Event: SCHEMA_CHANGE with target FUNCTION / AGGREGATE, keyspace and name.
        expected = [
            (f"CREATE FUNCTION {k}.twice(a int) CALLED ON NULL INPUT RETURNS int "
             "LANGUAGE lua AS 'return a * 2'", ("CREATED", "FUNCTION", k, "twice")),
            (f"CREATE OR REPLACE FUNCTION {k}.twice(a int) CALLED ON NULL INPUT RETURNS int "
             "LANGUAGE lua AS 'return 2 * a'", ("UPDATED", "FUNCTION", k, "twice")),
            (f"CREATE AGGREGATE {k}.total(int) SFUNC plus STYPE int INITCOND 0",
             ("CREATED", "AGGREGATE", k, "total")),
            (f"DROP AGGREGATE {k}.total(int)", ("DROPPED", "AGGREGATE", k, "total")),
            (f"DROP FUNCTION {k}.twice", ("DROPPED", "FUNCTION", k, "twice")),
        ]
        for stmt, want in expected:
            s.execute(stmt)
            ev, _ = listener.wait_event(
                lambda e, want=want: e == ("SCHEMA_CHANGE",) + want, timeout=5.0)
            assert ev is not None, f"no {want} after {stmt!r}"
    finally:
        listener.close()


def test_java_functions_enter_the_schema_only_when_allowed_and_fail_when_called(request, tmp_path):
    srv = start_with(request, tmp_path, "user_defined_functions_enabled = true\n"
                                        "user_defined_functions_java_schema = true\n")
    cluster = make_cluster(srv)
    try:
        s = cluster.connect()
        s.execute("CREATE KEYSPACE j WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE j.t (k int PRIMARY KEY, v int)")
        s.execute("INSERT INTO j.t (k, v) VALUES (1, 2)")
        s.execute("CREATE FUNCTION j.jf(a int) CALLED ON NULL INPUT RETURNS int "
                  "LANGUAGE java AS 'return a;'")
        with pytest.raises(FunctionFailure, match="ringdb runs only Lua functions"):
            s.execute("SELECT j.jf(v) FROM j.t WHERE k = 1")
    finally:
        cluster.shutdown()
        stop_and_check(srv)


def test_functions_and_aggregates_survive_a_restart(request, tmp_path):
    settings = "user_defined_functions_enabled = true\n"
    srv = start_with(request, tmp_path, settings)
    cluster = make_cluster(srv)
    try:
        s = cluster.connect()
        s.execute("CREATE KEYSPACE r WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE r.t (k int, c int, v int, PRIMARY KEY (k, c))")
        for i in range(3):
            s.execute(f"INSERT INTO r.t (k, c, v) VALUES (1, {i}, {i + 1})")
        s.execute(FUNC.format(ks="r", lang="lua"))
        s.execute("CREATE AGGREGATE r.total(int) SFUNC plus STYPE int INITCOND 0")
    finally:
        cluster.shutdown()
        stop_and_check(srv)
    srv = start_with(request, tmp_path, settings, data=tmp_path / "data")
    cluster = make_cluster(srv)
    try:
        s = cluster.connect()
        row = s.execute("SELECT r.total(v) AS t, count(*) AS n FROM r.t WHERE k = 1").one()
        assert (row.t, row.n) == (6, 3)
        assert s.execute("SELECT r.plus(v, 10) AS p FROM r.t WHERE k = 1 AND c = 0").one().p == 11
    finally:
        cluster.shutdown()
        stop_and_check(srv)
