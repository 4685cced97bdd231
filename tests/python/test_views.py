"""Materialized views as Cassandra 4.1 keeps them with `materialized_views_enabled: true`,
over a real ringdb and the python driver (3.30) and cqlsh: CREATE and DROP with Cassandra's
restrictions and messages, a view filled from existing rows and kept in step with every
insert, update and delete of its base, `system_schema.views`, the driver's metadata, DESCRIBE,
and the setting that leaves them off by default.

Sources cited below are Apache Cassandra 4.1's: `cql3/statements/schema/CreateViewStatement.java`
(restrictions and messages), `DropViewStatement.java`, `DropTableStatement.java`,
`ModificationStatement.java` ("Cannot directly modify a materialized view"),
`db/view/ViewUpdateGenerator.java` (which view rows a base change makes), and
`schema/ViewMetadata.java` (`toCqlString`, DESCRIBE's text).
"""

from __future__ import annotations

import pytest
from cassandra import InvalidRequest

from conftest import RingServer, make_cluster, run_cqlsh, stop_and_check


def start_with(request, tmp_path, settings: str) -> RingServer:
    cfg = tmp_path / "ringdb.toml"
    cfg.write_text(settings)
    return RingServer(tmp_path / "data", tmp_path / "stderr.log", request.node.nodeid,
                      extra_args=("--config", str(cfg), "--metrics-listen", "")).start()


@pytest.fixture(scope="module")
def views_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("views")
    cfg = tmp / "ringdb.toml"
    cfg.write_text("materialized_views_enabled = true\n")
    srv = RingServer(tmp / "data", tmp / "stderr.log", request.node.nodeid,
                     extra_args=("--config", str(cfg), "--metrics-listen", "")).start()
    yield srv
    stop_and_check(srv)


@pytest.fixture(scope="module")
def vcluster(views_server):
    c = make_cluster(views_server)
    yield c
    c.shutdown()


