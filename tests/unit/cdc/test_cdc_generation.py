"""The vnode generation builder and stream lookup (spec/cdc.md "Generations"), built on the
bit-exact shard_of and stream-id layout of spec/test-vectors.md."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cdc.generation import (
    Generation,
    GenerationEntry,
    VnodeOwner,
    build_generation,
    first_token_of_shard_in,
)
from tabletdb.cdc.stream_id import make_stream_id, parse_stream_id, stream_id_token
from tabletdb.dht.sharding import shard_of
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN

TOKENS = st.integers(MIN_TOKEN + 1, MAX_TOKEN)


def _in_range(token: int, start: int, end: int) -> bool:
    return start < token <= end if start < end else token > start or token <= end


def _is_first(token: int, start: int, end: int, shard: int, nshards: int, msb: int) -> bool:
    """``token`` is in (start, end] and owned by ``shard``, and the token before it is either the
    range start or owned by another shard (so ``token`` starts the shard's first run), or it was
    capped at ``end`` because the range holds none of the shard's tokens."""
    if not _in_range(token, start, end):
        return False
    if shard_of(token, nshards, msb) != shard:
        return token == end
    before = token - 1 if token > MIN_TOKEN + 1 else MAX_TOKEN
    return before == start or shard_of(before, nshards, msb) != shard


def test_vector_ids_from_builder() -> None:
    """A one-shard ring of one vnode at token 0: the stream is the first token after 0 (the
    range wraps the whole ring), index 0, and the given random bits, laid out as the vectors."""
    gen = build_generation([VnodeOwner(0, 1, 12)], lambda: 1)
    (entry,) = gen.entries
    assert entry.range_end == 0
    assert entry.streams == (make_stream_id(1, 0, 1),)
    assert entry.streams[0].hex() == "0000000000000001" + "0000000004000001"


def test_two_shards_ignore_msb_zero_is_exact() -> None:
    """With ignore_msb 0 shard 0 owns the lower half of the ring and shard 1 the upper half."""
    vnodes = [VnodeOwner(-100, 2, 0), VnodeOwner(100, 2, 0)]
    gen = build_generation(vnodes, lambda: 0)
    first, second = gen.entries
    # (100, -100] wraps: shard 0 starts right after MIN_TOKEN, shard 1 right after 100
    assert [stream_id_token(s) for s in first.streams] == [MIN_TOKEN + 1, 101]
    # (-100, 100]: shard 0 at -99; shard 1 (upper half, tokens >= 0) at 0
    assert [stream_id_token(s) for s in second.streams] == [-99, 0]
    assert [parse_stream_id(s).range_index for s in gen.streams] == [0, 0, 1, 1]


def test_range_without_a_shard_caps_at_its_end() -> None:
    """A tiny range lies inside one shard's run: other shards' streams take the range end."""
    start, end = 10, 12
    tokens = [first_token_of_shard_in(start, end, s, 7, 12) for s in range(7)]
    owner = shard_of(11, 7, 12)
    assert tokens[owner] == 11
    assert all(t == end for s, t in enumerate(tokens) if s != owner)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(TOKENS, min_size=1, max_size=12, unique=True),
    st.integers(1, 8),
    st.sampled_from([0, 4, 12]),
    st.integers(0, 2**32),
)
def test_streams_start_their_shard_in_their_range(ends: list[int], nshards: int, msb: int, seed: int) -> None:
    rng = random.Random(seed)
    gen = build_generation([VnodeOwner(e, nshards, msb) for e in ends], lambda: rng.getrandbits(38))
    ordered = sorted(ends)
    assert [e.range_end for e in gen.entries] == ordered
    for index, entry in enumerate(gen.entries):
        start = ordered[index - 1]
        assert len(entry.streams) == nshards
        for shard, stream in enumerate(entry.streams):
            parts = parse_stream_id(stream)
            assert parts.range_index == index and parts.version == 1
            if len(ordered) > 1:
                assert _is_first(parts.token, start, entry.range_end, shard, nshards, msb)


@settings(max_examples=100, deadline=None)
@given(st.lists(TOKENS, min_size=2, max_size=10, unique=True), st.integers(1, 6), TOKENS)
def test_lookup_gives_the_stream_of_its_range_and_shard(ends: list[int], nshards: int, token: int) -> None:
    gen = build_generation([VnodeOwner(e, nshards, 12) for e in ends], lambda: 5)
    stream = gen.stream_for(token)
    ordered = sorted(ends)
    index = parse_stream_id(stream).range_index
    assert _in_range(token, ordered[index - 1], ordered[index])
    assert gen.entries[index].streams.index(stream) == shard_of(token, nshards, 12)


def test_mixed_shard_counts_per_owner() -> None:
    gen = build_generation([VnodeOwner(-5, 3, 12), VnodeOwner(5, 1, 12)], lambda: 0)
    assert [len(e.streams) for e in gen.entries] == [3, 1]
    assert gen.stream_for(0) == gen.entries[1].streams[0]
    assert gen.stream_for(MAX_TOKEN) in gen.entries[0].streams


def test_generation_checks_its_shape() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Generation(())
    entry = GenerationEntry(1, (make_stream_id(1, 0, 0),), 12)
    with pytest.raises(ValueError, match="must increase"):
        Generation((entry, entry))
    with pytest.raises(ValueError, match="empty ring"):
        build_generation([], lambda: 0)
