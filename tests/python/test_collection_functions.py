"""Cassandra 5.0's collection functions (`CollectionFcts`): map_keys, map_values,
collection_count, collection_min, collection_max, collection_sum and collection_avg, over
frozen and non-frozen collections, nulls, empty collections, and the refusals of
`FunctionParameter` / `FunctionFactory` with their messages.

Expectations come from Apache Cassandra 5.0's `cql3/functions/CollectionFcts.java` (min, max,
sum and avg fold the collection with the aggregate of the same name, so an int average stays
an int and the average of nothing is 0) and `test/unit/.../CollectionFctsTest.java`.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from cassandra import InvalidRequest


@pytest.fixture(scope="module")
def t(session):
    from conftest import new_keyspace
    ks = new_keyspace(session, "colfn")
    session.execute(f"""CREATE TABLE {ks}.t (k int PRIMARY KEY, m map<text, int>, l list<int>,
        s set<text>, fl frozen<list<double>>, fs frozen<set<decimal>>, v uuid)""")
    session.execute(f"INSERT INTO {ks}.t (k, m, l, s, fl, fs) VALUES (1, {{'b': 2, 'a': 1}}, "
                    "[3, 1, 2, 1], {'y', 'x'}, [1.5, 2.5, 4.0], {1.5, 2.25})")
    session.execute(f"INSERT INTO {ks}.t (k, fl) VALUES (2, [])")
    return f"{ks}.t"


def one(session, query):
    rows = list(session.execute(query))
    assert len(rows) == 1
    return tuple(rows[0])


def test_map_keys_and_values(session, t):
    keys, values = one(session, f"SELECT map_keys(m), map_values(m) FROM {t} WHERE k = 1")
    assert sorted(keys) == ["a", "b"]
    assert values == [1, 2]  # in key order, as the map holds them


def test_count_min_max_sum_avg(session, t):
    got = one(session, f"SELECT collection_count(l), collection_count(m), collection_count(s), "
                       f"collection_min(l), collection_max(l), collection_min(s), "
                       f"collection_max(s), collection_sum(l), collection_avg(l) "
                       f"FROM {t} WHERE k = 1")
    # A list keeps its duplicates; 7 / 4 is 1 in int arithmetic, as avg(int) gives.
    assert got == (4, 2, 2, 1, 3, "x", "y", 7, 1)
    fl = one(session, f"SELECT collection_sum(fl), collection_avg(fl), collection_max(fl) "
                      f"FROM {t} WHERE k = 1")
    assert fl == (8.0, 8.0 / 3, 4.0)
    fs = one(session, f"SELECT collection_sum(fs), collection_avg(fs) FROM {t} WHERE k = 1")
    # avg(decimal) adds (x - avg) / count rounded HALF_EVEN to the scale of x - avg:
    # 1.5, then 1.5 + 0.75 / 2 = 1.5 + 0.38.
    assert fs == (Decimal("3.75"), Decimal("1.88"))


def test_null_and_empty_collections(session, t):
    got = one(session, f"SELECT map_keys(m), collection_count(l), collection_sum(l), "
                       f"collection_max(s) FROM {t} WHERE k = 2")
    assert got == (None, None, None, None)
    empty = one(session, f"SELECT collection_count(fl), collection_sum(fl), collection_avg(fl), "
                         f"collection_min(fl) FROM {t} WHERE k = 2")
    assert empty == (0, 0.0, 0.0, None)


@pytest.mark.parametrize("query,message", [
    ("SELECT collection_sum(v) FROM {t}",
     "Function system.collection_sum requires a numeric set/list argument, but found argument "
     "v of type uuid"),
    ("SELECT collection_avg(s) FROM {t}",
     "Function system.collection_avg requires a numeric set/list argument, but found argument "
     "s of type set<text>"),
    ("SELECT collection_min(m) FROM {t}",
     "Function system.collection_min requires a set or list argument, but found argument m of "
     "type map<text, int>"),
    ("SELECT map_keys(l) FROM {t}",
     "Function system.map_keys requires a map argument, but found argument l of type "
     "list<int>"),
    ("SELECT collection_count(v) FROM {t}",
     "Function system.collection_count requires a collection argument, but found argument v of "
     "type uuid"),
    ("SELECT map_values(m, m) FROM {t}",
     "Invalid number of arguments for function system.map_values(map)"),
])
def test_refusals(session, t, query, message):
    with pytest.raises(InvalidRequest, match=message.replace("(", r"\(").replace(")", r"\)")):
        session.execute(query.format(t=t))
