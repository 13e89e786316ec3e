"""The passes of ``tabletdb cdc export`` (``spark.cdc_plan``): windows, spans, groups, bounds."""

from __future__ import annotations

import uuid

import pytest

from tabletdb.cdc.stream_id import make_stream_id
from tabletdb.replica.cdc_rows import timeuuid
from tabletdb.spark.cdc_plan import (
    StreamSpan,
    StreamWindow,
    committed_upto,
    groups,
    micros_of,
    pass_name,
    spans,
    time_bound,
    windows,
)


def _s(token: int) -> bytes:
    return make_stream_id(token, 0, 7)


def test_windows_run_until_the_next_set_and_the_first_owns_the_past() -> None:
    found = windows([(2000, [_s(5)]), (1000, [_s(1), _s(2)])])
    assert found == [
        StreamWindow(_s(1), 0, 2000),
        StreamWindow(_s(2), 0, 2000),
        StreamWindow(_s(5), 2000, None),
    ]
    assert spans(found, 1500, 3000) == [
        StreamSpan(_s(1), 1500, 2000),
        StreamSpan(_s(2), 1500, 2000),
        StreamSpan(_s(5), 2000, 3000),
    ]
    assert spans(found, 2500, 3000) == [StreamSpan(_s(5), 2500, 3000)]  # closed streams: not read


def test_groups_keep_token_order_and_cover_every_span() -> None:
    parts = [StreamSpan(_s(t), 0, 1) for t in (50, -7, 3, 9, -100)]
    grouped = groups(parts, 2)
    assert [[s.stream for s in g] for g in grouped] == [[_s(-100), _s(-7), _s(3)], [_s(9), _s(50)]]
    assert len(groups(parts, 10)) == 5 and groups([], 3) == []


def test_time_bounds_take_every_row_of_their_microsecond() -> None:
    from tabletdb.cql.compare import compare
    from tabletdb.cql.types import TIMEUUID

    bound = time_bound(1_700_000_000_000_123)
    assert micros_of(bound) == 1_700_000_000_000_123 and bound.version == 1
    for low in (0, 1, 2**62 - 1, 2**61):
        row = uuid.UUID(bytes=timeuuid(1_700_000_000_000_123, low))
        assert compare(TIMEUUID, bound.bytes, row.bytes) <= 0  # at the µs: not below the bound
        before = uuid.UUID(bytes=timeuuid(1_700_000_000_000_122, low))
        assert compare(TIMEUUID, before.bytes, bound.bytes) < 0


def test_committed_passes_are_the_checkpoint() -> None:
    assert committed_upto([], 77) == 77
    names = [pass_name(0, 10), "other", pass_name(10, 25), ".staging-25-40-1"]
    assert committed_upto(names, 0) == 25
    with pytest.raises(ValueError, match="do not chain"):
        committed_upto([pass_name(0, 10), pass_name(12, 20)], 0)
