"""Schema DDL as seen through the python driver's cluster.metadata (python-driver 3.30.1).

Every assertion compares the driver's view with the statement the test itself sent.
"""

from __future__ import annotations

import time

import pytest
from cassandra import AlreadyExists, InvalidRequest
from cassandra.protocol import ConfigurationException, SyntaxException

from conftest import fresh_name

SIMPLE1 = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


def norm(t: str) -> str:
    """Normalise a CQL type string for comparison (spacing and case only)."""
    return "".join(t.split()).lower()


def table_meta(cluster, ks, t):
    ksm = cluster.metadata.keyspaces.get(ks)
    assert ksm is not None, f"keyspace {ks} missing from driver metadata"
    tm = ksm.tables.get(t)
    assert tm is not None, f"table {ks}.{t} missing from driver metadata; tables: {sorted(ksm.tables)}"
    return tm


def assert_alive(session):
    assert session.execute("SELECT release_version FROM system.local").one() is not None


def replication_row(session, ks):
    row = session.execute(
        "SELECT replication, durable_writes FROM system_schema.keyspaces WHERE keyspace_name = %s", (ks,)).one()
    assert row is not None, f"no system_schema.keyspaces row for {ks}"
    return row


# ---------------------------------------------------------------- keyspaces

def test_simple_and_nts_keyspaces(cluster, session):
    simple = fresh_name("simple")
    nts = fresh_name("nts")
    session.execute(f"CREATE KEYSPACE {simple} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 3}}")
    # a datacenter the node does not know is refused, as Cassandra refuses it
    with pytest.raises(ConfigurationException) as ei:
        session.execute(f"CREATE KEYSPACE {nts} WITH replication = "
                        "{'class': 'NetworkTopologyStrategy', 'datacenter1': 2, 'dc2': '1'}")
    assert f"Unrecognized strategy option {{dc2}} passed to NetworkTopologyStrategy for keyspace {nts}" in str(ei.value)
    session.execute(f"CREATE KEYSPACE {nts} WITH replication = "
                    "{'class': 'NetworkTopologyStrategy', 'datacenter1': 2} AND durable_writes = false")
    s = cluster.metadata.keyspaces[simple]
    assert type(s.replication_strategy).__name__ == "SimpleStrategy"
    assert s.replication_strategy.replication_factor == 3
    assert s.durable_writes is True
    n = cluster.metadata.keyspaces[nts]
    assert type(n.replication_strategy).__name__ == "NetworkTopologyStrategy"
    assert {k: int(v) for k, v in n.replication_strategy.dc_replication_factors.items()} == {"datacenter1": 2}
    assert n.durable_writes is False
    # Cassandra stores the fully-qualified class names (Spark and others compare them)
    r = replication_row(session, simple)
    assert r.replication == {"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "3"}
    r = replication_row(session, nts)
    assert r.replication == {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy",
                             "datacenter1": "2"}
    assert r.durable_writes is False
    # and the system keyspaces are listed too
    for sys_ks in ("system", "system_schema"):
        assert sys_ks in cluster.metadata.keyspaces
    session.execute(f"DROP KEYSPACE {simple}")
    session.execute(f"DROP KEYSPACE {nts}")


def test_alter_keyspace(cluster, session, ks):
    session.execute(f"ALTER KEYSPACE {ks} WITH replication = "
                    "{'class': 'NetworkTopologyStrategy', 'datacenter1': 3} AND durable_writes = false")
    m = cluster.metadata.keyspaces[ks]
    assert type(m.replication_strategy).__name__ == "NetworkTopologyStrategy"
    assert {k: int(v) for k, v in m.replication_strategy.dc_replication_factors.items()} == {"datacenter1": 3}
    assert m.durable_writes is False
    session.execute(f"ALTER KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 2}}")
    m = cluster.metadata.keyspaces[ks]
    assert type(m.replication_strategy).__name__ == "SimpleStrategy"
    assert m.replication_strategy.replication_factor == 2
    # durable_writes was not mentioned: it keeps its value
    assert m.durable_writes is False


def test_keyspace_errors(session, ks):
    with pytest.raises(AlreadyExists) as ei:
        session.execute(f"CREATE KEYSPACE {ks} WITH replication = {SIMPLE1}")
    assert ei.value.keyspace == ks
    assert not ei.value.table
    # IF NOT EXISTS: no error, and the existing keyspace is not overwritten
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    assert replication_row(session, ks).replication["replication_factor"] == "1"
    missing = fresh_name("missing")
    with pytest.raises((InvalidRequest, ConfigurationException)):
        session.execute(f"DROP KEYSPACE {missing}")
    session.execute(f"DROP KEYSPACE IF EXISTS {missing}")
    with pytest.raises((InvalidRequest, ConfigurationException)):
        session.execute(f"ALTER KEYSPACE {missing} WITH replication = {SIMPLE1}")
    with pytest.raises((ConfigurationException, InvalidRequest)):
        session.execute(f"CREATE KEYSPACE {fresh_name('bad')} WITH replication = {{'class': 'NoSuchStrategy'}}")
    with pytest.raises((ConfigurationException, InvalidRequest)):
        session.execute(f"CREATE KEYSPACE {fresh_name('bad')} WITH replication = {{'class': 'SimpleStrategy'}}")
    with pytest.raises((ConfigurationException, InvalidRequest, SyntaxException)):
        session.execute(f"CREATE KEYSPACE {fresh_name('bad')}")
    assert_alive(session)


def test_drop_keyspace_drops_its_tables(cluster, session):
    name = fresh_name("dropme")
    session.execute(f"CREATE KEYSPACE {name} WITH replication = {SIMPLE1}")
    session.execute(f"CREATE TABLE {name}.t (k int PRIMARY KEY)")
    session.execute(f"CREATE TYPE {name}.u (a int)")
    session.execute(f"DROP KEYSPACE {name}")
    assert name not in cluster.metadata.keyspaces
    rows = list(session.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (name,)))
    assert rows == []
    rows = list(session.execute("SELECT type_name FROM system_schema.types WHERE keyspace_name = %s", (name,)))
    assert rows == []
    with pytest.raises(InvalidRequest):
        session.execute(f"SELECT * FROM {name}.t")
    # recreate with the same name: it is empty
    session.execute(f"CREATE KEYSPACE {name} WITH replication = {SIMPLE1}")
    assert cluster.metadata.keyspaces[name].tables == {}
    session.execute(f"DROP KEYSPACE {name}")


