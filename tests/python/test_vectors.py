"""Cassandra 5.0's `vector<T, n>` type over a real ringdb server and the python driver (3.30,
which reads and writes vectors from the `VectorType(...)` custom class in result and prepared
metadata): literals, prepared statements, Cassandra's messages for wrong dimensions,
system_schema and DESCRIBE, and the similarity functions of `VectorFcts`.

Sources cited below are Apache Cassandra 5.0's: `db/marshal/VectorType.java`,
`cql3/CQL3Type.java`, `cql3/functions/VectorFcts.java`,
`test/unit/org/apache/cassandra/index/sai/cql/VectorInvalidQueryTest.java` and
`test/unit/org/apache/cassandra/cql3/validation/operations/CQLVectorTest.java` and
`test/unit/org/apache/cassandra/cql3/functions/VectorFctsTest.java`.
"""

from __future__ import annotations

import math

import pytest
from cassandra import InvalidRequest

from conftest import run_cqlsh


@pytest.fixture
def table(session, ks):
    session.execute(
        f"CREATE TABLE {ks}.vecs (pk int PRIMARY KEY, val vector<float, 3>, "
        "names vector<text, 2>)")
    return f"{ks}.vecs"


def test_literals_round_trip(session, table):
    # CQLVectorTest: a list literal assigned to a vector column is a vector literal.
    session.execute(f"INSERT INTO {table} (pk, val, names) VALUES (0, [1.0, 2.5, -3.0], ['a', 'bc'])")
    row = session.execute(f"SELECT val, names FROM {table} WHERE pk = 0").one()
    # The python driver returns a vector as a list.
    assert row.val == [1.0, 2.5, -3.0]
    assert row.names == ["a", "bc"]


def test_prepared_statements_bind_vectors(session, table):
    # VectorType's serializers: fixed-width floats concatenated, text elements each with a
    # vint length; the driver serializes them from the prepared metadata's VectorType class.
    ins = session.prepare(f"INSERT INTO {table} (pk, val, names) VALUES (?, ?, ?)")
    session.execute(ins, (1, [0.5, 0.25, 8.0], ["x" * 300, ""]))
    sel = session.prepare(f"SELECT val, names FROM {table} WHERE pk = ?")
    row = session.execute(sel, (1,)).one()
    assert row.val == [0.5, 0.25, 8.0]
    assert row.names == ["x" * 300, ""]


def test_wrong_dimension_is_refused(session, table):
    # VectorInvalidQueryTest.cannotInsertWrongNumberOfDimensions: exact message.
    with pytest.raises(InvalidRequest,
                       match=r"Invalid vector literal for val of type vector<float, 3>; "
                             r"expected 3 elements, but given 2"):
        session.execute(f"INSERT INTO {table} (pk, val) VALUES (2, [1.0, 2.0])")
    # A bound value of the wrong size fails VectorType's validation (a MarshalException,
    # an InvalidRequest for the client).
    ins = session.prepare(f"INSERT INTO {table} (pk, names) VALUES (?, ?)")
    with pytest.raises(Exception):
        session.execute(ins, (2, ["only one"]))


def test_dimension_zero_is_refused(session, ks):
    # VectorInvalidQueryTest.cannotCreateEmptyVectorColumn (VectorType's constructor).
    with pytest.raises(InvalidRequest, match=r"vectors may only have positive dimensions; given 0"):
        session.execute(f"CREATE TABLE {ks}.bad (pk int PRIMARY KEY, val vector<float, 0>)")
    with pytest.raises(InvalidRequest, match=r"vectors may only have positive dimensions; given -1"):
        session.execute(f"CREATE TABLE {ks}.bad (pk int PRIMARY KEY, val vector<float, -1>)")


def test_schema_spells_vectors_as_cassandra(session, ks, table, server):
    # CQL3Type.Vector.toString: `vector<float, 3>`.
    rows = session.execute(
        "SELECT column_name, type FROM system_schema.columns "
        "WHERE keyspace_name = %s AND table_name = 'vecs'", (ks,))
    got = {r.column_name: r.type for r in rows}
    assert got == {"pk": "int", "val": "vector<float, 3>", "names": "vector<text, 2>"}
    out = run_cqlsh(server, "-e", f"DESCRIBE TABLE {table}").stdout
    assert "val vector<float, 3>" in out
    assert "names vector<text, 2>" in out


