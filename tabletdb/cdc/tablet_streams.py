"""CDC streams of a tablet table: one stream per tablet (spec/cdc.md, "Tablet tables").

A stream's token is its tablet's last token (range index 0), so the log partition of a write
falls in the log table's tablet with the same range, which group0 places on the base tablet's
replicas. The random bits come from the table id and the tablet count, so every node derives the
same ids from the tablet map it already has, and a split or merge (a new count) gives new ids.
"""

from __future__ import annotations

import bisect
import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from tabletdb.cdc.stream_id import make_stream_id


def _random_bits(table_id: uuid.UUID, tablet_count: int) -> int:
    digest = hashlib.blake2b(table_id.bytes + tablet_count.to_bytes(8, "big"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> (64 - 38)


@dataclass(frozen=True)
class TabletStreams:
    """The current stream set of one table; ``last_tokens`` are its tablets' last tokens."""

    table_id: uuid.UUID
    last_tokens: tuple[int, ...]
    _bits: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.last_tokens:
            raise ValueError(f"table {self.table_id} has no tablets, so no CDC streams")
        object.__setattr__(self, "_bits", _random_bits(self.table_id, len(self.last_tokens)))

    @property
    def streams(self) -> tuple[bytes, ...]:
        return tuple(make_stream_id(token, 0, self._bits) for token in self.last_tokens)

    def stream_for(self, token: int) -> bytes:
        """The first stream whose token is >= ``token`` (tablets end at the ring's last token)."""
        index = bisect.bisect_left(self.last_tokens, token)
        if index == len(self.last_tokens):
            raise ValueError(f"token {token} is past the last tablet of table {self.table_id}")
        return make_stream_id(self.last_tokens[index], 0, self._bits)


def tablet_streams(table_id: uuid.UUID, last_tokens: Sequence[int]) -> TabletStreams:
    return TabletStreams(table_id, tuple(last_tokens))


@dataclass(frozen=True)
class StreamSet:
    """One stream set of a CDC tablet table: operating from ``timestamp`` (µs, whole ms) until the
    table's next set, one stream per tablet ending at each of ``last_tokens``."""

    table_id: uuid.UUID
    timestamp: int
    last_tokens: tuple[int, ...]

    @property
    def streams(self) -> tuple[bytes, ...]:
        return TabletStreams(self.table_id, self.last_tokens).streams


StreamSets = tuple[StreamSet, ...]
"""Every table's stream sets, oldest first (group0 keeps them: ``Group0State.cdc_stream_sets``)."""

CURRENT, CLOSED, OPENED = 0, 1, 2
"""``system.cdc_streams.stream_state``: a set's streams, and what it closed and opened."""


def sets_of(history: StreamSets, table_id: uuid.UUID) -> list[StreamSet]:
    return [s for s in history if s.table_id == table_id]


def next_stream_set(
    history: StreamSets, table_id: uuid.UUID, last_tokens: tuple[int, ...], now_micros: int
) -> StreamSet | None:
    """The set to record when ``table_id``'s tablets end at ``last_tokens`` (its log was just made,
    or a split or merge changed them); None while its latest set still matches. The timestamp is
    a whole millisecond, as clients read it back, and after the previous set's."""
    previous = sets_of(history, table_id)
    if previous and previous[-1].last_tokens == last_tokens:
        return None
    timestamp = now_micros - now_micros % 1000
    if previous and timestamp <= previous[-1].timestamp:
        timestamp = previous[-1].timestamp + 1000
    return StreamSet(table_id, timestamp, last_tokens)


def operating_set(history: StreamSets, table_id: uuid.UUID, timestamp: int) -> StreamSet | None:
    """The set of ``table_id`` operating at ``timestamp`` (None: it has none that early)."""
    found = None
    for s in sets_of(history, table_id):
        if s.timestamp <= timestamp:
            found = s
    return found


def stream_states(sets: Sequence[StreamSet]) -> list[tuple[int, int, bytes]]:
    """(timestamp µs, state, stream id) rows of one table's sets: each set's streams as CURRENT,
    the previous set's streams it no longer has as CLOSED, and its new ones as OPENED."""
    rows: list[tuple[int, int, bytes]] = []
    before: frozenset[bytes] = frozenset()
    for s in sets:
        now = s.streams
        current = frozenset(now)
        rows += [(s.timestamp, CURRENT, sid) for sid in sorted(now)]
        rows += [(s.timestamp, CLOSED, sid) for sid in sorted(before - current)]
        rows += [(s.timestamp, OPENED, sid) for sid in sorted(current - before)]
        before = current
    return rows


def stream_sets_to_plain(history: StreamSets) -> list[list[object]]:
    return [[s.table_id.bytes, s.timestamp, list(s.last_tokens)] for s in history]


def stream_sets_from_plain(data: Sequence[Sequence[object]]) -> StreamSets:
    out = []
    for table_id, timestamp, tokens in data:
        assert isinstance(table_id, bytes) and isinstance(timestamp, int) and isinstance(tokens, list | tuple)
        out.append(StreamSet(uuid.UUID(bytes=table_id), timestamp, tuple(int(t) for t in tokens)))
    return tuple(out)
