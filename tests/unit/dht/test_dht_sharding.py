"""shard_of and token_for_next_shard against spec vectors, the driver, and an independent oracle."""

from __future__ import annotations

import pytest
from cassandra.c_shard_info import ShardingInfo as CShardingInfo
from cassandra.shard_info import _ShardingInfo as PyShardingInfo
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.dht import MAX_TOKEN, MIN_TOKEN, bias, unbias
from tabletdb.dht.sharding import first_token_of_shard, shard_of, shard_starts, token_for_next_shard

# (token, nshards, ignore_msb, shard) from spec/test-vectors.md
SHARD_VECTORS = [
    (-9223372036854775808, 2, 12, 0),
    (-9223372036854775807, 2, 12, 0),
    (-1, 2, 12, 1),
    (0, 2, 12, 0),
    (1, 2, 12, 0),
    (9223372036854775807, 2, 12, 1),
    (-3758069500696749310, 2, 12, 1),
    (1573573083296714675, 2, 12, 0),
    (4611686018427387904, 2, 12, 0),
    (-4611686018427387904, 2, 12, 0),
    (123456789012345678, 2, 12, 0),
    (-9223372036854775808, 3, 12, 0),
    (-9223372036854775807, 3, 12, 0),
    (-1, 3, 12, 2),
    (0, 3, 12, 0),
    (1, 3, 12, 0),
    (9223372036854775807, 3, 12, 2),
    (-3758069500696749310, 3, 12, 1),
    (1573573083296714675, 3, 12, 1),
    (4611686018427387904, 3, 12, 0),
    (-4611686018427387904, 3, 12, 0),
    (123456789012345678, 3, 12, 1),
    (-9223372036854775808, 7, 12, 0),
    (-9223372036854775807, 7, 12, 0),
    (-1, 7, 12, 6),
    (0, 7, 12, 0),
    (1, 7, 12, 0),
    (9223372036854775807, 7, 12, 6),
    (-3758069500696749310, 7, 12, 3),
    (1573573083296714675, 7, 12, 2),
    (4611686018427387904, 7, 12, 0),
    (-4611686018427387904, 7, 12, 0),
    (123456789012345678, 7, 12, 2),
    (-9223372036854775808, 64, 12, 0),
    (-9223372036854775807, 64, 12, 0),
    (-1, 64, 12, 63),
    (0, 64, 12, 0),
    (1, 64, 12, 0),
    (9223372036854775807, 64, 12, 63),
    (-3758069500696749310, 64, 12, 34),
    (1573573083296714675, 64, 12, 25),
    (4611686018427387904, 64, 12, 0),
    (-4611686018427387904, 64, 12, 0),
    (123456789012345678, 64, 12, 26),
    (-9223372036854775808, 3, 0, 0),
    (-9223372036854775807, 3, 0, 0),
    (-1, 3, 0, 1),
    (0, 3, 0, 1),
    (1, 3, 0, 1),
    (9223372036854775807, 3, 0, 2),
    (-3758069500696749310, 3, 0, 0),
    (1573573083296714675, 3, 0, 1),
    (4611686018427387904, 3, 0, 2),
    (-4611686018427387904, 3, 0, 0),
    (123456789012345678, 3, 0, 1),
    (-9223372036854775808, 5, 4, 0),
    (-9223372036854775807, 5, 4, 0),
    (-1, 5, 4, 4),
    (0, 5, 4, 0),
    (1, 5, 4, 0),
    (9223372036854775807, 5, 4, 4),
    (-3758069500696749310, 5, 4, 3),
    (1573573083296714675, 5, 4, 1),
    (4611686018427387904, 5, 4, 0),
    (-4611686018427387904, 5, 4, 0),
    (123456789012345678, 5, 4, 0),
]

tokens = st.integers(min_value=MIN_TOKEN, max_value=MAX_TOKEN)
shard_counts = st.integers(min_value=1, max_value=128)
msbs = st.integers(min_value=0, max_value=20)


@pytest.mark.parametrize(("token", "nshards", "ignore_msb", "shard"), SHARD_VECTORS)
def test_shard_vectors(token: int, nshards: int, ignore_msb: int, shard: int) -> None:
    assert shard_of(token, nshards, ignore_msb) == shard


