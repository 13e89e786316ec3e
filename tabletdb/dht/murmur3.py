"""Murmur3 partitioner tokens, bit-compatible with Cassandra and ScyllaDB.

The token decides which replicas and which shard own a partition, and drivers compute it on their
side to route requests; any disagreement sends requests to the wrong node. So this follows the
Cassandra variant of MurmurHash3_x64_128 (seed 0, first half h1), including its quirk of
sign-extending the bytes of the final partial block.

This runs for every request. When scylla-driver's C extension (``cassandra.cmurmur3``, a pinned
dependency) is importable, ``murmur3_h1`` is that function: ~0.1 us per short key against ~1.3 us
for the pure-Python ``murmur3_h1_python`` below, which stays as the fallback and as the reference
the tests hold the C one to (bit-identical on the spec vectors and on random bytes). The Python
body is decoded with one ``struct`` call and the tail without a per-byte loop (see
``_signed_tail_word``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import cast

from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN

_M64 = 0xFFFF_FFFF_FFFF_FFFF
_C1 = 0x87C3_7B91_1142_53D5
_C2 = 0x4CF5_AD43_2745_937F
_SIGN_BITS = 0x8080_8080_8080_8080
_LOW_BITS = 0x0101_0101_0101_0101
_BLOCK_FORMATS: dict[int, struct.Struct] = {}


def _blocks_struct(nblocks: int) -> struct.Struct:
    """A cached decoder for ``nblocks`` little-endian (k1, k2) pairs."""
    fmt = _BLOCK_FORMATS.get(nblocks)
    if fmt is None:
        fmt = struct.Struct(f"<{2 * nblocks}Q")
        if len(_BLOCK_FORMATS) < 4096:
            _BLOCK_FORMATS[nblocks] = fmt
    return fmt


def _signed_tail_word(plain: int) -> int:
    """The 64-bit word Cassandra builds from up to 8 tail bytes read as *signed* bytes.

    ``plain`` is those bytes read as an unsigned little-endian int. Cassandra XORs
    ``(long) b[i] << 8*i`` for each tail byte; a byte >= 0x80 is sign-extended, so it also flips
    every bit above its own byte. Byte j of the result is therefore the plain byte XOR 0xFF when an
    odd number of the bytes below j are negative. That prefix parity is computed with three
    shift-XOR steps over the sign bits instead of a loop.
    """
    parity = plain & _SIGN_BITS
    parity ^= parity << 8
    parity ^= parity << 16
    parity ^= parity << 32
    below = ((parity << 8) & _M64) >> 7 & _LOW_BITS
    return plain ^ (below * 0xFF)


def murmur3_h1_python(data: bytes) -> int:
    """First 64-bit half of Cassandra's MurmurHash3_x64_128(data, seed=0), as a signed int64.

    Unlike ``token_of`` this applies no partitioner adjustments (the empty input hashes to 0).
    Pure Python: the fallback when the driver's C extension is missing, and the reference for it.
    """
    length = len(data)
    nblocks = length >> 4
    h1 = 0
    h2 = 0
    if nblocks:
        words = _blocks_struct(nblocks).unpack_from(data)
        for i in range(0, 2 * nblocks, 2):
            k1 = (words[i] * _C1) & _M64
            k1 = ((k1 << 31) | (k1 >> 33)) & _M64
            h1 ^= (k1 * _C2) & _M64
            h1 = ((h1 << 27) | (h1 >> 37)) & _M64
            h1 = ((h1 + h2) * 5 + 0x52DC_E729) & _M64
            k2 = (words[i + 1] * _C2) & _M64
            k2 = ((k2 << 33) | (k2 >> 31)) & _M64
            h2 ^= (k2 * _C1) & _M64
            h2 = ((h2 << 31) | (h2 >> 33)) & _M64
            h2 = ((h2 + h1) * 5 + 0x3849_5AB5) & _M64
    tail_start = nblocks << 4
    if length > tail_start:
        if length > tail_start + 8:
            k2 = int.from_bytes(data[tail_start + 8 :], "little")
            if k2 & _SIGN_BITS:
                k2 = _signed_tail_word(k2)
            k2 = (k2 * _C2) & _M64
            k2 = ((k2 << 33) | (k2 >> 31)) & _M64
            h2 ^= (k2 * _C1) & _M64
            k1 = int.from_bytes(data[tail_start : tail_start + 8], "little")
        else:
            k1 = int.from_bytes(data[tail_start:] if tail_start else data, "little")
        if k1 & _SIGN_BITS:
            k1 = _signed_tail_word(k1)
        k1 = (k1 * _C1) & _M64
        k1 = ((k1 << 31) | (k1 >> 33)) & _M64
        h1 ^= (k1 * _C2) & _M64
    h1 ^= length
    h2 ^= length
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    # fmix64 of both halves, inlined: this function is on every request's path.
    h1 ^= h1 >> 33
    h1 = (h1 * 0xFF51_AFD7_ED55_8CCD) & _M64
    h1 ^= h1 >> 33
    h1 = (h1 * 0xC4CE_B9FE_1A85_EC53) & _M64
    h1 ^= h1 >> 33
    h2 ^= h2 >> 33
    h2 = (h2 * 0xFF51_AFD7_ED55_8CCD) & _M64
    h2 ^= h2 >> 33
    h2 = (h2 * 0xC4CE_B9FE_1A85_EC53) & _M64
    h2 ^= h2 >> 33
    h1 = (h1 + h2) & _M64
    return h1 - (1 << 64) if h1 >> 63 else h1


def _native_murmur3() -> Callable[[bytes], int] | None:
    """The driver's C MurmurHash3 (same contract as ``murmur3_h1_python``), if it is importable."""
    try:
        from cassandra.cmurmur3 import murmur3
    except ImportError:  # pragma: no cover - the pinned driver ships it on our platforms
        return None
    return cast("Callable[[bytes], int]", murmur3)


