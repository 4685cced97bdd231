"""`ringdb cleanup` (Cassandra's `nodetool cleanup`) on a node that kept the rows of the
replicas moved away from it (`clear_moved_replicas = false`, as Cassandra keeps a range's data
after it moves). Node 1 is loaded alone; node 2 joins and the balancer moves half of the RF 1
table's groups to it. Node 1 still stores every row until the cleanup, which removes exactly
the ranges it no longer holds, with its progress shown; every row reads back before and after.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time

import pytest

from conftest import RingServer, STOP_TIMEOUT, assert_no_panics, ringdb_bin
from test_cluster import cluster_node, connect, port_free_on_all, scrape, wait_formed

pytestmark = pytest.mark.dml

ROWS = 600
VALUE = b"v" * 1024
BALANCE_TIMEOUT = 90.0
# How long the placement must stay the same before the cleanup runs.
SETTLED = 4.0


def table_bytes(node: RingServer) -> float:
    """The bytes node 1's store holds of clean.t (its physical partitions, whoever owns them)."""
    return scrape(node).get(("ringdb_table_bytes", (("keyspace", "clean"), ("table", "t"))), 0.0)


def groups_by_node(session) -> dict[str, int]:
    rows = session.execute("SELECT native_address, groups_held FROM system_views.cluster_nodes")
    return {r.native_address: r.groups_held for r in rows}


def read_all(session) -> int:
    from cassandra import ConsistencyLevel
    read = session.prepare("SELECT v FROM clean.t WHERE k = ?")
    read.consistency_level = ConsistencyLevel.ONE
    return sum(1 for k in range(ROWS) if (row := session.execute(read, (k,)).one()) and row.v == VALUE)


def report(stdout: str) -> tuple[int, int, int]:
    """(ranges checked, ranges removed, bytes removed) from `ringdb cleanup`'s report."""
    m = re.search(r"(\d+) ranges checked, (\d+) held by other nodes removed \((\d+) bytes\)", stdout)
    assert m, stdout
    return int(m[1]), int(m[2]), int(m[3])


def cleanup(node: RingServer, metrics: int) -> subprocess.CompletedProcess:
    return subprocess.run([str(ringdb_bin()), "cleanup", "--metrics", f"{node.host}:{metrics}"],
                          capture_output=True, text=True, timeout=120)


def test_cleanup_removes_the_rows_of_replicas_moved_away(request, tmp_path):
    from cassandra import ConsistencyLevel
    native = port_free_on_all(set())
    internode = port_free_on_all({native})
    metrics = port_free_on_all({native, internode})
    nodes: list[RingServer] = []

    def start(i: int) -> RingServer:
        node = cluster_node(tmp_path, i, (native, internode, metrics), request.node.nodeid,
                            "clear_moved_replicas = false\n")
        nodes.append(node)
        return node.start()

    try:
        first = start(1)
        c = connect(first)
        try:
            s = c.connect()
            s.execute("CREATE KEYSPACE clean WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            s.execute("CREATE TABLE clean.t (k int PRIMARY KEY, v blob)")
            insert = s.prepare("INSERT INTO clean.t (k, v) VALUES (?, ?)")
            insert.consistency_level = ConsistencyLevel.ONE
            for k in range(ROWS):
                s.execute(insert, (k, VALUE))
        finally:
            c.shutdown()
        alone = table_bytes(first)
        assert alone >= ROWS * len(VALUE), alone

        start(2)
        wait_formed(nodes)
        c = connect(first)
        try:
            s = c.connect()
            deadline = time.monotonic() + BALANCE_TIMEOUT
            # Balanced and settled: three groups each, no move, and the same placement for
            # SETTLED seconds (after the counts are even, the balancer may still swap a big
            # group for a small one to even the bytes; a move during the cleanup would change
            # node 1's bytes beside what the cleanup removes).
            settled_since, last = None, None
            while True:
                held = groups_by_node(s)
                moving = list(s.execute("SELECT group_id FROM system_views.moves"))
                placement = sorted((r.id, tuple(r.replicas or ())) for r in s.execute(
                    "SELECT id, replicas FROM system_views.physical_partitions "
                    "WHERE keyspace_name = 'clean'"))
                if sorted(held.values()) == [3, 3] and not moving:
                    if placement != last:
                        settled_since, last = time.monotonic(), placement
                    elif time.monotonic() - settled_since >= SETTLED:
                        break
                else:
                    settled_since, last = None, None
                assert time.monotonic() < deadline, f"not balanced: {held}, moving {moving}"
                time.sleep(0.25)
            # Half the groups left node 1, but it kept their rows.
            kept = table_bytes(first)
            assert kept >= 0.95 * alone, (kept, alone)
            assert read_all(s) == ROWS

            done = cleanup(first, metrics)
            assert done.returncode == 0, done.stderr
            checked, removed, removed_bytes = report(done.stdout)
            # Every range of the table was looked at, the ones node 2 holds removed, with
            # about the bytes node 1 lost.
            assert checked == 6 and 1 <= removed <= 5, done.stdout
            assert re.search(r"cleanup: 6/6 ranges", done.stderr), done.stderr
            after = table_bytes(first)
            assert 0.2 * alone <= after <= 0.8 * alone, (after, alone)
            assert abs((kept - after) - removed_bytes) <= 0.05 * alone, (kept, after, removed_bytes)
            # A second cleanup finds nothing more to remove (unless the balancer moved a group
            # off node 1 meanwhile: its rows were kept for a cleanup too).
            again = cleanup(first, metrics)
            assert again.returncode == 0, again.stderr
            if groups_by_node(s) == held and not list(s.execute("SELECT group_id FROM system_views.moves")):
                assert report(again.stdout)[2] == 0, again.stdout
            # Every row still reads back, wherever its replica is.
            assert read_all(s) == ROWS
        finally:
            c.shutdown()
    finally:
        problems = []
        for node in nodes:
            if node.proc is not None and node.running():
                rc = node.stop(signal.SIGTERM, STOP_TIMEOUT)
                if rc != 0:
                    problems.append(f"{node.host} exited {rc}\n{node.log_tail(30)}")
            try:
                assert_no_panics(node)
            except AssertionError as e:
                problems.append(str(e))
        assert not problems, "\n\n".join(problems)
