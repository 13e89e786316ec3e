"""The 16-byte CDC stream id layout (a pure encoding, kept here so cdc and tests share it).

Bytes 0-7 hold a token so that a log row lands on the same replicas (and shard) as the base
write it describes; bytes 8-15 pack a version, the vnode/range index and random bits that keep
ids unique across generations. Ids compare as byte strings, i.e. by the token's two's-complement
bytes first (so negative tokens sort after positive ones).
"""

from __future__ import annotations

from typing import NamedTuple

from tabletdb.dht.token import check_token

STREAM_ID_VERSION = 1
_INDEX_BITS = 22
_RANDOM_BITS = 38


class StreamIdParts(NamedTuple):
    token: int
    range_index: int
    random: int
    version: int


def make_stream_id(token: int, index: int, random_bits: int) -> bytes:
    """Pack a stream id; ``index`` keeps its low 22 bits and ``random_bits`` its low 38."""
    check_token(token)
    low = (
        STREAM_ID_VERSION
        | (index & ((1 << _INDEX_BITS) - 1)) << 4
        | (random_bits & ((1 << _RANDOM_BITS) - 1)) << (4 + _INDEX_BITS)
    )
    return token.to_bytes(8, "big", signed=True) + low.to_bytes(8, "big")


def parse_stream_id(stream_id: bytes) -> StreamIdParts:
    """Unpack a stream id; raises if it is not 16 bytes."""
    if len(stream_id) != 16:
        raise ValueError(f"a CDC stream id is 16 bytes, got {len(stream_id)}: {stream_id.hex()}")
    token = int.from_bytes(stream_id[:8], "big", signed=True)
    low = int.from_bytes(stream_id[8:], "big")
    return StreamIdParts(
        token=token,
        range_index=(low >> 4) & ((1 << _INDEX_BITS) - 1),
        random=low >> (4 + _INDEX_BITS),
        version=low & 0xF,
    )


def stream_id_token(stream_id: bytes) -> int:
    """The token of a CDC log partition (the CDCPartitioner reads it from the id itself)."""
    return parse_stream_id(stream_id).token
