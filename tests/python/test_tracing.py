"""Query tracing as Cassandra's: a request sent with the tracing flag gets a tracing session id
back, and `system_traces.sessions` / `system_traces.events` hold its trace (the python driver's
trace API reads them, cqlsh's TRACING ON prints them); `trace_probability` traces requests
that did not ask, and `slow_query_log_ms` keeps the slow ones.
"""

from __future__ import annotations

import time

import pytest

from conftest import RingServer, make_cluster, new_keyspace, run_cqlsh, stop_and_check

pytestmark = pytest.mark.dml


@pytest.fixture(scope="module")
def ks(session):
    name = new_keyspace(session, "traced")
    session.execute(f"CREATE TABLE {name}.t (k int PRIMARY KEY, v text)")
    yield name
    session.execute(f"DROP KEYSPACE {name}")


def trace_ids(rs) -> list:
    """The tracing ids the response carried (the driver keeps none for a response without)."""
    return [t.trace_id for t in rs.response_future._query_traces or []]


def activities(trace) -> list[str]:
    return [e.description for e in trace.events]


def test_a_traced_query_returns_its_trace(server, session, ks):
    rs = session.execute(f"INSERT INTO {ks}.t (k, v) VALUES (1, 'one')", trace=True)
    trace = rs.get_query_trace(max_wait_sec=5)
    assert trace.trace_id == rs.response_future.get_query_trace_ids()[0]
    assert trace.request_type == "Execute CQL3 query"
    assert trace.coordinator == server.host
    assert trace.parameters["query"] == f"INSERT INTO {ks}.t (k, v) VALUES (1, 'one')"
    assert trace.parameters["consistency_level"] in ("LOCAL_ONE", "ONE")
    assert trace.duration.total_seconds() > 0
    steps = activities(trace)
    assert steps[0].startswith("Parsing INSERT"), steps
    assert any(s.startswith(f"Writing to {ks}.t at token") and "physical partition" in s for s in steps), steps
    assert steps[-1] == "Request complete", steps
    elapsed = [e.source_elapsed for e in trace.events]
    assert elapsed == sorted(elapsed)
    assert all(str(e.source) == server.host for e in trace.events)

    select = session.prepare(f"SELECT v FROM {ks}.t WHERE k = ?")
    rs = session.execute(select, (1,), trace=True)
    assert rs.one().v == "one"
    trace = rs.get_query_trace(max_wait_sec=5)
    assert trace.request_type == "Execute CQL3 prepared query"
    steps = activities(trace)
    assert steps[0] == f"Executing prepared statement SELECT v FROM {ks}.t WHERE k = ?", steps
    assert any(s.startswith(f"Reading {ks}.t at token") for s in steps), steps
    assert any(s.startswith("Read 1 live rows") for s in steps), steps


def test_an_untraced_query_leaves_no_trace(session, ks):
    rs = session.execute(f"SELECT * FROM {ks}.t WHERE k = 1")
    assert trace_ids(rs) == []


def test_cqlsh_tracing_on_prints_the_trace(server, ks, tmp_path):
    out = run_cqlsh(server, "-e", f"TRACING ON; SELECT * FROM {ks}.t WHERE k = 1;",
                    home=tmp_path / "cqlsh").stdout
    assert "Tracing session:" in out, out
    assert f"Reading {ks}.t at token" in out, out
    assert "Request complete" in out, out


def start_with(request, tmp_path, settings: str) -> RingServer:
    cfg = tmp_path / "ringdb.toml"
    cfg.write_text(settings)
    return RingServer(tmp_path / "data", tmp_path / "stderr.log", request.node.nodeid,
                      extra_args=("--config", str(cfg), "--metrics-listen", "")).start()


def sessions_rows(session) -> list:
    return list(session.execute("SELECT session_id, request, parameters, duration FROM system_traces.sessions"))


def test_trace_probability_traces_requests_that_did_not_ask(request, tmp_path):
    srv = start_with(request, tmp_path, "trace_probability = 1.0\n")
    cluster = make_cluster(srv)
    try:
        s = cluster.connect()
        before = len(sessions_rows(s))
        rs = s.execute("SELECT release_version FROM system.local")
        # The client did not ask: its response carries no tracing id, but the trace is kept.
        assert trace_ids(rs) == []
        rows = sessions_rows(s)
        assert len(rows) > before
        assert any(r.parameters.get("query") == "SELECT release_version FROM system.local" for r in rows)
        events = list(s.execute("SELECT activity FROM system_traces.events"))
        assert any(e.activity == "Request complete" for e in events)
    finally:
        cluster.shutdown()
        stop_and_check(srv)


def test_slow_queries_are_kept_in_the_sessions_table(request, tmp_path):
    srv = start_with(request, tmp_path, "slow_query_log_ms = 1\n")
    cluster = make_cluster(srv)
    try:
        s = cluster.connect()
        ks = new_keyspace(s, "slow")
        s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
        insert = s.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
        for k in range(500):
            s.execute(insert, (k, "x" * 100))
        # An unpaged scan of 500 rows takes well over a millisecond.
        from cassandra.query import SimpleStatement
        scan = f"SELECT * FROM {ks}.t"
        assert len(list(s.execute(SimpleStatement(scan, fetch_size=None)))) == 500
        slow = [r for r in sessions_rows(s) if r.parameters.get("query") == scan]
        assert slow, "the scan is kept as a slow query"
        assert slow[0].duration >= 1000 and slow[0].request == "Execute CQL3 query"
        # A slow query that was not traced keeps its session row only.
        ids = {r.session_id for r in slow}
        events = [e for e in s.execute("SELECT session_id FROM system_traces.events") if e.session_id in ids]
        assert events == []
    finally:
        cluster.shutdown()
        stop_and_check(srv)
