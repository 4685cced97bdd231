"""A three-node ringdb cluster (127.0.0.1, .2 and .3, one process each) seen by real clients.

The python driver discovers every node from one contact point, DDL reaches schema agreement,
RF 3 data written and read at QUORUM, a prepared statement round-trips, cqlsh at node 2 reads
rows written through node 1, and with one node killed (-9) QUORUM writes go on after at most a
few seconds; the node, restarted, catches up: reads at ONE from it alone return every
acknowledged row.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import time

import pytest

import cqlwire
from conftest import RingServer, assert_no_panics, run_cqlsh, STOP_TIMEOUT

pytestmark = pytest.mark.dml

HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
KS = "clu"
FORM_TIMEOUT = 30.0
# A QUORUM write with one node of three down: the groups it led elect new leaders (1-2 s of
# silence) after liveness marks it DOWN (2 s); "a few seconds", with margin for a debug build.
MAX_WRITE_GAP = 10.0
CATCH_UP_TIMEOUT = 30.0
# openraft's per-message info lines would drown the tail attached to a failing test's report
LOG_LEVEL = "info,openraft=warn,lsm_tree=warn,fjall=warn"


def port_free_on_all(exclude: set[int]) -> int:
    """A port free on every node's address (the same CQL port on each, as drivers expect)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOSTS[0], 0))
            port = s.getsockname()[1]
        if port in exclude:
            continue
        ok = True
        for host in HOSTS[1:]:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind((host, port))
                except OSError:
                    ok = False
                    break
        if ok:
            return port
    raise AssertionError("no port free on 127.0.0.1, .2 and .3 after 50 tries")


def peers_seen(node: RingServer) -> int | None:
    """How many rows node's system.peers has (None when it does not answer yet)."""
    try:
        with cqlwire.connect_ready(node.host, node.port, timeout=3.0) as conn:
            f = conn.query("SELECT peer FROM system.peers", timeout=3.0)
            if f.opcode != cqlwire.RESULT:
                return None
            return len(cqlwire.parse_result(f.body).rows)
    except (OSError, cqlwire.ConnectionClosed, AssertionError):
        return None


def wait_formed(nodes: list[RingServer]) -> None:
    deadline = time.monotonic() + FORM_TIMEOUT
    for node in nodes:
        seen = None
        while time.monotonic() < deadline:
            seen = peers_seen(node)
            if seen == len(nodes) - 1:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(
                f"node {node.host} lists {seen} peers, not {len(nodes) - 1}, after {FORM_TIMEOUT}s\n"
                + "\n".join(n.log_tail(30) for n in nodes))


def wait_writable(nodes: list[RingServer]) -> None:
    """Until each node coordinates a QUORUM write. A node lists its peers in system.peers as soon
    as they are members, but counts them alive only once they answered a ping (sent every
    0.5 s): until then it answers Unavailable, which has no effect, so retrying is safe (and
    the probe table's first writes may time out: see write_new_table)."""
    from cassandra import ConsistencyLevel, Unavailable, WriteTimeout
    deadline = time.monotonic() + FORM_TIMEOUT
    ddl = ["CREATE KEYSPACE IF NOT EXISTS ready WITH replication = "
           "{'class': 'SimpleStrategy', 'replication_factor': 3}",
           "CREATE TABLE IF NOT EXISTS ready.probe (node int PRIMARY KEY)"]
    for i, node in enumerate(nodes):
        c = connect(node, only=True)
        try:
            s = c.connect()
            for cql in ddl if i == 0 else []:
                while True:
                    try:
                        s.execute(cql)
                        break
                    except Unavailable:
                        assert time.monotonic() < deadline, f"{node.host}: {cql} Unavailable for {FORM_TIMEOUT}s"
                        time.sleep(0.1)
            while True:
                try:
                    s.execute(stmt("INSERT INTO ready.probe (node) VALUES (%s)", ConsistencyLevel.QUORUM), (i,))
                    break
                except (Unavailable, WriteTimeout):
                    assert time.monotonic() < deadline, f"{node.host}: QUORUM writes Unavailable for {FORM_TIMEOUT}s"
                    time.sleep(0.1)
        finally:
            c.shutdown()


