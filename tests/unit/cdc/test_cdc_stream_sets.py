"""Stream sets of CDC tablet tables and the description of vnode generations (spec/cdc.md)."""

from __future__ import annotations

import uuid

from tabletdb.cdc.descriptions import described, longest_log_ttl
from tabletdb.cdc.generation import Generation, GenerationEntry
from tabletdb.cdc.tablet_streams import (
    CLOSED,
    CURRENT,
    OPENED,
    StreamSet,
    next_stream_set,
    operating_set,
    stream_sets_from_plain,
    stream_sets_to_plain,
    stream_states,
)
from tabletdb.dht.tablet_ids import tablet_last_tokens

T = uuid.UUID("5f3a1c1e-1d2b-11ef-8000-000000000001")
U = uuid.UUID("5f3a1c1e-1d2b-11ef-8000-000000000002")


def test_a_new_set_only_when_the_tablets_change() -> None:
    two, four = tuple(tablet_last_tokens(2)), tuple(tablet_last_tokens(4))
    first = next_stream_set((), T, two, 1_700_000_000_123_456)
    assert first == StreamSet(T, 1_700_000_000_123_000, two)  # a whole millisecond
    assert next_stream_set((first,), T, two, 1_700_000_001_000_000) is None
    assert next_stream_set((first,), U, two, 1_700_000_001_000_000) is not None  # per table
    split = next_stream_set((first,), T, four, 1_700_000_000_123_999)  # same ms: still later
    assert split == StreamSet(T, 1_700_000_000_124_000, four)
    history = (first, split)
    assert operating_set(history, T, 1_700_000_000_123_999) == first
    assert operating_set(history, T, 1_800_000_000_000_000) == split
    assert operating_set(history, T, 1) is None
    assert stream_sets_from_plain(stream_sets_to_plain(history)) == history


def test_states_show_current_closed_and_opened_streams() -> None:
    two, four = tuple(tablet_last_tokens(2)), tuple(tablet_last_tokens(4))
    first, split = StreamSet(T, 1000, two), StreamSet(T, 2000, four)
    rows = stream_states([first, split])
    by = {(ts, state): {s for t, st, s in rows if (t, st) == (ts, state)} for ts, state, _ in rows}
    assert by[(1000, CURRENT)] == by[(1000, OPENED)] == set(first.streams)
    assert (1000, CLOSED) not in by
    assert by[(2000, CURRENT)] == by[(2000, OPENED)] == set(split.streams)
    assert by[(2000, CLOSED)] == set(first.streams)  # a new count gives every stream new bits
    assert len(rows) == 2 + 2 + 4 + 2 + 4


def _generation(n: int) -> Generation:
    return Generation((GenerationEntry(100, (bytes([n]) * 16,), 12),))


def test_superseded_generations_expire_after_the_longest_log_ttl() -> None:
    gens = ((0, _generation(1)), (5_000_000, _generation(2)), (9_000_000, _generation(3)))
    assert longest_log_ttl([60, 3600]) == 3600
    assert longest_log_ttl([60, 0]) is None and longest_log_ttl([]) == 0
    shown = described(gens, 10, now_micros=6_000_000)
    assert [(d.timestamp, d.expired) for d in shown] == [
        (0, 15_000_000),
        (5_000_000, 19_000_000),
        (9_000_000, None),
    ]
    assert [d.timestamp for d in described(gens, 10, now_micros=15_000_000)] == [5_000_000, 9_000_000]
    assert [d.timestamp for d in described(gens, 10, now_micros=10**12)] == [9_000_000]
    assert [d.expired for d in described(gens, None, now_micros=10**12)] == [None, None, None]
