"""to_json()/from_json(): Cassandra's JSON forms, and that rendered JSON reads back as the same value."""

from __future__ import annotations

import json
import math
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cql import types as T
from tabletdb.cql.codec import serialize
from tabletdb.cql.duration import Duration
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.jsonvalues import from_json, to_json

from .strategies import cql_types, values_of


def _has_non_finite(t: T.CqlType, v: Any) -> bool:
    if isinstance(v, float):
        return math.isnan(v) or math.isinf(v)
    if isinstance(v, tuple):
        return any(_has_non_finite(t, x) for x in v)
    return False


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_json_round_trip(data: st.DataObject) -> None:
    t = data.draw(cql_types())
    value = data.draw(values_of(t))
    text = to_json(t, value)
    parsed = json.loads(text, parse_float=Decimal)
    if _has_non_finite(t, value):
        return  # NaN and infinities become null, as in Cassandra
    assert serialize(t, from_json(t, parsed, "c")) == serialize(t, value)


@pytest.mark.parametrize(
    ("t", "value", "text"),
    [
        (T.INT, 5, "5"),
        (T.DOUBLE, 1.0, "1.0"),
        (T.FLOAT, 0.10000000149011612, "0.1"),
        (T.DOUBLE, math.nan, "null"),
        (T.DOUBLE, 1e7, "1.0E7"),
        (T.DOUBLE, -1.5e-4, "-1.5E-4"),
        (T.DOUBLE, 0.001, "0.001"),
        (T.DOUBLE, -0.0, "-0.0"),
        (T.DOUBLE, 123456.75, "123456.75"),
        (T.FLOAT, 3.4028234663852886e38, "3.4028235E38"),
        (T.DECIMAL, Decimal("1E+3"), "1E+3"),
        (T.DECIMAL, Decimal("1.50"), "1.50"),
        (T.TEXT, 'a"b', '"a\\"b"'),
        (T.BLOB, b"\x00\xff", '"0x00ff"'),
        (T.TIMESTAMP, 1709629872500, '"2024-03-05 09:11:12.500Z"'),
        (T.DATE, 19782, '"2024-02-29"'),
        (T.TIME, 3723000000004, '"01:02:03.000000004"'),
        (T.DURATION, Duration(0, 1, 3_600_000_000_000), '"1d1h"'),
        (T.UUID, uuid.UUID(int=1), '"00000000-0000-0000-0000-000000000001"'),
        (T.MapType(T.INT, T.TEXT), ((1, "a"), (2, "b")), '{"1": "a", "2": "b"}'),
        (T.MapType(T.TEXT, T.BOOLEAN), (("k", True),), '{"k": true}'),
        (T.MapType(T.ListType(T.TEXT, True), T.INT), ((("a",), 1),), '{"[\\"a\\"]": 1}'),
        (T.SetType(T.INT), (1, 2), "[1, 2]"),
        (T.TupleType((T.INT, T.TEXT)), (1, None), "[1, null]"),
        (T.UserType("ks", "u", ("a", "B"), (T.INT, T.INT), True), (1, 2), '{"a": 1, "\\"B\\"": 2}'),
    ],
)
def test_to_json_forms(t: T.CqlType, value: Any, text: str) -> None:
    assert to_json(t, value) == text


def test_from_json_leniency() -> None:
    assert from_json(T.INT, "12") == 12
    assert from_json(T.TIMESTAMP, 1000) == 1000
    assert from_json(T.TIMESTAMP, "1970-01-01 00:00:01Z") == 1000
    assert from_json(T.DOUBLE, "NaN") != from_json(T.DOUBLE, "NaN")
    assert from_json(T.BOOLEAN, "TRUE") is True
    assert from_json(T.SetType(T.INT), [3, 1, 3]) == (1, 3)
    u = T.UserType("ks", "u", ("a", "B"), (T.INT, T.INT), True)
    assert from_json(u, {"A": 1, '"B"': 2}) == (1, 2)
    assert from_json(u, {}) == (None, None)
    assert from_json(u, json.loads(to_json(u, (3, 4)))) == (3, 4)


@pytest.mark.parametrize(
    ("t", "parsed"),
    [
        (T.INT, 1.5),
        (T.INT, "x"),
        (T.TEXT, 1),
        (T.BLOB, "00"),
        (T.ListType(T.INT), {"a": 1}),
        (T.TupleType((T.INT,)), [1, 2]),
        (T.UserType("ks", "u", ("a",), (T.INT,), True), {"b": 1}),
        (T.BOOLEAN, 1),
    ],
)
def test_from_json_errors_name_the_receiver(t: T.CqlType, parsed: Any) -> None:
    with pytest.raises(InvalidRequest, match="Error decoding JSON value for col"):
        from_json(t, parsed, "col")