def test_custom_class_column_is_a_vector(session, ks):
    # VectorType.toString / TypeParser.stringifyVectorParameters: the marshal class form.
    session.execute(
        f"CREATE TABLE {ks}.c (pk int PRIMARY KEY, v 'org.apache.cassandra.db.marshal.VectorType("
        "org.apache.cassandra.db.marshal.FloatType , 2)')")
    t = session.execute(
        "SELECT type FROM system_schema.columns WHERE keyspace_name = %s AND table_name = 'c' "
        "AND column_name = 'v'", (ks,)).one().type
    assert t == "vector<float, 2>"


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return (1 + dot / (na * nb)) / 2


def euclidean(a, b):
    return 1 / (1 + sum((x - y) ** 2 for x, y in zip(a, b)))


def dot_product(a, b):
    return (1 + sum(x * y for x, y in zip(a, b))) / 2


ROWS = {
    0: [1.0, 2.0, 3.0],
    1: [0.5, -0.25, 0.125],
    2: [-1.0, 0.0, 4.0],
}
QUERY = [0.1, 0.2, 0.3]


@pytest.fixture
def filled(session, table):
    for pk, v in ROWS.items():
        session.execute(f"INSERT INTO {table} (pk, val) VALUES (%s, %s)", (pk, v))
    return table


@pytest.mark.parametrize("fn,expected", [
    # VectorFcts: Lucene's VectorSimilarityFunction COSINE, EUCLIDEAN, DOT_PRODUCT.
    ("similarity_cosine", cosine),
    ("similarity_euclidean", euclidean),
    ("similarity_dot_product", dot_product),
])
def test_similarity_functions(session, filled, fn, expected):
    lit = ", ".join(str(x) for x in QUERY)
    # Against a literal whose type comes from the column argument.
    rows = session.execute(f"SELECT pk, {fn}(val, [{lit}]) AS s FROM {filled}")
    got = {r.pk: r.s for r in rows}
    assert set(got) == set(ROWS)
    for pk, v in ROWS.items():
        assert got[pk] == pytest.approx(expected(v, QUERY), rel=1e-5), (fn, pk)
    # Column against column.
    rows = session.execute(f"SELECT pk, {fn}(val, val) AS s FROM {filled}")
    for r in rows:
        assert r.s == pytest.approx(expected(ROWS[r.pk], ROWS[r.pk]), rel=1e-5)


def test_similarity_of_literals_and_nulls(session, filled):
    # VectorFctsTest: two literals infer vector<float, 2>; a null argument gives null.
    rows = list(session.execute(
        f"SELECT similarity_dot_product([1.0, 2.0], [3.0, 0.5]) AS s FROM {filled} WHERE pk = 0"))
    assert rows[0].s == pytest.approx(dot_product([1.0, 2.0], [3.0, 0.5]))
    rows = list(session.execute(f"SELECT similarity_euclidean(val, null) AS s FROM {filled} WHERE pk = 0"))
    assert rows[0].s is None


def test_similarity_errors(session, filled):
    # VectorFctsTest: arguments of different dimensions are refused.
    with pytest.raises(InvalidRequest, match="All arguments must have the same vector dimensions"):
        session.execute(f"SELECT similarity_cosine(val, [1.0, 2.0]) FROM {filled}")
    with pytest.raises(InvalidRequest, match="All arguments must have the same vector dimensions"):
        session.execute(f"SELECT similarity_euclidean([1.0, 2.0, 3.0], [1.1, 1.2]) FROM {filled}")
    # VectorFctsTest: wrong arity (FunctionResolver's message).
    with pytest.raises(InvalidRequest, match="Invalid number of arguments in call to function"):
        session.execute(f"SELECT similarity_dot_product(val) FROM {filled}")
    with pytest.raises(InvalidRequest, match="Invalid number of arguments in call to function"):
        session.execute(f"SELECT similarity_dot_product(val, val, val) FROM {filled}")
    # VectorFctsTest: only cosine refuses all-zero vectors.
    with pytest.raises(InvalidRequest, match="Function similarity_cosine doesn't support all-zero vectors"):
        session.execute(f"SELECT similarity_cosine(val, [0.0, 0.0, 0.0]) FROM {filled}")
    # VectorFctsTest: a non-float-vector argument.
    with pytest.raises(InvalidRequest, match="requires a float vector argument, but found argument names "
                                             "of type vector<text, 2>"):
        session.execute(f"SELECT similarity_cosine(names, [1.0, 2.0]) FROM {filled}")


