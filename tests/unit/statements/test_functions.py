"""Native functions and CAST resolve by argument type and compute what ScyllaDB computes."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import BIGINT, BLOB, DATE, DECIMAL, DOUBLE, INT, TEXT, TIMESTAMP, TIMEUUID, TINYINT
from tabletdb.statements import functions


def test_time_conversions_are_typed_by_their_argument() -> None:
    assert functions.resolve("todate", [TIMESTAMP]).return_type == DATE
    assert functions.resolve("todate", [TIMESTAMP])(-1) == -1  # floor: the day before the epoch
    assert functions.resolve("tounixtimestamp", [DATE])(2) == 2 * 86_400_000
    with pytest.raises(InvalidRequest, match="does not take an argument of type int"):
        functions.resolve("todate", [INT])
    with pytest.raises(InvalidRequest, match="1 required but 0 provided"):
        functions.resolve("totimestamp", [])
    with pytest.raises(InvalidRequest, match="0 required but 1 provided"):
        functions.resolve("now", [INT])
    with pytest.raises(InvalidRequest, match="Unknown function frob"):
        functions.resolve("frob", [INT])


@given(st.integers(min_value=0, max_value=(1 << 44)))
def test_min_and_max_timeuuid_hold_the_millisecond_they_were_made_of(ms: int) -> None:
    for name in ("mintimeuuid", "maxtimeuuid"):
        u = functions.resolve(name, [TIMESTAMP])(ms)
        assert (u.int >> 76) & 0xF == 1  # version nibble (the 0x7f... half is not RFC 4122)
        assert functions.ms_of_timeuuid(u) == ms
        codec.serialize(TIMEUUID, u)  # a valid timeuuid


def test_timeuuid_of_a_known_uuid() -> None:
    u = uuid.UUID("50554d6e-29bb-11e5-b345-feff819cdc9f")
    # made 2015-07-14 00:00:18.805 UTC (the example of ScyllaDB's and Cassandra's function docs)
    assert functions.resolve("unixtimestampof", [TIMEUUID])(u) == 1436832018805
    assert functions.resolve("todate", [TIMEUUID])(u) == 16630  # days to 2015-07-14


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_blob_conversions_round_trip(n: int) -> None:
    to_blob = functions.resolve("bigintasblob", [BIGINT])
    back = functions.resolve("blobasbigint", [BLOB])
    assert back(to_blob(n)) == n
    with pytest.raises(InvalidRequest, match="cannot be passed"):
        functions.resolve("blobasint", [INT])


def test_null_in_null_out_but_tojson_of_null_is_json_null() -> None:
    assert functions.resolve("todate", [TIMESTAMP])(None) is None
    assert functions.resolve("tojson", [INT])(None) == "null"


def test_casts() -> None:
    assert functions.cast(DOUBLE, INT)(-2.9) == -2
    assert functions.cast(INT, TINYINT)(300) == 44  # low bits, as Java's narrowing
    assert functions.cast(DOUBLE, DECIMAL)(0.1) == Decimal("0.1")
    assert functions.cast(DECIMAL, TEXT)(Decimal("1.50")) == "1.50"
    assert functions.cast(TIMESTAMP, DATE)(86_400_000 * 3 + 5) == 3
    assert functions.cast(INT, TEXT)(None) is None
    for bad in (float("nan"), float("inf"), 1e30):
        with pytest.raises(InvalidRequest, match="Cannot cast"):
            functions.cast(DOUBLE, INT)(bad)
    with pytest.raises(InvalidRequest, match="cannot be cast to"):
        functions.cast(TIMEUUID, INT)
