"""Secondary index storage: `CREATE INDEX` and SAI keep entries on disk, built in the background
for existing rows and written in the same batch as every later write, and queries on an
indexed column read the rows the entries name instead of scanning the table.

What is asserted, through the python driver against a real server:
- answers equal what a filtering scan (ALLOW FILTERING) gives, across overwrites, deletes,
  TTL expiry, paging, splits of physical partitions and a restart;
- the index is really used: an indexed query reads a small fraction of the stored items a
  scan reads (`ringdb_storage_items_read_total`), once `ringdb_index_builds_pending` is 0;
- every target Cassandra indexes: regular, static, clustering and partition-key columns,
  collection values, keys and entries, frozen collections whole, SAI ranges.

Semantics follow Apache Cassandra 5.0: `SecondaryIndexManager` (legacy 2i, equality and
CONTAINS / CONTAINS KEY / map entry), `index/sai/plan/Expression.java` (SAI ranges on
numerics), and results in token order as `index/internal/CassandraIndexSearcher` returns them.
"""

from __future__ import annotations

import time
import urllib.request

import pytest
from cassandra.cluster import Cluster
from cassandra.query import SimpleStatement
from prometheus_client.parser import text_string_to_metric_families

from conftest import RingServer, free_port, new_keyspace, stop_and_check


def metric(base: str, name: str) -> float:
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        text = r.read().decode()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and not s.labels:
                return s.value
    return 0.0


