"""Cassandra 5.0's masking functions (`MaskingFcts`, dynamic data masking) through the python
driver: `mask_null`, `mask_default` on every kind of type, `mask_replace`, `mask_inner`,
`mask_outer` with their optional arguments, `mask_hash` by algorithm, and the refusals with
Cassandra's messages.

Expectations: the examples of Cassandra 5.0's doc page `developing/cql/dynamic-data-masking`
(`mask_inner('Alice', 1, 2)` is `A**ce`, ...), `AbstractType.getMaskedValue` of each type for
`mask_default`, and `FunctionFactory` / `FunctionParameter` / `PartialMaskingFunction` /
`HashMaskingFunction` for the messages. Digests are checked against python's hashlib.
"""

from __future__ import annotations

import datetime
import hashlib
import uuid

import pytest
from cassandra import InvalidRequest
from cassandra.util import Date, Duration, Time

from conftest import new_keyspace, one


@pytest.fixture(scope="module")
def t(session):
    ks = new_keyspace(session, "maskfn")
    session.execute(f"CREATE TYPE {ks}.addr (street text, no int)")
    session.execute(
        f"CREATE TABLE {ks}.t (k int PRIMARY KEY, s text, a ascii, n int, b bigint, f float, "
        f"d decimal, v varint, bo boolean, bl blob, dt date, ts timestamp, tm time, "
        f"u uuid, tu timeuuid, i inet, du duration, l list<int>, st set<text>, "
        f"m map<int, text>, tp tuple<int, text>, ad frozen<addr>, vec vector<float, 3>)")
    session.execute(
        f"INSERT INTO {ks}.t (k, s, a, n, b, f, d, v, bo, bl, dt, ts, tm, u, tu, i, du, l, st, "
        f"m, tp, ad, vec) VALUES (1, 'Alice', 'Bob', 42, 7, 1.5, 12.34, 99, true, 0xcafe, "
        f"'2024-05-06', '2024-05-06 07:08:09+0000', '10:11:12', "
        f"5b6962dd-3f90-4c93-8f61-eabfa4a803e2, 50554d6e-29bb-11e5-b345-feff819cdc9f, "
        f"'10.1.2.3', 1h, [1, 2], {{'x'}}, {{1: 'one'}}, (3, 'three'), "
        f"{{street: 'Main', no: 5}}, [1.0, 2.0, 3.0])")
    session.execute(f"INSERT INTO {ks}.t (k) VALUES (2)")
    return f"{ks}.t"


def test_doc_examples_on_literals(session, t):
    # The examples of Cassandra's dynamic-data-masking page.
    got = one(session, f"SELECT mask_null('Alice'), mask_null(123), mask_default('Alice'), "
                       f"mask_default(123), mask_replace('Alice', 'REDACTED'), "
                       f"mask_replace(123, -1) FROM {t} WHERE k = 1")
    assert got == (None, None, "****", 0, "REDACTED", -1)
    got = one(session, f"SELECT mask_inner('Alice', 1, 2), mask_inner('Alice', 1, null), "
                       f"mask_inner('Alice', null, 2), mask_inner('Alice', 2, 1, '#') "
                       f"FROM {t} WHERE k = 1")
    assert got == ("A**ce", "A****", "***ce", "Al##e")
    got = one(session, f"SELECT mask_outer('Alice', 1, 2), mask_outer('Alice', 1, null), "
                       f"mask_outer('Alice', null, 2), mask_outer('Alice', 2, 1, '#') "
                       f"FROM {t} WHERE k = 1")
    assert got == ("*li**", "*lice", "Ali**", "##ic#")


