"""Integers of any size go to and from text (Python's own conversions stop at 4300 digits), and
every codec path that parses or prints one uses them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cql import codec
from tabletdb.cql.compare import decode_decimal
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.format import format_value
from tabletdb.cql.jsonvalues import from_json, to_json
from tabletdb.cql.literals import literal_value
from tabletdb.cql.numbers import brief_int, int_text, parse_int
from tabletdb.cql.types import BIGINT, DECIMAL, TIMESTAMP, VARINT

HUGE = parse_int("7" * 6000)


@given(st.integers(-(10**9000), 10**9000))
def test_int_text_and_parse_int_round_trip(n: int) -> None:
    assert parse_int(int_text(n)) == n


def test_parse_int_still_refuses_what_is_not_a_number() -> None:
    with pytest.raises(ValueError):
        parse_int("12x")
    with pytest.raises(ValueError):
        parse_int("9" * 5000 + "x")


def test_huge_varint_and_decimal_literals_round_trip_through_codec_json_and_text() -> None:
    assert literal_value(VARINT, "integer", "-" + "7" * 6000, "n") == -HUGE
    assert codec.deserialize(VARINT, codec.serialize(VARINT, -HUGE)) == -HUGE
    assert format_value(VARINT, HUGE) == "7" * 6000
    assert to_json(VARINT, HUGE) == "7" * 6000
    assert from_json(VARINT, HUGE) == HUGE
    d = literal_value(DECIMAL, "float", "7" * 6000 + ".5", "d")
    assert codec.deserialize(DECIMAL, codec.serialize(DECIMAL, d)) == d
    assert str(decode_decimal(codec.serialize(DECIMAL, d))) == "7" * 6000 + ".5"


def test_decimals_keep_every_digit() -> None:
    pi = Decimal("3.14159265358979323846264338327950288419716939937510")
    assert str(decode_decimal(codec.serialize(DECIMAL, pi))) == str(pi)
    assert str(codec.deserialize(DECIMAL, codec.serialize(DECIMAL, pi))) == str(pi)
    huge = literal_value(DECIMAL, "float", "1e1000000000", "d")
    assert decode_decimal(codec.serialize(DECIMAL, huge)) == huge


def test_out_of_range_messages_stay_short() -> None:
    with pytest.raises(InvalidRequest) as info:
        codec.serialize(BIGINT, HUGE)
    assert "(6000 digits)" in str(info.value) and len(str(info.value)) < 200
    with pytest.raises(InvalidRequest, match="6000 digits"):
        codec.serialize(TIMESTAMP, literal_value(TIMESTAMP, "string", "7" * 6000, "t"))
    assert brief_int(-HUGE).startswith("-777") and brief_int(12) == "12"
