"""Cassandra 5.0's vector search over a real ringdb server and the python driver: a
storage-attached index on a `vector<float, n>` column, `ORDER BY v ANN OF [...] LIMIT k`
(best first, merged across physical partitions, kept in step with writes, deletes and
overwrites), its similarity function option, and Cassandra's refusals.

Sources cited below are Apache Cassandra 5.0's `cql3/statements/SelectStatement.java` (the
TOPK_* messages), `cql3/restrictions/StatementRestrictions.java` (ANN_* messages) and the SAI
tests `test/unit/org/apache/cassandra/index/sai/cql/VectorInvalidQueryTest.java`,
`VectorTypeTest.java` and `VectorSiftSmallTest.java`.
"""

from __future__ import annotations

import math
import random

import pytest
from cassandra import InvalidRequest
from cassandra.query import SimpleStatement

SAI = "StorageAttachedIndex"


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    return (1 + dot / (na * nb)) / 2


def euclidean(a, b):
    return 1 / (1 + sum((x - y) ** 2 for x, y in zip(a, b)))


@pytest.fixture
def vt(session, ks):
    session.execute(f"CREATE TABLE {ks}.vt (pk int, c int, str_val text, val vector<float, 3>, "
                    "PRIMARY KEY (pk, c))")
    return f"{ks}.vt"


def test_ann_returns_the_nearest_rows_best_first(session, vt):
    # VectorTypeTest.endToEndTest: rows come back ordered by similarity to the query vector,
    # and LIMIT cuts them; similarity_cosine of each row is non-increasing.
    session.execute(f"CREATE CUSTOM INDEX ON {vt}(val) USING '{SAI}'")
    rows = {(0, 0): [1.0, 2.0, 3.0], (1, 0): [2.0, 3.0, 4.0], (2, 0): [3.0, 4.0, 5.0],
            (3, 0): [4.0, 5.0, 6.0], (3, 1): [-1.0, 0.5, 2.0]}
    for (pk, c), v in rows.items():
        session.execute(f"INSERT INTO {vt} (pk, c, str_val, val) VALUES (%s, %s, 'x', %s)",
                        (pk, c, v))
    q = [2.5, 3.5, 4.5]
    got = session.execute(
        f"SELECT pk, c, similarity_cosine(val, [2.5, 3.5, 4.5]) AS s FROM {vt} "
        f"ORDER BY val ANN OF [2.5, 3.5, 4.5] LIMIT 3").all()
    want = sorted(rows, key=lambda k: -cosine(rows[k], q))[:3]
    assert [(r.pk, r.c) for r in got] == want
    scores = [r.s for r in got]
    assert scores == sorted(scores, reverse=True)
    # Prepared, with the vector and the limit bound.
    sel = session.prepare(f"SELECT pk, c FROM {vt} ORDER BY val ANN OF ? LIMIT ?")
    got = session.execute(sel, (q, 5)).all()
    assert [(r.pk, r.c) for r in got] == sorted(rows, key=lambda k: -cosine(rows[k], q))
    # Within one partition (VectorInvalidQueryTest.canOrderWithWhereOnPrimaryColumns).
    got = session.execute(f"SELECT c FROM {vt} WHERE pk = 3 ORDER BY val ANN OF [-1.0, 0.5, 2.0] "
                          "LIMIT 1").all()
    assert [r.c for r in got] == [1]
    # IN on the partition key, a partition named twice counted once; rows merged by score.
    got = session.execute(f"SELECT pk, c FROM {vt} WHERE pk IN (3, 0, 3) "
                          "ORDER BY val ANN OF [-1.0, 0.5, 2.0] LIMIT 5").all()
    assert [(r.pk, r.c) for r in got] == sorted(
        [(3, 0), (3, 1), (0, 0)], key=lambda k: -cosine(rows[k], [-1.0, 0.5, 2.0]))


def test_ann_sees_writes_deletes_and_overwrites_at_once(session, vt):
    session.execute(f"CREATE CUSTOM INDEX ON {vt}(val) USING 'sai' "
                    "WITH OPTIONS = {'similarity_function': 'euclidean'}")
    for i in range(50):
        session.execute(f"INSERT INTO {vt} (pk, c, val) VALUES (%s, 0, %s)",
                        (i, [float(i), 0.0, 0.0]))

    def nearest(q, k):
        return [r.pk for r in session.execute(
            f"SELECT pk FROM {vt} ORDER BY val ANN OF %s LIMIT {k}", (q,))]

    assert nearest([10.2, 0.0, 0.0], 3) == [10, 11, 9]
    session.execute(f"DELETE FROM {vt} WHERE pk = 10 AND c = 0")
    assert nearest([10.2, 0.0, 0.0], 2) == [11, 9]
    # An overwrite moves the row: it is found at its new place, never at the old one.
    session.execute(f"UPDATE {vt} SET val = [100.0, 0.0, 0.0] WHERE pk = 11 AND c = 0")
    assert nearest([10.2, 0.0, 0.0], 2) == [9, 12]
    assert nearest([99.0, 0.0, 0.0], 1) == [11]
    # TTL: an expired row is gone from the results.
    session.execute(f"INSERT INTO {vt} (pk, c, val) VALUES (500, 0, [500.0, 0.0, 0.0]) USING TTL 1")
    assert nearest([500.0, 0.0, 0.0], 1) == [500]
    import time
    time.sleep(2.1)
    assert nearest([500.0, 0.0, 0.0], 1) == [11]
    # The euclidean score is Cassandra's 1 / (1 + d^2).
    row = session.execute(f"SELECT similarity_euclidean(val, [9.5, 0.0, 0.0]) AS s FROM {vt} "
                          "ORDER BY val ANN OF [9.5, 0.0, 0.0] LIMIT 1").one()
    assert row.s == pytest.approx(euclidean([9.0, 0, 0], [9.5, 0, 0]))


