"""INSERT / SELECT / UPDATE / DELETE on user tables through the python driver.

All tests here carry the `dml` marker (INSERT/SELECT on user tables); they run with the rest:
    RINGDB_BIN=target/debug/ringdb .venv/bin/pytest tests/python/test_dml.py -q
"""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import signal
import uuid

import pytest
from cassandra import InvalidRequest
from cassandra.query import BatchStatement, SimpleStatement
from cassandra.util import Date, Duration, Time, uuid_from_time

from conftest import make_cluster, stop_and_check

pytestmark = pytest.mark.dml


def test_insert_into_unknown_table_is_invalid(session, ks):
    with pytest.raises(InvalidRequest):
        session.execute(f"INSERT INTO {ks}.nosuchtable (k) VALUES (1)")


def test_all_types_round_trip(session, ks):
    session.execute(f"CREATE TYPE {ks}.addr (street text, zip int)")
    session.execute(f"""CREATE TABLE {ks}.rt (k int PRIMARY KEY, a ascii, b bigint, bl blob, bo boolean,
        d date, de decimal, do double, du duration, f float, i inet, i6 inet, sm smallint, t text, ti time,
        ts timestamp, tu timeuuid, tt tinyint, u uuid, vc varchar, vi varint, l list<int>, s set<text>,
        m map<text, int>, tp tuple<int, text>, ud frozen<addr>)""")
    values = {
        "a": "ascii!", "b": -(2 ** 62), "bl": b"\x00\xff\x10", "bo": True, "d": Date(datetime.date(2024, 2, 29)),
        "de": decimal.Decimal("-12345.678900"), "do": 3.141592653589793, "du": Duration(1, 2, 3_000_000_000),
        "f": 1.5, "i": "10.1.2.3", "i6": "2001:db8::1", "sm": -32768, "t": "naïve café 😀", "ti": Time(3_600_000_000_001),
        "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 678000), "tu": uuid_from_time(1700000000.5),
        "tt": -128, "u": uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"), "vc": "varchar",
        "vi": 12345678901234567890123456789, "l": [3, 1, 2], "s": {"b", "a"}, "m": {"z": 1, "a": 2},
        "tp": (7, "seven"),
    }
    cols = ", ".join(["k", *values])
    marks = ", ".join(["?"] * (len(values) + 1))
    # prepared: values go over the wire in their binary encoding
    session.execute(session.prepare(f"INSERT INTO {ks}.rt ({cols}) VALUES ({marks})"), [1, *values.values()])
    # and the same row once more through CQL literals (python-driver formats a tuple as a list
    # literal, which Cassandra rejects for tuple columns, so the tuple is written literally)
    lit = dict(values)
    del lit["tp"]
    lit_cols = ", ".join(["k", *lit, "tp"])
    lit_marks = ", ".join(["%s"] * (len(lit) + 1))
    session.execute(f"INSERT INTO {ks}.rt ({lit_cols}) VALUES ({lit_marks}, (7, 'seven'))", [2, *lit.values()])
    session.execute(f"UPDATE {ks}.rt SET ud = {{street: 'Main', zip: 12345}} WHERE k IN (1, 2)")
    for k in (1, 2):
        check_round_trip_row(session.execute(f"SELECT * FROM {ks}.rt WHERE k = %s", [k]).one(), values)


def check_round_trip_row(row, values):
    assert row.a == "ascii!" and row.b == -(2 ** 62) and row.bl == b"\x00\xff\x10" and row.bo is True
    assert row.d == values["d"] and row.de == values["de"] and row.do == values["do"]
    assert row.du == values["du"] and row.f == 1.5
    assert ipaddress.ip_address(row.i) == ipaddress.ip_address("10.1.2.3")
    assert ipaddress.ip_address(row.i6) == ipaddress.ip_address("2001:db8::1")
    assert row.sm == -32768 and row.t == values["t"] and row.ti == values["ti"] and row.ts == values["ts"]
    assert row.tu == values["tu"] and row.tt == -128 and row.u == values["u"] and row.vc == "varchar"
    assert row.vi == values["vi"] and row.l == [3, 1, 2]
    assert list(row.s) == ["a", "b"]  # sets come back sorted
    assert list(row.m.items()) == [("a", 2), ("z", 1)]  # maps too
    assert tuple(row.tp) == (7, "seven")
    assert row.ud.street == "Main" and row.ud.zip == 12345