def cluster_node(tmp, i: int, ports: tuple[int, int, int], owner: str, extra: str = "") -> RingServer:
    """Node i (from 1) of a cluster on HOSTS, not started: `ports` are the CQL, internode and
    metrics ports every node shares; node 1 starts the cluster, the others join it through node
    1's internode port; `extra` adds settings."""
    native, internode, metrics = ports
    host = HOSTS[i - 1]
    d = tmp / f"node{i}"
    d.mkdir()
    cfg = d / "cluster.toml"
    seeds = "" if i == 1 else f'"{HOSTS[0]}:{internode}"'
    cfg.write_text(f'internode_listen = "{host}:{internode}"\nseeds = [{seeds}]\n'
                   f'metrics_listen = "{host}:{metrics}"\n'
                   f"initial_physical_partitions = 6\n{extra}")
    node = RingServer(d / "data", d / "stderr.log", owner=owner, host=host, port=native,
                      extra_args=("--config", str(cfg)),
                      log_level=os.environ.get("RINGDB_LOG_LEVEL", LOG_LEVEL))
    node.metrics_url = f"http://{host}:{metrics}/metrics"
    return node


@pytest.fixture(scope="module")
def ring(request, tmp_path_factory) -> list[RingServer]:
    """Three nodes: node 1 starts the cluster, 2 and 3 join it through node 1's internode port.
    Teardown: SIGTERM to each; every node must exit 0 without a logged panic."""
    tmp = tmp_path_factory.mktemp("cluster")
    native = port_free_on_all(set())
    internode = port_free_on_all({native})
    metrics = port_free_on_all({native, internode})
    nodes: list[RingServer] = []
    try:
        for i in range(1, len(HOSTS) + 1):
            node = cluster_node(tmp, i, (native, internode, metrics), request.node.nodeid)
            nodes.append(node)
            node.start()
        wait_formed(nodes)
        wait_writable(nodes)
        yield nodes
    finally:
        problems = []
        for node in nodes:
            if node.proc is None:
                continue
            if not node.running():
                problems.append(f"{node.host} was not running at teardown "
                                f"(exit {node.proc.returncode})\n{node.log_tail(30)}")
                continue
            rc = node.stop(signal.SIGTERM, STOP_TIMEOUT)
            if rc != 0:
                problems.append(f"{node.host} exited {rc} after SIGTERM\n{node.log_tail(30)}")
        for node in nodes:
            try:
                assert_no_panics(node)
            except AssertionError as e:
                problems.append(f"{node.host}: {e}")
        if problems:
            raise AssertionError("\n\n".join(problems))


def connect(node: RingServer, only: bool = False, **kwargs):
    """A driver Cluster with node as its one contact point: token-aware round robin over every
    node it discovers, or (only=True) that node alone."""
    from cassandra.cluster import Cluster
    from cassandra.policies import RoundRobinPolicy, TokenAwarePolicy, WhiteListRoundRobinPolicy
    policy = (WhiteListRoundRobinPolicy([node.host]) if only
              else TokenAwarePolicy(RoundRobinPolicy()))
    kwargs.setdefault("connect_timeout", 10)
    kwargs.setdefault("control_connection_timeout", 10)
    return Cluster([node.host], port=node.port, load_balancing_policy=policy, **kwargs)


def stmt(cql: str, level):
    from cassandra.query import SimpleStatement
    return SimpleStatement(cql, consistency_level=level)


def write_new_table(session, statement, params, within: float = 10.0) -> int:
    """Executes an idempotent write, retried on WriteTimeout for `within` seconds; returns the
    number of timeouts. A new table's groups elect their leaders after CREATE TABLE has
    answered, and a replica that has not applied the CREATE yet refuses the first vote
    requests ("holds no replica of group N (yet)"), so the first writes to a new table can
    wait for a second election and time out (2 s)."""
    from cassandra import WriteTimeout
    deadline = time.monotonic() + within
    timeouts = 0
    while True:
        try:
            session.execute(statement, params)
            return timeouts
        except WriteTimeout:
            timeouts += 1
            if time.monotonic() > deadline:
                raise


@pytest.fixture(scope="module")
def client(ring):
    c = connect(ring[0])
    try:
        yield c, c.connect()
    finally:
        c.shutdown()


@pytest.fixture(scope="module")
def keyspace(client):
    _, session = client
    rs = session.execute(f"CREATE KEYSPACE {KS} WITH replication = "
                         "{'class': 'SimpleStrategy', 'replication_factor': 3}")
    return KS, rs.response_future.is_schema_agreed