def test_ann_recall_on_random_vectors(session, ks):
    # A smaller cousin of VectorSiftSmallTest's recall check: 2,000 random 16-d vectors,
    # recall@10 of ANN against an exact ranking computed here.
    session.execute(f"CREATE TABLE {ks}.r (id int PRIMARY KEY, v vector<float, 16>)")
    session.execute(f"CREATE CUSTOM INDEX ON {ks}.r(v) USING '{SAI}' "
                    "WITH OPTIONS = {'similarity_function': 'EUCLIDEAN'}")
    rng = random.Random(5)
    data = [[rng.uniform(-1, 1) for _ in range(16)] for _ in range(2000)]
    ins = session.prepare(f"INSERT INTO {ks}.r (id, v) VALUES (?, ?)")
    for i, v in enumerate(data):
        session.execute(ins, (i, v))
    sel = session.prepare(f"SELECT id FROM {ks}.r ORDER BY v ANN OF ? LIMIT 10")
    hits = 0
    for _ in range(20):
        q = [rng.uniform(-1, 1) for _ in range(16)]
        truth = sorted(range(len(data)), key=lambda i: -euclidean(data[i], q))[:10]
        got = [r.id for r in session.execute(sel, (q,))]
        assert len(got) == 10
        hits += len(set(got) & set(truth))
    assert hits / 200 >= 0.95


def test_index_options_show_in_schema_and_describe(session, ks, vt):
    session.execute(f"CREATE CUSTOM INDEX vi ON {vt}(val) USING 'sai' "
                    "WITH OPTIONS = {'similarity_function': 'DOT_PRODUCT'}")
    row = session.execute("SELECT kind, options FROM system_schema.indexes "
                          "WHERE keyspace_name = %s AND table_name = 'vt' AND index_name = 'vi'",
                          (ks,)).one()
    assert row.kind == "CUSTOM"
    assert row.options["similarity_function"] == "DOT_PRODUCT"
    assert row.options["target"] == "val"
    text = "\n".join(r.create_statement for r in session.execute(f"DESCRIBE INDEX {ks}.vi"))
    assert "WITH OPTIONS = {'similarity_function': 'DOT_PRODUCT'}" in text


