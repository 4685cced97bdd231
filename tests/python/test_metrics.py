"""The Prometheus endpoint (`metrics_listen`), read as Prometheus reads it: the text is parsed by
the official Python client's parser, and the series are checked against a known workload run
through the python driver (request counts by kind and their latency histograms, errors by
code, the CQL advisor's bad-query counters, request units and throttled requests per table,
each table's bytes and physical partitions, the disk).
"""

from __future__ import annotations

import re
import struct
import subprocess
import urllib.request

import pytest
from cassandra import InvalidRequest
from cassandra.cluster import EXEC_PROFILE_DEFAULT, ExecutionProfile
from cassandra.policies import FallthroughRetryPolicy
from cassandra.protocol import OverloadedErrorMessage, SyntaxException
from cassandra.query import SimpleStatement
from prometheus_client.parser import text_string_to_metric_families

from conftest import RingServer, free_port, make_cluster, new_keyspace, ringdb_bin, stop_and_check


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """Every sample of the endpoint by (name, sorted labels)."""
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="module")
def served(metrics_served):
    """The module's server and its `/metrics` URL."""
    srv, base = metrics_served
    return srv, base + "/metrics"


@pytest.fixture(scope="module")
def session(served):
    srv, _ = served
    profile = ExecutionProfile(retry_policy=FallthroughRetryPolicy())
    cluster = make_cluster(srv, execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    try:
        yield cluster.connect()
    finally:
        cluster.shutdown()


def test_a_known_workload_shows_in_the_series(served, session):
    _, url = served
    ks = new_keyspace(session, "metrics")
    session.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
    insert = session.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
    select = session.prepare(f"SELECT v FROM {ks}.t WHERE k = ?")
    before = scrape(url)

    charges = 0.0
    for k in range(40):  # 40 prepared writes
        r = session.execute(insert, (k, "x" * 100))
        charges += struct.unpack(">d", r.response_future.custom_payload["RequestCharge"])[0]
    for k in range(40, 45):  # 5 writes sent as QUERY
        session.execute(f"INSERT INTO {ks}.t (k, v) VALUES ({k}, 'q')")
    for k in range(20):  # 20 prepared reads
        assert session.execute(select, (k,)).one().v == "x" * 100
    # An unpaged SELECT with ALLOW FILTERING, sent as QUERY.
    unpaged = SimpleStatement(f"SELECT k FROM {ks}.t WHERE v = 'q' ALLOW FILTERING", fetch_size=None)
    assert sorted(r.k for r in session.execute(unpaged)) == list(range(40, 45))
    with pytest.raises(SyntaxException):
        session.execute(f"SELEKT * FROM {ks}.t")
    with pytest.raises(InvalidRequest):
        session.execute(f"SELECT * FROM {ks}.nosuchtable")
    after = scrape(url)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("ringdb_cql_requests_total", kind="write") == 45
    assert delta("ringdb_cql_request_latency_seconds_count", kind="write") == 45
    assert delta("ringdb_cql_request_latency_seconds_sum", kind="write") > 0
    # The histogram's +Inf bucket holds every observation.
    assert delta("ringdb_cql_request_latency_seconds_bucket", kind="write", le="+Inf") == 45
    # Reads: 20 prepared, one SELECT ... ALLOW FILTERING, one refused (the driver's own
    # metadata queries may add reads of the system tables).
    assert delta("ringdb_cql_requests_total", kind="read") >= 22
    assert delta("ringdb_cql_errors_total", code="0x2000", error="syntax_error") == 1
    assert delta("ringdb_cql_errors_total", code="0x2200", error="invalid") == 1
    # The advisor's counters: 5 writes and 2 reads unprepared, one unpaged and filtered read.
    assert delta("ringdb_cql_unprepared_queries_total") == 7
    assert delta("ringdb_cql_unpaged_select_queries_total") == 1
    assert delta("ringdb_cql_filtered_read_requests_total") == 1
    # Request units: what the responses reported (prepared writes of 100 bytes: 5 RU each).
    assert charges == 40 * 5.0
    assert delta("ringdb_request_units_total", keyspace=ks, table="t") >= charges + 5 * 5.0
    # The store: the table's bytes and physical partitions, the disk.
    parts = value(after, "ringdb_physical_partitions", keyspace=ks, table="t")
    assert parts >= 1
    table_bytes = value(after, "ringdb_table_bytes", keyspace=ks, table="t")
    assert table_bytes >= 45 * 4
    by_partition = sum(v for (name, labels), v in after.items()
                       if name == "ringdb_physical_partition_bytes"
                       and ("keyspace", ks) in labels and ("table", "t") in labels)
    assert by_partition == table_bytes
    assert value(after, "ringdb_disk_free_bytes") > 0
    assert value(after, "ringdb_disk_used_bytes") > 0
    assert value(after, "ringdb_cql_connections") >= 1
    # A dropped table's series go.
    session.execute(f"DROP TABLE {ks}.t")
    dropped = scrape(url)
    assert not [k for k in dropped if ("keyspace", ks) in k[1]], "series of a dropped table"


def test_throttled_requests_are_counted_per_table(served, session):
    _, url = served
    ks = new_keyspace(session, "throttle")
    session.execute(f"CREATE TABLE {ks}.hot (k int PRIMARY KEY, v text) "
                    "WITH cosmosdb_provisioned_throughput = 400")
    insert = session.prepare(f"INSERT INTO {ks}.hot (k, v) VALUES (?, 'v')")
    before = scrape(url)
    refused = 0
    for k in range(400):
        try:
            session.execute(insert, (k,))
        except OverloadedErrorMessage:
            refused += 1
    after = scrape(url)
    assert refused > 0
    got = (value(after, "ringdb_throttled_requests_total", keyspace=ks, table="hot")
           - value(before, "ringdb_throttled_requests_total", keyspace=ks, table="hot"))
    assert got == refused
    overloaded = (value(after, "ringdb_cql_errors_total", code="0x1001", error="overloaded")
                  - value(before, "ringdb_cql_errors_total", code="0x1001", error="overloaded"))
    assert overloaded == refused


def test_an_invalid_metrics_address_is_refused_at_startup(tmp_path):
    r = subprocess.run([str(ringdb_bin()), "--data-dir", str(tmp_path / "d"),
                        "--listen", f"127.0.0.1:{free_port()}", "--metrics-listen", "nonsense"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "metrics_listen" in r.stderr + r.stdout, r.stderr


def test_ringdb_flush_and_compact_through_the_metrics_address(served, session):
    srv, url = served
    metrics_addr = url.split("/")[2]
    ks = new_keyspace(session, "ops")
    session.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
    insert = session.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
    for k in range(300):
        session.execute(insert, (k, "m" * 300))
    before = value(scrape(url), "ringdb_memtable_bytes")
    assert before >= 300 * 300

    def ringdb(*args):
        return subprocess.run([str(ringdb_bin()), *args, "--metrics", metrics_addr],
                              capture_output=True, text=True, timeout=120)

    flushed = ringdb("flush", f"{ks}.t")
    assert flushed.returncode == 0, flushed.stderr
    assert f"{ks}.t: flushed" in flushed.stdout
    assert value(scrape(url), "ringdb_memtable_bytes") < before
    # Flushed, the table's rows are on disk: system_views.disk_usage counts them.
    usage = session.execute("SELECT mebibytes FROM system_views.disk_usage "
                            "WHERE keyspace_name = %s AND table_name = 't'", (ks,)).one()
    assert usage.mebibytes >= 1
    # A second flushed run, so the compaction has two to merge.
    for k in range(300, 400):
        session.execute(insert, (k, "m" * 300))
    assert ringdb("flush", f"{ks}.t").returncode == 0
    compacted_before = value(scrape(url), "ringdb_compaction_bytes_total")
    compacted = ringdb("compact", ks)
    assert compacted.returncode == 0, compacted.stderr
    assert f"{ks}.t: compacted" in compacted.stdout
    # Without a terminal the progress bar is a line per step: partitions compacted of all.
    steps = re.findall(r"compact: (\d+)/(\d+) physical partitions", compacted.stderr)
    assert steps and steps[-1][0] == steps[-1][1] and int(steps[-1][1]) >= 1, compacted.stderr
    # The compaction read every row's bytes at least.
    read = value(scrape(url), "ringdb_compaction_bytes_total") - compacted_before
    assert read >= 400 * 300, read
    # The rows are all there after both.
    assert session.execute(f"SELECT count(*) FROM {ks}.t").one()[0] == 400
    missing = ringdb("flush", f"{ks}.nosuchtable")
    assert missing.returncode != 0 and "no table matches" in missing.stderr, missing


def test_snapshot_and_restore_round_trip_a_table(request, tmp_path):
    port = free_port()
    srv = RingServer(tmp_path / "data", tmp_path / "stderr.log", request.node.nodeid,
                     extra_args=("--metrics-listen", f"127.0.0.1:{port}")).start()
    cluster = make_cluster(srv)
    try:
        s = cluster.connect()
        s.execute("CREATE KEYSPACE snap WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE snap.t (k int PRIMARY KEY, v text)")
        insert = s.prepare("INSERT INTO snap.t (k, v) VALUES (?, ?)")
        for k in range(100):
            s.execute(insert, (k, f"before-{k}"))
        taken = subprocess.run([str(ringdb_bin()), "snapshot", "first", "--metrics", f"127.0.0.1:{port}"],
                               capture_output=True, text=True, timeout=120)
        assert taken.returncode == 0, taken.stderr
        assert "snapshot taken" in taken.stdout
        files = re.findall(r"snapshot: (\d+)/(\d+) files", taken.stderr)
        assert files and files[-1][0] == files[-1][1], taken.stderr
        again = subprocess.run([str(ringdb_bin()), "snapshot", "first", "--metrics", f"127.0.0.1:{port}"],
                               capture_output=True, text=True, timeout=120)
        assert again.returncode != 0 and "exists already" in again.stderr
        # After the snapshot: more rows, changed rows, deleted rows.
        for k in range(100, 150):
            s.execute(insert, (k, "after"))
        for k in range(10):
            s.execute(insert, (k, "changed"))
        s.execute("DELETE FROM snap.t WHERE k = 50")
        assert s.execute("SELECT count(*) FROM snap.t").one()[0] == 149
    finally:
        cluster.shutdown()
    stop_and_check(srv)
    restored = subprocess.run([str(ringdb_bin()), "restore", "first", "--data-dir", str(srv.data_dir)],
                              capture_output=True, text=True, timeout=120)
    assert restored.returncode == 0, restored.stderr
    srv.start()
    cluster = make_cluster(srv)
    try:
        s = cluster.connect()
        rows = {r.k: r.v for r in s.execute("SELECT k, v FROM snap.t")}
        assert rows == {k: f"before-{k}" for k in range(100)}
    finally:
        cluster.shutdown()
        stop_and_check(srv)
    missing = subprocess.run([str(ringdb_bin()), "restore", "nosuch", "--data-dir", str(srv.data_dir)],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "no snapshot named" in missing.stderr
