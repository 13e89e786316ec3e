"""The write-timestamp leeway of CDC tables (spec/cdc.md; ScyllaDB's get_stream rules)."""

from __future__ import annotations

from tabletdb.cdc.write_time import GENERATION_LEEWAY_US, refusal

S = 1_000_000
NOW = 1_800_000_000 * S
LEEWAY = GENERATION_LEEWAY_US


def test_future_timestamps_beyond_the_leeway_are_refused() -> None:
    assert refusal([0], NOW + LEEWAY, NOW) is None
    message = refusal([0], NOW + LEEWAY + 1, NOW)
    assert message is not None and message.startswith('cdc: attempted to get a stream "from the future"')
    assert refusal([], NOW + 10 * LEEWAY, NOW) is not None


def test_past_timestamps_are_refused_only_outside_the_current_set() -> None:
    assert refusal([0], 1, NOW) is None  # the first set serves any older timestamp
    assert refusal([NOW], 1, NOW) is None  # also a tablet table's first set, made just now
    starts = [0, NOW - 100 * S]
    assert refusal(starts, NOW - 50 * S, NOW) is None  # in the current set
    old = refusal(starts, NOW - 101 * S, NOW)
    assert old is not None and old.startswith('cdc: attempted to get a stream "from the past"')
    assert refusal(starts, NOW - LEEWAY + 1, NOW) is None  # within the leeway: any set


def test_a_switch_within_the_leeway_refuses_old_writes_to_the_previous_set() -> None:
    starts = [0, NOW - 2 * S]  # the new set began 2 s ago: a leeway ago the old one operated
    assert refusal(starts, NOW - LEEWAY - 1, NOW) is not None
    assert refusal(starts, NOW - 3 * S, NOW) is None  # within the leeway
    ahead = [0, NOW + 3 * S]  # a set known ahead of time: the current one still takes old writes
    assert refusal(ahead, NOW - 100 * S, NOW) is None
