"""CDC stream id layout against spec/test-vectors.md."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cdc.stream_id import make_stream_id, parse_stream_id, stream_id_token
from tabletdb.dht import MAX_TOKEN, MIN_TOKEN

VECTORS = [
    (0, 0, 0, "00000000000000000000000000000001"),
    (-1, 5, 1, "ffffffffffffffff0000000004000051"),
    (1573573083296714675, 255, 274877906943, "15d67461d2044fb3fffffffffc000ff1"),
    (-9223372036854775808, 4194303, 12345, "8000000000000000000000c0e7fffff1"),
]


@pytest.mark.parametrize(("token", "index", "rand", "hex_id"), VECTORS)
def test_vectors(token: int, index: int, rand: int, hex_id: str) -> None:
    stream_id = make_stream_id(token, index, rand)
    assert stream_id.hex() == hex_id
    parts = parse_stream_id(stream_id)
    assert (parts.token, parts.range_index, parts.random, parts.version) == (token, index, rand, 1)


def test_fields_are_masked() -> None:
    assert parse_stream_id(make_stream_id(0, (1 << 22) + 3, (1 << 38) + 9))[1:3] == (3, 9)


@given(st.integers(MIN_TOKEN, MAX_TOKEN), st.integers(MIN_TOKEN, MAX_TOKEN))
def test_byte_order_is_token_bytes_first(a: int, b: int) -> None:
    ida, idb = make_stream_id(a, 7, 7), make_stream_id(b, 7, 7)
    # byte strings compare the two's-complement token unsigned: negative tokens sort last
    assert (ida < idb) == (a % 2**64 < b % 2**64)
    assert stream_id_token(ida) == a


def test_wrong_length_rejected() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        parse_stream_id(b"\x00" * 15)
