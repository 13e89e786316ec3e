"""Spark <-> CQL value conversion, with scylla-driver's serializer and tabletdb's codec as oracles."""

from __future__ import annotations

import datetime as dt
import uuid
from collections import namedtuple
from decimal import Decimal
from typing import Any

import pytest
from cassandra import util as cutil
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pyspark.sql.types import _make_type_verifier

from tabletdb.cql import types as T
from tabletdb.cql.codec import deserialize, serialize
from tabletdb.spark.schema_map import spark_type
from tabletdb.spark.values import ValueConversionError, to_driver, to_spark
from tests.unit.cql.strategies import cql_types, driver_type, values_of

SPARKABLE_NATIVES = st.sampled_from([T.native(n) for n in T.NATIVE_TYPE_NAMES if n != "counter"])


@st.composite
def typed_values(draw: st.DrawFn) -> tuple[T.CqlType, Any]:
    t = draw(cql_types(SPARKABLE_NATIVES))
    return t, draw(values_of(t, driver_safe=True))


@settings(max_examples=150, deadline=None)
@given(typed_values())
def test_spark_form_fits_the_spark_type_and_writes_back_the_same_cql_value(tv: tuple[T.CqlType, Any]) -> None:
    t, value = tv
    try:
        spark_value = to_spark(t, value)
    except ValueConversionError as exc:
        # Only dates outside Python's years 1..9999 cannot be represented in Spark.
        assert str(exc).startswith("date value"), exc
        assume(False)
        raise
    _make_type_verifier(spark_type(t), nullable=True)(spark_value)
    wire = driver_type(t).to_binary(to_driver(t, spark_value), 4)
    # The server canonicalises set and map order; so does re-encoding with our codec.
    assert serialize(t, deserialize(t, wire)) == serialize(t, value)


def test_driver_objects_become_spark_values() -> None:
    udt = T.UserType("ks", "u", ("a", "b"), (T.INT, T.TEXT), True)
    Udt = namedtuple("Udt", ["a", "b"])
    assert to_spark(T.TIMESTAMP, dt.datetime(2024, 1, 2, 3, 4, 5, 6000)) == dt.datetime(
        2024, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC
    )
    assert to_spark(T.TIMESTAMP, -1) == dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=dt.UTC)
    assert to_spark(T.DATE, cutil.Date(19000)) == dt.date(2022, 1, 8)
    assert to_spark(T.TIME, cutil.Time(5)) == 5
    assert to_spark(T.DURATION, cutil.Duration(1, 2, 3)) == (1, 2, 3)
    assert to_spark(T.VARINT, 10**40) == "1" + "0" * 40
    assert to_spark(T.DECIMAL, Decimal("1.50")) == "1.50"
    assert to_spark(T.SetType(T.INT), cutil.SortedSet([3, 1])) == [1, 3]
    assert to_spark(T.MapType(T.TEXT, T.INT), cutil.OrderedMap([("a", 1)])) == {"a": 1}
    assert to_spark(udt, Udt(1, "x")) == (1, "x")
    assert to_spark(udt, (1,)) == (1, None)  # a field added after the value was written
    frozen_key = T.MapType(T.ListType(T.INT, True), T.INT)
    assert to_spark(frozen_key, [((1, 2), 3)]) == [([1, 2], 3)]


def test_spark_values_become_driver_values() -> None:
    u = uuid.uuid1()
    assert to_driver(T.TIMEUUID, str(u)) == u
    assert to_driver(T.TIMESTAMP, dt.datetime(1970, 1, 1, 0, 0, 1, 999, tzinfo=dt.UTC)) == 1000
    assert to_driver(T.TIMESTAMP, dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)) == -1
    assert to_driver(T.DATE, dt.date(1970, 1, 2)) == cutil.Date(1)
    assert to_driver(T.DECIMAL, "1.50") == Decimal("1.50")
    assert to_driver(T.VARINT, "-12") == -12
    assert to_driver(T.DURATION, (1, 2, 3)) == cutil.Duration(1, 2, 3)
    assert to_driver(T.INET, "::1") == "::1"


@pytest.mark.parametrize(
    ("t", "value", "reason"),
    [
        (T.INT, 2**31, "out of range"),
        (T.TINYINT, "1", "not an integer"),
        (T.BOOLEAN, 1, "not a boolean"),
        (T.ASCII, "é", "non-ASCII"),
        (T.TIMEUUID, "6ba7b810-9dad-41d1-80b4-00c04fd430c8", "version-1"),
        (T.UUID, "not-a-uuid", "badly formed"),
        (T.INET, "1.2.3", "does not appear to be an IPv4 or IPv6 address"),
        (T.DECIMAL, "NaN", "finite"),
        (T.TIME, 86_400 * 10**9, "nanoseconds since midnight"),
        (T.ListType(T.INT), [1, "x"], "int value 'x': not an integer"),
    ],
)
def test_bad_values_are_rejected_with_the_type_and_reason(t: T.CqlType, value: Any, reason: str) -> None:
    with pytest.raises(ValueConversionError, match=reason):
        to_driver(t, value)


def test_dates_beyond_python_range_fail_loudly() -> None:
    with pytest.raises(ValueConversionError, match="date"):
        to_spark(T.DATE, 2**31 - 1)
