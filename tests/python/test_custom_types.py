"""Custom (marshal class) column types, as the DataStax Java driver's CustomTypeTest uses them
against Cassandra: short class names are stored with Cassandra's full names, a class with a CQL
name becomes that type ('ListType(Int32Type)' is list<int>), 'ReversedType(..)' on a clustering
column is its descending order, and CompositeType / DynamicCompositeType columns take their
string forms ('foo:32', 's@foo:i@32').

The python driver cannot decode a DynamicCompositeType value (it reads it as a CompositeType),
as against Cassandra, so c1 is only written and ordered here; its bytes are checked by the unit
tests of cql/src/types/marshal.rs.
"""

from __future__ import annotations

import pytest
from cassandra import InvalidRequest

MARSHAL = "org.apache.cassandra.db.marshal."
DCT = (f"{MARSHAL}DynamicCompositeType(s=>{MARSHAL}UTF8Type,i=>{MARSHAL}Int32Type)")
CT = f"{MARSHAL}CompositeType({MARSHAL}UTF8Type,{MARSHAL}Int32Type)"


@pytest.fixture
def table(session, ks):
    session.execute(
        f"CREATE TABLE {ks}.test (k int, "
        "c1 'DynamicCompositeType(s => UTF8Type, i => Int32Type)', "
        "c2 'ReversedType(CompositeType(UTF8Type, Int32Type))', "
        "c3 'ListType(Int32Type)', "
        "PRIMARY KEY (k, c1, c2))")
    return f"{ks}.test"


def test_custom_types_are_stored_with_full_class_names(session, ks, table):
    rows = session.execute(
        "SELECT column_name, type, clustering_order FROM system_schema.columns "
        "WHERE keyspace_name = %s AND table_name = 'test'", (ks,))
    got = {r.column_name: (r.type, r.clustering_order) for r in rows}
    assert got == {
        "k": ("int", "none"),
        "c1": (f"'{DCT}'", "asc"),
        "c2": (f"'{CT}'", "desc"),
        "c3": ("list<int>", "none"),
    }


def test_composite_values_from_their_string_forms(session, table):
    session.execute(f"INSERT INTO {table} (k, c1, c2, c3) VALUES (0, 's@foo:i@32', 'foo:32', [1,2,3])")
    session.execute(f"INSERT INTO {table} (k, c1, c2, c3) VALUES (0, 'i@42', ':42', [2,3,4])")
    session.execute(f"INSERT INTO {table} (k, c1, c2, c3) VALUES (0, 'i@12:i@3', 'foo', [3,4,5])")
    rs = session.execute(f"SELECT k, c2, c3 FROM {table}")
    # Ordered by c1 as the Java driver's test expects: i@12:i@3, i@42, s@foo:i@32.
    assert [(r.k, r.c2, r.c3) for r in rs] == [
        (0, ("foo",), [3, 4, 5]),
        (0, ("", 42), [2, 3, 4]),
        (0, ("foo", 32), [1, 2, 3]),
    ]
    # A component that does not parse as its type is refused, and the server goes on.
    with pytest.raises(InvalidRequest, match="Invalid STRING constant"):
        session.execute(f"INSERT INTO {table} (k, c1, c2) VALUES (1, 'i@x', 'a:1')")
    with pytest.raises(InvalidRequest, match="Invalid STRING constant"):
        session.execute(f"INSERT INTO {table} (k, c1, c2) VALUES (1, 'i@1', 'a:notanint')")
    assert session.execute(f"SELECT count(*) FROM {table} WHERE k = 0").one()[0] == 3