# ---------------------------------------------------------------- tables and types

ALL_NATIVE = ["ascii", "bigint", "blob", "boolean", "date", "decimal", "double", "duration", "float",
              "inet", "int", "smallint", "text", "time", "timestamp", "timeuuid", "tinyint", "uuid",
              "varchar", "varint"]


def test_every_cql_type(cluster, session, ks):
    session.execute(f"CREATE TYPE {ks}.addr (street text, zip int, tags set<text>)")
    cols = {f"c_{t}": t for t in ALL_NATIVE}
    cols.update({
        "c_list": "list<int>",
        "c_set": "set<text>",
        "c_map": "map<text, bigint>",
        "c_flist": "frozen<list<int>>",
        "c_fset": "frozen<set<uuid>>",
        "c_fmap": "frozen<map<int, text>>",
        "c_nested": "map<text, frozen<list<int>>>",
        "c_list_of_sets": "list<frozen<set<inet>>>",
        "c_tuple": "tuple<int, text, double>",
        "c_ftuple": "frozen<tuple<int, frozen<list<text>>>>",
        "c_udt": "frozen<addr>",
        "c_udt_nf": "addr",
        "c_list_udt": "list<frozen<addr>>",
    })
    body = ", ".join(f"{n} {t}" for n, t in cols.items())
    session.execute(f"CREATE TABLE {ks}.alltypes (k int PRIMARY KEY, {body})")
    session.execute(f"CREATE TABLE {ks}.counters (k text, c int, hits counter, misses counter, PRIMARY KEY (k, c))")

    tm = table_meta(cluster, ks, "alltypes")
    assert set(tm.columns) == {"k", *cols}
    # what Cassandra stores: varchar is text, tuples are always frozen
    expect = dict(cols)
    expect["c_varchar"] = "text"
    expect["c_tuple"] = "frozen<tuple<int, text, double>>"
    for name, want in expect.items():
        got = tm.columns[name].cql_type
        if name in ("c_tuple", "c_ftuple"):
            assert norm(got) in (norm(want), norm(want.removeprefix("frozen<")[:-1])), (name, got)
        else:
            assert norm(got) == norm(want), f"{name}: created as {want!r}, driver sees {got!r}"
    assert [c.name for c in tm.partition_key] == ["k"]
    assert tm.clustering_key == []

    ct = table_meta(cluster, ks, "counters")
    assert ct.columns["hits"].cql_type == "counter"
    assert ct.columns["misses"].cql_type == "counter"
    assert [c.name for c in ct.clustering_key] == ["c"]

    ut = cluster.metadata.keyspaces[ks].user_types["addr"]
    assert ut.field_names == ["street", "zip", "tags"]
    assert [norm(t) for t in ut.field_types] == ["text", "int", "set<text>"]

    # the python driver can render every column back as CQL
    cql = tm.export_as_string()
    for name in cols:
        assert name in cql