def test_vectors_in_the_primary_key_order_element_by_element(session, ks):
    # VectorType.FixedLengthSerializer.compareCustom: element by element (FloatType order).
    session.execute(f"CREATE TABLE {ks}.k (pk int, ck vector<float, 2>, v int, PRIMARY KEY (pk, ck))")
    for i, ck in enumerate([[2.0, 1.0], [1.0, 5.0], [1.0, -1.0]]):
        session.execute(f"INSERT INTO {ks}.k (pk, ck, v) VALUES (0, %s, %s)", (ck, i))
    rows = list(session.execute(f"SELECT ck, v FROM {ks}.k WHERE pk = 0"))
    assert [r.ck for r in rows] == [[1.0, -1.0], [1.0, 5.0], [2.0, 1.0]]
    row = session.execute(f"SELECT v FROM {ks}.k WHERE pk = 0 AND ck = [1.0, 5.0]").one()
    assert row.v == 1


def test_nested_elements_updates_and_json(session, ks):
    # VectorType.getInstance freezes the element type (TypeParser path and CQL3Type.Raw).
    session.execute(f"CREATE TABLE {ks}.n (pk int PRIMARY KEY, l vector<list<int>, 2>, v vector<float, 2>)")
    t = session.execute(
        "SELECT type FROM system_schema.columns WHERE keyspace_name = %s AND table_name = 'n' "
        "AND column_name = 'l'", (ks,)).one().type
    assert t == "vector<frozen<list<int>>, 2>"
    # CQL3Type.Raw.RawVector.freeze returns the vector itself: frozen<> adds nothing.
    session.execute(f"ALTER TABLE {ks}.n ADD f frozen<vector<float, 2>>")
    t = session.execute(
        "SELECT type FROM system_schema.columns WHERE keyspace_name = %s AND table_name = 'n' "
        "AND column_name = 'f'", (ks,)).one().type
    assert t == "vector<float, 2>"
    session.execute(f"INSERT INTO {ks}.n (pk, l) VALUES (0, [[1, 2], []])")
    session.execute(f"UPDATE {ks}.n SET v = [0.5, 1.5] WHERE pk = 0")
    row = session.execute(f"SELECT l, v FROM {ks}.n WHERE pk = 0").one()
    assert row.l == [[1, 2], []]
    assert row.v == [0.5, 1.5]
    # A vector is a JSON array (VectorType.toJSONString / fromJSONObject).
    js = session.execute(f"SELECT JSON pk, v FROM {ks}.n WHERE pk = 0").one()[0]
    assert js == '{"pk": 0, "v": [0.5, 1.5]}'
    session.execute(f"INSERT INTO {ks}.n JSON '{{\"pk\": 1, \"v\": [2.0, 3.0]}}'")
    assert session.execute(f"SELECT v FROM {ks}.n WHERE pk = 1").one().v == [2.0, 3.0]


def test_vectors_are_one_cell(session, table):
    # A vector is frozen (VectorType is not multi-cell; CQL3Type.Raw.RawVector is frozen):
    # no element updates, no null elements.
    session.execute(f"INSERT INTO {table} (pk, val) VALUES (9, [1.0, 2.0, 3.0])")
    with pytest.raises(InvalidRequest):
        session.execute(f"UPDATE {table} SET val[0] = 5.0 WHERE pk = 9")
    with pytest.raises(InvalidRequest):
        session.execute(f"UPDATE {table} SET val = val + [4.0] WHERE pk = 9")
    with pytest.raises(InvalidRequest):
        session.execute(f"INSERT INTO {table} (pk, val) VALUES (9, [1.0, null, 3.0])")
    assert session.execute(f"SELECT val FROM {table} WHERE pk = 9").one().val == [1.0, 2.0, 3.0]


