"""The background compaction policy and the tombstone GC horizon (``replica.compaction_policy``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tabletdb.cql.errors import ConfigurationError
from tabletdb.replica.compaction_policy import (
    MIN_INTERVAL_S,
    PERIOD_S,
    FileState,
    TableCompaction,
    choose,
    gc_before_ts,
    score,
    table_compaction,
)
from tabletdb.schema.options import TableOptions, apply_options
from tabletdb.storage.compaction import Garbage

NOW = 1_700_000_000.0
DEFAULT = TableCompaction()


def options(**given: object) -> TableOptions:
    return apply_options(TableOptions(), given)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"tombstone_gc": {"mode": "timeout"}, "gc_grace_seconds": 100}, int((NOW - 100) * 1e6)),
        ({"tombstone_gc": {"mode": "timeout"}, "gc_grace_seconds": 0}, int(NOW * 1e6)),
        ({"tombstone_gc": {"mode": "immediate"}, "gc_grace_seconds": 100}, int(NOW * 1e6)),
        ({"tombstone_gc": {"mode": "disabled"}, "gc_grace_seconds": 0}, None),
        ({"gc_grace_seconds": 0}, None),  # the default mode, repair: no repair ever covered them
    ],
)
def test_gc_horizon_follows_the_tombstone_gc_mode(given: dict[str, object], expected: int | None) -> None:
    assert gc_before_ts(options(**given), NOW) == expected


def test_compaction_sub_options_are_read_and_refused_when_unusable() -> None:
    assert table_compaction(options()) == DEFAULT
    tuned = options(
        compaction={
            "class": "SizeTieredCompactionStrategy",
            "enabled": "false",
            "tombstone_threshold": "0.5",
            "tombstone_compaction_interval": "60",
        }
    )
    assert table_compaction(tuned) == TableCompaction(
        enabled=False, tombstone_threshold=0.5, min_interval_s=60
    )
    for bad in ({"enabled": "maybe"}, {"tombstone_threshold": "2"}, {"tombstone_compaction_interval": "-1"}):
        with pytest.raises(ConfigurationError):
            options(compaction={"class": "SizeTieredCompactionStrategy", **bad})


def state(garbage: Garbage | None, *, after: int = 0, at: float | None = None, key: str = "f") -> FileState:
    return FileState(key, DEFAULT, garbage, after, at)


def test_a_file_is_due_when_droppable_entries_reach_the_threshold() -> None:
    assert score(state(None), NOW) is None  # not measured
    assert score(state(Garbage(100, 0, 0)), NOW) is None  # nothing to drop
    assert score(state(Garbage(100, 19, 0)), NOW) is None  # not yet the default 20 %
    assert score(state(Garbage(100, 30, 0)), NOW) == 0.3  # fresh tombstones shadow data
    assert score(state(Garbage(100, 5, 25)), NOW) == 0.25  # tombstones past the horizon
    # tombstones already there after the last compaction shadow nothing any more
    assert score(state(Garbage(100, 30, 0), after=30, at=NOW - 2 * MIN_INTERVAL_S), NOW) is None
    assert score(state(Garbage(100, 60, 0), after=30, at=NOW - 2 * MIN_INTERVAL_S), NOW) == 0.3


def test_never_twice_within_the_interval_and_at_least_once_a_period() -> None:
    just_now = state(Garbage(100, 90, 90), at=NOW - 1)
    assert score(just_now, NOW) is None
    few = Garbage(100, 5, 5)  # below the threshold, but past the horizon
    assert score(state(few, after=5, at=NOW - MIN_INTERVAL_S), NOW) is None
    assert score(state(few, after=5, at=NOW - PERIOD_S), NOW) == 0.05
    disabled = replace(state(Garbage(100, 90, 90)), settings=TableCompaction(enabled=False))
    assert score(disabled, NOW) is None


def test_the_most_garbage_laden_due_file_goes_first() -> None:
    files = [
        state(Garbage(100, 30, 0), key="a"),
        state(Garbage(100, 80, 80), key="b"),
        state(Garbage(100, 10, 0), key="c"),
    ]
    assert choose(files, NOW) == "b"
    assert choose([files[2]], NOW) is None