def test_type_strings_in_system_schema(session, ks):
    """system_schema.columns.type uses Cassandra's spelling (rust's parser depends on it)."""
    session.execute(f"CREATE TABLE {ks}.spell (k int PRIMARY KEY, a varchar, b map<varchar, frozen<list<int>>>, "
                    "c tuple<int, varchar>)")
    rows = {r.column_name: r for r in session.execute(
        "SELECT column_name, type, kind, position, clustering_order FROM system_schema.columns "
        "WHERE keyspace_name = %s AND table_name = %s", (ks, "spell"))}
    assert rows["a"].type == "text"
    assert rows["b"].type == "map<text, frozen<list<int>>>"
    assert rows["c"].type == "frozen<tuple<int, text>>"
    assert (rows["k"].kind, rows["k"].position, rows["k"].clustering_order) == ("partition_key", 0, "none")
    assert (rows["a"].kind, rows["a"].position, rows["a"].clustering_order) == ("regular", -1, "none")


def test_compound_key_static_clustering_order_and_options(cluster, session, ks):
    session.execute(f"""
        CREATE TABLE {ks}.events (
            pk int, c1 text, c2 timeuuid, s int STATIC, v text, w list<int>,
            PRIMARY KEY (pk, c1, c2)
        ) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)
          AND comment = 'events by day'
          AND default_time_to_live = 3600
          AND gc_grace_seconds = 7200""")
    tm = table_meta(cluster, ks, "events")
    assert [c.name for c in tm.partition_key] == ["pk"]
    assert [c.name for c in tm.clustering_key] == ["c1", "c2"]
    assert [c.is_reversed for c in tm.clustering_key] == [True, False]
    assert tm.columns["s"].is_static is True
    assert tm.columns["v"].is_static is False
    assert tm.columns["c2"].cql_type == "timeuuid"  # a DESC/ASC column keeps its base type
    assert tm.columns["c1"].cql_type == "text"
    assert tm.options["comment"] == "events by day"
    assert tm.options["default_time_to_live"] == 3600
    assert tm.options["gc_grace_seconds"] == 7200
    cql = tm.export_as_string()
    assert "CLUSTERING ORDER BY (c1 DESC, c2 ASC)" in cql
    assert "PRIMARY KEY (pk, c1, c2)" in cql


def test_system_schema_columns_rows(session, ks):
    session.execute(f"CREATE TABLE {ks}.rows_check (p1 int, p2 text, c1 int, c2 text, s int STATIC, v blob, "
                    "PRIMARY KEY ((p1, p2), c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)")
    rows = {r.column_name: (r.kind, r.position, r.clustering_order, r.type, r.column_name_bytes) for r in session.execute(
        "SELECT * FROM system_schema.columns WHERE keyspace_name = %s AND table_name = %s", (ks, "rows_check"))}
    assert rows == {
        "p1": ("partition_key", 0, "none", "int", b"p1"),
        "p2": ("partition_key", 1, "none", "text", b"p2"),
        "c1": ("clustering", 0, "desc", "int", b"c1"),
        "c2": ("clustering", 1, "asc", "text", b"c2"),
        "s": ("static", -1, "none", "int", b"s"),
        "v": ("regular", -1, "none", "blob", b"v"),
    }