@given(tokens, shard_counts, msbs)
def test_shard_of_matches_driver(token: int, nshards: int, ignore_msb: int) -> None:
    c_info = CShardingInfo(0, nshards, "Murmur3Partitioner", "biased-token-round-robin", ignore_msb, 0, 0)
    py_info = PyShardingInfo(0, nshards, "Murmur3Partitioner", "biased-token-round-robin", ignore_msb, 0, 0)
    ours = shard_of(token, nshards, ignore_msb)
    assert ours == c_info.shard_id_from_token(token)
    assert ours == py_info.shard_id_from_token(token)


@pytest.mark.parametrize(("nshards", "ignore_msb"), [(1, 12), (2, 12), (3, 12), (7, 0), (64, 12), (5, 4)])
def test_extremes_map_to_first_and_last_shard(nshards: int, ignore_msb: int) -> None:
    assert shard_of(MIN_TOKEN, nshards, ignore_msb) == 0
    assert shard_of(MAX_TOKEN, nshards, ignore_msb) == nshards - 1


@given(shard_counts, msbs)
def test_shard_starts_are_run_boundaries(nshards: int, ignore_msb: int) -> None:
    starts = shard_starts(nshards, ignore_msb)
    assert starts[0] == 0
    for shard, start in enumerate(starts):
        assert shard_of(bias(start), nshards, ignore_msb) == shard
        if start > 0:
            assert shard_of(bias(start - 1), nshards, ignore_msb) == shard - 1
        assert first_token_of_shard(shard, nshards, ignore_msb) == bias(start)


def _run_starts_oracle(token: int, shard: int, nshards: int, ignore_msb: int) -> int:
    """Smallest run start of ``shard`` strictly after ``token``, by enumerating rounds near it."""
    starts = shard_starts(nshards, ignore_msb)
    low_bits = 64 - ignore_msb
    first_round = unbias(token) >> low_bits
    for round_index in (first_round, first_round + 1):
        if round_index >= 1 << ignore_msb:
            break
        candidate = bias((round_index << low_bits) | starts[shard])
        if candidate > token:
            return candidate
    return MAX_TOKEN


@given(tokens, st.data(), shard_counts, st.integers(min_value=1, max_value=20))
def test_next_shard_is_the_next_run_start(token: int, data: st.DataObject, nshards: int, msb: int) -> None:
    shard = data.draw(st.integers(min_value=0, max_value=nshards - 1))
    nxt = token_for_next_shard(token, shard, nshards, msb)
    assert nxt == _run_starts_oracle(token, shard, nshards, msb)
    if nxt != MAX_TOKEN:
        assert nxt > token
        assert shard_of(nxt, nshards, msb) == shard


@given(tokens, st.data(), shard_counts, st.integers(min_value=1, max_value=20), st.integers(2, 5))
def test_spans_skip_rounds(token: int, data: st.DataObject, nshards: int, msb: int, spans: int) -> None:
    shard = data.draw(st.integers(min_value=0, max_value=nshards - 1))
    one = token_for_next_shard(token, shard, nshards, msb)
    many = token_for_next_shard(token, shard, nshards, msb, spans)
    low_bits = 64 - msb
    if one == MAX_TOKEN or (unbias(one) >> low_bits) + spans - 1 >= 1 << msb:
        assert many == MAX_TOKEN
        return
    assert unbias(many) >> low_bits == (unbias(one) >> low_bits) + spans - 1
    assert shard_of(many, nshards, msb) == shard


def test_next_shard_without_ignored_bits() -> None:
    # one round only: later shards are reachable, earlier (or the same) ones are not
    assert token_for_next_shard(MIN_TOKEN, 2, 3, 0) == first_token_of_shard(2, 3, 0)
    assert token_for_next_shard(MAX_TOKEN, 0, 3, 0) == MAX_TOKEN
    assert token_for_next_shard(MIN_TOKEN, 0, 3, 0) == MAX_TOKEN
    assert token_for_next_shard(MIN_TOKEN, 2, 3, 0, spans=2) == MAX_TOKEN


def test_next_shard_near_the_end_of_the_ring_is_max() -> None:
    assert token_for_next_shard(MAX_TOKEN - 1, 0, 2, 12) == MAX_TOKEN


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: shard_starts(0, 12), "at least 1"),
        (lambda: shard_starts(2, 64), "ignore_msb"),
        (lambda: token_for_next_shard(0, 2, 2, 12), "shard 2 does not exist"),
        (lambda: token_for_next_shard(0, 1, 2, 12, spans=0), "spans"),
    ],
)
def test_invalid_parameters(call: object, message: str) -> None:
    assert callable(call)
    with pytest.raises(ValueError, match=message):
        call()