def test_clustering_order_and_static(session, ks):
    session.execute(f"CREATE TABLE {ks}.co (pk int, c1 text, c2 int, s text STATIC, v int, "
                    "PRIMARY KEY (pk, c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)")
    for c1 in ("a", "Z", "b"):
        for c2 in (3, -1, 2):
            session.execute(f"INSERT INTO {ks}.co (pk, c1, c2, v) VALUES (1, %s, %s, %s)", (c1, c2, c2 * 10))
    session.execute(f"UPDATE {ks}.co SET s = 'shared' WHERE pk = 1")
    rows = list(session.execute(f"SELECT c1, c2, s FROM {ks}.co WHERE pk = 1"))
    # text compares by UTF-8 bytes: 'Z' < 'a' < 'b'; DESC reverses that
    assert [(r.c1, r.c2) for r in rows] == [(c1, c2) for c1 in ("b", "a", "Z") for c2 in (-1, 2, 3)]
    assert {r.s for r in rows} == {"shared"}
    rows = list(session.execute(f"SELECT c2 FROM {ks}.co WHERE pk = 1 AND c1 = 'a' AND c2 > -1"))
    assert [r.c2 for r in rows] == [2, 3]


def test_prepared_statements_and_paging(session, ks):
    session.execute(f"CREATE TABLE {ks}.pg (p1 text, p2 int, c int, v text, PRIMARY KEY ((p1, p2), c))")
    ins = session.prepare(f"INSERT INTO {ks}.pg (p1, p2, c, v) VALUES (?, ?, ?, ?)")
    assert ins.routing_key_indexes == [0, 1]
    for c in range(250):
        session.execute(ins, ("p", 1, c, f"v{c}"))
    sel = session.prepare(f"SELECT c, v FROM {ks}.pg WHERE p1 = ? AND p2 = ?")
    stmt = sel.bind(("p", 1))
    stmt.fetch_size = 40
    rs = session.execute(stmt)
    assert len(rs.current_rows) <= 40
    assert [r.c for r in rs] == list(range(250))


def test_counters(session, ks):
    session.execute(f"CREATE TABLE {ks}.cnt (k text PRIMARY KEY, n counter)")
    for _ in range(5):
        session.execute(f"UPDATE {ks}.cnt SET n = n + 2 WHERE k = 'a'")
    session.execute(f"UPDATE {ks}.cnt SET n = n - 3 WHERE k = 'a'")
    assert session.execute(f"SELECT n FROM {ks}.cnt WHERE k = 'a'").one().n == 7
    # Cassandra types the increment's bind marker as counter, and prepared increments work.
    inc = session.prepare(f"UPDATE {ks}.cnt SET n = n + ? WHERE k = ?")
    assert inc.column_metadata[0].type.typename == "counter"
    session.execute(inc, (10, "a"))
    dec = session.prepare(f"UPDATE {ks}.cnt SET n = n - ? WHERE k = ?")
    session.execute(dec, (4, "a"))
    assert session.execute(f"SELECT n FROM {ks}.cnt WHERE k = 'a'").one().n == 13


def test_lwt(session, ks):
    session.execute(f"CREATE TABLE {ks}.lwt (k int PRIMARY KEY, v text)")
    r = session.execute(f"INSERT INTO {ks}.lwt (k, v) VALUES (1, 'a') IF NOT EXISTS").one()
    assert r[0] is True
    r = session.execute(f"INSERT INTO {ks}.lwt (k, v) VALUES (1, 'b') IF NOT EXISTS").one()
    assert r[0] is False and r.v == "a"
    r = session.execute(f"UPDATE {ks}.lwt SET v = 'c' WHERE k = 1 IF v = 'a'").one()
    assert r[0] is True