murmur3_h1: Callable[[bytes], int] = _native_murmur3() or murmur3_h1_python
"""``murmur3_h1_python``'s contract, in C when available. Takes ``bytes`` only (not bytearray)."""

_last_token: tuple[bytes, int] = (b"", MIN_TOKEN)


def token_of(key: bytes) -> int:
    """The Murmur3Partitioner token of a partition key given in legacy (serialized) form.

    The empty key gets the minimum token, and a hash equal to the minimum token becomes the
    maximum one, because the minimum token is reserved for the ring's start.

    The last answer is remembered: a request's key is hashed first where the coordinator checks
    its routing and again where the data path places it, with nothing in between, and a bytes
    comparison is ~50x cheaper than the hash. One tuple, replaced whole, so threads are safe.
    """
    global _last_token
    last_key, last = _last_token
    if key == last_key:
        return last
    if not key:
        return MIN_TOKEN
    if key.__class__ is not bytes:  # the C hash takes only bytes; keys sliced from frames may not be
        key = bytes(key)
    h = murmur3_h1(key)
    token = MAX_TOKEN if h == MIN_TOKEN else h
    _last_token = (key, token)
    return token


def partition_key_bytes(components: Sequence[bytes]) -> bytes:
    """The legacy partition-key form hashed by the partitioner.

    One component is used as is; several are each written as a 2-byte big-endian length, the
    bytes and a 0x00 end-of-component byte (Cassandra's CompositeType encoding).
    """
    if len(components) == 1:
        return components[0]
    parts: list[bytes] = []
    for index, component in enumerate(components):
        if len(component) > 0xFFFF:
            raise ValueError(
                f"partition key component {index} is {len(component)} bytes; "
                "composite components are limited to 65535 bytes"
            )
        parts.append(len(component).to_bytes(2, "big"))
        parts.append(component)
        parts.append(b"\x00")
    return b"".join(parts)


def split_partition_key(key: bytes, ncomponents: int) -> list[bytes]:
    """Inverse of ``partition_key_bytes`` for a key known to have ``ncomponents`` parts."""
    if ncomponents == 1:
        return [key]
    out: list[bytes] = []
    pos = 0
    for index in range(ncomponents):
        if pos + 2 > len(key):
            raise ValueError(f"composite partition key truncated before component {index}")
        size = int.from_bytes(key[pos : pos + 2], "big")
        end = pos + 2 + size
        if end + 1 > len(key):
            raise ValueError(f"composite partition key truncated inside component {index}")
        out.append(key[pos + 2 : end])
        pos = end + 1
    if pos != len(key):
        raise ValueError(f"composite partition key has {len(key) - pos} trailing bytes")
    return out