def test_driver_discovers_every_node_from_one_contact_point(client):
    c, _ = client
    hosts = c.metadata.all_hosts()
    assert sorted(h.address for h in hosts) == HOSTS, [str(h) for h in hosts]
    assert all(h.is_up for h in hosts), [(h.address, h.is_up) for h in hosts]
    assert len({h.host_id for h in hosts}) == 3, "three distinct host ids"


def test_schema_agreement_and_rf3_quorum_rows(client, keyspace):
    from cassandra import ConsistencyLevel
    c, session = client
    ks, ks_agreed = keyspace
    assert ks_agreed, "schema agreement after CREATE KEYSPACE"
    rs = session.execute(f"CREATE TABLE {ks}.rows (k int PRIMARY KEY, v text, n bigint)")
    assert rs.response_future.is_schema_agreed, "schema agreement after CREATE TABLE"
    assert c.control_connection.wait_for_schema_agreement(wait_time=10), "schema versions agree"
    assert "rows" in c.metadata.keyspaces[ks].tables
    assert c.metadata.keyspaces[ks].replication_strategy.replication_factor == 3

    insert = session.prepare(f"INSERT INTO {ks}.rows (k, v, n) VALUES (?, ?, ?)")
    insert.consistency_level = ConsistencyLevel.QUORUM
    for k in range(300):
        write_new_table(session, insert, (k, f"v{k}", k * 1_000_000_007))
    read = stmt(f"SELECT k, v, n FROM {ks}.rows WHERE k = %s", ConsistencyLevel.QUORUM)
    wrong = []
    for k in range(300):
        rows = list(session.execute(read, (k,)))
        if [(r.k, r.v, r.n) for r in rows] != [(k, f"v{k}", k * 1_000_000_007)]:
            wrong.append((k, rows))
    assert not wrong, f"{len(wrong)} of 300 QUORUM reads wrong, first: {wrong[:3]}"
    scan = stmt(f"SELECT k FROM {ks}.rows", ConsistencyLevel.QUORUM)
    scan.fetch_size = 70
    assert sorted(r.k for r in session.execute(scan)) == list(range(300)), "a paged scan"

    # A prepared SELECT round-trips: its metadata, the bound values, the typed row.
    select = session.prepare(f"SELECT v, n FROM {ks}.rows WHERE k = ?")
    select.consistency_level = ConsistencyLevel.QUORUM
    assert [col[2] for col in select.column_metadata] == ["k"]
    row = session.execute(select, (123,)).one()
    assert (row.v, row.n) == ("v123", 123 * 1_000_000_007)
    assert session.execute(select, (4242,)).one() is None, "no row for an unwritten key"


def test_cqlsh_at_node2_reads_rows_written_at_node1(ring, keyspace, tmp_path):
    from cassandra import ConsistencyLevel
    ks, _ = keyspace
    c = connect(ring[0], only=True)
    try:
        s = c.connect()
        s.execute(f"CREATE TABLE {ks}.via1 (k int PRIMARY KEY, v text)")
        for k in range(5):
            write_new_table(s, stmt(f"INSERT INTO {ks}.via1 (k, v) VALUES (%s, %s)", ConsistencyLevel.QUORUM),
                            (k, f"from-node1-{k}"))
    finally:
        c.shutdown()
    out = run_cqlsh(ring[1], "-e", f"CONSISTENCY QUORUM; SELECT k, v FROM {ks}.via1",
                    home=tmp_path / "cqlsh-home").stdout
    found = {(int(m[1]), m[2]) for m in re.finditer(r"^\s*(\d+) \| (\S+)\s*$", out, re.M)}
    assert found == {(k, f"from-node1-{k}") for k in range(5)}, out
    assert "(5 rows)" in out, out