def test_cassandras_refusals(session, ks, vt):
    # StatementRestrictions.ANN_REQUIRES_INDEX_MESSAGE (VectorInvalidQueryTest
    # .cannotPerformNonANNQueryOnVectorIndex's neighbours).
    with pytest.raises(InvalidRequest, match="ANN ordering by vector requires the column to be indexed"):
        session.execute(f"SELECT * FROM {vt} ORDER BY val ANN OF [2.5, 3.5, 4.5] LIMIT 5")
    session.execute(f"CREATE TABLE {ks}.one (k int PRIMARY KEY, v vector<float, 1>, c int)")
    # VectorInvalidQueryTest.cannotIndex1DWithCosine.
    with pytest.raises(InvalidRequest, match="Cosine similarity is not supported for single-dimension vectors"):
        session.execute(f"CREATE CUSTOM INDEX ON {ks}.one(v) USING '{SAI}'")
    session.execute(f"CREATE CUSTOM INDEX ON {ks}.one(v) USING '{SAI}' "
                    "WITH OPTIONS = {'similarity_function': 'euclidean'}")
    # SelectStatement.TOPK_LIMIT_ERROR, TOPK_AGGREGATION_ERROR, TOPK_PARTITION_LIMIT_ERROR.
    with pytest.raises(InvalidRequest, match="Top-K queries must have a limit specified"):
        session.execute(f"SELECT * FROM {ks}.one WHERE k = 1 ORDER BY v ANN OF [0]")
    with pytest.raises(InvalidRequest, match="Top-K queries can not be run with aggregation"):
        session.execute(f"SELECT sum(c) FROM {ks}.one WHERE k = 1 ORDER BY v ANN OF [0] LIMIT 4")
    with pytest.raises(InvalidRequest, match="Top-K queries do not support per-partition limits"):
        session.execute(f"SELECT * FROM {ks}.one ORDER BY v ANN OF [2] PER PARTITION LIMIT 1 LIMIT 3")
    # VectorInvalidQueryTest.mustHaveLimitSpecifiedAndWithinMaxAllowed.
    with pytest.raises(InvalidRequest, match="requires a LIMIT that is not greater than 1000. LIMIT was 1001"):
        session.execute(f"SELECT * FROM {ks}.one WHERE k = 1 ORDER BY v ANN OF [0] LIMIT 1001")
    # descendingVectorOrderingIsNotAllowed, vectorOrderingIsNotAllowedWithClusteringOrdering,
    # multiVectorOrderingsNotAllowed, cannotOrderWithAnnOnNonVectorColumn.
    with pytest.raises(InvalidRequest, match="Descending ANN ordering is not supported"):
        session.execute(f"SELECT * FROM {ks}.one ORDER BY v ANN OF [2.5] DESC LIMIT 2")
    with pytest.raises(InvalidRequest, match="ANN ordering does not support any other ordering"):
        session.execute(f"SELECT * FROM {vt} ORDER BY val ANN OF [2.5, 3.5, 4.5], c ASC LIMIT 2")
    with pytest.raises(InvalidRequest, match="Cannot specify more than one ANN ordering"):
        session.execute(f"SELECT * FROM {vt} ORDER BY val ANN OF [2.5, 3.5, 4.5], val ANN OF [1.0, 1.0, 1.0] LIMIT 2")
    with pytest.raises(InvalidRequest, match="ANN ordering is only supported on float vector indexes"):
        session.execute(f"SELECT * FROM {ks}.one ORDER BY c ANN OF 1 LIMIT 1")
    # An unindexed filter with ANN (StatementRestrictions.ANN_REQUIRES_INDEXED_FILTERING_MESSAGE).
    with pytest.raises(InvalidRequest, match="ANN ordering by vector requires all restricted column"):
        session.execute(f"SELECT * FROM {ks}.one WHERE c = 1 ORDER BY v ANN OF [1.0] LIMIT 1")
    # VectorInvalidQueryTest.cannotCreateIndexOnNonFloatVector.
    session.execute(f"CREATE TABLE {ks}.iv (k int PRIMARY KEY, v vector<int, 2>)")
    with pytest.raises(InvalidRequest, match="float"):
        session.execute(f"CREATE CUSTOM INDEX ON {ks}.iv(v) USING '{SAI}'")
    # The server keeps serving.
    assert session.execute(f"SELECT count(*) FROM {ks}.one").one()[0] == 0


def test_page_size_below_limit_warns_and_returns_all(session, ks):
    # SelectStatement.TOPK_PAGE_SIZE_WARNING (VectorInvalidQueryTest.mustHaveLimitWithinPageSize).
    session.execute(f"CREATE TABLE {ks}.p (k int PRIMARY KEY, v vector<float, 2>)")
    session.execute(f"CREATE CUSTOM INDEX ON {ks}.p(v) USING '{SAI}'")
    for i in range(1, 20):
        session.execute(f"INSERT INTO {ks}.p (k, v) VALUES (%s, %s)", (i, [float(i), 1.0]))
    stmt = SimpleStatement(f"SELECT k FROM {ks}.p ORDER BY v ANN OF [3.0, 1.0] LIMIT 10",
                           fetch_size=4)
    result = session.execute(stmt)
    assert len(result.current_rows) == 10
    warnings = result.response_future.warnings or []
    assert any("Top-K queries do not support paging" in w for w in warnings)
    # SelectStatement.TOPK_CONSISTENCY_LEVEL_WARNING: QUORUM is downgraded to ONE.
    from cassandra import ConsistencyLevel
    stmt = SimpleStatement(f"SELECT k FROM {ks}.p ORDER BY v ANN OF [3.0, 1.0] LIMIT 2",
                           consistency_level=ConsistencyLevel.QUORUM)
    result = session.execute(stmt)
    assert [r.k for r in result] == [3, 4]
    warnings = result.response_future.warnings or []
    assert any("Downgrading the consistency level to ONE" in w for w in warnings)


def test_graphs_are_rebuilt_after_a_restart(tmp_path, request):
    # The graphs live in memory beside the rows: a restarted server answers from its stored
    # rows at once (reading exactly until a graph is built) and then from the graph.
    from conftest import make_cluster, new_server, stop_and_check
    srv = new_server(tmp_path, owner=request.node.nodeid).start()
    c = make_cluster(srv)
    try:
        s = c.connect()
        s.execute("CREATE KEYSPACE r WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE r.t (k int PRIMARY KEY, v vector<float, 2>)")
        s.execute(f"CREATE CUSTOM INDEX ON r.t (v) USING '{SAI}'")
        for k in range(1, 30):
            s.execute("INSERT INTO r.t (k, v) VALUES (%s, %s)", (k, [1.0, float(k)]))
    finally:
        c.shutdown()
    stop_and_check(srv)
    srv.start()
    c = make_cluster(srv)
    try:
        s = c.connect()
        for _ in range(3):
            got = [r.k for r in s.execute("SELECT k FROM r.t ORDER BY v ANN OF [1.0, 7.1] LIMIT 2")]
            assert got == [7, 8]
    finally:
        c.shutdown()
    stop_and_check(srv)
