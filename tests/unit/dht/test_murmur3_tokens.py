"""Murmur3 tokens against spec/test-vectors.md and the scylla-driver's C implementation."""

from __future__ import annotations

from typing import Any

import pytest
from cassandra.murmur3 import murmur3 as driver_murmur3
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.dht import MAX_TOKEN, MIN_TOKEN, murmur3_h1, partition_key_bytes, split_partition_key, token_of
from tabletdb.dht import murmur3 as m3

TOKEN_VECTORS = [
    ("61", -8839064797231613815),
    ("68656c6c6f", -3758069500696749310),
    ("6b657931", 1573573083296714675),
    ("80", -5284281814142962636),
    ("fffefd", 4778542740094909933),
    ("000102030405060708090a0b0c0d0e", 5125964547706398185),
    ("000102030405060708090a0b0c0d0e0f", 4920504430128807728),
    ("000102030405060708090a0b0c0d0e0f10", 6662781046685680142),
    ("c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6", 4398332801500074197),
    ("00000001", -4069959284402364209),
    ("0000002a", -7160136740246525330),
    ("ffffffffffffffff", 7071048584287372947),
    ("7ac48562", 7893191037908070894),
    ("0004000000010000016100", 6516349416904725244),
    ("0003787878000004f09f988000", 9152604908089857293),
]


@pytest.mark.parametrize(("key_hex", "token"), TOKEN_VECTORS)
def test_token_vectors(key_hex: str, token: int) -> None:
    assert token_of(bytes.fromhex(key_hex)) == token


def test_empty_key_is_minimum_token() -> None:
    assert token_of(b"") == MIN_TOKEN
    assert murmur3_h1(b"") == 0


def test_hash_equal_to_minimum_becomes_maximum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(m3, "murmur3_h1", lambda data: MIN_TOKEN)
    assert m3.token_of(b"x") == MAX_TOKEN


@given(st.binary(min_size=1, max_size=200))
def test_matches_driver(data: bytes) -> None:
    assert m3.murmur3_h1_python(data) == driver_murmur3(data)


@given(st.lists(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, 0x01, 0xC3]), min_size=1, max_size=40))
def test_matches_driver_on_sign_heavy_tails(values: list[int]) -> None:
    data = bytes(values)
    assert m3.murmur3_h1_python(data) == driver_murmur3(data)


def test_the_native_hash_is_used_when_importable() -> None:
    from cassandra.cmurmur3 import murmur3 as native

    assert murmur3_h1 is native


@pytest.mark.parametrize(("key_hex", "token"), TOKEN_VECTORS)
def test_native_and_python_hashes_give_the_vectors(key_hex: str, token: int) -> None:
    key = bytes.fromhex(key_hex)
    assert m3.murmur3_h1(key) == m3.murmur3_h1_python(key) == token


@given(st.integers(min_value=0, max_value=64).flatmap(lambda n: st.binary(min_size=n, max_size=n)))
def test_native_hash_is_bit_identical_to_python(data: bytes) -> None:
    assert m3.murmur3_h1(data) == m3.murmur3_h1_python(data)


def test_every_length_up_to_64_agrees() -> None:
    for length in range(65):
        for data in (bytes(range(length)), bytes(range(255, 255 - length, -1)), b"\x80" * length):
            assert m3.murmur3_h1(data) == m3.murmur3_h1_python(data), (length, data.hex())


def test_token_of_accepts_bytes_like_keys() -> None:
    key = bytes.fromhex("68656c6c6f")
    untyped: Any = [bytearray(key), memoryview(key)]  # typed callers pass bytes; frames may not
    assert [token_of(k) for k in untyped] == [-3758069500696749310] * 2


def test_signed_tail_word_matches_per_byte_definition() -> None:
    for chunk in (b"\x80", b"\xff\x01\x80", b"\x01\x80\x80\x02\xff\x00\x7f\x90", b"\x7f" * 8):
        expected = 0
        for i, b in enumerate(chunk):
            signed = b - 256 if b >= 0x80 else b
            expected ^= (signed << (8 * i)) & ((1 << 64) - 1)
        assert m3._signed_tail_word(int.from_bytes(chunk, "little")) == expected


def test_partition_key_bytes_single_and_composite() -> None:
    assert partition_key_bytes([b"abc"]) == b"abc"
    assert partition_key_bytes([b"\x00\x00\x00\x01", b"a"]).hex() == "0004000000010000016100"
    assert partition_key_bytes([b"", b"z"]) == b"\x00\x00\x00\x00\x01z\x00"


def test_partition_key_component_too_long() -> None:
    with pytest.raises(ValueError, match="component 1"):
        partition_key_bytes([b"a", b"x" * 65536])


@given(st.lists(st.binary(max_size=40), min_size=1, max_size=5))
def test_split_inverts_partition_key_bytes(components: list[bytes]) -> None:
    assert split_partition_key(partition_key_bytes(components), len(components)) == components


@pytest.mark.parametrize("bad", ["0004000000", "00040000000100", "000400000001000000"])
def test_split_rejects_malformed(bad: str) -> None:
    with pytest.raises(ValueError):
        split_partition_key(bytes.fromhex(bad), 2)