def fallthrough_sessions(ring: list[RingServer]):
    """One driver per node (that node alone), whose errors come back as the server sent them."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import FallthroughRetryPolicy, WhiteListRoundRobinPolicy
    clusters = []
    for node in ring:
        profile = ExecutionProfile(retry_policy=FallthroughRetryPolicy(),
                                   load_balancing_policy=WhiteListRoundRobinPolicy([node.host]))
        clusters.append(Cluster([node.host], port=node.port, connect_timeout=10,
                                control_connection_timeout=10,
                                execution_profiles={EXEC_PROFILE_DEFAULT: profile}))
    return clusters, [c.connect() for c in clusters]


def partition_budgets(session, ks: str, table: str) -> list:
    """The RU/s budgets and last-minute use this node reports for the table's physical
    partitions (one per group)."""
    return [(r.ru_budget, r.ru_last_minute) for r in session.execute(
        "SELECT ru_budget, ru_last_minute FROM system_views.physical_partitions "
        f"WHERE keyspace_name = '{ks}' AND table_name = '{table}'")]


def test_a_tables_budget_holds_whichever_nodes_coordinate(ring, keyspace, capsys):
    """Each group's leader keeps its share of the table's throughput: writes sent through all
    three nodes at once are admitted at the table's RU/s, not three times it."""
    from cassandra import ConsistencyLevel
    from cassandra.protocol import OverloadedErrorMessage
    ks, _ = keyspace
    budget = 600
    clusters, sessions = fallthrough_sessions(ring)
    try:
        sessions[0].execute(f"CREATE TABLE {ks}.metered (k int PRIMARY KEY, v text) "
                            f"WITH cosmosdb_provisioned_throughput = {budget}")
        inserts = [s.prepare(f"INSERT INTO {ks}.metered (k, v) VALUES (?, 'v')") for s in sessions]
        for insert in inserts:
            insert.consistency_level = ConsistencyLevel.QUORUM
        # The new table's groups elect their leaders; wait until a write goes through.
        deadline = time.monotonic() + 30
        while True:
            try:
                sessions[0].execute(inserts[0], (-1,))
                break
            except Exception:
                assert time.monotonic() < deadline, "no write to the new table within 30s"
                time.sleep(0.2)
        time.sleep(1.5)  # every group's bucket full again
        admitted, refused, other = 0, [], []
        start = time.monotonic()
        k = 0
        while time.monotonic() - start < 5.0:
            futures = []
            for _ in range(8):
                for s, insert in zip(sessions, inserts):
                    futures.append(s.execute_async(insert, (k,)))
                    k += 1
            for f in futures:
                try:
                    f.result()
                    admitted += 1
                except OverloadedErrorMessage as e:
                    refused.append(e.message)
                except Exception as e:  # a timeout under load is neither admitted nor refused
                    other.append(repr(e))
        elapsed = time.monotonic() - start
        with capsys.disabled():
            print(f"\n[test_cluster] {budget} RU/s table through 3 coordinators: {admitted} writes "
                  f"admitted ({admitted * 5 / elapsed:.0f} RU/s), {len(refused)} refused, "
                  f"{len(other)} other errors in {elapsed:.1f}s")
        assert refused, f"{admitted} writes in {elapsed:.1f}s and none refused"
        # Buckets start with one second of budget; the writes in flight when one empties are
        # admitted (each pays once it has committed).
        in_flight = 8 * len(sessions)
        assert admitted * 5 <= budget * (elapsed + 1) + 5 * in_flight, (admitted, elapsed)
        message = refused[0]
        assert message.startswith("Request rate is large: ActivityID="), message
        retry = [t.split("=") for t in message.split(",") if t.split("=")[0].strip() == "RetryAfterMs"]
        assert len(retry) == 1 and retry[0][1].isdigit() and 0 < int(retry[0][1]) <= 2000, message
        # Every node reports the same budgets; the leaders' use adds up to what was admitted.
        views = [partition_budgets(s, ks, "metered") for s in sessions]
        for v in views:
            assert sum(b for b, _ in v) == pytest.approx(budget), views
        used = sum(u for v in views for _, u in v)
        assert used >= admitted * 5, (used, admitted)
        # Reads of a metered table (served by the leaders) return the rows, at ONE too.
        time.sleep(1.5)
        one = stmt(f"SELECT v FROM {ks}.metered WHERE k = -1", ConsistencyLevel.ONE)
        for s in sessions:
            assert s.execute(one).one().v == "v"
    finally:
        for c in clusters:
            c.shutdown()


