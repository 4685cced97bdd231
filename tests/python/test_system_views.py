"""Cassandra 4.1's node views in `system_views`, read through the python driver and cqlsh:
settings, clients, caches, thread_pools, sstable_tasks, disk_usage, max_partition_size and the local and
coordinator latency tables, checked against a known workload. Filtering on them needs no
ALLOW FILTERING (as in Cassandra 4.1), and DESCRIBE shows them as virtual tables.
"""

from __future__ import annotations

import pytest

import re
import subprocess

from conftest import fresh_name, new_keyspace, ringdb_bin, run_cqlsh

pytestmark = pytest.mark.dml


@pytest.fixture(scope="module")
def table(session):
    ks = new_keyspace(session, "views")
    session.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
    yield ks, "t"
    session.execute(f"DROP KEYSPACE {ks}")


def one(session, cql, *args):
    return session.execute(cql, args).one()


def test_settings_list_every_setting_with_passwords_redacted(server, session):
    rows = {r.name: r.value for r in session.execute("SELECT name, value FROM system_views.settings")}
    assert rows["listen"] == f"{server.host}:{server.port}"
    assert rows["superuser_password"] == "<redacted>"
    assert rows["commitlog_sync"] == "periodic"
    assert rows["max_ru_per_physical_partition"] == "10000"
    # A filter on a regular column: ALLOW FILTERING is implied on virtual tables.
    by_value = list(session.execute("SELECT name FROM system_views.settings WHERE value = 'periodic'"))
    assert "commitlog_sync" in [r.name for r in by_value]


def test_clients_show_this_driver_and_its_requests(session):
    mine = [r for r in session.execute("SELECT * FROM system_views.clients")
            if r.driver_name == "Apache Cassandra Python Driver"]
    assert mine, "the python driver's connections are listed"
    c = mine[0]
    assert c.connection_stage == "ready"
    assert c.protocol_version in (4, 5)
    assert c.client_options["CQL_VERSION"].startswith("3.")
    assert c.driver_version
    assert c.ssl_enabled is False
    before = {(r.address, r.port): r.request_count for r in session.execute("SELECT * FROM system_views.clients")}
    for _ in range(5):
        session.execute("SELECT key FROM system.local")
    after = {(r.address, r.port): r.request_count for r in session.execute("SELECT * FROM system_views.clients")}
    grown = sum(after[k] - before[k] for k in before if k in after)
    assert grown >= 5, (before, after)


def test_latency_tables_count_a_known_workload(session, table):
    ks, t = table
    insert = session.prepare(f"INSERT INTO {ks}.{t} (k, v) VALUES (?, ?)")
    select = session.prepare(f"SELECT v FROM {ks}.{t} WHERE k = ?")
    for k in range(30):
        session.execute(insert, (k, "v" * 50))
    for k in range(12):
        assert session.execute(select, (k,)).one().v == "v" * 50
    assert len(list(session.execute(f"SELECT k FROM {ks}.{t}"))) == 30

    def counts(view):
        r = one(session, f"SELECT * FROM system_views.{view} WHERE keyspace_name = %s AND table_name = %s", ks, t)
        assert r is not None, view
        assert 0 <= r.p50th_ms <= r.p99th_ms <= r.max_ms, (view, r)
        return r.count

    assert counts("local_write_latency") == 30
    assert counts("coordinator_write_latency") == 30
    assert counts("local_read_latency") == 12
    assert counts("coordinator_read_latency") == 12
    assert counts("coordinator_scan_latency") == 1
    assert counts("local_scan_latency") >= 1