def test_batch_delete_truncate(session, ks):
    session.execute(f"CREATE TABLE {ks}.bt (k int, c int, v int, PRIMARY KEY (k, c))")
    b = BatchStatement()
    for c in range(10):
        b.add(SimpleStatement(f"INSERT INTO {ks}.bt (k, c, v) VALUES (1, %s, %s)"), (c, c))
    session.execute(b)
    assert session.execute(f"SELECT count(*) FROM {ks}.bt WHERE k = 1").one()[0] == 10
    session.execute(f"DELETE FROM {ks}.bt WHERE k = 1 AND c = 3")
    session.execute(f"DELETE FROM {ks}.bt WHERE k = 1 AND c >= 7")
    assert [r.c for r in session.execute(f"SELECT c FROM {ks}.bt WHERE k = 1")] == [0, 1, 2, 4, 5, 6]
    session.execute(f"TRUNCATE {ks}.bt")
    assert list(session.execute(f"SELECT * FROM {ks}.bt")) == []


def test_data_survives_restart(fresh_server):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        c = make_cluster(fresh_server)
        try:
            s = c.connect()
            s.execute("CREATE KEYSPACE IF NOT EXISTS d WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
            s.execute("CREATE TABLE IF NOT EXISTS d.t (k int PRIMARY KEY, v text)")
            for k in range(100):
                s.execute("INSERT INTO d.t (k, v) VALUES (%s, %s)", (k, f"{sig}-{k}"))
        finally:
            c.shutdown()
        if sig == signal.SIGTERM:
            stop_and_check(fresh_server)
        else:
            fresh_server.stop(sig)
        fresh_server.start()
        c = make_cluster(fresh_server)
        try:
            s = c.connect()
            rows = {r.k: r.v for r in s.execute("SELECT k, v FROM d.t")}
            assert rows == {k: f"{sig}-{k}" for k in range(100)}
        finally:
            c.shutdown()


def test_now_and_uuid_are_evaluated_at_every_execution(session, ks):
    # Cassandra evaluates non-deterministic functions (TimeFcts.now, UuidFcts.uuid, ...) per
    # execution: a prepared statement, a batch or a reused query text never repeats a value.
    import time as _time
    session.execute(f"CREATE TABLE {ks}.ev (k int, u timeuuid, t timestamp, v uuid, "
                    "l list<timeuuid>, PRIMARY KEY (k, u))")
    ins = session.prepare(f"INSERT INTO {ks}.ev (k, u, t, v, l) "
                          "VALUES (?, now(), toTimestamp(now()), uuid(), [now()])")
    for _ in range(5):
        session.execute(ins, (1,))
        _time.sleep(0.002)
    session.execute(f"BEGIN BATCH INSERT INTO {ks}.ev (k, u) VALUES (2, now()); "
                    f"INSERT INTO {ks}.ev (k, u) VALUES (2, now()); APPLY BATCH")
    for _ in range(2):
        session.execute(f"UPDATE {ks}.ev SET v = uuid() WHERE k = 3 AND u = now()")
    rows = list(session.execute(f"SELECT k, u, t, v, l FROM {ks}.ev"))
    by_k = {k: [r for r in rows if r.k == k] for k in (1, 2, 3)}
    assert [len(by_k[k]) for k in (1, 2, 3)] == [5, 2, 2]
    ones = by_k[1]
    assert len({r.v for r in ones}) == 5
    assert len({r.l[0] for r in ones}) == 5
    assert len({r.t for r in ones}) > 1
    assert len({r.v for r in by_k[3]}) == 2
    # A restriction on now() moves with the clock too.
    before = session.prepare(f"SELECT u FROM {ks}.ev WHERE k = 1 AND u < now()")
    assert len(list(session.execute(before))) == 5
    session.execute(ins, (1,))
    _time.sleep(0.01)
    assert len(list(session.execute(before))) == 6
