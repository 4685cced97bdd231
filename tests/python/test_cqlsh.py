"""cqlsh 6.2.2 (from PyPI, in the repo's .venv) against ringdb.

cqlsh >= 6 sends DESCRIBE to the server and has no client-side fallback, so these tests exercise
ringdb's server-side DESCRIBE and the validity of the CQL it prints.
"""

from __future__ import annotations

import re

import pytest

from conftest import RingServer, make_cluster, new_server, run_cqlsh, stop_and_check

SYSTEM_KEYSPACES = {"system", "system_schema", "system_auth", "system_distributed", "system_traces",
                    "system_views", "system_virtual_schema"}

SCHEMA = [
    "CREATE KEYSPACE shop WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE KEYSPACE \"MixedKs\" WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 2} "
    "AND durable_writes = false",
    "CREATE TYPE shop.addr (street text, zip int, tags frozen<set<text>>)",
    "CREATE TYPE shop.customer (name text, home frozen<addr>, \"Phones\" list<text>)",
    """CREATE TABLE shop.orders (
         customer_id uuid, day date, seq timeuuid, total decimal, note text,
         status text STATIC, items map<text, int>, ship frozen<addr>, who frozen<customer>,
         loc tuple<double, double>, dur duration, PRIMARY KEY (customer_id, day, seq)
       ) WITH CLUSTERING ORDER BY (day DESC, seq ASC) AND comment = 'orders by day'
         AND default_time_to_live = 86400 AND gc_grace_seconds = 3600""",
    "CREATE TABLE shop.by_region (region text, shard int, ts timestamp, v blob, PRIMARY KEY ((region, shard), ts))",
    "CREATE TABLE shop.hits (page text PRIMARY KEY, n counter)",
    "CREATE TABLE shop.alltypes (k int PRIMARY KEY, a ascii, b bigint, bl blob, bo boolean, d date, de decimal, "
    "do double, f float, i inet, sm smallint, ti time, ts timestamp, tt tinyint, u uuid, vc varchar, "
    "vi varint, l list<frozen<list<int>>>, s set<inet>, fm frozen<map<int, text>>)",
    "CREATE TABLE \"MixedKs\".\"QuotedTable\" (\"Key\" int, \"select\" text, v int, PRIMARY KEY (\"Key\", \"select\"))",
]


@pytest.fixture(scope="module")
def schema_server(server):
    c = make_cluster(server)
    try:
        s = c.connect()
        for stmt in SCHEMA:
            s.execute(stmt)
    finally:
        c.shutdown()
    return server


def user_schema_export(srv: RingServer) -> dict:
    c = make_cluster(srv)
    try:
        c.connect()
        return {n: k.export_as_string() for n, k in c.metadata.keyspaces.items() if n not in SYSTEM_KEYSPACES}
    finally:
        c.shutdown()


def test_cqlsh_connects_and_show_version(schema_server):
    out = run_cqlsh(schema_server, "-e", "SHOW VERSION").stdout
    assert "Native protocol v4" in out, out
    m = re.search(r"\[cqlsh (\S+) \| Cassandra (\S+) \| CQL spec (\S+) \| Native protocol v(\d+)\]", out)
    assert m, out
    assert m.group(2).startswith("4.")


def test_describe_keyspaces(schema_server):
    out = strip_cqlsh_warnings(run_cqlsh(schema_server, "-e", "DESCRIBE KEYSPACES").stdout)
    names = set(out.split())
    assert {"shop", '"MixedKs"', "system", "system_schema"} <= names, out


def test_describe_tables_and_types(schema_server):
    out = run_cqlsh(schema_server, "-e", "USE shop; DESCRIBE TABLES").stdout
    assert {"orders", "by_region", "hits", "alltypes"} <= set(out.split()), out
    out = run_cqlsh(schema_server, "-e", "DESCRIBE TYPES").stdout
    assert {"addr", "customer"} <= set(out.split()), out


