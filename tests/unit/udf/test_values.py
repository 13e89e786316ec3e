"""The CQL <-> Lua value mapping (pure): every value of every type survives the trip to Lua's
shapes and back, and what ScyllaDB reads leniently or refuses is read or refused the same way."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cql import types as T
from tabletdb.cql.codec import serialize
from tabletdb.cql.duration import Duration
from tabletdb.cql.errors import InvalidRequest
from tabletdb.udf.values import DATE_BIAS, LuaDecimal, LuaTable, from_lua, to_lua
from tests.unit.cql.strategies import cql_types, values_of


def _tuples_without_nulls(t: T.CqlType, v: Any) -> bool:
    """Lua tables hold no nil: a tuple or UDT with a null inside cannot come back whole (in
    ScyllaDB neither)."""
    if v is None:
        return True
    if isinstance(t, T.TupleType | T.UserType):
        types = t.elements if isinstance(t, T.TupleType) else t.field_types
        return all(x is not None and _tuples_without_nulls(ft, x) for ft, x in zip(types, v))
    if isinstance(t, T.ListType | T.SetType | T.VectorType):
        return all(_tuples_without_nulls(t.element, x) for x in v)
    if isinstance(t, T.MapType):
        return all(_tuples_without_nulls(t.key, k) and _tuples_without_nulls(t.value, x) for k, x in v)
    return True


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_every_value_comes_back_as_it_went(data: st.DataObject) -> None:
    t = data.draw(cql_types())
    v = data.draw(values_of(t))
    if not _tuples_without_nulls(t, v):
        return
    back = from_lua(t, to_lua(t, v))
    assert serialize(t, back) == serialize(t, v)


def test_scalars_have_scylladb_shapes_in_lua() -> None:
    assert to_lua(T.INT, 5) == 5
    assert to_lua(T.VARINT, 2**80) == LuaDecimal(Decimal(2**80))
    assert to_lua(T.TEXT, "é") == "é".encode()
    assert to_lua(T.DATE, 0) == DATE_BIAS
    assert to_lua(T.DURATION, Duration(1, 2, 3)) == LuaTable(
        ((b"months", 1), (b"days", 2), (b"nanoseconds", 3))
    )
    assert to_lua(T.ListType(T.INT), (7, 8)) == LuaTable(((1, 7), (2, 8)))
    assert to_lua(T.SetType(T.TEXT), ("a",)) == LuaTable(((b"a", True),))


@pytest.mark.parametrize(
    ("t", "lua", "value"),
    [
        (T.INT, 3.0, 3),  # an integral float is an integer
        (T.INT, b"42", 42),  # a numeric string is its number
        (T.BIGINT, LuaDecimal(Decimal("5")), 5),
        (T.TEXT, 12, "12"),  # a number is text
        (T.TEXT, 1.5, "1.5"),
        (T.DOUBLE, b"2.5", 2.5),
        (T.DECIMAL, 7, Decimal(7)),
        (T.BOOLEAN, 0, True),  # Lua truth: only nil and false are false
        (T.BOOLEAN, False, False),
        (T.TIMESTAMP, LuaTable(((b"year", 1970), (b"month", 1), (b"day", 2))), 129_600_000),
        (T.DATE, LuaTable(((b"year", 1970), (b"month", 1), (b"day", 3))), 2),
        (T.DATE, b"1970-01-02", 1),
        (T.DURATION, LuaTable(((b"days", 3),)), Duration(0, 3, 0)),
        (T.ListType(T.INT), LuaTable(((2, 20), (1, 10))), (10, 20)),
        (T.SetType(T.INT), LuaTable(((3, True), (1, True))), (3, 1)),  # the codec orders them
    ],
)
def test_lenient_readings(t: T.CqlType, lua: Any, value: Any) -> None:
    assert from_lua(t, lua) == value


@pytest.mark.parametrize(
    ("t", "lua", "message"),
    [
        (T.INT, b"abc", "value is not a number"),
        (T.INT, 1.5, "value is not an integer"),
        (T.TINYINT, 300, "out of range for tinyint"),
        (T.DECIMAL, 0.5, "value is not a decimal"),
        (T.TEXT, LuaTable(()), "unexpected value"),
        (T.TEXT, b"\xff", "not valid utf8, invalid character at byte offset 0"),
        (T.ASCII, "é".encode(), "not valid ascii"),
        (T.ListType(T.INT), LuaTable(((1, 1), (3, 3))), "table is not a sequence"),
        (T.ListType(T.INT), 5, "value is not a table"),
        (T.SetType(T.INT), LuaTable(((1, False),)), "tables with true values"),
        (T.TupleType((T.INT, T.INT)), LuaTable(((1, 1),)), "key 2 missing in sequence of size 2"),
        (T.TupleType((T.INT,)), LuaTable(((5, 1),)), "key 5 is not valid for a sequence of size 1"),
        (T.UserType("ks", "u", ("a",), (T.INT,)), LuaTable(((b"b", 1),)), "invalid UDT field 'b'"),
        (T.UserType("ks", "u", ("a",), (T.INT,)), LuaTable(()), "key a missing in udt u"),
        (T.TIMESTAMP, True, "unexpected value"),
        (T.DATE, LuaTable(((b"year", 1), (b"month", 1), (b"day", 1), (b"hour", 1))), "no hour"),
        (T.DATE, LuaTable(((b"year", 1),)), "must have year, month and day"),
        (T.DURATION, LuaTable(((b"weeks", 1),)), "invalid duration field: 'weeks'"),
        (T.UUID, b"not-a-uuid", "Unable to make uuid"),
    ],
)
def test_what_cannot_be_the_type_is_refused_with_scylladb_reason(
    t: T.CqlType, lua: Any, message: str
) -> None:
    with pytest.raises(InvalidRequest, match=message):
        from_lua(t, lua)


def test_nil_is_null_for_every_type() -> None:
    assert from_lua(T.ListType(T.INT), None) is None
    assert to_lua(T.TEXT, None) is None


def test_floats_keep_their_special_values() -> None:
    for x in (math.inf, -math.inf, -0.0):
        assert str(from_lua(T.DOUBLE, to_lua(T.DOUBLE, x))) == str(x)
    assert math.isnan(from_lua(T.DOUBLE, to_lua(T.DOUBLE, math.nan)))
