"""Client warnings (the response frame's WARNING flag, protocol v4+) through the python driver
and cqlsh, with the messages of Apache Cassandra 4.1:

- SelectStatement: "Aggregation query used without partition key" and "Aggregation query used
  on multiple partition keys (IN restriction)", for aggregates and GROUP BY;
- BatchStatement.verifyBatchSize: a batch over several partitions past
  batch_size_warn_threshold (5 KiB), with FBUtilities.prettyPrintMemory sizes;
- BatchStatement.verifyBatchType: an unlogged batch over more than
  unlogged_batch_across_partitions_warn_threshold (10) partitions (the message is the one
  Cassandra's dtest client_warnings test asserts);
- SimpleStrategy / NetworkTopologyStrategy.validate: a replication factor above the node count
  (as Cassandra's SchemaTest.testCreateAlterKeyspacesRFWarnings asserts).
"""

from __future__ import annotations

import re

import pytest
from cassandra.query import BatchStatement, BatchType

from conftest import fresh_name, make_cluster, run_cqlsh

NO_PK = "Aggregation query used without partition key"
IN_PK = "Aggregation query used on multiple partition keys (IN restriction)"
UNLOGGED = ("Unlogged batch covering {} partitions detected against table{} {}. "
            "You should use a logged batch for atomicity, or asynchronous writes for performance.")
SIZE = re.compile(r"^Batch for \[(?P<tables>[^\]]+)\] is of size (?P<size>\d+\.\d{3})KiB, "
                  r"exceeding specified threshold of 5\.000KiB by (?P<by>\d+\.\d{3})KiB\.$")


def warnings(result) -> list[str]:
    return list(result.response_future.warnings or [])


@pytest.fixture
def table(session, ks):
    session.execute(f"CREATE TABLE {ks}.t (k int, c int, v int, PRIMARY KEY (k, c))")
    for k in range(3):
        for c in range(4):
            session.execute(f"INSERT INTO {ks}.t (k, c, v) VALUES ({k}, {c}, {k * 10 + c})")
    return f"{ks}.t"


def test_aggregates_over_several_partitions_warn(session, table):
    rs = session.execute(f"SELECT count(*) FROM {table}")
    assert rs.one()[0] == 12
    assert warnings(rs) == [NO_PK]
    rs = session.execute(f"SELECT k, max(v) FROM {table} GROUP BY k")
    assert sorted(tuple(r) for r in rs) == [(0, 3), (1, 13), (2, 23)]
    assert warnings(rs) == [NO_PK]
    rs = session.execute(f"SELECT sum(v) FROM {table} WHERE k IN (1, 2)")
    assert rs.one()[0] == sum(range(10, 14)) + sum(range(20, 24))
    assert warnings(rs) == [IN_PK]
    prepared = session.prepare(f"SELECT count(*) FROM {table} WHERE k IN ?")
    assert warnings(session.execute(prepared, ([0, 1],))) == [IN_PK]
    # A token range restricts the partition key: no warning, as Cassandra.
    rs = session.execute(f"SELECT count(*) FROM {table} WHERE token(k) > -9223372036854775808")
    assert warnings(rs) == []


def test_single_partition_and_plain_reads_do_not_warn(session, table):
    rs = session.execute(f"SELECT count(*), max(v) FROM {table} WHERE k = 1")
    assert tuple(rs.one()) == (4, 13)
    assert warnings(rs) == []
    assert warnings(session.execute(f"SELECT * FROM {table}")) == []
    prepared = session.prepare(f"SELECT avg(v) FROM {table} WHERE k = ?")
    assert warnings(session.execute(prepared, (2,))) == []


def test_protocol_v3_has_no_warnings(server, table):
    cluster = make_cluster(server, protocol_version=3)
    try:
        s = cluster.connect()
        rs = s.execute(f"SELECT count(*) FROM {table}")
        assert rs.one()[0] == 12
        assert warnings(rs) == []
    finally:
        cluster.shutdown()