def test_caches_thread_pools_disk_and_tasks(session, table):
    ks, t = table
    session.execute(f"INSERT INTO {ks}.{t} (k, v) VALUES (1000, 'hot')")
    read = session.prepare(f"SELECT v FROM {ks}.{t} WHERE k = ?")
    before = one(session, "SELECT hit_count, request_count FROM system_views.caches WHERE name = 'items'")
    for _ in range(10):
        assert session.execute(read, (1000,)).one().v == "hot"
    after = one(session, "SELECT * FROM system_views.caches WHERE name = 'items'")
    assert after.request_count > before.request_count
    assert after.hit_count > before.hit_count
    assert 0.0 <= after.hit_ratio <= 1.0
    assert after.capacity_bytes > 0
    blocks = one(session, "SELECT capacity_bytes FROM system_views.caches WHERE name = 'blocks'")
    assert blocks.capacity_bytes > 0

    pools = {r.name: r for r in session.execute("SELECT * FROM system_views.thread_pools")}
    native = pools["Native-Transport-Requests"]
    assert native.active_tasks >= 1 and native.active_tasks_limit == 4096
    assert native.completed_tasks > 40
    assert {"ReadThreads", "CompactionExecutor", "MemtableFlushWriter"} <= set(pools)

    # Each table has its row (its size is checked after a flush in test_metrics).
    usage = one(session, "SELECT mebibytes FROM system_views.disk_usage WHERE keyspace_name = %s AND table_name = %s", ks, t)
    assert usage is not None
    # No split or move runs now: the table reads empty, with Cassandra's columns.
    rs = session.execute("SELECT * FROM system_views.sstable_tasks")
    assert list(rs) == []
    assert rs.column_names == ["keyspace_name", "table_name", "task_id", "completion_ratio",
                               "kind", "progress", "total", "unit"]


def test_max_partition_size_follows_the_largest_logical_partition(session):
    ks = new_keyspace(session, "widest")
    session.execute(f"CREATE TABLE {ks}.t (p int, c int, v blob, PRIMARY KEY (p, c))")
    insert = session.prepare(f"INSERT INTO {ks}.t (p, c, v) VALUES (?, ?, ?)")
    query = ("SELECT * FROM system_views.max_partition_size "
             "WHERE keyspace_name = %s AND table_name = 't'")
    # Many small partitions: the largest holds one 1 KiB row (1 MiB, rounded up).
    for p in range(50):
        session.execute(insert, (p, 0, b"x" * 1024))
    row = one(session, query, ks)
    assert row.mebibytes == 1, row
    # One partition grows to 5 MiB and some: 6 MiB, rounded up as Cassandra rounds.
    for c in range(1, 81):
        session.execute(insert, (7, c, b"y" * 65536))
    row = one(session, query, ks)
    assert row.mebibytes == 6, row
    rs = session.execute(f"SELECT * FROM system_views.max_partition_size WHERE keyspace_name = '{ks}'")
    assert rs.column_names == ["keyspace_name", "table_name", "mebibytes"]
    session.execute(f"DROP KEYSPACE {ks}")


def test_cqlsh_reads_and_describes_the_views(server, tmp_path):
    out = run_cqlsh(server, "-e", "SELECT name, value FROM system_views.settings WHERE name = 'listen'",
                    home=tmp_path / "cqlsh").stdout
    assert f"{server.host}:{server.port}" in out and "(1 rows)" in out, out
    out = run_cqlsh(server, "-e", "SELECT driver_name, connection_stage FROM system_views.clients",
                    home=tmp_path / "cqlsh").stdout
    assert "ready" in out, out
    out = run_cqlsh(server, "-e", "DESCRIBE TABLE system_views.local_read_latency",
                    home=tmp_path / "cqlsh").stdout
    assert "VIRTUAL TABLE system_views.local_read_latency" in out, out
    assert "p99th_ms double" in out, out


def test_ringdb_tablestats_prints_a_tables_figures(server, session, table):
    ks, t = table
    other = fresh_name("other")
    session.execute(f"CREATE TABLE {ks}.{other} (k int PRIMARY KEY)")
    read = session.prepare(f"SELECT v FROM {ks}.{t} WHERE k = ?")
    before = one(session, "SELECT count FROM system_views.local_read_latency WHERE keyspace_name = %s AND table_name = %s", ks, t).count
    for k in range(7):
        session.execute(read, (k,))
    out = subprocess.run([str(ringdb_bin()), "tablestats", f"{ks}.{t}", "--server", f"{server.host}:{server.port}"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"Keyspace: {ks}" in text and f"\tTable: {t}" in text, text
    assert other not in text, "a table outside the filter"
    assert "1 tables" in text
    reads = int(re.search(r"Local read count: (\d+)", text).group(1))
    assert reads >= before + 7, text
    parts = list(session.execute("SELECT bytes FROM system_views.physical_partitions WHERE keyspace_name = %s AND table_name = %s", (ks, t)))
    shown = int(re.search(r"Physical partitions: (\d+)", text).group(1))
    assert shown == len(parts), text
    # The keyspace alone lists both tables.
    both = subprocess.run([str(ringdb_bin()), "tablestats", ks, "--server", f"{server.host}:{server.port}"],
                          capture_output=True, text=True, timeout=60).stdout
    assert f"\tTable: {other}" in both and "2 tables" in both, both