def wait_built(base: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if metric(base, "ringdb_index_builds_pending") == 0:
            return
        time.sleep(0.1)
    raise AssertionError("index builds still pending")


def start(tmp_path, name="idx", config: str | None = None, data=None, port=None, mport=None):
    mport = mport or free_port()
    args = ["--metrics-listen", f"127.0.0.1:{mport}"]
    if config:
        cfg = tmp_path / f"{name}.toml"
        cfg.write_text(config)
        args += ["--config", str(cfg)]
    srv = RingServer(data or tmp_path / name, tmp_path / f"{name}.log", name, port=port,
                     extra_args=tuple(args)).start()
    return srv, f"http://127.0.0.1:{mport}"


@pytest.fixture(scope="module")
def served(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("index_storage")
    srv, base = start(tmp)
    cluster = Cluster(contact_points=[srv.host], port=srv.port, connect_timeout=10)
    session = cluster.connect()
    yield srv, base, session
    cluster.shutdown()
    stop_and_check(srv)


def keyspace(session) -> str:
    ks = new_keyspace(session, "idx")
    return ks


def rows(session, query, params=(), fetch_size=None):
    st = SimpleStatement(query, fetch_size=fetch_size)
    return [tuple(r) for r in session.execute(st, params)]


def filtered(session, query, params=()):
    """The same query answered by the filtering scan (a set: the scan's order is the same)."""
    return rows(session, query + " ALLOW FILTERING", params)


def same_as_scan(session, query, n, fetch_size=None):
    """`query` answers the filtering scan's `n` rows, in its order."""
    got = rows(session, query, fetch_size=fetch_size)
    assert got == filtered(session, query), query
    assert len(got) == n, (query, got)


def items_read(base, run) -> float:
    before = metric(base, "ringdb_storage_items_read_total")
    run()
    return metric(base, "ringdb_storage_items_read_total") - before


def test_an_index_on_existing_rows_is_built_and_then_used(served):
    srv, base, s = served
    ks = keyspace(s)
    s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v int, w text)")
    ins = s.prepare(f"INSERT INTO {ks}.t (k, v, w) VALUES (?, ?, ?)")
    for k in range(3000):
        s.execute(ins, (k, k % 150, f"w{k}"))
    s.execute(f"CREATE INDEX ON {ks}.t (v)")
    wait_built(base)
    got = rows(s, f"SELECT k, v FROM {ks}.t WHERE v = 7")
    # Cassandra's index searcher returns rows in token order, as the scan does.
    assert got == filtered(s, f"SELECT k, v FROM {ks}.t WHERE v = 7")
    assert sorted(k for k, _ in got) == list(range(7, 3000, 150))
    indexed = items_read(base, lambda: rows(s, f"SELECT k FROM {ks}.t WHERE v = 8"))
    scanned = items_read(base, lambda: filtered(s, f"SELECT k FROM {ks}.t WHERE w = 'w8'"))
    assert scanned >= 3000
    # 20 rows named by the index: their entries, heads and items, not the table.
    assert indexed < scanned / 10, (indexed, scanned)


def test_entries_follow_overwrites_deletes_and_ttl(served):
    srv, base, s = served
    ks = keyspace(s)
    s.execute(f"CREATE TABLE {ks}.t (k int, c int, v text, PRIMARY KEY (k, c))")
    s.execute(f"CREATE INDEX ON {ks}.t (v)")
    wait_built(base)
    for k in range(20):
        for c in range(3):
            s.execute(f"INSERT INTO {ks}.t (k, c, v) VALUES ({k}, {c}, 'a')")
    assert len(rows(s, f"SELECT * FROM {ks}.t WHERE v = 'a'")) == 60
    s.execute(f"UPDATE {ks}.t SET v = 'b' WHERE k = 1 AND c = 1")
    s.execute(f"DELETE FROM {ks}.t WHERE k = 2 AND c = 0")
    s.execute(f"DELETE FROM {ks}.t WHERE k = 3")
    s.execute(f"DELETE v FROM {ks}.t WHERE k = 4 AND c = 2")
    s.execute(f"INSERT INTO {ks}.t (k, c, v) VALUES (5, 0, 'b') USING TTL 1")
    got_a = rows(s, f"SELECT k, c FROM {ks}.t WHERE v = 'a'")
    assert got_a == filtered(s, f"SELECT k, c FROM {ks}.t WHERE v = 'a'")
    assert len(got_a) == 60 - 1 - 1 - 3 - 1 - 1
    assert (1, 1) not in got_a and (5, 0) not in got_a
    assert sorted(rows(s, f"SELECT k, c FROM {ks}.t WHERE v = 'b'")) == [(1, 1), (5, 0)]
    time.sleep(2.2)
    assert rows(s, f"SELECT k, c FROM {ks}.t WHERE v = 'b'") == [(1, 1)]
    # Back to the first value: found again, once.
    s.execute(f"UPDATE {ks}.t SET v = 'a' WHERE k = 1 AND c = 1")
    assert rows(s, f"SELECT k, c FROM {ks}.t WHERE v = 'a' AND k = 1") == [(1, 0), (1, 1), (1, 2)]
    assert rows(s, f"SELECT k, c FROM {ks}.t WHERE v = 'b'") == []


def test_pages_of_an_indexed_query_are_the_scans_pages(served):
    srv, base, s = served
    ks = keyspace(s)
    s.execute(f"CREATE TABLE {ks}.t (k int, c int, v int, s int STATIC, PRIMARY KEY (k, c))")
    s.execute(f"CREATE INDEX ON {ks}.t (v)")
    s.execute(f"CREATE INDEX ON {ks}.t (s)")
    for k in range(40):
        s.execute(f"INSERT INTO {ks}.t (k, s) VALUES ({k}, {k % 4})")
        for c in range(5):
            s.execute(f"INSERT INTO {ks}.t (k, c, v) VALUES ({k}, {c}, {(k + c) % 3})")
    wait_built(base)
    for query in (f"SELECT k, c, v FROM {ks}.t WHERE v = 1",
                  f"SELECT k, c, s FROM {ks}.t WHERE s = 2"):
        want = filtered(s, query)
        assert want
        for size in (1, 3, 7, 1000):
            assert rows(s, query, fetch_size=size) == want, (query, size)


def test_collection_static_and_key_columns(served):
    srv, base, s = served
    ks = keyspace(s)
    s.execute(f"""CREATE TABLE {ks}.t (p1 int, p2 text, c int, st text STATIC,
        l list<int>, st_set set<text>, m map<text, int>, f frozen<set<int>>,
        PRIMARY KEY ((p1, p2), c))""")
    for ddl in ("values(l)", "st_set", "keys(m)", "entries(m)", "full(f)", "c", "p2", "st"):
        s.execute(f"CREATE INDEX ON {ks}.t ({ddl})")
    ins = s.prepare(f"INSERT INTO {ks}.t (p1, p2, c, st, l, st_set, m, f) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    for p1 in range(6):
        for c in range(4):
            s.execute(ins, (p1, f"k{p1 % 2}", c, f"s{p1 % 3}", [c, c + 1], {f"e{c}"},
                            {f"m{c}": c * 10}, {c, p1}))
    wait_built(base)
    s.execute(f"UPDATE {ks}.t SET l = l + [9], st_set = st_set + {{'extra'}}, m['late'] = 5 "
              f"WHERE p1 = 0 AND p2 = 'k0' AND c = 0")
    queries = [
        "SELECT p1, c FROM {t} WHERE l CONTAINS 2",
        "SELECT p1, c FROM {t} WHERE l CONTAINS 9",
        "SELECT p1, c FROM {t} WHERE st_set CONTAINS 'e3'",
        "SELECT p1, c FROM {t} WHERE st_set CONTAINS 'extra'",
        "SELECT p1, c FROM {t} WHERE m CONTAINS KEY 'm1'",
        "SELECT p1, c FROM {t} WHERE m CONTAINS KEY 'late'",
        "SELECT p1, c FROM {t} WHERE m['m2'] = 20",
        "SELECT p1, c FROM {t} WHERE m['m2'] = 21",
        "SELECT p1, c FROM {t} WHERE f = {{3, 1}}",
        "SELECT p1, c FROM {t} WHERE c = 2",
        "SELECT p1, c FROM {t} WHERE p2 = 'k1'",
        "SELECT p1, c, st FROM {t} WHERE st = 's2'",
    ]
    expected_sizes = [12, 1, 6, 1, 6, 1, 6, 0, 2, 6, 12, 8]
    for q, n in zip(queries, expected_sizes):
        same_as_scan(s, q.format(t=f"{ks}.t"), n)


def test_sai_ranges_and_intersections(served):
    srv, base, s = served
    ks = keyspace(s)
    s.execute(f"CREATE TABLE {ks}.t (k int, c int, n bigint, d double, t text, PRIMARY KEY (k, c))")
    s.execute(f"CREATE INDEX ON {ks}.t (n) USING 'sai'")
    s.execute(f"CREATE INDEX ON {ks}.t (d) USING 'sai'")
    s.execute(f"CREATE INDEX ON {ks}.t (t) USING 'sai'")
    for k in range(30):
        for c in range(4):
            s.execute(f"INSERT INTO {ks}.t (k, c, n, d, t) VALUES ({k}, {c}, {k * 4 + c - 60}, "
                      f"{(k - c) / 4}, 't{k % 5}')")
    wait_built(base)
    for where, n in [("n > 10 AND n <= 20", 10), ("n < -55", 5), ("n >= 55", 5),
                     ("d > 6.5", 6), ("n > 0 AND t = 't3'", 12),
                     ("d <= -0.5 AND n < -50", 3)]:
        same_as_scan(s, f"SELECT k, c FROM {ks}.t WHERE {where}", n, fetch_size=5)


def test_dropping_and_creating_an_index_again(served):
    srv, base, s = served
    ks = keyspace(s)
    s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v int)")
    s.execute(f"CREATE INDEX vi ON {ks}.t (v)")
    for k in range(50):
        s.execute(f"INSERT INTO {ks}.t (k, v) VALUES ({k}, {k % 5})")
    s.execute(f"DROP INDEX {ks}.vi")
    for k in range(50):
        s.execute(f"INSERT INTO {ks}.t (k, v) VALUES ({k}, {k % 7})")
    s.execute(f"CREATE INDEX vi ON {ks}.t (v)")
    wait_built(base)
    got = rows(s, f"SELECT k FROM {ks}.t WHERE v = 3")
    assert sorted(k for (k,) in got) == [k for k in range(50) if k % 7 == 3]
    s.execute(f"TRUNCATE {ks}.t")
    assert rows(s, f"SELECT k FROM {ks}.t WHERE v = 3") == []
    s.execute(f"INSERT INTO {ks}.t (k, v) VALUES (1, 3)")
    assert rows(s, f"SELECT k FROM {ks}.t WHERE v = 3") == [(1,)]


def test_entries_survive_a_kill_and_follow_splits(tmp_path):
    """Entries are in the rows' own batch: a SIGKILL keeps both or neither. A table that
    splits into many physical partitions keeps answering from the same entries."""
    config = "physical_partition_max_bytes = 262144\n"
    data = tmp_path / "data"
    port, mport = free_port(), free_port()
    srv, base = start(tmp_path, "kill", config=config, data=data, port=port, mport=mport)
    cluster = Cluster(contact_points=[srv.host], port=srv.port, connect_timeout=10)
    s = cluster.connect()
    ks = keyspace(s)
    s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v int, pad text)")
    s.execute(f"CREATE INDEX ON {ks}.t (v)")
    wait_built(base)
    ins = s.prepare(f"INSERT INTO {ks}.t (k, v, pad) VALUES (?, ?, ?)")
    pad = "x" * 300
    for k in range(4000):
        s.execute(ins, (k, k % 40, pad))
    cluster.shutdown()
    srv.kill()
    srv, base = start(tmp_path, "kill", config=config, data=data, port=port, mport=mport)
    cluster = Cluster(contact_points=[srv.host], port=srv.port, connect_timeout=10)
    s = cluster.connect()
    # Ready at once: the build's mark survived, no rebuild is needed.
    assert metric(base, "ringdb_index_builds_pending") == 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = rows(s, f"SELECT k FROM {ks}.t WHERE v = 11", fetch_size=17)
        assert sorted(k for (k,) in got) == list(range(11, 4000, 40))
        if parts_of(base) > 3:
            break
        time.sleep(0.5)
    assert parts_of(base) > 3, "the table did not split"
    got = rows(s, f"SELECT k FROM {ks}.t WHERE v = 12", fetch_size=9)
    assert got == filtered(s, f"SELECT k FROM {ks}.t WHERE v = 12")
    assert sorted(k for (k,) in got) == list(range(12, 4000, 40))
    cluster.shutdown()
    stop_and_check(srv)


def parts_of(base: str) -> float:
    """Physical partitions of every table on the node."""
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "ringdb_physical_partitions":
                total += s.value
    return total