def test_describe_table(schema_server):
    out = run_cqlsh(schema_server, "-e", "DESCRIBE TABLE shop.orders").stdout
    flat = " ".join(out.split())
    assert "CREATE TABLE shop.orders (" in flat, out
    for col in ["customer_id uuid", "day date", "seq timeuuid", "total decimal", "note text",
                "status text static", "items map<text, int>", "ship frozen<addr>", "who frozen<customer>",
                "loc frozen<tuple<double, double>>", "dur duration"]:
        assert col in flat, f"{col!r} not in DESCRIBE output:\n{out}"
    assert "PRIMARY KEY (customer_id, day, seq)" in flat, out
    assert "CLUSTERING ORDER BY (day DESC, seq ASC)" in flat, out
    assert "comment = 'orders by day'" in flat, out
    assert "default_time_to_live = 86400" in flat, out
    assert "gc_grace_seconds = 3600" in flat, out
    out = run_cqlsh(schema_server, "-e", "DESCRIBE TABLE shop.by_region").stdout
    assert "PRIMARY KEY ((region, shard), ts)" in " ".join(out.split()), out
    out = run_cqlsh(schema_server, "-e", 'DESCRIBE TABLE "MixedKs"."QuotedTable"').stdout
    flat = " ".join(out.split())
    assert 'CREATE TABLE "MixedKs"."QuotedTable" (' in flat, out
    assert 'PRIMARY KEY ("Key", "select")' in flat, out


def test_describe_keyspace_and_type(schema_server):
    out = run_cqlsh(schema_server, "-e", "DESCRIBE KEYSPACE shop").stdout
    flat = " ".join(out.split())
    assert "CREATE KEYSPACE shop WITH replication = {'class': 'org.apache.cassandra.locator.SimpleStrategy', " \
           "'replication_factor': '1'}" in flat or \
           "CREATE KEYSPACE shop WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'}" in flat, out
    # a type is printed before the objects that use it
    assert flat.index("CREATE TYPE shop.addr") < flat.index("CREATE TYPE shop.customer") < flat.index(
        "CREATE TABLE shop.orders"), out
    out = run_cqlsh(schema_server, "-e", "DESCRIBE TYPE shop.customer").stdout
    flat = " ".join(out.split())
    assert "CREATE TYPE shop.customer (" in flat and "home frozen<addr>" in flat and '"Phones" list<text>' in flat, out


def flat_out(srv, cmd):
    return " ".join(strip_cqlsh_warnings(run_cqlsh(srv, "-e", cmd).stdout).split())


def test_describe_abbreviation_and_bare_name(schema_server):
    out = flat_out(schema_server, "DESC shop.by_region")  # an element named without its kind
    assert "CREATE TABLE shop.by_region (" in out, out
    out = flat_out(schema_server, "DESC TABLE shop.by_region")
    assert "CREATE TABLE shop.by_region (" in out, out


def test_describe_quoted_keyspace(schema_server):
    out = flat_out(schema_server, 'DESCRIBE KEYSPACE "MixedKs"')
    assert 'CREATE KEYSPACE "MixedKs" WITH replication = {' in out and "'datacenter1': '2'" in out, out
    assert "durable_writes = false" in out, out
    assert 'CREATE TABLE "MixedKs"."QuotedTable" (' in out, out


def test_describe_only_keyspace(schema_server):
    out = flat_out(schema_server, "DESCRIBE ONLY KEYSPACE shop")
    assert "CREATE KEYSPACE shop" in out and "CREATE TABLE" not in out and "CREATE TYPE" not in out, out


def test_describe_with_internals(schema_server):
    out = flat_out(schema_server, "DESCRIBE TABLE shop.hits WITH INTERNALS")
    table_id = schema_server_table_id(schema_server, "shop", "hits")
    # Cassandra 4: WITH INTERNALS adds the table id (WITH ID = <uuid>) so a restore keeps it
    assert str(table_id) in out, out


def test_describe_full_schema(schema_server):
    out = flat_out(schema_server, "DESCRIBE FULL SCHEMA")
    assert "CREATE KEYSPACE system_schema" in out or "CREATE KEYSPACE system " in out, out[:2000]
    assert "CREATE TABLE shop.orders" in out
    out = flat_out(schema_server, "DESCRIBE SCHEMA")
    assert "CREATE KEYSPACE system_schema" not in out and "CREATE TABLE system.local" not in out


