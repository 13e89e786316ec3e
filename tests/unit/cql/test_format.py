"""format_value()/format_float(): literal text that reads back as the same value."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cql import types as T
from tabletdb.cql.codec import serialize
from tabletdb.cql.duration import Duration
from tabletdb.cql.format import format_float, format_value
from tabletdb.cql.literals import literal_value

from .strategies import native_values

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def _read_back(t: T.NativeType, text: str) -> Any:
    """A minimal tokenizer for native literals, standing in for the grammar."""
    if text.startswith("'"):
        return literal_value(t, "string", text[1:-1].replace("''", "'"), "c")
    if text in ("true", "false"):
        return literal_value(t, "boolean", text, "c")
    if text.startswith("0x"):
        return literal_value(t, "hex", text, "c")
    if _UUID.match(text):
        return literal_value(t, "uuid", text, "c")
    if t.name == "duration":
        return literal_value(t, "duration", text, "c")
    kind = "integer" if re.fullmatch(r"-?\d+", text) else "float"
    return literal_value(t, kind, text, "c")


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_native_literals_read_back_equal(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from([n for n in T.NATIVE_TYPE_NAMES if n != "counter"]))
    t = T.native(name)
    if name == "timestamp":
        value = data.draw(st.integers(-(10**14), 10**14))  # 4-digit years, as DESCRIBE prints
    else:
        value = data.draw(native_values(name))
    back = _read_back(t, format_value(t, value))
    if isinstance(value, float) and math.isnan(value):
        # CQL text has one NaN: a NaN's sign and payload bits cannot survive a literal
        assert isinstance(back, float) and math.isnan(back)
        return
    assert serialize(t, back) == serialize(t, value)


@pytest.mark.parametrize(
    ("value", "single", "text"),
    [
        (1.0, False, "1"),
        (0.01, False, "0.01"),
        (0.1, False, "0.1"),
        (1e20, False, "1e+20"),
        (1.5e-7, False, "1.5e-07"),
        (-2.5, False, "-2.5"),
        (0.10000000149011612, True, "0.1"),
        (float("nan"), False, "NaN"),
        (float("-inf"), False, "-Infinity"),
    ],
)
def test_format_float(value: float, single: bool, text: str) -> None:
    assert format_float(value, single) == text


def test_nested_values() -> None:
    udt = T.UserType("ks", "u", ("a", "Select"), (T.INT, T.TEXT), True)
    t = T.MapType(T.TEXT, T.ListType(T.FLOAT, True))
    assert format_value(t, (("a'b", (1.0, 0.5)),)) == "{'a''b': [1, 0.5]}"
    assert format_value(udt, (1, None)) == '{a: 1, "Select": null}'
    assert format_value(T.TupleType((T.BLOB, T.BOOLEAN)), (b"\x01", True)) == "(0x01, true)"
    assert format_value(T.SetType(T.DATE), (0,)) == "{'1970-01-01'}"
    assert format_value(T.DURATION, Duration(1, 2, 3)) == "1mo2d3ns"
    assert format_value(T.TIMESTAMP, 1709629872500) == "'2024-03-05 09:11:12.500Z'"
