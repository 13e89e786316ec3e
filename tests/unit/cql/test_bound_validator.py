"""``codec.bound_validator`` must accept and reject exactly the bytes ``codec.deserialize`` does,
with the same InvalidRequest message: INSERT plans use it instead of the full decode (a length
check for fixed-width types), and clients must not be able to tell."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import ListType, MapType, native

PASS_THROUGH = [
    "int",
    "bigint",
    "smallint",
    "tinyint",
    "text",
    "ascii",
    "blob",
    "uuid",
    "timeuuid",
    "timestamp",
    "date",
]
OTHERS = ["boolean", "float", "double", "varint", "decimal", "inet", "time", "duration"]


def _outcome(fn: object, data: bytes) -> str | None:
    """None when accepted, else the error message."""
    try:
        fn(data)  # type: ignore[operator]
    except InvalidRequest as e:
        return str(e)
    return None


def _lengths_around(width: int) -> st.SearchStrategy[bytes]:
    """Bytes of the right length, of every nearby wrong one, empty, and anything."""
    return st.one_of(
        st.binary(min_size=width, max_size=width),
        st.integers(0, width + 3).flatmap(lambda n: st.binary(min_size=n, max_size=n)),
        st.binary(max_size=40),
    )


@pytest.mark.parametrize("name", PASS_THROUGH + OTHERS)
@given(data=st.data())
def test_same_verdict_and_message_as_the_full_decode(name: str, data: st.DataObject) -> None:
    t = native(name)
    width = codec.FIXED_WIDTHS.get(name, 16 if name == "timeuuid" else 8)
    raw = data.draw(_lengths_around(width))
    full = _outcome(lambda b: codec.deserialize(t, b), raw)
    assert _outcome(codec.bound_validator(t), raw) == full


@pytest.mark.parametrize("t", [ListType(native("int")), MapType(native("text"), native("uuid"))])
@given(raw=st.binary(max_size=48))
def test_collections_take_the_full_decode(t: object, raw: bytes) -> None:
    full = _outcome(lambda b: codec.deserialize(t, b), raw)  # type: ignore[arg-type]
    assert _outcome(codec.bound_validator(t), raw) == full  # type: ignore[arg-type]


@pytest.mark.parametrize("name,width", sorted(codec.FIXED_WIDTHS.items()))
def test_fixed_widths_match_the_decoders(name: str, width: int) -> None:
    """Every value of exactly the width decodes (the premise of the length-only check)."""
    t = native(name)
    for raw in (bytes(width), b"\xff" * width, bytes(range(width))):
        codec.deserialize(t, raw)
    with pytest.raises(InvalidRequest):
        codec.deserialize(t, bytes(width + 1))
