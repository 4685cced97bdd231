"""Provisioned throughput as Azure Cosmos DB for Apache Cassandra meters it (#46), through the
python driver:

- every QUERY/EXECUTE/BATCH result carries the custom payload `RequestCharge`, an 8-byte
  big-endian double, equal to the README's request-unit model;
- `cosmosdb_provisioned_throughput` (or the CREATE TABLE custom payload key of that name) and
  `cosmosdb_autoscale_max_throughput` on a table or keyspace budget its physical partitions;
  a request over budget gets Overloaded with Cosmos DB's message, whose `RetryAfterMs` parses
  the way Microsoft's Java retry policy parses it, and retrying after it succeeds;
- a throughput past what the partitions may carry (10,000 RU/s each) splits them.

No assertion depends on how fast the machine is: throttling is checked by an upper bound on
what was admitted (the bucket starts full and refills at the budget).
"""

from __future__ import annotations

import struct
import time

import pytest
from cassandra import InvalidRequest
from cassandra.cluster import EXEC_PROFILE_DEFAULT, ExecutionProfile
from cassandra.policies import FallthroughRetryPolicy
from cassandra.protocol import OverloadedErrorMessage

from conftest import fresh_name, make_cluster

KS_SIMPLE = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


@pytest.fixture(scope="module")
def raw(server):
    """A session whose errors come back as the server sent them (no retries elsewhere)."""
    profile = ExecutionProfile(retry_policy=FallthroughRetryPolicy())
    cluster = make_cluster(server, execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    try:
        yield cluster.connect()
    finally:
        cluster.shutdown()


def charge(result) -> float:
    payload = result.response_future.custom_payload or {}
    assert "RequestCharge" in payload, payload
    raw_bytes = payload["RequestCharge"]
    assert len(raw_bytes) == 8
    return struct.unpack(">d", raw_bytes)[0]


def retry_after_ms(message: str) -> int:
    """Microsoft's Java retry policy: split on ',', then on '='; the key trimmed, the value
    parsed as it is (Integer.parseInt takes no spaces)."""
    for token in message.split(","):
        kv = token.split("=")
        if len(kv) == 2 and kv[0].strip() == "RetryAfterMs":
            assert kv[1] == kv[1].strip() and kv[1].isdigit(), repr(kv[1])
            return int(kv[1])
    raise AssertionError(f"no RetryAfterMs in {message!r}")


def budgets(session, ks: str, table: str) -> list:
    """The table's physical partitions' RU/s budgets, once its partitions are settled (a new
    table's store is cut at its groups' ends in the background just after CREATE)."""
    query = (f"SELECT id, ru_budget FROM system_views.physical_partitions "
             f"WHERE keyspace_name = '{ks}' AND table_name = '{table}'")
    last = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rows = [(r.id, r.ru_budget) for r in session.execute(query)]
        if rows == last:
            return [b for _, b in rows]
        last = rows
        time.sleep(0.3)
    return [b for _, b in last or []]


@pytest.fixture
def ks(raw):
    name = fresh_name("ru")
    raw.execute(f"CREATE KEYSPACE {name} WITH replication = {KS_SIMPLE}")
    yield name
    raw.execute(f"DROP KEYSPACE IF EXISTS {name}")


def test_request_charge_follows_the_model(raw, ks):
    raw.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
    raw.execute(f"CREATE TABLE {ks}.w (k int, c int, v text, PRIMARY KEY (k, c))")
    # Writes: 5 RU per started KB of mutation data.
    assert charge(raw.execute(f"INSERT INTO {ks}.t (k, v) VALUES (1, '{'a' * 100}')")) == 5.0
    assert charge(raw.execute(f"INSERT INTO {ks}.t (k, v) VALUES (2, '{'b' * 1500}')")) == 10.0
    insert = raw.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
    assert charge(raw.execute(insert, (3, "c" * 2500))) == 15.0
    # Point reads: 1 RU per started KB read (a miss costs 1).
    assert charge(raw.execute(f"SELECT v FROM {ks}.t WHERE k = 1")) == 1.0
    assert charge(raw.execute(f"SELECT v FROM {ks}.t WHERE k = 2")) == 2.0
    assert charge(raw.execute(f"SELECT v FROM {ks}.t WHERE k = 99")) == 1.0
    # A partition of 11 small rows: 1 RU for its bytes, 0.1 per row after the first.
    for c in range(11):
        raw.execute(f"INSERT INTO {ks}.w (k, c, v) VALUES (1, {c}, 'x')")
    assert charge(raw.execute(f"SELECT * FROM {ks}.w WHERE k = 1")) == pytest.approx(2.0)
    # A batch pays for each write.
    batch = (f"BEGIN BATCH INSERT INTO {ks}.t (k, v) VALUES (10, 'x'); "
             f"INSERT INTO {ks}.t (k, v) VALUES (11, 'y'); APPLY BATCH")
    assert charge(raw.execute(batch)) == 10.0
    # A lightweight transaction: the conditions' read, then twice a write's price.
    assert charge(raw.execute(f"INSERT INTO {ks}.t (k, v) VALUES (20, 'z') IF NOT EXISTS")) == 11.0
    assert charge(raw.execute(f"INSERT INTO {ks}.t (k, v) VALUES (20, 'z') IF NOT EXISTS")) == 1.0


def test_options_and_their_limits(raw, ks):
    with pytest.raises(InvalidRequest, match="at least 400"):
        raw.execute(f"CREATE TABLE {ks}.low (k int PRIMARY KEY) WITH cosmosdb_provisioned_throughput = 399")
    with pytest.raises(InvalidRequest, match="at least 1000"):
        raw.execute(f"CREATE TABLE {ks}.low (k int PRIMARY KEY) WITH cosmosdb_autoscale_max_throughput = 999")
    with pytest.raises(InvalidRequest, match="cannot both be set"):
        raw.execute(f"CREATE TABLE {ks}.low (k int PRIMARY KEY) WITH cosmosdb_provisioned_throughput = 400 "
                    "AND cosmosdb_autoscale_max_throughput = 4000")
    raw.execute(f"CREATE TABLE {ks}.m (k int PRIMARY KEY) WITH cosmosdb_provisioned_throughput = 800")
    # The custom payload key, as Cosmos DB's clients send it on CREATE TABLE.
    raw.execute(f"CREATE TABLE {ks}.p (k int PRIMARY KEY)",
                custom_payload={"cosmosdb_provisioned_throughput": b"1200"})
    raw.execute(f"CREATE TABLE {ks}.a (k int PRIMARY KEY) WITH cosmosdb_autoscale_max_throughput = 4000")
    rows = raw.execute("SELECT table_name, extensions FROM system_schema.tables WHERE keyspace_name = %s", (ks,))
    got = {r.table_name: dict(r.extensions or {}) for r in rows}
    assert got["m"] == {"cosmosdb_provisioned_throughput": b"800"}
    assert got["p"] == {"cosmosdb_provisioned_throughput": b"1200"}
    assert got["a"] == {"cosmosdb_autoscale_max_throughput": b"4000"}
    raw.execute(f"ALTER TABLE {ks}.m WITH cosmosdb_provisioned_throughput = 500")
    row = raw.execute(f"SELECT extensions FROM system_schema.tables WHERE keyspace_name = '{ks}' AND table_name = 'm'").one()
    assert dict(row.extensions) == {"cosmosdb_provisioned_throughput": b"500"}
    # Each table's throughput is divided equally among its physical partitions.
    for table, limit in (("m", 500.0), ("a", 4000.0), ("p", 1200.0)):
        shares = budgets(raw, ks, table)
        assert shares and sum(shares) == pytest.approx(limit), (table, shares)
        assert all(b == pytest.approx(limit / len(shares)) for b in shares), (table, shares)


def load(session, statement, args, seconds: float):
    """Sends writes back to back for `seconds`; returns (admitted, refusal messages, elapsed)."""
    admitted, refused = 0, []
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < seconds:
        try:
            session.execute(statement, args(i))
            admitted += 1
        except OverloadedErrorMessage as e:
            refused.append(e.message)
        i += 1
    return admitted, refused, time.monotonic() - start


def test_a_table_over_its_budget_is_refused_with_cosmos_message(raw, ks):
    raw.execute(f"CREATE TABLE {ks}.hot (k int PRIMARY KEY, v text) WITH cosmosdb_provisioned_throughput = 400")
    raw.execute(f"CREATE TABLE {ks}.calm (k int PRIMARY KEY, v text) WITH cosmosdb_provisioned_throughput = 10000")
    assert sum(budgets(raw, ks, "hot")) == pytest.approx(400.0)
    hot = raw.prepare(f"INSERT INTO {ks}.hot (k, v) VALUES (?, 'v')")
    calm = raw.prepare(f"INSERT INTO {ks}.calm (k, v) VALUES (?, 'v')")
    admitted, refused, elapsed = load(raw, hot, lambda i: (i,), 2.0)
    assert refused, f"{admitted} writes of 5 RU in {elapsed:.1f}s and none refused"
    # The bucket starts with one second of budget and refills at 400 RU/s: at 5 RU a write,
    # no more than (elapsed + 1) * 80 writes can have been admitted.
    assert admitted * 5 <= 400 * (elapsed + 1) + 5, (admitted, elapsed)
    message = refused[0]
    assert message.startswith("Request rate is large: ActivityID="), message
    assert "TooManyRequests (429); Substatus: 3200" in message
    # The gocql sample reads the second comma-separated field.
    assert message.split(",")[1].strip().startswith("RetryAfterMs=")
    wait = retry_after_ms(message)
    assert 0 < wait <= 2000
    # The other table of the keyspace has its own budget: not slowed by the first.
    for i in range(100):
        raw.execute(calm, (i,))
    # Retrying after the delay succeeds.
    time.sleep(wait / 1000 + 0.05)
    raw.execute(hot, (100000,))
    assert raw.execute(f"SELECT v FROM {ks}.hot WHERE k = 100000").one().v == "v"
    used = list(raw.execute(f"SELECT ru_budget, ru_last_minute FROM system_views.physical_partitions "
                            f"WHERE keyspace_name = '{ks}' AND table_name = 'hot'"))
    assert sum(u.ru_budget for u in used) == pytest.approx(400.0)
    assert sum(u.ru_last_minute for u in used) >= admitted * 5


def test_autoscale_and_keyspace_shared_throughput(raw):
    ks = fresh_name("shared")
    raw.execute(f"CREATE KEYSPACE {ks} WITH replication = {KS_SIMPLE} AND cosmosdb_provisioned_throughput = 400")
    try:
        raw.execute(f"CREATE TABLE {ks}.a (k int PRIMARY KEY, v text)")
        raw.execute(f"CREATE TABLE {ks}.b (k int PRIMARY KEY, v text)")
        raw.execute(f"CREATE TABLE {ks}.own (k int PRIMARY KEY, v text) WITH cosmosdb_autoscale_max_throughput = 1000")
        # Two tables share 400 RU/s over all their partitions; the one with its own keeps it.
        a, b, own = (budgets(raw, ks, t) for t in ("a", "b", "own"))
        assert sum(a) + sum(b) == pytest.approx(400.0), (a, b)
        assert all(x == pytest.approx(400.0 / (len(a) + len(b))) for x in a + b), (a, b)
        assert sum(own) == pytest.approx(1000.0), own
        # DESCRIBE shows the options only WITH INTERNALS, as Cosmos DB does.
        plain = "\n".join(r.create_statement for r in raw.execute(f"DESCRIBE KEYSPACE {ks}"))
        assert "cosmosdb" not in plain, plain
        inner = {r.name: r.create_statement
                 for r in raw.execute(f"DESCRIBE KEYSPACE {ks} WITH INTERNALS")}
        assert "AND cosmosdb_provisioned_throughput = 400;" in inner[ks], inner[ks]
        assert "cosmosdb_autoscale_max_throughput = 1000" in inner["own"], inner["own"]
        assert "cosmosdb" not in inner["a"], inner["a"]
        a = raw.prepare(f"INSERT INTO {ks}.a (k, v) VALUES (?, 'v')")
        admitted, refused, elapsed = load(raw, a, lambda i: (i,), 1.5)
        assert refused and admitted * 5 <= 200 * (elapsed + 1) + 5, (admitted, elapsed)
        own = raw.prepare(f"INSERT INTO {ks}.own (k, v) VALUES (?, 'v')")
        admitted, refused, elapsed = load(raw, own, lambda i: (i,), 1.5)
        assert admitted * 5 <= 1000 * (elapsed + 1) + 5, (admitted, elapsed)
    finally:
        raw.execute(f"DROP KEYSPACE {ks}")


def test_raising_throughput_splits_physical_partitions(raw, ks):
    raw.execute(f"CREATE TABLE {ks}.big (k int PRIMARY KEY, v int) WITH cosmosdb_provisioned_throughput = 10000")
    for k in range(200):
        raw.execute(f"INSERT INTO {ks}.big (k, v) VALUES ({k}, {k})")
    query = (f"SELECT id, ru_budget FROM system_views.physical_partitions "
             f"WHERE keyspace_name = '{ks}' AND table_name = 'big'")
    # A throughput two partitions past what the table's partitions may carry (10,000 each).
    before = len(budgets(raw, ks, "big"))
    limit = (before + 1) * 10000 + 5000
    raw.execute(f"ALTER TABLE {ks}.big WITH cosmosdb_provisioned_throughput = {limit}")
    deadline = time.monotonic() + 60
    parts = []
    while time.monotonic() < deadline:
        parts = list(raw.execute(query))
        if len(parts) >= before + 2:
            break
        time.sleep(0.2)
    assert len(parts) >= before + 2, (before, parts)
    # Once the splits are done, the budget is divided among all the partitions.
    settled = budgets(raw, ks, "big")
    assert len(settled) >= before + 2, (before, settled)
    assert all(b <= 10000.0 for b in settled), settled
    assert sum(settled) == pytest.approx(limit), settled
    # Every row is still there; lowering the throughput is immediate.
    assert raw.execute(f"SELECT count(*) FROM {ks}.big").one()[0] == 200
    raw.execute(f"ALTER TABLE {ks}.big WITH cosmosdb_provisioned_throughput = 400")
    lowered = [p.ru_budget for p in raw.execute(query)]
    assert lowered and all(b == pytest.approx(400.0 / len(lowered)) for b in lowered)


def test_server_side_retry_waits_instead_of_refusing(request, tmp_path):
    """With `throttle_retry_max_ms` (Cosmos DB's server-side retry), a request over budget
    waits for its partition's budget instead of getting Overloaded; the budget still holds."""
    from conftest import RingServer, stop_and_check
    config = tmp_path / "ringdb.toml"
    config.write_text("throttle_retry_max_ms = 3000\n")
    srv = RingServer(tmp_path / "ringdb-data", tmp_path / "ringdb.stderr.log",
                     owner=request.node.nodeid, extra_args=("--config", str(config)))
    srv.start()
    profile = ExecutionProfile(retry_policy=FallthroughRetryPolicy(), request_timeout=30)
    cluster = make_cluster(srv, execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    try:
        s = cluster.connect()
        s.execute(f"CREATE KEYSPACE k WITH replication = {KS_SIMPLE}")
        s.execute("CREATE TABLE k.t (k int PRIMARY KEY, v text) WITH cosmosdb_provisioned_throughput = 400")
        insert = s.prepare("INSERT INTO k.t (k, v) VALUES (?, 'v')")
        admitted, refused, elapsed = load(s, insert, lambda i: (i,), 2.0)
        assert not refused, refused[:1]
        assert admitted * 5 <= 400 * (elapsed + 1) + 5, (admitted, elapsed)
        # Enough writes were made to need the retry: more than one second's budget.
        assert admitted * 5 > 400, admitted
    finally:
        cluster.shutdown()
        stop_and_check(srv)


def test_ringdb_partitions_prints_budgets_and_use(server, raw, ks):
    import subprocess
    from conftest import ringdb_bin
    raw.execute(f"CREATE TABLE {ks}.shown (k int PRIMARY KEY) WITH cosmosdb_provisioned_throughput = 700")
    raw.execute(f"CREATE TABLE {ks}.free (k int PRIMARY KEY)")
    budgets(raw, ks, "shown")
    raw.execute(f"INSERT INTO {ks}.shown (k) VALUES (1)")
    out = subprocess.run([str(ringdb_bin()), "partitions", "--server", f"{server.host}:{server.port}"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    header = out.splitlines()[0].split()
    assert header[-7:] == ["RU/s", "RU", "last", "s", "RU", "last", "min"], header
    lines = [ln.split() for ln in out.splitlines()[1:] if ln.startswith(ks)]
    shown = [ln for ln in lines if ln[1] == "shown"]
    free = [ln for ln in lines if ln[1] == "free"]
    assert shown and free, out
    assert sum(float(ln[-3]) for ln in shown) == pytest.approx(700, abs=len(shown)), shown
    assert sum(float(ln[-1]) for ln in shown) >= 5.0, shown
    assert all(ln[-3:] == ["-", "-", "-"] for ln in free), free