@pytest.fixture
def vs(vcluster):
    s = vcluster.connect()
    s.execute("CREATE KEYSPACE IF NOT EXISTS mv WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("DROP MATERIALIZED VIEW IF EXISTS mv.by_v")
    s.execute("DROP TABLE IF EXISTS mv.t")
    s.execute("CREATE TABLE mv.t (k int, c int, v text, w int, PRIMARY KEY (k, c))")
    return s


def view_rows(s):
    return sorted((r.v, r.k, r.c, r.w) for r in s.execute("SELECT v, k, c, w FROM mv.by_v"))


def test_views_are_off_by_default(request, tmp_path):
    # CreateViewStatement: refused unless materialized_views_enabled (off in 4.1's yaml).
    srv = start_with(request, tmp_path, "")
    cluster = make_cluster(srv)
    try:
        s = cluster.connect()
        s.execute("CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE k.t (k int PRIMARY KEY, v int)")
        with pytest.raises(InvalidRequest, match=r"Materialized views are disabled\. Enable in cassandra\.yaml to use\."):
            s.execute("CREATE MATERIALIZED VIEW k.mv AS SELECT * FROM k.t WHERE v IS NOT NULL PRIMARY KEY (v, k)")
    finally:
        cluster.shutdown()
        stop_and_check(srv)


def test_a_view_is_filled_then_kept_in_step(vs):
    vs.execute("INSERT INTO mv.t (k, c, v, w) VALUES (1, 1, 'a', 10)")
    vs.execute("INSERT INTO mv.t (k, c, v, w) VALUES (1, 2, 'b', 20)")
    vs.execute("INSERT INTO mv.t (k, c, w) VALUES (1, 3, 30)")  # null v: no view row
    rs = vs.execute("CREATE MATERIALIZED VIEW mv.by_v AS SELECT * FROM mv.t "
                    "WHERE v IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c)")
    # CreateViewStatement: the client warning every CREATE MATERIALIZED VIEW gets.
    assert any("Materialized views are experimental" in w for w in rs.response_future.warnings or [])
    # The view is built from the rows already there.
    assert view_rows(vs) == [("a", 1, 1, 10), ("b", 1, 2, 20)]
    # ViewUpdateGenerator: an update of the view's key column moves the view row.
    vs.execute("UPDATE mv.t SET v = 'z' WHERE k = 1 AND c = 1")
    # ... an update of another column rewrites it in place.
    vs.execute("UPDATE mv.t SET w = 21 WHERE k = 1 AND c = 2")
    # ... a new base row adds one, a row whose key column becomes set adds one.
    vs.execute("INSERT INTO mv.t (k, c, v, w) VALUES (2, 1, 'a', 40)")
    vs.execute("UPDATE mv.t SET v = 'c' WHERE k = 1 AND c = 3")
    assert view_rows(vs) == [("a", 2, 1, 40), ("b", 1, 2, 21), ("c", 1, 3, 30), ("z", 1, 1, 10)]
    # ... a deleted base row, or a key column set to null, removes its view row.
    vs.execute("DELETE FROM mv.t WHERE k = 1 AND c = 2")
    vs.execute("DELETE v FROM mv.t WHERE k = 1 AND c = 3")
    assert view_rows(vs) == [("a", 2, 1, 40), ("z", 1, 1, 10)]
    # A partition deletion removes every row's view row; a batch is kept too.
    vs.execute("BEGIN BATCH INSERT INTO mv.t (k, c, v, w) VALUES (3, 1, 'q', 1); "
               "DELETE FROM mv.t WHERE k = 2; APPLY BATCH")
    assert view_rows(vs) == [("q", 3, 1, 1), ("z", 1, 1, 10)]
    vs.execute("DELETE FROM mv.t WHERE k = 1")
    assert view_rows(vs) == [("q", 3, 1, 1)]
    # The view is read by its own key.
    assert [(r.k, r.c) for r in vs.execute("SELECT k, c FROM mv.by_v WHERE v = 'q'")] == [(3, 1)]


def test_conditional_writes_keep_views_in_step(vs):
    # ViewUpdateGenerator runs for every applied base write, Paxos ones included
    # (StorageProxy.cas -> ... -> Keyspace.apply with views).
    vs.execute("CREATE MATERIALIZED VIEW mv.by_v AS SELECT * FROM mv.t "
               "WHERE v IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c)")
    assert vs.execute("INSERT INTO mv.t (k, c, v, w) VALUES (1, 1, 'a', 1) IF NOT EXISTS").one()[0]
    assert view_rows(vs) == [("a", 1, 1, 1)]
    # A condition that fails changes nothing, in the base or the view.
    assert not vs.execute("UPDATE mv.t SET v = 'b' WHERE k = 1 AND c = 1 IF w = 5").one()[0]
    assert view_rows(vs) == [("a", 1, 1, 1)]
    assert vs.execute("UPDATE mv.t SET v = 'b' WHERE k = 1 AND c = 1 IF w = 1").one()[0]
    assert view_rows(vs) == [("b", 1, 1, 1)]
    # A conditional batch on one partition.
    assert vs.execute("BEGIN BATCH INSERT INTO mv.t (k, c, v, w) VALUES (1, 2, 'c', 2) IF NOT EXISTS; "
                      "UPDATE mv.t SET w = 3 WHERE k = 1 AND c = 1; APPLY BATCH").one()[0]
    assert view_rows(vs) == [("b", 1, 1, 3), ("c", 1, 2, 2)]
    assert vs.execute("DELETE FROM mv.t WHERE k = 1 AND c = 1 IF EXISTS").one()[0]
    assert view_rows(vs) == [("c", 1, 2, 2)]
    # A conditional write to the view itself is refused, as any write to it.
    with pytest.raises(InvalidRequest):
        vs.execute("INSERT INTO mv.by_v (v, k, c, w) VALUES ('x', 9, 9, 9) IF NOT EXISTS")


def test_alter_materialized_view(vs):
    # AlterViewStatement: table options of the view; no default TTL, no gc_grace_seconds of 0.
    vs.execute("CREATE MATERIALIZED VIEW mv.by_v AS SELECT * FROM mv.t "
               "WHERE v IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c)")
    vs.execute("ALTER MATERIALIZED VIEW mv.by_v WITH comment = 'by v' AND gc_grace_seconds = 3600")
    row = vs.execute("SELECT comment, gc_grace_seconds FROM system_schema.views "
                     "WHERE keyspace_name = 'mv' AND view_name = 'by_v'").one()
    assert (row.comment, row.gc_grace_seconds) == ("by v", 3600)
    with pytest.raises(InvalidRequest, match="Cannot set or alter default_time_to_live for a materialized view"):
        vs.execute("ALTER MATERIALIZED VIEW mv.by_v WITH default_time_to_live = 10")
    with pytest.raises(InvalidRequest, match="Cannot alter gc_grace_seconds of a materialized view to 0"):
        vs.execute("ALTER MATERIALIZED VIEW mv.by_v WITH gc_grace_seconds = 0")
    with pytest.raises(InvalidRequest, match="Cannot use ALTER MATERIALIZED VIEW on Table"):
        vs.execute("ALTER MATERIALIZED VIEW mv.t WITH comment = 'x'")
    with pytest.raises(InvalidRequest, match="doesn't exist"):
        vs.execute("ALTER MATERIALIZED VIEW mv.nope WITH comment = 'x'")
    vs.execute("ALTER MATERIALIZED VIEW IF EXISTS mv.nope WITH comment = 'x'")
    # The view still works and is kept in step.
    vs.execute("INSERT INTO mv.t (k, c, v, w) VALUES (5, 1, 'e', 50)")
    assert view_rows(vs) == [("e", 5, 1, 50)]


def test_a_column_added_to_the_base_joins_select_star_views(vs):
    # AlterTableStatement.AddColumns: views created with SELECT * include new columns.
    vs.execute("CREATE MATERIALIZED VIEW mv.by_v AS SELECT * FROM mv.t "
               "WHERE v IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c)")
    vs.execute("ALTER TABLE mv.t ADD extra text")
    vs.execute("INSERT INTO mv.t (k, c, v, w, extra) VALUES (1, 1, 'a', 2, 'more')")
    row = vs.execute("SELECT extra FROM mv.by_v WHERE v = 'a'").one()
    assert row.extra == "more"
    cols = {r.column_name for r in vs.execute(
        "SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'mv' AND table_name = 'by_v'")}
    assert "extra" in cols


def test_a_where_clause_on_base_key_columns_filters_the_view(vs):
    # CreateViewStatement: primary key columns of the base may be restricted by any relation
    # ("... must be restricted with 'IS NOT NULL' or otherwise"); a base row is in the view
    # only when it meets them, from the build and through every later write.
    vs.execute("INSERT INTO mv.t (k, c, v, w) VALUES (1, 1, 'a', 10)")
    vs.execute("INSERT INTO mv.t (k, c, v, w) VALUES (1, 5, 'b', 50)")
    vs.execute("INSERT INTO mv.t (k, c, v, w) VALUES (2, 7, 'c', 70)")
    vs.execute("CREATE MATERIALIZED VIEW mv.by_v AS SELECT * FROM mv.t WHERE v IS NOT NULL "
               "AND c >= 5 AND k IN (1, 3) PRIMARY KEY (v, k, c)")
    assert view_rows(vs) == [("b", 1, 5, 50)]
    vs.execute("INSERT INTO mv.t (k, c, v, w) VALUES (3, 9, 'd', 90)")
    vs.execute("INSERT INTO mv.t (k, c, v, w) VALUES (3, 2, 'e', 20)")
    vs.execute("UPDATE mv.t SET v = 'z' WHERE k = 1 AND c = 5")
    vs.execute("UPDATE mv.t SET v = 'y' WHERE k = 1 AND c = 1")
    assert view_rows(vs) == [("d", 3, 9, 90), ("z", 1, 5, 50)]
    where = vs.execute("SELECT where_clause FROM system_schema.views WHERE keyspace_name = 'mv' "
                       "AND view_name = 'by_v'").one().where_clause
    assert "c >= 5" in where and "k IN (1, 3)" in where
    # ... but other columns only with IS NOT NULL.
    with pytest.raises(InvalidRequest, match=r"Non-primary key columns can only be restricted "
                       r"with 'IS NOT NULL' \(got: w restricted illegally\)"):
        vs.execute("CREATE MATERIALIZED VIEW mv.bad AS SELECT * FROM mv.t WHERE v IS NOT NULL "
                   "AND c IS NOT NULL AND w = 1 PRIMARY KEY (v, k, c)")
    vs.execute("DROP MATERIALIZED VIEW mv.by_v")


def test_views_refuse_what_cassandra_refuses(vs):
    vs.execute("CREATE MATERIALIZED VIEW mv.by_v AS SELECT * FROM mv.t "
               "WHERE v IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c)")
    # ModificationStatement: a view is written only through its base.
    with pytest.raises(InvalidRequest, match="Cannot directly modify a materialized view"):
        vs.execute("INSERT INTO mv.by_v (v, k, c) VALUES ('x', 1, 1)")
    # DropTableStatement: a base with views stays.
    with pytest.raises(InvalidRequest, match=r"Cannot drop table when materialized views still depend on it \(mv\.by_v\)"):
        vs.execute("DROP TABLE mv.t")
    # CreateViewStatement: every view key column restricted with IS NOT NULL ...
    with pytest.raises(InvalidRequest, match="Primary key columns c must be restricted with 'IS NOT NULL' or otherwise"):
        vs.execute("CREATE MATERIALIZED VIEW mv.bad AS SELECT * FROM mv.t WHERE v IS NOT NULL PRIMARY KEY (v, k, c)")
    # ... every base key column in the view's key ...
    with pytest.raises(InvalidRequest, match="without primary key columns c from base t"):
        vs.execute("CREATE MATERIALIZED VIEW mv.bad AS SELECT * FROM mv.t "
                   "WHERE v IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k)")
    # ... and at most one other column in it.
    with pytest.raises(InvalidRequest, match="Cannot include more than one non-primary key column"):
        vs.execute("CREATE MATERIALIZED VIEW mv.bad AS SELECT * FROM mv.t WHERE v IS NOT NULL "
                   "AND c IS NOT NULL AND w IS NOT NULL PRIMARY KEY (v, w, k, c)")
    # AlterTableStatement: a view is altered only as a view, and a base with views keeps its
    # columns.
    with pytest.raises(InvalidRequest, match="Cannot use ALTER TABLE on a materialized view"):
        vs.execute("ALTER TABLE mv.by_v ADD x int")
    with pytest.raises(InvalidRequest, match="Cannot drop column w on base table t with materialized views"):
        vs.execute("ALTER TABLE mv.t DROP w")
    # CreateIndexStatement: a view takes no index.
    with pytest.raises(InvalidRequest, match="Secondary indexes on materialized views aren't supported"):
        vs.execute("CREATE INDEX ON mv.by_v (w)")
    # DropViewStatement / DropTableStatement: each drops only its own kind.
    with pytest.raises(InvalidRequest, match="Cannot use DROP TABLE on a materialized view"):
        vs.execute("DROP TABLE mv.by_v")
    with pytest.raises(InvalidRequest, match="Materialized view 'mv.nope' doesn't exist"):
        vs.execute("DROP MATERIALIZED VIEW mv.nope")
    vs.execute("DROP MATERIALIZED VIEW IF EXISTS mv.nope")
    vs.execute("DROP MATERIALIZED VIEW mv.by_v")
    vs.execute("DROP TABLE mv.t")


def test_schema_driver_metadata_and_describe(vs, vcluster, views_server):
    vs.execute("CREATE MATERIALIZED VIEW mv.by_v AS SELECT k, c, v FROM mv.t "
               "WHERE v IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c) WITH CLUSTERING ORDER BY (k DESC)")
    row = vs.execute("SELECT * FROM system_schema.views WHERE keyspace_name = 'mv' AND view_name = 'by_v'").one()
    assert row.base_table_name == "t"
    assert row.include_all_columns is False
    assert row.where_clause == "v IS NOT NULL AND c IS NOT NULL"
    base_id = vs.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = 'mv' AND table_name = 't'").one().id
    assert row.base_table_id == base_id
    # A view is not a table in system_schema.tables, but its columns are in columns.
    assert vs.execute("SELECT * FROM system_schema.tables WHERE keyspace_name = 'mv' AND table_name = 'by_v'").one() is None
    kinds = {r.column_name: r.kind for r in vs.execute(
        "SELECT column_name, kind FROM system_schema.columns WHERE keyspace_name = 'mv' AND table_name = 'by_v'")}
    assert kinds == {"v": "partition_key", "k": "clustering", "c": "clustering"}
    vcluster.refresh_schema_metadata()
    ks = vcluster.metadata.keyspaces["mv"]
    view = ks.views["by_v"]
    assert view.base_table_name == "t" and "by_v" in ks.tables["t"].views
    assert [c.name for c in view.clustering_key] == ["k", "c"]
    # ViewMetadata.toCqlString, as cqlsh prints it.
    out = run_cqlsh(views_server, "-e", "DESCRIBE MATERIALIZED VIEW mv.by_v").stdout
    assert "CREATE MATERIALIZED VIEW mv.by_v AS" in out
    assert "    FROM mv.t\n    WHERE v IS NOT NULL AND c IS NOT NULL\n    PRIMARY KEY (v, k, c)" in out
    assert "WITH CLUSTERING ORDER BY (k DESC, c ASC)" in out
    vs.execute("DROP MATERIALIZED VIEW mv.by_v")
    vcluster.refresh_schema_metadata()
    assert "by_v" not in vcluster.metadata.keyspaces["mv"].views


def test_a_view_survives_a_restart(request, tmp_path):
    srv = start_with(request, tmp_path, "materialized_views_enabled = true\n")
    cluster = make_cluster(srv)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE r.t (k int PRIMARY KEY, v int)")
    s.execute("CREATE MATERIALIZED VIEW r.by_v AS SELECT * FROM r.t WHERE v IS NOT NULL PRIMARY KEY (v, k)")
    s.execute("INSERT INTO r.t (k, v) VALUES (1, 7)")
    cluster.shutdown()
    srv.stop()
    srv.start()
    cluster = make_cluster(srv)
    try:
        s = cluster.connect()
        assert [(r.v, r.k) for r in s.execute("SELECT v, k FROM r.by_v")] == [(7, 1)]
        # Still kept in step after the restart.
        s.execute("UPDATE r.t SET v = 8 WHERE k = 1")
        assert [(r.v, r.k) for r in s.execute("SELECT v, k FROM r.by_v")] == [(8, 1)]
    finally:
        cluster.shutdown()
        stop_and_check(srv)


def test_a_view_in_a_cluster_is_kept_through_any_coordinator(request, tmp_path):
    """Two nodes, RF 2: the view's DDL reaches both, and writes coordinated by either node
    keep the view in step, read back from the other at ALL."""
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    from test_cluster import cluster_node, connect, port_free_on_all, wait_formed, write_new_table

    native = port_free_on_all(set())
    internode = port_free_on_all({native})
    metrics = port_free_on_all({native, internode})
    nodes = [cluster_node(tmp_path, i, (native, internode, metrics), request.node.nodeid,
                          "materialized_views_enabled = true\n") for i in (1, 2)]
    clients = []
    try:
        for n in nodes:
            n.start()
        wait_formed(nodes)
        c1, c2 = connect(nodes[0], only=True), connect(nodes[1], only=True)
        clients = [c1, c2]
        s1, s2 = c1.connect(), c2.connect()
        s1.execute("CREATE KEYSPACE cv WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}")
        s1.execute("CREATE TABLE cv.t (k int PRIMARY KEY, v text)")
        all_ = ConsistencyLevel.ALL
        write_new_table(s1, SimpleStatement("INSERT INTO cv.t (k, v) VALUES (1, 'a')", consistency_level=all_), ())
        s1.execute("CREATE MATERIALIZED VIEW cv.by_v AS SELECT * FROM cv.t WHERE v IS NOT NULL PRIMARY KEY (v, k)")
        write_new_table(s2, SimpleStatement("INSERT INTO cv.t (k, v) VALUES (2, 'b')", consistency_level=all_), ())
        write_new_table(s1, SimpleStatement("UPDATE cv.t SET v = 'c' WHERE k = 1", consistency_level=all_), ())
        read = SimpleStatement("SELECT v, k FROM cv.by_v", consistency_level=all_)
        for s in (s1, s2):
            assert sorted((r.v, r.k) for r in s.execute(read)) == [("b", 2), ("c", 1)]
    finally:
        for c in clients:
            c.shutdown()
        for n in nodes:
            if n.proc is not None and n.running():
                n.stop()
