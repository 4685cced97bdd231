"""Secondary indexes (legacy 2i and SAI) over a real ringdb server and the python driver 3.30.

Expectations come from Apache Cassandra 5.0: `cql3/statements/schema/CreateIndexStatement.java`
(refusals and default names), `DropIndexStatement.java`, `schema/SchemaKeyspace.java` (the
`system_schema.indexes` row), `schema/IndexMetadata.java` (`toCqlString`, used by DESCRIBE),
`cql3/restrictions/StatementRestrictions.java` (when ALLOW FILTERING is needed) and
`index/sai/StorageAttachedIndex.java` (what SAI answers: =, ranges, CONTAINS, several columns).
"""

from __future__ import annotations

import time

import pytest
from cassandra import InvalidRequest
from cassandra.query import SimpleStatement

from conftest import make_cluster, new_server, run_cqlsh, stop_and_check
from test_cluster import ring  # noqa: F401  (the three-node fixture)

FILTERING = "Cannot execute this query as it might involve data filtering"
SAI = "org.apache.cassandra.index.sai.StorageAttachedIndex"


@pytest.fixture
def people(session, ks):
    session.execute(f"CREATE TABLE {ks}.people (id int, seq int, city text, age int, "
                    "tags set<text>, attrs map<text, int>, fl frozen<list<int>>, "
                    "PRIMARY KEY (id, seq))")
    for i in range(30):
        session.execute(
            f"INSERT INTO {ks}.people (id, seq, city, age, tags, attrs, fl) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (i, i % 3, ["paris", "rome", "oslo"][i % 3], i, {f"t{i % 4}"}, {f"k{i % 5}": i}, [i % 2]))
    return f"{ks}.people"


def ids(rows):
    return sorted(r.id for r in rows)


def test_index_finds_rows_written_before_it(session, people):
    # CreateIndexStatement: an index is built on existing data.
    session.execute(f"CREATE INDEX ON {people} (city)")
    got = ids(session.execute(f"SELECT id FROM {people} WHERE city = 'rome'"))
    assert got == [i for i in range(30) if i % 3 == 1]
    prepared = session.prepare(f"SELECT id FROM {people} WHERE city = ?")
    assert ids(session.execute(prepared, ("oslo",))) == [i for i in range(30) if i % 3 == 2]


def test_every_target_kind(session, people):
    session.execute(f"CREATE INDEX ON {people} (tags)")          # values(tags)
    session.execute(f"CREATE INDEX ON {people} (KEYS(attrs))")
    session.execute(f"CREATE INDEX ai ON {people} (ENTRIES(attrs))")
    session.execute(f"CREATE INDEX ON {people} (FULL(fl))")
    assert ids(session.execute(f"SELECT id FROM {people} WHERE tags CONTAINS 't1'")) == \
        [i for i in range(30) if i % 4 == 1]
    assert ids(session.execute(f"SELECT id FROM {people} WHERE attrs CONTAINS KEY 'k2'")) == \
        [i for i in range(30) if i % 5 == 2]
    assert ids(session.execute(f"SELECT id FROM {people} WHERE attrs['k3'] = 8")) == [8]
    assert ids(session.execute(f"SELECT id FROM {people} WHERE fl = [1]")) == \
        [i for i in range(30) if i % 2 == 1]


def test_writes_keep_results_right(session, people):
    session.execute(f"CREATE INDEX ON {people} (city)")
    session.execute(f"UPDATE {people} SET city = 'lima' WHERE id = 1 AND seq = 1")
    session.execute(f"DELETE FROM {people} WHERE id = 4")
    session.execute(f"DELETE FROM {people} WHERE id = 7 AND seq > 0")
    session.execute(f"INSERT INTO {people} (id, seq, city) VALUES (100, 0, 'rome') USING TTL 1")
    assert ids(session.execute(f"SELECT id FROM {people} WHERE city = 'lima'")) == [1]
    assert 100 in ids(session.execute(f"SELECT id FROM {people} WHERE city = 'rome'"))
    time.sleep(2.2)
    got = ids(session.execute(f"SELECT id FROM {people} WHERE city = 'rome'"))
    assert got == [i for i in range(30) if i % 3 == 1 and i not in (1, 4, 7)]


def test_partition_key_and_limit(session, people):
    session.execute(f"CREATE INDEX ON {people} (age)")
    assert ids(session.execute(f"SELECT id FROM {people} WHERE id = 5 AND age = 5")) == [5]
    assert ids(session.execute(f"SELECT id FROM {people} WHERE id = 5 AND age = 6")) == []
    # StatementRestrictions.validateSecondaryIndexSelections.
    with pytest.raises(InvalidRequest, match="Select on indexed columns and with IN clause for the PRIMARY KEY are not supported"):
        session.execute(f"SELECT id FROM {people} WHERE id IN (5, 6) AND age = 5")
    session.execute(f"CREATE INDEX ON {people} (city)")
    assert len(list(session.execute(f"SELECT id FROM {people} WHERE city = 'paris' LIMIT 4"))) == 4


def test_legacy_index_needs_allow_filtering_for_other_columns(session, people):
    # StatementRestrictions: a non-indexed column restricted beside a legacy index is filtered.
    session.execute(f"CREATE INDEX ON {people} (city)")
    with pytest.raises(InvalidRequest, match=FILTERING):
        session.execute(f"SELECT id FROM {people} WHERE city = 'rome' AND age = 4")
    # A clustering column restricted beside the index without the partition: filtered too.
    with pytest.raises(InvalidRequest, match=FILTERING):
        session.execute(f"SELECT id FROM {people} WHERE city = 'rome' AND seq = 1")
    # With the partition given, the clustering restriction is served by the key.
    assert ids(session.execute(f"SELECT id FROM {people} WHERE id = 4 AND seq = 1 AND city = 'rome'")) == [4]
    got = ids(session.execute(f"SELECT id FROM {people} WHERE city = 'rome' AND age > 20 ALLOW FILTERING"))
    assert got == [22, 25, 28]
    # A legacy index does not answer a range.
    session.execute(f"CREATE INDEX ON {people} (age)")
    with pytest.raises(InvalidRequest, match=FILTERING):
        session.execute(f"SELECT id FROM {people} WHERE age > 3")


def test_sai_ranges_and_several_columns(session, people):
    # StorageAttachedIndex: ranges on numeric types, AND across SAI columns, no ALLOW FILTERING.
    session.execute(f"CREATE CUSTOM INDEX ON {people} (age) USING 'StorageAttachedIndex'")
    session.execute(f"CREATE INDEX ON {people} (city) USING 'sai'")
    assert ids(session.execute(f"SELECT id FROM {people} WHERE age >= 25")) == [25, 26, 27, 28, 29]
    got = ids(session.execute(f"SELECT id FROM {people} WHERE age > 10 AND age < 20 AND city = 'rome'"))
    assert got == [13, 16, 19]
    with pytest.raises(InvalidRequest, match=FILTERING):
        session.execute(f"SELECT id FROM {people} WHERE age > 10 AND tags CONTAINS 't1'")
    # SAI indexes text as a literal: = only, a range is filtered.
    with pytest.raises(InvalidRequest, match=FILTERING):
        session.execute(f"SELECT id FROM {people} WHERE city > 'p'")


def test_paging_across_physical_partitions(session, ks):
    # Several physical partitions: a throughput past one partition's budget splits the ring
    # (test_throughput.py). Paging state must carry the fan-out over all of them.
    session.execute(f"CREATE TABLE {ks}.many (k int PRIMARY KEY, g int) "
                    "WITH cosmosdb_provisioned_throughput = 40000")
    for k in range(300):
        session.execute(f"INSERT INTO {ks}.many (k, g) VALUES ({k}, {k % 2})")
    deadline = time.monotonic() + 30  # the throughput splits run in the background
    while True:
        parts = list(session.execute("SELECT id FROM system_views.physical_partitions "
                                     "WHERE keyspace_name = %s AND table_name = 'many'", (ks,)))
        if len(parts) > 1 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(parts) > 1, parts
    session.execute(f"CREATE INDEX ON {ks}.many (g)")
    stmt = SimpleStatement(f"SELECT k FROM {ks}.many WHERE g = 1", fetch_size=7)
    result = session.execute(stmt)
    first = list(result.current_rows)
    assert len(first) <= 7 and result.has_more_pages
    got = sorted(r.k for r in session.execute(stmt))
    assert got == list(range(1, 300, 2))


def test_system_schema_and_driver_metadata(session, cluster, people, ks):
    # SchemaKeyspace.addIndexToSchemaMutation: kind COMPOSITES / CUSTOM, options target (+class_name).
    session.execute(f"CREATE INDEX ON {people} (city)")
    session.execute(f"CREATE INDEX by_keys ON {people} (KEYS(attrs))")
    session.execute(f"CREATE INDEX by_age ON {people} (age) USING 'sai'")
    rows = {r.index_name: r for r in session.execute(
        "SELECT index_name, kind, options FROM system_schema.indexes WHERE keyspace_name = %s", (ks,))}
    assert rows["people_city_idx"].kind == "COMPOSITES"
    assert rows["people_city_idx"].options == {"target": "city"}
    assert rows["by_keys"].options == {"target": "keys(attrs)"}
    assert rows["by_age"].kind == "CUSTOM"
    assert rows["by_age"].options == {"target": "age", "class_name": SAI}
    # No explicit refresh: the driver refreshes on the TABLE UPDATED schema change each
    # CREATE INDEX answers (Cassandra's `CreateIndexStatement.schemaChangeEvent`).
    indexes = cluster.metadata.keyspaces[ks].tables["people"].indexes
    assert set(indexes) == {"people_city_idx", "by_keys", "by_age"}
    assert indexes["by_age"].as_cql_query() == \
        f"CREATE CUSTOM INDEX by_age ON {ks}.people (age) USING '{SAI}'"


def test_describe_through_cqlsh(session, server, people, ks):
    # IndexMetadata.toCqlString, printed after the table by DESCRIBE TABLE.
    session.execute(f"CREATE INDEX ON {people} (city)")
    out = " ".join(run_cqlsh(server, "-e", f"DESCRIBE TABLE {people}").stdout.split())
    assert f"CREATE INDEX people_city_idx ON {ks}.people (city);" in out
    out = " ".join(run_cqlsh(server, "-e", f"DESCRIBE INDEX {ks}.people_city_idx").stdout.split())
    assert f"CREATE INDEX people_city_idx ON {ks}.people (city);" in out


def test_drop_index(session, people, ks):
    session.execute(f"CREATE INDEX i1 ON {people} (city)")
    prepared = session.prepare(f"SELECT id FROM {people} WHERE city = ?")
    assert len(list(session.execute(prepared, ("rome",)))) == 10
    session.execute(f"DROP INDEX {ks}.i1")
    with pytest.raises(InvalidRequest, match=FILTERING):
        session.execute(f"SELECT id FROM {people} WHERE city = 'rome'")
    # A statement prepared while the index existed is planned again (and refused).
    with pytest.raises(InvalidRequest, match=FILTERING):
        session.execute(prepared, ("rome",))
    # DropIndexStatement: missing index, and IF EXISTS.
    with pytest.raises(InvalidRequest, match=f"Index '{ks}.i1' doesn't exist"):
        session.execute(f"DROP INDEX {ks}.i1")
    session.execute(f"DROP INDEX IF EXISTS {ks}.i1")


def test_cassandra_refusals(session, ks, people):
    # CreateIndexStatement's messages.
    session.execute(f"CREATE TABLE {ks}.one (k int PRIMARY KEY, v int, c frozen<set<int>>)")
    with pytest.raises(InvalidRequest, match="Cannot create secondary index on the only partition key column k"):
        session.execute(f"CREATE INDEX ON {ks}.one (k)")
    with pytest.raises(InvalidRequest, match="Column 'nope' doesn't exist"):
        session.execute(f"CREATE INDEX ON {ks}.one (nope)")
    session.execute(f"CREATE INDEX a ON {ks}.one (v)")
    with pytest.raises(InvalidRequest, match="Index 'a' already exists"):
        session.execute(f"CREATE INDEX a ON {ks}.one (v)")
    session.execute(f"CREATE INDEX IF NOT EXISTS a ON {ks}.one (v)")
    with pytest.raises(InvalidRequest, match="Index b is a duplicate of existing index a"):
        session.execute(f"CREATE INDEX b ON {ks}.one (v)")
    with pytest.raises(InvalidRequest, match="Non-collection columns only support simple indexes"):
        session.execute(f"CREATE INDEX ON {ks}.one (KEYS(v))")
    with pytest.raises(InvalidRequest, match="must be fully indexed by using the 'full\\(c\\)' modifier"):
        session.execute(f"CREATE INDEX ON {ks}.one (c)")
    with pytest.raises(InvalidRequest, match="full\\(\\) indexes can only be created on frozen collections"):
        session.execute(f"CREATE INDEX ON {ks}.one (FULL(v))")
    with pytest.raises(InvalidRequest, match="with non-map type"):
        session.execute(f"CREATE INDEX ON {people} (KEYS(tags))")
    session.execute(f"CREATE TABLE {ks}.cnt (k int PRIMARY KEY, n counter)")
    with pytest.raises(InvalidRequest, match="counter tables"):
        session.execute(f"CREATE INDEX ON {ks}.cnt (n)")
    session.execute(f"CREATE TABLE {ks}.dur (k int PRIMARY KEY, d duration)")
    with pytest.raises(InvalidRequest, match="Secondary indexes are not supported on duration columns"):
        session.execute(f"CREATE INDEX ON {ks}.dur (d)")
    with pytest.raises(InvalidRequest, match="Must specify index implementation via USING"):
        session.execute(f"CREATE CUSTOM INDEX ON {ks}.one (v)")
    # IndexAttributes.validate.
    with pytest.raises(InvalidRequest, match="Cannot specify options for a non-CUSTOM index"):
        session.execute(f"CREATE INDEX ON {ks}.one (v) WITH OPTIONS = {{'x': 'y'}}")
    # AlterTableStatement: an indexed column cannot be dropped.
    with pytest.raises(InvalidRequest, match="dependent secondary indexes \\(a\\)"):
        session.execute(f"ALTER TABLE {ks}.one DROP v")


def test_restart_keeps_the_index(tmp_path, request):
    srv = new_server(tmp_path, owner=request.node.nodeid).start()
    c = make_cluster(srv)
    try:
        s = c.connect()
        s.execute("CREATE KEYSPACE r WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE r.t (k int PRIMARY KEY, v int)")
        s.execute("CREATE INDEX ON r.t (v)")
        s.execute("INSERT INTO r.t (k, v) VALUES (1, 9)")
    finally:
        c.shutdown()
    stop_and_check(srv)
    srv.start()
    c = make_cluster(srv)
    try:
        s = c.connect()
        assert [r.k for r in s.execute("SELECT k FROM r.t WHERE v = 9")] == [1]
        names = [r.index_name for r in s.execute(
            "SELECT index_name FROM system_schema.indexes WHERE keyspace_name = 'r'")]
        assert names == ["t_v_idx"]
    finally:
        c.shutdown()
    stop_and_check(srv)



def until_schema_arrives(query, within: float = 20):
    """Runs `query` until the node it goes to knows the schema it names (an InvalidRequest
    until then), at most `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            return query()
        except InvalidRequest:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)

def test_index_in_a_cluster(ring):
    # A CREATE INDEX made on node 1 travels with the schema (the metadata Raft group): node 2
    # answers an indexed query without ALLOW FILTERING and lists it in system_schema.indexes.
    from test_cluster import connect, write_new_table
    c1 = connect(ring[0])
    c2 = connect(ring[1], only=True)
    try:
        s1 = c1.connect()
        s1.execute("CREATE KEYSPACE IF NOT EXISTS idx_ring WITH replication = "
                   "{'class': 'SimpleStrategy', 'replication_factor': 3}")
        s1.execute("CREATE TABLE idx_ring.t (k int PRIMARY KEY, v int)")
        ins = s1.prepare("INSERT INTO idx_ring.t (k, v) VALUES (?, ?)")
        for k in range(40):
            write_new_table(s1, ins, (k, k % 4))
        s1.execute("CREATE INDEX ON idx_ring.t (v)")
        s2 = c2.connect()
        got = until_schema_arrives(
            lambda: sorted(r.k for r in s2.execute("SELECT k FROM idx_ring.t WHERE v = 3")))
        assert got == [k for k in range(40) if k % 4 == 3]
        names = [r.index_name for r in s2.execute(
            "SELECT index_name FROM system_schema.indexes WHERE keyspace_name = 'idx_ring'")]
        assert names == ["t_v_idx"]
    finally:
        c2.shutdown()
        c1.shutdown()


def test_vector_search_in_a_cluster(ring):
    # ANN through any node of three: a coordinator that holds no vector graph for a range
    # reads its rows exactly, so the answer is the exact ranking.
    from test_cluster import connect, write_new_table
    c1 = connect(ring[0])
    c3 = connect(ring[2], only=True)
    try:
        s1 = c1.connect()
        s1.execute("CREATE KEYSPACE ann_ring WITH replication = "
                   "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        s1.execute("CREATE TABLE ann_ring.t (k int PRIMARY KEY, v vector<float, 2>)")
        s1.execute("CREATE CUSTOM INDEX ON ann_ring.t (v) USING 'sai' "
                   "WITH OPTIONS = {'similarity_function': 'euclidean'}")
        ins = s1.prepare("INSERT INTO ann_ring.t (k, v) VALUES (?, ?)")
        for k in range(60):
            write_new_table(s1, ins, (k, [float(k), 0.0]))
        s3 = c3.connect()
        got = until_schema_arrives(lambda: [r.k for r in s3.execute(
            "SELECT k FROM ann_ring.t ORDER BY v ANN OF [30.2, 0.0] LIMIT 3")])
        assert got == [30, 31, 29]
    finally:
        c3.shutdown()
        c1.shutdown()


def test_secondary_index_in_a_cluster(ring):
    # Every replica writes entries with the rows it applies and builds them for rows it held
    # before the index; any node coordinates an indexed query group by group.
    from test_cluster import connect, write_new_table
    c1 = connect(ring[0])
    c3 = connect(ring[2], only=True)
    try:
        s1 = c1.connect()
        s1.execute("CREATE KEYSPACE idx_ring2 WITH replication = "
                   "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        s1.execute("CREATE TABLE idx_ring2.t (k int PRIMARY KEY, v int)")
        ins = s1.prepare("INSERT INTO idx_ring2.t (k, v) VALUES (?, ?)")
        for k in range(100):
            write_new_table(s1, ins, (k, k % 10))
        s1.execute("CREATE INDEX ON idx_ring2.t (v)")
        # The new table's groups may still split for its throughput and elect leaders while
        # these writes run: each is idempotent and retried on a timeout, as the first ones.
        for k in range(100, 200):
            write_new_table(s1, ins, (k, k % 10))
        write_new_table(s1, "DELETE FROM idx_ring2.t WHERE k = 3", ())
        write_new_table(s1, "UPDATE idx_ring2.t SET v = 4 WHERE k = 13", ())
        s3 = c3.connect()
        want = sorted(k for k in range(200) if k % 10 == 3 and k not in (3, 13))
        got = until_schema_arrives(
            lambda: sorted(r.k for r in s3.execute("SELECT k FROM idx_ring2.t WHERE v = 3")))
        assert got == want
        traced = s3.execute(SimpleStatement("SELECT k FROM idx_ring2.t WHERE v = 4", fetch_size=7),
                            trace=True)
        assert 13 in [r.k for r in traced]
        events = [e.description for e in traced.get_query_trace().events]
        assert any(e.startswith("Scanning an index from") for e in events), events
    finally:
        c3.shutdown()
        c1.shutdown()