def test_raising_a_tables_throughput_splits_its_groups(ring, keyspace):
    from cassandra import ConsistencyLevel
    ks, _ = keyspace
    clusters, sessions = fallthrough_sessions(ring)
    try:
        s = sessions[0]
        s.execute(f"CREATE TABLE {ks}.wide (k int PRIMARY KEY, v int) WITH cosmosdb_provisioned_throughput = 10000")
        insert = stmt(f"INSERT INTO {ks}.wide (k, v) VALUES (%s, %s)", ConsistencyLevel.QUORUM)
        for k in range(100):
            write_new_table(s, insert, (k, k))
        before = len(partition_budgets(s, ks, "wide"))
        limit = (before + 2) * 10000 + 5000
        s.execute(f"ALTER TABLE {ks}.wide WITH cosmosdb_provisioned_throughput = {limit}")
        # Every node ends with at least three more groups, each budgeted at most 10,000 RU/s.
        deadline = time.monotonic() + 60
        views: list = []
        while time.monotonic() < deadline:
            views = [partition_budgets(x, ks, "wide") for x in sessions]
            if all(len(v) >= before + 3 and sum(b for b, _ in v) == pytest.approx(limit)
                   and all(b <= 10000.0 for b, _ in v) for v in views):
                break
            time.sleep(0.3)
        else:
            raise AssertionError(f"{before} groups, throughput {limit}: {views}")
        count = stmt(f"SELECT count(*) FROM {ks}.wide", ConsistencyLevel.QUORUM)
        assert s.execute(count).one()[0] == 100
    finally:
        for c in clusters:
            c.shutdown()


def scrape(node: RingServer) -> dict:
    """The node's Prometheus samples by (name, sorted labels)."""
    import urllib.request
    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(node.metrics_url, timeout=10) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_each_nodes_metrics_show_its_raft_groups_and_misrouted_requests(ring):
    """Every node serves its own metrics: the Raft groups it holds and leads (each group led
    by one node), their terms and log lag; writes sent to a node holding no replica of their
    partition count as non-replica requests."""
    from cassandra import ConsistencyLevel
    samples = [scrape(n) for n in ring]
    held = [s.get(("ringdb_raft_groups_held", ()), 0) for s in samples]
    assert all(h > 0 for h in held), held
    for s in samples:
        terms = [v for (name, _), v in s.items() if name == "ringdb_raft_term"]
        assert terms and all(t >= 1 for t in terms), terms
        assert any(name == "ringdb_raft_log_lag" for name, _ in s)
        # Leader changes are counted as each replica learns of them: every node has seen the
        # metadata group (0) get a leader, and each data group it holds get one.
        changes = {dict(labels)["group"]: v for (name, labels), v in s.items()
                   if name == "ringdb_raft_leader_changes_total"}
        assert changes.get("0", 0) >= 1, changes
        assert sum(1 for g, v in changes.items() if g != "0" and v >= 1) >= 1, changes
    clusters, sessions = fallthrough_sessions(ring)
    try:
        s = sessions[0]
        s.execute("CREATE KEYSPACE IF NOT EXISTS single WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE IF NOT EXISTS single.t (k int PRIMARY KEY, v int)")
        counted = ("ringdb_cql_non_replica_requests_total", ())
        before = sum(scrape(n).get(counted, 0) for n in ring)
        insert = stmt("INSERT INTO single.t (k, v) VALUES (%s, %s)", ConsistencyLevel.ONE)
        # Each key written through each node: RF 1, so two of its three coordinators hold no
        # replica of it, wherever its group lives.
        for k in range(10):
            for session in sessions:
                write_new_table(session, insert, (k, k))
        after = sum(scrape(n).get(counted, 0) for n in ring)
        assert after - before >= 20, (before, after)
    finally:
        for c in clusters:
            c.shutdown()


def test_a_traced_write_shows_its_group_and_forwarding(ring, keyspace):
    """A traced write shows the group it commits to; one coordinated by a node that does not
    lead the group shows it forwarded to the leader's address."""
    from cassandra import ConsistencyLevel
    ks, _ = keyspace
    clients = [connect(node, only=True) for node in ring]
    try:
        sessions = [c.connect() for c in clients]
        sessions[0].execute(f"CREATE TABLE IF NOT EXISTS {ks}.traced (k int PRIMARY KEY, v int)")
        insert = stmt(f"INSERT INTO {ks}.traced (k, v) VALUES (%s, %s)", ConsistencyLevel.QUORUM)
        write_new_table(sessions[0], insert, (0, 0))
        steps: list[str] = []
        # Each key traced through each node (a trace is kept by the node that coordinated):
        # a group has one leader, so two of each key's three coordinators forward.
        for k in range(5):
            for s in sessions:
                rs = s.execute(insert, (k, k), trace=True)
                steps += [e.description for e in rs.get_query_trace(max_wait_sec=5).events]
        assert any(x.startswith("Committing 1 writes to group") for x in steps), steps
        assert any(x.startswith("Forwarding to group") for x in steps), steps
        # The coordinator sends each trace to its peers: every node answers for it, with
        # the coordinator's address and the same events.
        rs = sessions[0].execute(insert, (9, 9), trace=True)
        trace_id = rs.response_future.get_query_trace_ids()[0]
        events = len(rs.get_query_trace(max_wait_sec=5).events)
        query = stmt("SELECT coordinator, duration FROM system_traces.sessions WHERE session_id = %s",
                     ConsistencyLevel.ONE)
        count = stmt("SELECT count(*) FROM system_traces.events WHERE session_id = %s",
                     ConsistencyLevel.ONE)
        for node, s in zip(ring, sessions):
            deadline = time.monotonic() + 5
            while (row := s.execute(query, (trace_id,)).one()) is None:
                assert time.monotonic() < deadline, f"{node.host} has no trace {trace_id}"
                time.sleep(0.1)
            assert str(row.coordinator) == ring[0].host and row.duration > 0, (node.host, row)
            assert s.execute(count, (trace_id,)).one()[0] == events, node.host
    finally:
        for c in clients:
            c.shutdown()