def test_system_keyspaces_are_not_modifiable(cluster, session):
    from cassandra import Unauthorized
    for stmt in ["DROP KEYSPACE system", "DROP KEYSPACE system_schema",
                 "CREATE TABLE system.mine (k int PRIMARY KEY)", "DROP TABLE system.local",
                 "ALTER TABLE system_schema.tables ADD x int", "TRUNCATE system.local",
                 "ALTER KEYSPACE system WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"]:
        with pytest.raises((Unauthorized, InvalidRequest, ConfigurationException)):
            session.execute(stmt)
    assert session.execute("SELECT host_id FROM system.local").one().host_id is not None
    assert "local" in cluster.metadata.keyspaces["system"].tables
    assert "tables" in cluster.metadata.keyspaces["system_schema"].tables


def test_concurrent_ddl(server, cluster, session, ks):
    """Schema changes from many connections at once: none lost, exactly one winner per name."""
    from concurrent.futures import ThreadPoolExecutor
    from conftest import make_cluster
    clusters = [make_cluster(server) for _ in range(4)]
    try:
        sessions = [c.connect() for c in clusters]

        def create_many(i):
            for j in range(8):
                sessions[i].execute(f"CREATE TABLE {ks}.conc_{i}_{j} (k int PRIMARY KEY, v{i} text)")

        def create_same(i):
            try:
                sessions[i].execute(f"CREATE TABLE {ks}.contended (k int PRIMARY KEY, from_{i} int)")
                return "created"
            except AlreadyExists:
                return "exists"

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(create_many, range(4)))
            outcomes = list(pool.map(create_same, range(4)))
    finally:
        for c in clusters:
            c.shutdown()
    assert sorted(outcomes) == ["created", "exists", "exists", "exists"], outcomes
    cluster.refresh_schema_metadata()
    tables = cluster.metadata.keyspaces[ks].tables
    for i in range(4):
        for j in range(8):
            assert f"conc_{i}_{j}" in tables, f"conc_{i}_{j} lost"
            assert f"v{i}" in tables[f"conc_{i}_{j}"].columns
    winner = [n for n in tables["contended"].columns if n.startswith("from_")]
    assert len(winner) == 1, tables["contended"].columns


def test_default_table_options(cluster, session, ks):
    session.execute(f"CREATE TABLE {ks}.plain (k int PRIMARY KEY, v text)")
    tm = table_meta(cluster, ks, "plain")
    # Cassandra's defaults
    assert tm.options["comment"] == ""
    assert tm.options["default_time_to_live"] == 0
    assert tm.options["gc_grace_seconds"] == 864000
    assert tm.options["compaction"]["class"].endswith("SizeTieredCompactionStrategy")
    row = session.execute("SELECT flags, id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
                          (ks, "plain")).one()
    assert row.flags == {"compound"}
    assert row.id is not None


def test_more_table_options_echoed(cluster, session, ks):
    session.execute(f"""CREATE TABLE {ks}.opts (k int PRIMARY KEY, v text) WITH
        compaction = {{'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '160'}}
        AND caching = {{'keys': 'NONE', 'rows_per_partition': '10'}}
        AND bloom_filter_fp_chance = 0.05 AND speculative_retry = '99p'""")
    tm = table_meta(cluster, ks, "opts")
    assert tm.options["compaction"]["class"].endswith("LeveledCompactionStrategy")
    assert tm.options["compaction"]["sstable_size_in_mb"] == "160"
    assert tm.options["caching"] == {"keys": "NONE", "rows_per_partition": "10"}
    assert tm.options["bloom_filter_fp_chance"] == pytest.approx(0.05)
    assert tm.options["speculative_retry"] == "99p"


