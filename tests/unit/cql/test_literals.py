"""literal_value(): which constant kinds each type takes, how the text converts, and error messages."""

from __future__ import annotations

import ipaddress
import math
import uuid
from decimal import Decimal
from typing import Any

import pytest

from tabletdb.cql import types as T
from tabletdb.cql.duration import Duration
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.literals import literal_value


@pytest.mark.parametrize(
    ("t", "kind", "text", "expected"),
    [
        (T.INT, "integer", "-42", -42),
        (T.TINYINT, "integer", "127", 127),
        (T.VARINT, "integer", "123456789012345678901234567890", 123456789012345678901234567890),
        (T.COUNTER, "integer", "5", 5),
        (T.DOUBLE, "integer", "3", 3.0),
        (T.DOUBLE, "float", "1.5e3", 1500.0),
        (T.DOUBLE, "float", "-Infinity", -math.inf),
        (T.FLOAT, "float", "0.1", 0.10000000149011612),
        (T.FLOAT, "float", "1e39", math.inf),
        (T.DECIMAL, "float", "1.50", Decimal("1.50")),
        (T.DECIMAL, "integer", "-7", Decimal(-7)),
        (T.TEXT, "string", "héllo", "héllo"),
        (T.ASCII, "string", "plain", "plain"),
        (T.BOOLEAN, "boolean", "TRUE", True),
        (T.BLOB, "hex", "0xCAFE", b"\xca\xfe"),
        (T.BLOB, "hex", "0x", b""),
        (T.INET, "string", "::1", ipaddress.ip_address("::1")),
        (
            T.UUID,
            "uuid",
            "550e8400-e29b-41d4-a716-446655440000",
            uuid.UUID("550e8400-e29b-41d4-a716-446655440000"),
        ),
        (T.TIMESTAMP, "integer", "1000", 1000),
        (T.TIMESTAMP, "string", "2024-03-05 10:11:12.5+0100", 1709629872500),
        (T.TIMESTAMP, "string", "2024-03-05T09:11:12.500Z", 1709629872500),
        (T.TIMESTAMP, "string", "2024-03-05", 1709596800000),
        (T.TIMESTAMP, "string", "1969-12-31 23:59:59.999-00:00", -1),
        (T.DATE, "string", "1970-01-02", 1),
        (T.DATE, "string", "1969-12-31", -1),
        (T.DATE, "integer", "2147483648", 0),
        (T.TIME, "string", "01:02:03.000000004", 3723000000004),
        (T.TIME, "string", "00:00:01.5", 1_500_000_000),
        (T.TIME, "integer", "7", 7),
        (T.DURATION, "duration", "1h30m", Duration(0, 0, 5400 * 10**9)),
        (T.DURATION, "duration", "P1W", Duration(0, 7, 0)),
        (T.DURATION, "duration", "P1Y2M3DT4H5M6S", Duration(14, 3, (4 * 3600 + 5 * 60 + 6) * 10**9)),
        (T.DURATION, "duration", "P0001-02-03T04:05:06", Duration(14, 3, (4 * 3600 + 5 * 60 + 6) * 10**9)),
        (T.DURATION, "duration", "-2mo3ms", Duration(-2, 0, -3_000_000)),
        (T.DURATION, "duration", "1y1mo1w1d1h1m1s1ms1us1ns", Duration(13, 8, 3661001001001)),
    ],
)
def test_accepted_literals(t: T.CqlType, kind: Any, text: str, expected: Any) -> None:
    assert literal_value(t, kind, text, "c") == expected


def test_nan_float_literal() -> None:
    assert math.isnan(literal_value(T.DOUBLE, "float", "NaN", "c"))


@pytest.mark.parametrize(
    ("t", "kind", "text", "message"),
    [
        (T.INT, "string", "abc", "Invalid STRING constant ('abc') for \"col\" of type int"),
        (T.INT, "float", "1.5", 'Invalid FLOAT constant (1.5) for "col" of type int'),
        (T.TEXT, "integer", "1", 'Invalid INTEGER constant (1) for "col" of type text'),
        (T.BLOB, "string", "x", "Invalid STRING constant"),
        (T.UUID, "string", "550e8400-e29b-41d4-a716-446655440000", "Invalid STRING constant"),
        (T.BOOLEAN, "integer", "1", "Invalid INTEGER constant"),
        (T.ListType(T.INT), "integer", "1", "of type list<int>"),
        (T.DURATION, "integer", "5", "Invalid INTEGER constant"),
    ],
)
def test_wrong_kind_is_rejected_with_cassandra_message(
    t: T.CqlType, kind: Any, text: str, message: str
) -> None:
    with pytest.raises(InvalidRequest) as err:
        literal_value(t, kind, text, "col")
    assert message in err.value.message


@pytest.mark.parametrize(
    ("t", "kind", "text"),
    [
        (T.TINYINT, "integer", "128"),
        (T.INT, "integer", "2147483648"),
        (T.BIGINT, "integer", "-9223372036854775809"),
        (T.ASCII, "string", "é"),
        (T.TIMEUUID, "uuid", "550e8400-e29b-41d4-a716-446655440000"),
        (T.UUID, "uuid", "not-a-uuid"),
        (T.TIMESTAMP, "string", "2024-13-01"),
        (T.TIMESTAMP, "string", "yesterday"),
        (T.DATE, "string", "2023-02-29"),
        (T.DATE, "integer", "4294967296"),
        (T.TIME, "string", "24:00:00"),
        (T.TIME, "integer", "86400000000000"),
        (T.INET, "string", "300.1.1.1"),
        (T.BLOB, "hex", "0xabc"),
        (T.DECIMAL, "float", "NaN"),
        (T.DURATION, "duration", "1h1h"),
        (T.DURATION, "duration", "P"),
    ],
)
def test_unparseable_text_is_rejected(t: T.CqlType, kind: Any, text: str) -> None:
    with pytest.raises(InvalidRequest):
        literal_value(t, kind, text, "col")


def test_varint_literals_past_int_to_str_limit_are_exact() -> None:
    """int(str) refuses more than 4300 digits; such a literal was a ServerError (found fuzzing)."""
    from tabletdb.cql.format import format_value
    from tabletdb.cql.jsonvalues import to_json
    from tabletdb.cql.types import NativeType

    varint = NativeType("varint")
    text = "-" + "9" * 5000
    value = literal_value(varint, "integer", text, "c")
    assert value == -(10**5000 - 1)
    assert to_json(varint, value) == text
    assert format_value(varint, value) == text
