"""CDC generations for vnode keyspaces: which stream a base write's log row goes to (spec/cdc.md).

A generation cuts the ring into ranges that refine the vnodes; each range holds one stream per
shard of the range's owner, and a stream's token is the first token of the range that shard
owns, so the log row of a write lands on the same node and shard as the write itself. Pure:
the caller gives the ring (each vnode's end token and its owner's sharding) and the random bits
that keep ids of successive generations apart; a node builds it once and commits it through
group0 so every node uses the same one.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tabletdb.cdc.stream_id import make_stream_id, stream_id_token
from tabletdb.dht.sharding import shard_of, token_for_next_shard
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN, check_token


@dataclass(frozen=True, slots=True)
class VnodeOwner:
    """One vnode: the token it ends at and the sharding of the node that owns it."""

    end: int
    shard_count: int
    ignore_msb: int


@dataclass(frozen=True, slots=True)
class GenerationEntry:
    """The streams of the range (previous entry's end, ``range_end``]; one per owner shard."""

    range_end: int
    streams: tuple[bytes, ...]
    sharding_ignore_msb: int


@dataclass(frozen=True, slots=True)
class Generation:
    """Entries sorted by range end; the first one also covers the wrap past the last end."""

    entries: tuple[GenerationEntry, ...]

    def __post_init__(self) -> None:
        if not self.entries:
            raise ValueError("a CDC generation has at least one range")
        ends = [e.range_end for e in self.entries]
        if any(a >= b for a, b in itertools.pairwise(ends)):
            raise ValueError(f"CDC generation range ends must increase: {ends}")

    @property
    def streams(self) -> list[bytes]:
        return [s for e in self.entries for s in e.streams]

    def stream_for(self, token: int) -> bytes:
        """The stream a write of ``token`` logs to: its range's entry, then its shard there."""
        ends = [e.range_end for e in self.entries]
        index = bisect.bisect_left(ends, token)
        entry = self.entries[index if index < len(ends) else 0]
        return entry.streams[shard_of(token, len(entry.streams), entry.sharding_ignore_msb)]


def first_token_of_shard_in(start: int, end: int, shard: int, nshards: int, ignore_msb: int) -> int:
    """The first token of (start, end] that ``shard`` owns, capped at ``end``; wraps when start >= end."""
    if start < end:
        return _first_in_plain_range(start, end, shard, nshards, ignore_msb)
    found = _first_in_plain_range(start, MAX_TOKEN, shard, nshards, ignore_msb) if start < MAX_TOKEN else None
    if found is not None and found != MAX_TOKEN:
        return found
    if found == MAX_TOKEN and shard_of(MAX_TOKEN, nshards, ignore_msb) == shard:
        return MAX_TOKEN
    return _first_in_plain_range(MIN_TOKEN, end, shard, nshards, ignore_msb)


def _first_in_plain_range(start: int, end: int, shard: int, nshards: int, ignore_msb: int) -> int:
    token = start + 1
    if shard_of(token, nshards, ignore_msb) != shard:
        token = token_for_next_shard(token, shard, nshards, ignore_msb)
    return min(token, end)


def build_generation(vnodes: Sequence[VnodeOwner], random_bits: Callable[[], int]) -> Generation:
    """The generation for a ring: vnode i's range gets index i and one stream per owner shard.

    ``random_bits`` gives the 38 random bits of each id (a seeded ``random.Random(...).getrandbits``
    in tests; the committing node's randomness otherwise, then stored, never recomputed).
    """
    if not vnodes:
        raise ValueError("cannot build a CDC generation for an empty ring")
    ordered = sorted(vnodes, key=lambda v: v.end)
    entries = []
    for index, vnode in enumerate(ordered):
        check_token(vnode.end)
        start = ordered[index - 1].end  # index 0 takes the last end: its range wraps
        streams = tuple(
            make_stream_id(
                first_token_of_shard_in(start, vnode.end, shard, vnode.shard_count, vnode.ignore_msb)
                if len(ordered) > 1
                else _first_on_full_ring(vnode.end, shard, vnode.shard_count, vnode.ignore_msb),
                index,
                random_bits(),
            )
            for shard in range(vnode.shard_count)
        )
        entries.append(GenerationEntry(vnode.end, streams, vnode.ignore_msb))
    return Generation(tuple(entries))


def _first_on_full_ring(end: int, shard: int, nshards: int, ignore_msb: int) -> int:
    """A one-vnode ring: the range (end, end] is the whole ring."""
    return first_token_of_shard_in(end, end, shard, nshards, ignore_msb)


def stream_tokens(generation: Generation) -> list[int]:
    return [stream_id_token(s) for s in generation.streams]


Generations = tuple[tuple[int, Generation], ...]
"""Committed generations as (timestamp in µs from which it operates, generation), oldest first."""


def operating(generations: Generations, timestamp: int) -> Generation | None:
    """The generation operating at ``timestamp``: the newest whose time is <= it; a write older
    than every generation uses the first (None: there is no generation)."""
    if not generations:
        return None
    index = bisect.bisect_right([t for t, _ in generations], timestamp) - 1
    return generations[max(index, 0)][1]


def next_generation(
    current: Generations,
    vnodes: Sequence[VnodeOwner],
    now_micros: int,
    random_bits: Callable[[], int],
    delay_micros: int,
) -> tuple[int, Generation] | None:
    """The generation to commit for the ring ``vnodes``, or None if the latest already fits it
    (or there is no ring yet): the first operates from the start of time, a later one from
    ``delay_micros`` after now, in whole ms (clients read the time back in ms), so every node
    applies it before it operates."""
    if not vnodes or (current and refines(current[-1][1], [v.end for v in vnodes])):
        return None
    if not current:
        return 0, build_generation(vnodes, random_bits)
    start = now_micros + delay_micros
    start -= start % 1000
    return max(start, current[-1][0] + 1000), build_generation(vnodes, random_bits)


def refines(generation: Generation, ring_ends: Sequence[int]) -> bool:
    """Whether ``generation`` was built for exactly this ring (its ranges are the vnodes)."""
    return [e.range_end for e in generation.entries] == sorted(ring_ends)


def generation_to_plain(generation: Generation) -> list[list[object]]:
    return [[e.range_end, list(e.streams), e.sharding_ignore_msb] for e in generation.entries]


def generation_from_plain(data: Sequence[Sequence[object]]) -> Generation:
    entries = []
    for end, streams, msb in data:
        assert isinstance(end, int) and isinstance(msb, int) and isinstance(streams, list | tuple)
        entries.append(GenerationEntry(end, tuple(bytes(s) for s in streams), msb))
    return Generation(tuple(entries))