def test_composite_partition_key_in_key_order(cluster, session, ks):
    # columns declared in an order different from the key order
    session.execute(f"CREATE TABLE {ks}.comp (v text, c2 int, p2 int, c1 bigint, p1 text, "
                    "PRIMARY KEY ((p1, p2), c1, c2)) WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC)")
    tm = table_meta(cluster, ks, "comp")
    assert [c.name for c in tm.partition_key] == ["p1", "p2"]
    assert [c.cql_type for c in tm.partition_key] == ["text", "int"]
    assert [c.name for c in tm.clustering_key] == ["c1", "c2"]
    assert [c.is_reversed for c in tm.clustering_key] == [False, True]
    assert "PRIMARY KEY ((p1, p2), c1, c2)" in tm.export_as_string()
    # only a partition key, no clustering
    session.execute(f"CREATE TABLE {ks}.comp2 (a int, b int, v int, PRIMARY KEY ((a, b)))")
    tm = table_meta(cluster, ks, "comp2")
    assert [c.name for c in tm.partition_key] == ["a", "b"]
    assert tm.clustering_key == []


def test_identifier_case(cluster, session, ks):
    session.execute(f'CREATE TABLE {ks}.MyTable ("MixedCase" int PRIMARY KEY, Lower text, "select" text)')
    ksm = cluster.metadata.keyspaces[ks]
    assert "mytable" in ksm.tables and "MyTable" not in ksm.tables
    tm = ksm.tables["mytable"]
    assert set(tm.columns) == {"MixedCase", "lower", "select"}
    session.execute(f'CREATE TABLE {ks}."Quoted" (k int PRIMARY KEY)')
    assert "Quoted" in cluster.metadata.keyspaces[ks].tables
    with pytest.raises(InvalidRequest):
        session.execute(f"SELECT * FROM {ks}.quoted")


def test_table_already_exists_and_if_not_exists(cluster, session, ks):
    session.execute(f"CREATE TABLE {ks}.dup (k int PRIMARY KEY, v text)")
    with pytest.raises(AlreadyExists) as ei:
        session.execute(f"CREATE TABLE {ks}.dup (k int PRIMARY KEY, v text)")
    assert ei.value.keyspace == ks
    assert ei.value.table == "dup"
    # IF NOT EXISTS is silent and does not replace the existing definition
    session.execute(f"CREATE TABLE IF NOT EXISTS {ks}.dup (other int PRIMARY KEY)")
    assert set(table_meta(cluster, ks, "dup").columns) == {"k", "v"}
    session.execute(f"DROP TABLE IF EXISTS {ks}.never_created")
    with pytest.raises(InvalidRequest):
        session.execute(f"DROP TABLE {ks}.never_created")
    assert_alive(session)


def test_drop_table_and_recreate(cluster, session, ks):
    session.execute(f"CREATE TABLE {ks}.d (k int PRIMARY KEY, old_col text)")
    session.execute(f"DROP TABLE {ks}.d")
    assert "d" not in cluster.metadata.keyspaces[ks].tables
    with pytest.raises(InvalidRequest):
        session.execute(f"SELECT * FROM {ks}.d")
    rows = list(session.execute("SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s "
                                "AND table_name = %s", (ks, "d")))
    assert rows == []
    session.execute(f"CREATE TABLE {ks}.d (k text, c int, new_col blob, PRIMARY KEY (k, c))")
    tm = table_meta(cluster, ks, "d")
    assert set(tm.columns) == {"k", "c", "new_col"}
    assert tm.partition_key[0].cql_type == "text"


