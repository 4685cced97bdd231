"""User-defined functions and aggregates, as far as ringdb has them: the statements parse, are
refused while `user_defined_functions_enabled` is off with Cassandra's message, are checked
against the keyspace and language when it is on, and the setting shows in
`system_views.settings`. ringdb does not yet store or run function bodies.
"""

from __future__ import annotations

import pytest
from cassandra import InvalidRequest

from conftest import RingServer, fresh_name, make_cluster, stop_and_check

# Cassandra 5.0 UDFunction.create (reached from CreateFunctionStatement) and
# CreateAggregateStatement: the refusal while UDFs are off names the 5.0 setting.
DISABLED = ("User-defined functions are disabled in cassandra.yaml - set "
            "user_defined_functions_enabled=true to enable")

FUNC = ("CREATE FUNCTION {ks}.plus(a int, b int) RETURNS NULL ON NULL INPUT "
        "RETURNS int LANGUAGE {lang} AS $$ return a + b $$")


@pytest.fixture(scope="module")
def ks(session):
    name = fresh_name("udf")
    session.execute(f"CREATE KEYSPACE {name} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    yield name
    session.execute(f"DROP KEYSPACE {name}")


def start_with(request, tmp_path, settings: str) -> RingServer:
    cfg = tmp_path / "ringdb.toml"
    cfg.write_text(settings)
    return RingServer(tmp_path / "data", tmp_path / "stderr.log", request.node.nodeid,
                      extra_args=("--config", str(cfg), "--metrics-listen", "")).start()


def test_create_function_is_refused_while_udfs_are_disabled(session, ks):
    # Default off, as Cassandra's user_defined_functions_enabled (cassandra.yaml).
    with pytest.raises(InvalidRequest, match="User-defined functions are disabled"):
        session.execute(FUNC.format(ks=ks, lang="lua"))
    try:
        session.execute(FUNC.format(ks=ks, lang="lua"))
    except InvalidRequest as e:
        assert DISABLED in str(e)


def test_create_aggregate_is_refused_while_udfs_are_disabled(session, ks):
    with pytest.raises(InvalidRequest, match="User-defined functions are disabled"):
        session.execute(f"CREATE AGGREGATE {ks}.total(int) SFUNC plus STYPE int INITCOND 0")


def test_drop_function_if_exists_of_a_missing_function_succeeds(session, ks):
    # Cassandra's DropFunctionStatement: IF EXISTS on a missing function is no change.
    session.execute(f"DROP FUNCTION IF EXISTS {ks}.nothing")
    session.execute(f"DROP AGGREGATE IF EXISTS {ks}.nothing(int)")


def test_drop_of_a_missing_function_is_invalid(session, ks):
    # Cassandra's DropFunctionStatement: "Function '%s' doesn't exist" without IF EXISTS.
    with pytest.raises(InvalidRequest, match="doesn't exist"):
        session.execute(f"DROP FUNCTION {ks}.nothing")
    with pytest.raises(InvalidRequest, match="doesn't exist"):
        session.execute(f"DROP AGGREGATE {ks}.nothing")


def test_a_malformed_create_function_is_a_syntax_error(session, ks):
    # Parser.g createFunctionStatement requires the ON NULL INPUT clause.
    from cassandra.protocol import SyntaxException
    with pytest.raises(SyntaxException):
        session.execute(f"CREATE FUNCTION {ks}.f(a int) RETURNS int LANGUAGE lua AS 'return a'")


def test_enabled_udfs_check_keyspace_and_language(request, tmp_path):
    srv = start_with(request, tmp_path, "user_defined_functions_enabled = true\n")
    cluster = make_cluster(srv)
    try:
        s = cluster.connect()
        rows = {r.name: r.value for r in s.execute("SELECT name, value FROM system_views.settings")}
        assert rows.get("user_defined_functions_enabled") == "true"
        assert rows.get("user_defined_functions_java_schema") == "false"
        # A missing keyspace: Cassandra's "Keyspace '%s' doesn't exist".
        with pytest.raises(InvalidRequest, match="Keyspace 'nope' doesn't exist"):
            s.execute(FUNC.format(ks="nope", lang="lua"))
        s.execute("CREATE KEYSPACE k1 WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        # Java is not run by ringdb: refused unless user_defined_functions_java_schema is set,
        # with the message Cassandra 3.x-4.0 UDFunction gives a language it has no engine for
        # ("Invalid language '%s' for function '%s'").
        with pytest.raises(InvalidRequest, match="Invalid language 'java'"):
            s.execute(FUNC.format(ks="k1", lang="java"))
        # Past every check, the statement is still refused (bodies are not stored yet), but no
        # longer as disabled.
        with pytest.raises(InvalidRequest) as e:
            s.execute(FUNC.format(ks="k1", lang="lua"))
        assert "disabled" not in str(e.value)
    finally:
        cluster.shutdown()
        stop_and_check(srv)
