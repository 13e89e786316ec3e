"""Scan planning: every token is read by exactly one input partition, matching its tablet/vnode range."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.dht.tablet_ids import tablet_id_of, tablet_last_tokens
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN, TokenRange
from tabletdb.spark.ranges import (
    ScanPlan,
    parse_token_range,
    plan_scans,
    range_index,
    ring_ranges,
    tablet_ranges,
)

TOKENS = st.integers(MIN_TOKEN + 1, MAX_TOKEN)


def _owners(plans: list[ScanPlan], token: int) -> list[int]:
    return [p.index for p in plans for start, end in p.ranges if start < token <= end]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 7), st.lists(TOKENS, max_size=20))
def test_each_token_is_in_exactly_its_tablets_partition(log2: int, probes: list[int]) -> None:
    last = tablet_last_tokens(1 << log2)
    plans = plan_scans(tablet_ranges(last))
    assert [p.index for p in plans] == list(range(1 << log2))
    for token in [*probes, *last, MAX_TOKEN]:
        assert _owners(plans, token) == [tablet_id_of(token, 1 << log2)]
        assert range_index(token, last) == tablet_id_of(token, 1 << log2)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(MIN_TOKEN, MAX_TOKEN), min_size=1, max_size=12), st.lists(TOKENS, max_size=20))
def test_each_token_is_in_exactly_one_vnode_partition(ring: list[int], probes: list[int]) -> None:
    ordered = sorted(set(ring))
    plans = plan_scans(ring_ranges(ring))
    # One plan per range, except (MAX_TOKEN, MIN_TOKEN] (range 0 then), which holds no key's token.
    empty = {0} if len(ordered) > 1 and ordered[0] == MIN_TOKEN and ordered[-1] == MAX_TOKEN else set()
    assert [p.index for p in plans] == [i for i in range(len(ordered)) if i not in empty]
    for token in [*probes, *(t for t in ordered if t != MIN_TOKEN)]:
        owners = _owners(plans, token)
        assert len(owners) == 1
        assert owners == [range_index(token, ordered)]
        plan = next(p for p in plans if p.index == owners[0])
        for start, end in plan.ranges:
            assert start < end  # every piece is a valid non-wrapping CQL token restriction


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 5), TOKENS, TOKENS, st.lists(TOKENS, max_size=20))
def test_token_range_option_narrows_the_scan_exactly(log2: int, a: int, b: int, probes: list[int]) -> None:
    restrict = TokenRange(a, b)
    plans = plan_scans(tablet_ranges(tablet_last_tokens(1 << log2)), restrict)
    for token in [*probes, a, b]:
        expected = [tablet_id_of(token, 1 << log2)] if restrict.contains(token) else []
        assert _owners(plans, token) == expected


def test_empty_ring_reads_everything_in_one_partition() -> None:
    plans = plan_scans(ring_ranges([]))
    assert plans == [ScanPlan(0, ((MIN_TOKEN, MAX_TOKEN),))]


@pytest.mark.parametrize(
    ("last", "message"),
    [([], "at least one"), ([5, 3, MAX_TOKEN], "strictly increasing"), ([0, 10], "must end at")],
)
def test_bad_tablet_maps_are_rejected(last: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tablet_ranges(last)


def test_token_range_option_parsing() -> None:
    assert parse_token_range(" -5, 10") == TokenRange(-5, 10)
    for bad in ("5", "a,b", f"0,{MAX_TOKEN + 1}"):
        with pytest.raises(ValueError, match="token_range must be"):
            parse_token_range(bad)