def test_alter_table_add_drop_rename_with(cluster, session, ks):
    session.execute(f"CREATE TABLE {ks}.alt (k int, c int, v text, PRIMARY KEY (k, c))")
    session.execute(f"ALTER TABLE {ks}.alt ADD extra map<text, int>")
    assert table_meta(cluster, ks, "alt").columns["extra"].cql_type.replace(" ", "") == "map<text,int>"
    session.execute(f"ALTER TABLE {ks}.alt ADD (a1 int, a2 set<text>)")
    tm = table_meta(cluster, ks, "alt")
    assert {"a1", "a2"} <= set(tm.columns)
    session.execute(f"ALTER TABLE {ks}.alt DROP v")
    assert "v" not in table_meta(cluster, ks, "alt").columns
    session.execute(f"ALTER TABLE {ks}.alt RENAME c TO c_renamed")
    tm = table_meta(cluster, ks, "alt")
    assert [c.name for c in tm.clustering_key] == ["c_renamed"]
    assert "c" not in tm.columns
    session.execute(f"ALTER TABLE {ks}.alt WITH comment = 'altered' AND gc_grace_seconds = 60")
    tm = table_meta(cluster, ks, "alt")
    assert tm.options["comment"] == "altered"
    assert tm.options["gc_grace_seconds"] == 60
    # Cassandra's rules
    with pytest.raises(InvalidRequest):
        session.execute(f"ALTER TABLE {ks}.alt ADD a1 text")  # already exists
    with pytest.raises(InvalidRequest):
        session.execute(f"ALTER TABLE {ks}.alt DROP k")  # primary key column
    with pytest.raises(InvalidRequest):
        session.execute(f"ALTER TABLE {ks}.alt DROP nosuchcol")
    with pytest.raises(InvalidRequest):
        session.execute(f"ALTER TABLE {ks}.alt RENAME a1 TO a3")  # only primary key columns can be renamed
    with pytest.raises(InvalidRequest):
        session.execute(f"ALTER TABLE {ks}.nosuchtable ADD x int")
    assert set(table_meta(cluster, ks, "alt").columns) == {"k", "c_renamed", "extra", "a1", "a2"}


def test_types_create_alter_drop(cluster, session, ks):
    session.execute(f"CREATE TYPE {ks}.addr (street text, zip int)")
    session.execute(f"CREATE TYPE {ks}.person (name text, home frozen<addr>, phones list<text>)")
    types = cluster.metadata.keyspaces[ks].user_types
    assert types["addr"].field_names == ["street", "zip"]
    assert [norm(t) for t in types["person"].field_types] == ["text", "frozen<addr>", "list<text>"]
    session.execute(f"ALTER TYPE {ks}.addr ADD country text")
    assert cluster.metadata.keyspaces[ks].user_types["addr"].field_names == ["street", "zip", "country"]
    session.execute(f"ALTER TYPE {ks}.addr RENAME zip TO postcode")
    ut = cluster.metadata.keyspaces[ks].user_types["addr"]
    assert ut.field_names == ["street", "postcode", "country"]
    assert [norm(t) for t in ut.field_types] == ["text", "int", "text"]
    with pytest.raises((AlreadyExists, InvalidRequest)):
        session.execute(f"CREATE TYPE {ks}.addr (x int)")
    session.execute(f"CREATE TYPE IF NOT EXISTS {ks}.addr (x int)")
    assert cluster.metadata.keyspaces[ks].user_types["addr"].field_names == ["street", "postcode", "country"]
    # a type in use cannot be dropped
    with pytest.raises(InvalidRequest):
        session.execute(f"DROP TYPE {ks}.addr")
    session.execute(f"CREATE TABLE {ks}.uses_person (k int PRIMARY KEY, p frozen<person>)")
    session.execute(f"DROP TABLE {ks}.uses_person")
    session.execute(f"DROP TYPE {ks}.person")
    session.execute(f"DROP TYPE {ks}.addr")
    assert cluster.metadata.keyspaces[ks].user_types == {}
    session.execute(f"DROP TYPE IF EXISTS {ks}.addr")
    with pytest.raises(InvalidRequest):
        session.execute(f"DROP TYPE {ks}.addr")
    with pytest.raises(InvalidRequest):
        session.execute(f"CREATE TABLE {ks}.bad (k int PRIMARY KEY, a frozen<addr>)")  # no such type now


def test_use_keyspace(cluster, ks):
    s = cluster.connect()
    try:
        s.execute(f"USE {ks}")
        assert s.keyspace == ks
        s.execute("CREATE TABLE unqualified (k int PRIMARY KEY)")
        assert "unqualified" in cluster.metadata.keyspaces[ks].tables
        with pytest.raises(InvalidRequest):
            s.execute(f"USE {fresh_name('nosuchks')}")
        assert s.keyspace == ks
        s.execute("DROP TABLE unqualified")
    finally:
        s.shutdown()
    s2 = cluster.connect(ks)  # pool connections send USE "<ks>"
    try:
        s2.execute("CREATE TABLE unq2 (k int PRIMARY KEY)")
        assert "unq2" in cluster.metadata.keyspaces[ks].tables
    finally:
        s2.shutdown()


