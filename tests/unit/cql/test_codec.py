"""Codec: round trips, byte-for-byte agreement with scylla-driver's codecs, and rejection of bad input."""

from __future__ import annotations

import ipaddress
import re
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tabletdb.cql import types as T
from tabletdb.cql.codec import deserialize, serialize, validate
from tabletdb.cql.duration import Duration
from tabletdb.cql.errors import InvalidRequest

from .strategies import cql_types, driver_type, from_driver, to_driver, values_of

PROTOCOL = 4


@st.composite
def typed_values(draw: st.DrawFn, driver_safe: bool = False) -> tuple[T.CqlType, Any]:
    t = draw(cql_types())
    return t, draw(values_of(t, driver_safe))


@settings(max_examples=100, deadline=None)
@given(typed_values())
def test_round_trip_is_stable(tv: tuple[T.CqlType, Any]) -> None:
    t, value = tv
    data = serialize(t, value)
    validate(t, data)
    back = deserialize(t, data)
    assert serialize(t, back) == data
    hash(back)  # every value must be usable inside a set


_TIMEUUID_SET_KEYED_MAP = (  # the driver cannot look this map's value up by its key (see from_driver)
    T.MapType(T.SetType(T.NativeType("timeuuid"), True), T.NativeType("ascii"), True),
    (
        (
            (
                uuid.UUID("d95bafc8-f2a4-127b-9cf4-bb99f4bea973"),
                uuid.UUID("5c6e4337-15ba-1bdd-9772-19d30e7a269f"),
            ),
            "",
        ),
    ),
)


@settings(max_examples=100, deadline=None)
@given(typed_values(driver_safe=True))
@example(_TIMEUUID_SET_KEYED_MAP)
def test_agrees_with_driver_codecs(tv: tuple[T.CqlType, Any]) -> None:
    t, value = tv
    dt = driver_type(t)
    ours = serialize(t, value)
    assert dt.to_binary(to_driver(t, value), PROTOCOL) == ours
    from_theirs = from_driver(t, dt.from_binary(ours, PROTOCOL))
    assert serialize(t, from_theirs) == ours


@pytest.mark.parametrize(
    ("t", "value", "hex_"),
    [
        (T.INT, -2, "fffffffe"),
        (T.VARINT, -128, "80"),
        (T.VARINT, 128, "0080"),
        (T.VARINT, 0, "00"),
        (T.DECIMAL, Decimal("-1.50"), "00000002ff6a"),
        (T.DATE, 0, "80000000"),
        (T.DATE, -1, "7fffffff"),
        (T.DURATION, Duration(1, 2, 3), "020406"),
        (T.DURATION, Duration(-1, 0, -1), "010001"),
        (T.INET, ipaddress.ip_address("127.0.0.1"), "7f000001"),
        (T.BOOLEAN, True, "01"),
        (T.ListType(T.INT), (1,), "000000010000000400000001"),
        (T.TupleType((T.INT, T.TEXT)), (1, None), "0000000400000001ffffffff"),
        (T.VectorType(T.INT, 2), (1, 2), "0000000100000002"),
        (T.VectorType(T.TEXT, 2), ("a", ""), "016100"),
    ],
)
def test_known_encodings(t: T.CqlType, value: Any, hex_: str) -> None:
    assert serialize(t, value).hex() == hex_
    assert deserialize(t, bytes.fromhex(hex_)) == value


def test_set_and_map_come_back_in_cql_order() -> None:
    s = T.SetType(T.INT)
    assert deserialize(s, serialize(s, [3, -1, 3, 2])) == (-1, 2, 3)
    m = T.MapType(T.TEXT, T.INT)
    assert deserialize(m, serialize(m, {"b": 1, "a": 2})) == (("a", 2), ("b", 1))


def test_udt_accepts_fewer_fields_and_mappings() -> None:
    u = T.UserType("ks", "addr", ("street", "zip"), (T.TEXT, T.INT), True)
    short = bytes.fromhex("0000000178")  # just the first field, "x"
    assert deserialize(u, short) == ("x", None)
    assert serialize(u, {"zip": 5}) == serialize(u, (None, 5))
    with pytest.raises(InvalidRequest, match="unknown field"):
        serialize(u, {"city": "y"})


def test_empty_values_of_fixed_size_types_are_null() -> None:
    assert deserialize(T.INT, b"") is None
    assert deserialize(T.TEXT, b"") == ""
    validate(T.INT, b"")


@pytest.mark.parametrize(
    ("t", "value", "fragment"),
    [
        (T.TINYINT, 128, "tinyint"),
        (T.INT, 2**31, "int"),
        (T.ASCII, "é", "ascii"),
        (T.TIMEUUID, uuid.UUID(int=0x4000 << 64), "timeuuid"),
        (T.TIME, -1, "time"),
        (T.DATE, 2**31, "date"),
        (T.FLOAT, 1e300, "float"),
        (T.INT, "1", "int"),
        (T.INT, True, "int"),
        (T.DECIMAL, Decimal("NaN"), "decimal"),
        (T.VectorType(T.INT, 2), (1,), "vector"),
        (T.TupleType((T.INT,)), (1, 2), "tuple"),
        (T.ListType(T.INT), "abc", "list"),
    ],
)
def test_bad_values_are_rejected_naming_the_type(t: T.CqlType, value: Any, fragment: str) -> None:
    with pytest.raises(InvalidRequest, match=fragment):
        serialize(t, value)


@pytest.mark.parametrize(
    ("t", "hex_"),
    [
        (T.INT, "000001"),
        (T.BIGINT, "00"),
        (T.TEXT, "ff"),
        (T.ASCII, "80"),
        (T.UUID, "00"),
        (T.TIMEUUID, "00000000000040000000000000000000"),
        (T.INET, "0000"),
        (T.TIME, "ffffffffffffffff"),
        (T.ListType(T.INT), "00000001"),
        (T.ListType(T.INT), "0000000100000004000000010000"),
        (T.ListType(T.INT), "00000001ffffffff"),
        (T.TupleType((T.INT,)), "000000040000000100000004"),
        (T.VectorType(T.INT, 2), "00000001"),
        (T.DURATION, "02"),
        (T.DECIMAL, "0000"),
    ],
)
def test_malformed_bytes_are_rejected(t: T.CqlType, hex_: str) -> None:
    with pytest.raises(InvalidRequest, match=re.escape(t.cql())):
        validate(t, bytes.fromhex(hex_))
    with pytest.raises(InvalidRequest):
        deserialize(t, bytes.fromhex(hex_))


@settings(max_examples=100, deadline=None)
@given(cql_types(), st.binary(max_size=40))
def test_validate_accepts_exactly_what_deserialize_accepts(t: T.CqlType, data: bytes) -> None:
    try:
        deserialize(t, data)
        decodes = True
    except InvalidRequest:
        decodes = False
    try:
        validate(t, data)
        valid = True
    except InvalidRequest:
        valid = False
    assert valid == decodes