def test_quorum_writes_survive_a_killed_node_which_catches_up(ring, client, keyspace, capsys):
    from cassandra import ConsistencyLevel
    _, session = client
    ks, _ = keyspace
    session.execute(f"CREATE TABLE {ks}.chaos (k int PRIMARY KEY, v int)")
    insert = session.prepare(f"INSERT INTO {ks}.chaos (k, v) VALUES (?, ?)")
    insert.consistency_level = ConsistencyLevel.QUORUM
    acknowledged: dict[int, int] = {}
    for k in range(100):
        write_new_table(session, insert, (k, k * 7))
        acknowledged[k] = k * 7

    victim = ring[2]
    victim.kill()  # SIGKILL
    killed_at = time.monotonic()
    # The gap: the longest time without an acknowledged write, from the kill on (the writes
    # to the groups the victim led wait for their new leaders).
    gap = 0.0
    last_ack = killed_at
    failures = 0
    for k in range(100, 250):
        t0 = time.monotonic()
        last_error = None
        while True:
            try:
                session.execute(insert, (k, k * 7), timeout=5)
                break
            except Exception as e:  # Unavailable, WriteTimeout, OperationTimedOut, NoHostAvailable
                last_error = e
                failures += 1
                if time.monotonic() - t0 > MAX_WRITE_GAP:
                    raise AssertionError(f"write of {k} still failing after {MAX_WRITE_GAP}s with "
                                         f"{victim.host} down: {last_error!r}")
                time.sleep(0.1)
        acked_at = time.monotonic()
        gap = max(gap, acked_at - last_ack)
        last_ack = acked_at
        acknowledged[k] = k * 7
    with capsys.disabled():
        print(f"\n[test_cluster] {victim.host} killed: longest time without an acknowledged QUORUM "
              f"write {gap:.2f}s ({failures} failed attempts, 150 writes in {last_ack - killed_at:.2f}s)")
    assert gap < MAX_WRITE_GAP

    victim.start()
    reader = connect(victim, only=True)
    try:
        s3 = reader.connect()
        pools = sorted(h.address for h in s3.get_pool_state())
        assert pools == [victim.host], f"the reader connects to {victim.host} only: {pools}"
        scan = stmt(f"SELECT k, v FROM {ks}.chaos", ConsistencyLevel.ONE)
        scan.fetch_size = 100
        deadline = time.monotonic() + CATCH_UP_TIMEOUT
        seen: dict[int, int] = {}
        while time.monotonic() < deadline:
            try:
                rs = s3.execute(scan, timeout=5)
                seen = {r.k: r.v for r in rs}
                if seen == acknowledged:
                    break
            except Exception:
                pass
            time.sleep(0.3)
        missing = sorted(set(acknowledged) - set(seen))
        assert seen == acknowledged, (
            f"{victim.host} at ONE after {CATCH_UP_TIMEOUT}s: {len(seen)} rows, "
            f"{len(missing)} acknowledged rows missing (first {missing[:10]})\n{victim.log_tail(40)}")
        # each row read alone from the node's own replica too
        one = stmt(f"SELECT v FROM {ks}.chaos WHERE k = %s", ConsistencyLevel.ONE)
        bad = [k for k in range(100, 250, 10) if (r := s3.execute(one, (k,)).one()) is None or r.v != k * 7]
        assert not bad, f"single-row reads at ONE from {victim.host} wrong for {bad}"
    finally:
        reader.shutdown()