def test_truncate(cluster, session, ks):
    session.execute(f"CREATE TABLE {ks}.tr (k int PRIMARY KEY, v text)")
    session.execute(f"TRUNCATE {ks}.tr")
    session.execute(f"TRUNCATE TABLE {ks}.tr")
    with pytest.raises(InvalidRequest):
        session.execute(f"TRUNCATE {ks}.never_created")
    assert "tr" in cluster.metadata.keyspaces[ks].tables


@pytest.mark.parametrize("stmt", [
    "CREATE TABLE {ks}.bad (k int, v int)",  # no primary key
    "CREATE TABLE {ks}.bad (k int PRIMARY KEY, k text)",  # duplicate column
    "CREATE TABLE {ks}.bad (k int PRIMARY KEY, v nosuchtype)",
    "CREATE TABLE {ks}.bad (k list<int> PRIMARY KEY)",  # non-frozen collection in the key
    "CREATE TABLE {ks}.bad (k int, s int STATIC, PRIMARY KEY (k))",  # static without clustering
    "CREATE TABLE {ks}.bad (k int PRIMARY KEY, c counter, v int)",  # counter mixed with non-counter
    "CREATE TABLE {ks}.bad (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (k DESC)",
    "CREATE TABLE {ks}.bad (k int, c int, PRIMARY KEY (k, nosuch))",
    "CREATE TABLE nosuchks_zz.bad (k int PRIMARY KEY)",
    "SELECT * FROM {ks}.nosuchtable",
    "SELECT * FROM nosuchks_zz.nosuchtable",
])
def test_invalid_statements_raise_invalid_request(session, ks, stmt):
    with pytest.raises((InvalidRequest, ConfigurationException)) as ei:
        session.execute(stmt.format(ks=ks))
    assert not isinstance(ei.value, AlreadyExists)
    assert_alive(session)
    assert "bad" not in session.cluster.metadata.keyspaces[ks].tables


@pytest.mark.parametrize("name", ['"😀"', '"a-b"', '"a b"', "a" * 49, '""'])
def test_invalid_names_rejected(cluster, session, ks, name):
    # Cassandra: names are [A-Za-z0-9_]{1,48}
    with pytest.raises((InvalidRequest, ConfigurationException, SyntaxException)):
        session.execute(f"CREATE KEYSPACE {name} WITH replication = {SIMPLE1}")
    with pytest.raises((InvalidRequest, ConfigurationException, SyntaxException)):
        session.execute(f"CREATE TABLE {ks}.{name} (k int PRIMARY KEY)")
    assert cluster.metadata.keyspaces[ks].tables == {} or name.strip('"') not in cluster.metadata.keyspaces[ks].tables
    assert_alive(session)


def test_unknown_table_option_rejected(cluster, session, ks):
    # Cassandra answers "Unknown property 'nosuchoption'" as a syntax error; Invalid is fine too
    with pytest.raises((SyntaxException, InvalidRequest, ConfigurationException)):
        session.execute(f"CREATE TABLE {ks}.bad (k int PRIMARY KEY, v int) WITH nosuchoption = 1")
    assert "bad" not in cluster.metadata.keyspaces[ks].tables
    assert_alive(session)


@pytest.mark.parametrize("stmt", [
    "CREAT TABLE x (k int PRIMARY KEY)",
    "SELECT FROM system.local",
    "CREATE TABLE {ks}.bad (k int PRIMARY KEY",
    "CREATE TABLE {ks}.bad (k int PRIMARY KEY v int)",
    "DROP",
    "CREATE TABLE {ks}.bad (k int PRIMARY KEY) WITH",
    "'unterminated string",
])
def test_syntax_errors(session, ks, stmt):
    with pytest.raises(SyntaxException):
        session.execute(stmt.format(ks=ks))
    assert_alive(session)


