"""The schema survives a restart on the same data directory: after SIGTERM and after SIGKILL."""

from __future__ import annotations

import signal
import time

import pytest

from conftest import RingServer, make_cluster, stop_and_check

SYSTEM_KEYSPACES = {"system", "system_schema", "system_auth", "system_distributed", "system_traces",
                    "system_views", "system_virtual_schema"}

SCHEMA = [
    "CREATE KEYSPACE p_simple WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE KEYSPACE p_nts WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3} "
    "AND durable_writes = false",
    "CREATE TYPE p_simple.addr (street text, zip int)",
    "CREATE TYPE p_simple.person (name text, home frozen<addr>)",
    "CREATE TABLE p_simple.alltypes (k int PRIMARY KEY, a ascii, b bigint, bl blob, bo boolean, d date, "
    "de decimal, do double, du duration, f float, i inet, sm smallint, t text, ti time, ts timestamp, "
    "tu timeuuid, tt tinyint, u uuid, vc varchar, vi varint, l list<int>, s set<text>, m map<text, int>, "
    "fl frozen<list<int>>, tp tuple<int, text>, ud frozen<addr>, pe person)",
    "CREATE TABLE p_simple.counters (k text PRIMARY KEY, hits counter)",
    "CREATE TABLE p_nts.events (pk int, c1 text, c2 timeuuid, s int STATIC, v text, PRIMARY KEY (pk, c1, c2)) "
    "WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC) AND comment = 'persisted' AND default_time_to_live = 60 "
    "AND gc_grace_seconds = 99",
    "CREATE TABLE p_nts.comp (p1 text, p2 int, c1 bigint, v map<text, text>, PRIMARY KEY ((p1, p2), c1))",
    "CREATE TABLE p_nts.dropped_later (k int PRIMARY KEY)",
    "ALTER TABLE p_nts.comp ADD extra set<int>",
    "ALTER TABLE p_nts.comp DROP v",
    "ALTER TABLE p_nts.comp RENAME c1 TO c1_renamed",
    "ALTER TYPE p_simple.addr ADD country text",
    "DROP TABLE p_nts.dropped_later",
]


def snapshot(srv: RingServer) -> dict:
    """Everything the driver knows about the user schema, plus the node identity."""
    c = make_cluster(srv)
    try:
        s = c.connect()
        local = s.execute("SELECT host_id, tokens, schema_version, cluster_name FROM system.local").one()
        user = {name: ks.export_as_string() for name, ks in c.metadata.keyspaces.items()
                if name not in SYSTEM_KEYSPACES}
        ids = {(r.keyspace_name, r.table_name): r.id for r in s.execute(
            "SELECT keyspace_name, table_name, id FROM system_schema.tables")
            if r.keyspace_name not in SYSTEM_KEYSPACES}
        return {"host_id": local.host_id, "table_ids": ids, "tokens": set(local.tokens), "cluster_name": local.cluster_name,
                "schema_version": local.schema_version, "keyspaces": user}
    finally:
        c.shutdown()


def apply(srv: RingServer, statements) -> None:
    c = make_cluster(srv)
    try:
        s = c.connect()
        for stmt in statements:
            s.execute(stmt)
    finally:
        c.shutdown()


def restart(srv: RingServer, sig: int) -> float:
    t0 = time.monotonic()
    if sig == signal.SIGTERM:
        stop_and_check(srv)
    else:
        srv.stop(sig)
    srv.start()
    return time.monotonic() - t0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_schema_survives_restart(fresh_server, sig):
    apply(fresh_server, SCHEMA)
    before = snapshot(fresh_server)
    assert set(before["keyspaces"]) == {"p_simple", "p_nts"}
    assert "dropped_later" not in before["keyspaces"]["p_nts"]
    took = restart(fresh_server, sig)
    after = snapshot(fresh_server)
    assert after["keyspaces"] == before["keyspaces"]
    assert after["table_ids"] == before["table_ids"], "table ids must survive a restart"
    assert after["host_id"] == before["host_id"], "host_id must be persisted"
    assert after["tokens"] == before["tokens"], "tokens must be stable across restarts"
    assert after["cluster_name"] == before["cluster_name"]
    assert after["schema_version"] == before["schema_version"], "same schema, same schema_version"
    assert fresh_server.startup_seconds < 10, f"restart took {fresh_server.startup_seconds:.1f}s to serve"
    # still fully usable after the restart: more DDL, then another restart
    apply(fresh_server, ["CREATE TABLE p_simple.after_restart (k int PRIMARY KEY, v text)",
                         "DROP TABLE p_simple.counters"])
    middle = snapshot(fresh_server)
    assert middle["schema_version"] != after["schema_version"]
    restart(fresh_server, sig)
    final = snapshot(fresh_server)
    assert final["keyspaces"] == middle["keyspaces"]
    assert "after_restart" in final["keyspaces"]["p_simple"]
    assert "CREATE TABLE p_simple.counters" not in final["keyspaces"]["p_simple"]
    print(f"restart ({'SIGTERM' if sig == signal.SIGTERM else 'SIGKILL'}) to serving: {took:.2f}s")


def test_sigkill_right_after_ddl(fresh_server):
    """A DDL that got its RESULT is durable even if the process is killed immediately."""
    c = make_cluster(fresh_server)
    try:
        s = c.connect()
        s.execute("CREATE KEYSPACE k_fast WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE k_fast.t (k int PRIMARY KEY, v text)")
    finally:
        c.shutdown()
    fresh_server.stop(signal.SIGKILL)
    fresh_server.start()
    after = snapshot(fresh_server)
    assert "k_fast" in after["keyspaces"]
    assert "CREATE TABLE k_fast.t" in after["keyspaces"]["k_fast"]


def test_sigint_also_exits_cleanly(fresh_server):
    rc = fresh_server.stop(signal.SIGINT)
    assert rc == 0, f"exit code after SIGINT: {rc}\n{fresh_server.log_tail()}"
    fresh_server.start()


def test_sigterm_with_open_connections(fresh_server):
    """Open client connections must not keep the server from exiting within seconds."""
    c = make_cluster(fresh_server)
    try:
        c.connect()
        t0 = time.monotonic()
        stop_and_check(fresh_server)
        assert time.monotonic() - t0 < 10
    finally:
        c.shutdown()
    fresh_server.start()
