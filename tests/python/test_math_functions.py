"""Cassandra 5.0's math functions (`cql3/functions/MathFcts.java`) through the python driver:
`abs`, `exp`, `log`, `log10` and `round` return their argument's type, computed as each
`NumberType` does (`Int32Type`, `LongType`, `DoubleType`, `FloatType`, `DecimalType`,
`IntegerType`, ...): Java's `Math` functions and narrowing casts for the fixed-width types,
`BigDecimal.setScale(0, HALF_UP)` for a decimal's round.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from cassandra import InvalidRequest


@pytest.fixture
def nums(session, ks):
    session.execute(f"CREATE TABLE {ks}.nums (k int PRIMARY KEY, i int, b bigint, t tinyint, "
                    "f float, d double, dec decimal, v varint)")
    session.execute(f"INSERT INTO {ks}.nums (k, i, b, t, f, d, dec, v) "
                    "VALUES (1, -7, 1000, 10, 2.5, -2.5, -12.50, -300)")
    return f"{ks}.nums"


def test_math_functions_return_their_arguments_type(session, nums):
    row = session.execute(
        f"SELECT abs(i), log10(b), exp(t), round(f), round(d), abs(d), abs(dec), round(dec), "
        f"abs(v), exp(d), log(b) FROM {nums} WHERE k = 1").one()
    assert row[0] == 7
    assert row[1] == 3                   # (long) Math.log10(1000)
    assert row[2] == 10                  # (byte) Math.exp(10) = (byte) 22026
    assert row[3] == 3.0                 # (float) Math.round(2.5f)
    assert row[4] == -2.0                # Math.round(-2.5) = -2 (ties toward +infinity)
    assert row[5] == 2.5
    assert row[6] == Decimal("12.50")
    assert row[7] == Decimal("-13")      # setScale(0, HALF_UP)
    assert row[8] == 300
    assert row[9] == pytest.approx(math.exp(-2.5))
    assert row[10] == int(math.log(1000))


def test_math_functions_take_literals_markers_and_nulls(session, nums):
    assert session.execute(f"SELECT abs(-3) FROM {nums} WHERE k = 1").one()[0] == 3
    sel = session.prepare(f"SELECT round(d), abs(i) FROM {nums} WHERE k = ?")
    assert tuple(session.execute(sel, (1,)).one()) == (-2.0, 7)
    session.execute(f"INSERT INTO {nums} (k) VALUES (2)")
    assert session.execute(f"SELECT abs(i) FROM {nums} WHERE k = 2").one()[0] is None
    # A text argument matches no signature (FunctionResolver's "Invalid call").
    with pytest.raises(InvalidRequest):
        session.execute(f"SELECT abs('x') FROM {nums} WHERE k = 1")