def test_session_keeps_working_after_many_errors(cluster, session, ks):
    for i in range(30):
        with pytest.raises((InvalidRequest, SyntaxException)):
            session.execute("SELECT * FROM nosuchks_yy.t" if i % 2 else "NOT CQL AT ALL")
    session.execute(f"CREATE TABLE {ks}.after_errors (k int PRIMARY KEY)")
    assert "after_errors" in cluster.metadata.keyspaces[ks].tables


def test_ddl_agreement_fast_across_many_statements(cluster, session, ks):
    t0 = time.monotonic()
    n = 10
    for i in range(n):
        rs = session.execute(f"CREATE TABLE {ks}.many_{i} (k int PRIMARY KEY, v text)")
        assert rs.response_future.is_schema_agreed
    took = time.monotonic() - t0
    assert took < 2.0 * n, f"{n} CREATE TABLEs took {took:.1f}s (schema agreement not immediate?)"
    assert all(f"many_{i}" in cluster.metadata.keyspaces[ks].tables for i in range(n))


def test_keyspace_name_case(cluster, session):
    session.execute(f"CREATE KEYSPACE CaseKs WITH replication = {SIMPLE1}")
    assert "caseks" in cluster.metadata.keyspaces and "CaseKs" not in cluster.metadata.keyspaces
    session.execute("CREATE TABLE CASEKS.T (K int PRIMARY KEY)")
    assert set(cluster.metadata.keyspaces["caseks"].tables["t"].columns) == {"k"}
    session.execute('CREATE KEYSPACE "CaseKs" WITH replication = ' + SIMPLE1)  # a different keyspace
    assert "CaseKs" in cluster.metadata.keyspaces
    session.execute("DROP KEYSPACE caseks")
    session.execute('DROP KEYSPACE "CaseKs"')


def test_comments_and_string_literals(cluster, session, ks):
    session.execute(f"""
        -- a line comment
        CREATE TABLE {ks}.commented ( // another one
            k int PRIMARY KEY, /* a block
            comment */ v text
        ) WITH comment = 'it''s quoted'""")
    assert table_meta(cluster, ks, "commented").options["comment"] == "it's quoted"
    session.execute(f"ALTER TABLE {ks}.commented WITH comment = $$dollar 'quoted' text$$")
    assert table_meta(cluster, ks, "commented").options["comment"] == "dollar 'quoted' text"
    session.execute(f"ALTER TABLE {ks}.commented WITH comment = 'ünïcödé 😀'")
    assert table_meta(cluster, ks, "commented").options["comment"] == "ünïcödé 😀"
    session.execute(f"CREATE TABLE {ks}.semi (k int PRIMARY KEY);")  # trailing semicolon
    assert "semi" in cluster.metadata.keyspaces[ks].tables


def test_unreserved_keywords_as_column_names(cluster, session, ks):
    # real schemas use these unquoted; Cassandra accepts them
    names = ["key", "value", "type", "timestamp", "date", "text", "count", "status", "level", "ttl",
             "writetime", "keys", "values", "time", "duration", "frozen", "list", "map", "tuple"]
    body = ", ".join(f"{n} text" for n in names)
    session.execute(f"CREATE TABLE {ks}.kw (id int PRIMARY KEY, {body})")
    assert set(table_meta(cluster, ks, "kw").columns) == {"id", *names}


def test_compact_storage_rejected(cluster, session, ks):
    with pytest.raises(InvalidRequest):
        session.execute(f"CREATE TABLE {ks}.compact (k int PRIMARY KEY, v int) WITH COMPACT STORAGE")
    assert "compact" not in cluster.metadata.keyspaces[ks].tables


def test_wide_table(cluster, session, ks):
    cols = ", ".join(f"c{i:03d} {ALL_NATIVE[i % len(ALL_NATIVE)]}" for i in range(300))
    session.execute(f"CREATE TABLE {ks}.wide (k int, ck int, {cols}, PRIMARY KEY (k, ck))")
    tm = table_meta(cluster, ks, "wide")
    assert len(tm.columns) == 302
    assert norm(tm.columns["c299"].cql_type) == norm(ALL_NATIVE[299 % len(ALL_NATIVE)]).replace("varchar", "text")
