"""Cassandra 5.0's `format_bytes` and `format_time` (`FormatFcts`) through the python driver:
the automatic unit, a target unit, a source and a target unit, text columns holding numbers,
null, and the refusals with Cassandra's messages.

Expectations follow Apache Cassandra 5.0's `cql3/functions/FormatFcts.java` (one argument:
bytes shown in the largest unit strictly below the value, milliseconds in the largest unit
holding at least one; conversions round down) and `FormatBytesTest` / `FormatTimeTest`.
"""

from __future__ import annotations

import pytest
from cassandra import InvalidRequest

from conftest import new_keyspace, one


@pytest.fixture(scope="module")
def t(session):
    ks = new_keyspace(session, "fmtfn")
    session.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, b bigint, s text, n int, u uuid)")
    session.execute(f"INSERT INTO {ks}.t (k, b, s) VALUES (1, 3145728, '90061000')")
    session.execute(f"INSERT INTO {ks}.t (k, b, s, n) VALUES (2, 1024, 'abc', -5)")
    return f"{ks}.t"


def test_format_bytes(session, t):
    got = one(session, f"SELECT format_bytes(b), format_bytes(b, 'KiB'), "
                       f"format_bytes(b, 'MiB', 'B'), format_bytes(b, 'B', 'GiB') "
                       f"FROM {t} WHERE k = 1")
    assert got == ("3 MiB", "3072 KiB", "3298534883328 B", "0 GiB")
    # 1024 is not above one KiB: it stays in bytes.
    assert one(session, f"SELECT format_bytes(b) FROM {t} WHERE k = 2") == ("1024 B",)


def test_format_time(session, t):
    got = one(session, f"SELECT format_time(s), format_time(s, 'h'), format_time(b, 's', 'm'), "
                       f"format_time(b, 'ms', 'us') FROM {t} WHERE k = 1")
    assert got == ("1 d", "25 h", "52428 m", "3145728000 us")
    assert one(session, f"SELECT format_time(n) FROM {t} WHERE k = 1") == (None,)


@pytest.mark.parametrize("query,message", [
    ("SELECT format_bytes(b, 'abc') FROM {t} WHERE k = 1",
     "Unsupported data storage unit: abc. Supported units are: B, KiB, MiB, GiB"),
    ("SELECT format_time(b, 'x') FROM {t} WHERE k = 1",
     "Unsupported time unit: x. Supported units are: ns, us, ms, s, m, h, d"),
    ("SELECT format_time(n) FROM {t} WHERE k = 2", "value must be non-negative"),
    ("SELECT format_bytes(s) FROM {t} WHERE k = 2",
     "unable to convert string 'abc' to a value of type long"),
    ("SELECT format_bytes(b, null) FROM {t} WHERE k = 1", "none of the arguments may be null"),
    ("SELECT format_time(u) FROM {t} WHERE k = 1",
     "Function system.format_time requires an argument of type"),
    ("SELECT format_bytes(b, 'B', 'B', 'B') FROM {t} WHERE k = 1",
     "Invalid number of arguments for function system.format_bytes"),
])
def test_refusals(session, t, query, message):
    with pytest.raises(InvalidRequest) as info:
        session.execute(query.format(t=t))
    assert message in str(info.value)