def test_a_large_multi_partition_batch_warns_with_its_size(session, ks):
    session.execute(f"CREATE TABLE {ks}.big (k int PRIMARY KEY, v text)")
    session.execute(f"CREATE TABLE {ks}.other (k int PRIMARY KEY, v text)")
    insert = session.prepare(f"INSERT INTO {ks}.big (k, v) VALUES (?, ?)")
    other = session.prepare(f"INSERT INTO {ks}.other (k, v) VALUES (?, ?)")

    small = BatchStatement()
    for k in range(3):
        small.add(insert, (k, "x" * 100))
    assert warnings(session.execute(small)) == []

    # About 7 KiB over two partitions: warned, with the sizes as Cassandra prints them.
    large = BatchStatement()
    large.add(insert, (1, "a" * 3500))
    large.add(insert, (2, "b" * 3500))
    got = warnings(session.execute(large))
    assert len(got) == 1, got
    m = SIZE.match(got[0])
    assert m, got[0]
    assert m["tables"] == f"{ks}.big"
    size, by = float(m["size"]), float(m["by"])
    assert 6.8 < size < 8.0, got[0]
    assert abs(size - 5.0 - by) < 0.0011, got[0]

    # Two tables are listed in name order.
    both = BatchStatement()
    both.add(insert, (3, "c" * 3500))
    both.add(other, (4, "d" * 3500))
    got = warnings(session.execute(both))
    assert len(got) == 1 and SIZE.match(got[0])["tables"] == f"{ks}.big, {ks}.other", got

    # One partition, however large (under the 50 KiB refusal): no warning.
    one = BatchStatement()
    one.add(insert, (5, "e" * 20000))
    one.add(f"UPDATE {ks}.big SET v = 'f' WHERE k = 5", ())
    assert warnings(session.execute(one)) == []
    assert session.execute(f"SELECT v FROM {ks}.big WHERE k = 5").one()[0] == "f"


def test_an_unlogged_batch_over_more_than_ten_partitions_warns(session, ks):
    session.execute(f"CREATE TABLE {ks}.test (k int PRIMARY KEY, v int)")
    session.execute(f"CREATE TABLE {ks}.second (k int PRIMARY KEY, v int)")
    insert = session.prepare(f"INSERT INTO {ks}.test (k, v) VALUES (?, 0)")
    second = session.prepare(f"INSERT INTO {ks}.second (k, v) VALUES (?, 0)")

    ten = BatchStatement(batch_type=BatchType.UNLOGGED)
    eleven = BatchStatement(batch_type=BatchType.UNLOGGED)
    for k in range(11):
        eleven.add(insert, (k,))
        if k < 10:
            ten.add(insert, (k,))
    assert warnings(session.execute(ten)) == []
    assert warnings(session.execute(eleven)) == [UNLOGGED.format(11, "", f"[{ks}.test]")]
    # A logged batch over the same partitions does not warn.
    logged = BatchStatement(batch_type=BatchType.LOGGED)
    for k in range(11):
        logged.add(insert, (k,))
    assert warnings(session.execute(logged)) == []
    # Two tables: "tables", listed.
    mixed = BatchStatement(batch_type=BatchType.UNLOGGED)
    for k in range(6):
        mixed.add(insert, (100 + k,))
        mixed.add(second, (200 + k,))
    assert warnings(session.execute(mixed)) == [
        UNLOGGED.format(12, "s", f"[{ks}.second, {ks}.test]")]
    assert session.execute(f"SELECT count(*) FROM {ks}.test").one()[0] == 17


@pytest.mark.parametrize("strategy", ["NetworkTopologyStrategy", "SimpleStrategy"])
def test_a_replication_factor_above_the_node_count_warns(session, strategy):
    def replication(rf: int) -> str:
        if strategy == "SimpleStrategy":
            return f"{{'class': 'SimpleStrategy', 'replication_factor': {rf}}}"
        return f"{{'class': 'NetworkTopologyStrategy', 'datacenter1': {rf}}}"

    suffix = " for datacenter datacenter1" if strategy == "NetworkTopologyStrategy" else ""
    ks = fresh_name("rfwarn")
    got = warnings(session.execute(f"CREATE KEYSPACE {ks} WITH replication = {replication(3)}"))
    try:
        assert got == [f"Your replication factor 3 for keyspace {ks} is higher than the number of nodes 1{suffix}"]
        assert warnings(session.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v int)")) == []
        got = warnings(session.execute(f"ALTER KEYSPACE {ks} WITH replication = {replication(2)}"))
        assert got == [f"Your replication factor 2 for keyspace {ks} is higher than the number of nodes 1{suffix}"]
        assert warnings(session.execute(f"ALTER KEYSPACE {ks} WITH replication = {replication(1)}")) == []
        # IF NOT EXISTS on the existing keyspace changes nothing and warns of nothing.
        stmt = f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {replication(3)}"
        assert warnings(session.execute(stmt)) == []
    finally:
        session.execute(f"DROP KEYSPACE {ks}")


def test_cqlsh_prints_the_warnings(server, session, table):
    out = run_cqlsh(server, "-e", f"SELECT count(*) FROM {table}").stdout
    lines = [ln.strip() for ln in out.splitlines()]
    assert "Warnings :" in lines, out
    assert lines[lines.index("Warnings :") + 1] == NO_PK, out
    out = run_cqlsh(server, "-e", f"SELECT count(*) FROM {table} WHERE k = 0").stdout
    assert "Warnings :" not in out, out