def test_similarity_with_bind_markers(session, filled):
    # VectorFctsTest: a bind marker takes the vector type of the other argument.
    stmt = session.prepare(f"SELECT pk, similarity_euclidean(val, ?) AS s FROM {filled} WHERE pk = ?")
    row = session.execute(stmt, (QUERY, 1)).one()
    assert row.s == pytest.approx(euclidean(ROWS[1], QUERY), rel=1e-5)
    # A null bound value gives null (VectorFctsTest: "null arguments with bind markers").
    assert session.execute(stmt, (None, 1)).one().s is None
    # Selector markers come before the WHERE clause's, in statement order.
    stmt = session.prepare(f"SELECT similarity_cosine(?, val) AS s FROM {filled} WHERE pk = ?")
    assert session.execute(stmt, (QUERY, 0)).one().s == pytest.approx(cosine(QUERY, ROWS[0]), rel=1e-5)
    # VectorFctsTest: two markers have no type to take.
    with pytest.raises(InvalidRequest, match=r"Cannot infer type of argument \? in call to function "
                                             r"similarity_dot_product"):
        session.prepare(f"SELECT similarity_dot_product(?, ?) FROM {filled}")
    # A bound vector of another dimension fails VectorType's validation.
    stmt = session.prepare(f"SELECT similarity_dot_product(val, ?) FROM {filled} WHERE pk = 0")
    with pytest.raises(Exception):
        session.execute(stmt, ([1.0, 2.0],))


def test_similarity_with_type_cast_arguments(session, filled):
    # VectorFctsTest ("testTypeCasts"-style use: `(vector<float, n>) ?`): a type hint gives a
    # marker or a literal its type (Cassandra's `TypeCast` term), so both arguments may be
    # markers once one is cast.
    stmt = session.prepare(
        f"SELECT pk, similarity_euclidean(val, (vector<float, 3>) ?) AS s FROM {filled} WHERE pk = ?")
    # The cast marker takes the hint's type (the bind metadata the driver encodes with).
    assert stmt.column_metadata[0].type.__name__.startswith("VectorType")
    row = session.execute(stmt, (QUERY, 2)).one()
    assert row.s == pytest.approx(euclidean(ROWS[2], QUERY), rel=1e-5)
    stmt = session.prepare(
        f"SELECT similarity_dot_product((vector<float, 2>) ?, (vector<float, 2>) ?) AS s FROM {filled} WHERE pk = 0")
    assert session.execute(stmt, ([1.0, 2.0], [3.0, 4.0])).one().s == pytest.approx(dot_product([1.0, 2.0], [3.0, 4.0]))
    # A cast literal against a cast marker.
    stmt = session.prepare(
        f"SELECT similarity_cosine((vector<float, 2>) [1.0, 0.0], (vector<float, 2>) ?) AS s FROM {filled} WHERE pk = 0")
    assert session.execute(stmt, ([0.0, 1.0],)).one().s == pytest.approx(cosine([1.0, 0.0], [0.0, 1.0]))
    # The cast's dimension must match the column's (VectorFcts: same dimensions).
    with pytest.raises(InvalidRequest, match="All arguments must have the same vector dimensions"):
        session.prepare(f"SELECT similarity_cosine(val, (vector<float, 2>) ?) FROM {filled}")


def test_similarity_on_a_virtual_table_with_markers(session):
    # Native functions run on system and virtual tables too (Cassandra 5.0 selects them on any
    # table); selector markers are numbered before the WHERE clause's.
    stmt = session.prepare(
        "SELECT key, similarity_cosine((vector<float, 2>) ?, (vector<float, 2>) ?) AS s "
        "FROM system.local WHERE key = ?")
    row = session.execute(stmt, ([1.0, 0.0], [1.0, 1.0], "local")).one()
    assert row.key == "local"
    assert row.s == pytest.approx(cosine([1.0, 0.0], [1.0, 1.0]), rel=1e-5)
    # Two bare markers still have no type to take.
    with pytest.raises(InvalidRequest, match=r"Cannot infer type of argument \?"):
        session.prepare("SELECT similarity_cosine(?, ?) FROM system.local")