def schema_server_table_id(srv, ks, table):
    c = make_cluster(srv)
    try:
        s = c.connect()
        return s.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
                         (ks, table)).one().id
    finally:
        c.shutdown()


def test_cqlsh_select_output(schema_server):
    out = run_cqlsh(schema_server, "-e", "SELECT key, data_center, tokens FROM system.local").stdout
    assert re.search(r"^\s*key\s*\|\s*data_center\s*\|\s*tokens\s*$", out, re.M), out
    assert re.search(r"^\s*local\s*\|\s*datacenter1\s*\|\s*\{'-?\d+'", out, re.M), out
    assert "(1 rows)" in out, out
    out = run_cqlsh(schema_server, "-e", "SELECT keyspace_name, durable_writes FROM system_schema.keyspaces "
                    "WHERE keyspace_name = 'MixedKs'").stdout
    assert re.search(r"MixedKs\s*\|\s*False", out), out


def test_cqlsh_script_from_stdin(schema_server, tmp_path):
    script = ("CREATE KEYSPACE from_stdin WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};\n"
              "USE from_stdin;\nCREATE TABLE t (k int PRIMARY KEY, v text);\nDESCRIBE TABLES;\n")
    import subprocess
    env_home = tmp_path / "home"
    env_home.mkdir()
    import os
    from conftest import cqlsh_path
    proc = subprocess.run([str(cqlsh_path()), schema_server.host, str(schema_server.port)], input=script,
                          capture_output=True, text=True, timeout=90, env={**os.environ, "HOME": str(env_home)})
    assert proc.returncode == 0, proc.stderr
    assert "t" in proc.stdout.split(), proc.stdout
    run_cqlsh(schema_server, "-e", "DROP KEYSPACE from_stdin")


def test_describe_cluster(schema_server):
    out = run_cqlsh(schema_server, "-e", "DESCRIBE CLUSTER").stdout
    assert "Murmur3Partitioner" in out, out


def test_cqlsh_reports_errors(schema_server):
    p = run_cqlsh(schema_server, "-e", "SELECT * FROM shop.no_such_table", check=False)
    assert p.returncode != 0
    assert "InvalidRequest" in p.stderr or "unconfigured table" in p.stderr.lower() or "Invalid" in p.stderr, p.stderr
    p = run_cqlsh(schema_server, "-e", "DESCRIBE TABLE shop.no_such_table", check=False)
    assert p.returncode != 0, p.stdout


def strip_cqlsh_warnings(out: str) -> str:
    """cqlsh prints a version-mismatch WARNING on stdout (it does so against Cassandra 4.1 too)."""
    return "\n".join(ln for ln in out.splitlines() if not ln.startswith("WARNING: cqlsh was built against"))


def normalise_describe(out: str) -> str:
    lines = [ln.rstrip() for ln in out.splitlines()]
    return "\n".join(ln for ln in lines if ln.strip())


def test_describe_schema_recreates_same_schema_on_fresh_server(schema_server, tmp_path):
    described = strip_cqlsh_warnings(run_cqlsh(schema_server, "-e", "DESCRIBE SCHEMA").stdout)
    assert "CREATE KEYSPACE shop" in described
    assert "CREATE TABLE shop.orders" in described
    assert "CREATE KEYSPACE system" not in described.replace("CREATE KEYSPACE system_", "")
    schema_file = tmp_path / "schema.cql"
    schema_file.write_text(described)

    fresh = new_server(tmp_path, owner=schema_server.owner, name="fresh").start()
    try:
        run_cqlsh(fresh, "-f", str(schema_file))
        described_again = strip_cqlsh_warnings(run_cqlsh(fresh, "-e", "DESCRIBE SCHEMA").stdout)
        assert normalise_describe(described_again) == normalise_describe(described)
        # and the python driver sees the same schema on both servers
        assert user_schema_export(fresh) == user_schema_export(schema_server)
    finally:
        stop_and_check(fresh)