def test_mask_default_of_every_type(session, t):
    row = session.execute(
        f"SELECT mask_default(s), mask_default(a), mask_default(n), mask_default(b), "
        f"mask_default(f), mask_default(d), mask_default(v), mask_default(bo), "
        f"mask_default(bl), mask_default(dt), mask_default(ts), mask_default(tm), "
        f"mask_default(u), mask_default(tu), mask_default(i), mask_default(du), "
        f"mask_default(l), mask_default(st), mask_default(m), mask_default(tp), "
        f"mask_default(ad), mask_default(vec) FROM {t} WHERE k = 1").one()
    got = tuple(row)
    assert got[:9] == ("****", "****", 0, 0, 0.0, 0, 0, False, b"")
    assert got[9] == Date(0)
    assert got[10] == datetime.datetime(1970, 1, 1)
    assert got[11] == Time(0)
    assert got[12] == uuid.UUID(int=0)
    # TimeUUID.minAtUnixMillis(0): the smallest timeuuid of the epoch's first millisecond.
    assert got[13].version == 1 and got[13].time == 0x01B21DD213814000
    assert got[14] == "0.0.0.0"
    assert got[15] == Duration(0, 0, 0)
    # Variable-length collections mask as empty ones: non-null, with no element.
    assert [list(c) for c in got[16:19]] == [[], [], []]
    assert got[19] == (0, "****")
    assert (got[20].street, got[20].no) == ("****", 0)
    assert list(got[21]) == [0.0, 0.0, 0.0]


def test_masks_on_columns_and_nulls(session, t):
    got = one(session, f"SELECT mask_inner(s, 1, 1), mask_outer(a, 1, 0, '-'), mask_null(n), "
                       f"mask_replace(n, 0), mask_replace(s, 'x') FROM {t} WHERE k = 1")
    assert got == ("A***e", "-ob", None, 0, "x")
    # Null in, null out (mask_default of a null is still the type's default).
    got = one(session, f"SELECT mask_inner(s, 1, 1), mask_hash(s), mask_default(n) "
                       f"FROM {t} WHERE k = 2")
    assert got == (None, None, 0)
    names = session.execute(f"SELECT mask_inner(s, 1, 2), mask_hash(n) FROM {t} WHERE k = 1")
    assert names.column_names == ["system.mask_inner(s, 1, 2)", "system.mask_hash(n)"]


def test_mask_hash_by_algorithm(session, t):
    got = one(session, f"SELECT mask_hash(s), mask_hash(s, 'MD5'), mask_hash(s, 'SHA-1'), "
                       f"mask_hash(s, 'sha-512'), mask_hash(s, 'SHA3-256'), mask_hash(n) "
                       f"FROM {t} WHERE k = 1")
    alice = b"Alice"
    assert got == (hashlib.sha256(alice).digest(), hashlib.md5(alice).digest(),
                   hashlib.sha1(alice).digest(), hashlib.sha512(alice).digest(),
                   hashlib.sha3_256(alice).digest(),
                   hashlib.sha256((42).to_bytes(4, "big")).digest())


@pytest.mark.parametrize("query,message", [
    ("SELECT mask_null(null) FROM {t} WHERE k = 1",
     "Cannot infer type of argument NULL in call to function system.mask_null(any): "
     "use type casts to disambiguate"),
    ("SELECT mask_inner(n, 1, 2) FROM {t} WHERE k = 1",
     "Function system.mask_inner requires an argument of type [text|varchar|ascii], "
     "but found argument n of type int"),
    ("SELECT mask_inner(s, 1) FROM {t} WHERE k = 1",
     "Invalid number of arguments for function "
     "system.mask_inner([text|varchar|ascii], int, int, [text])"),
    ("SELECT mask_replace(s) FROM {t} WHERE k = 1",
     "Invalid number of arguments for function system.mask_replace(any, same)"),
    ("SELECT mask_outer(s, 1, 2, 'ab') FROM {t} WHERE k = 1",
     "The padding argument for function system.mask_outer should be single-character, "
     "but 'ab' has 2 characters."),
    ("SELECT mask_hash(s, 'foo') FROM {t} WHERE k = 1", "Hash algorithm not found: foo"),
])
def test_refusals(session, t, query, message):
    with pytest.raises(InvalidRequest) as e:
        session.execute(query.format(t=t))
    assert message in str(e.value)

