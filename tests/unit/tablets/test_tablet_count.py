"""The tablet-count algorithm of spec/tablets.md, one rule at a time."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tabletdb.tablets.count import (
    GIB,
    ResizeState,
    SizingConfig,
    TableSize,
    TableSizing,
    per_shard_floor,
    plan_resizes,
    resize_decision,
    shard_load,
    size_driven_count,
    tablet_count,
    tablet_counts,
)
from tabletdb.tablets.hints import TabletHints

# one DC, three racks, 2 shards per node and one node per rack: 6 shards
SHAPE = {"dc1": {"r1": 2, "r2": 2, "r3": 2}}
NO_FLOOR = SizingConfig(tablets_initial_scale_factor=0)


def table(**kwargs: object) -> TableSizing:
    return TableSizing(replication={"dc1": 3}, **kwargs)  # type: ignore[arg-type]


def test_default_is_the_per_shard_floor() -> None:
    # m = 10 (scale factor), ceil(10 * 6 / 3) = 20 -> rounded up to 32
    assert per_shard_floor(table(), SHAPE, SizingConfig()) == 20
    assert tablet_count(table(), SHAPE) == 32


def test_initial_or_min_count_turns_the_default_floor_off() -> None:
    assert tablet_count(table(keyspace_initial=2), SHAPE) == 2
    assert tablet_count(table(hints=TabletHints(min_tablet_count=3)), SHAPE) == 4


def test_min_per_shard_overrides() -> None:
    hints = TabletHints(min_tablet_count=2, min_per_shard_tablet_count=4)
    # ceil(4 * 6 / 3) = 8
    assert tablet_count(table(hints=hints), SHAPE) == 8


def test_rack_list_floor_uses_shards_of_one_rack() -> None:
    sizing = TableSizing(replication={"dc1": ("r1", "r2")})
    # m = 10, shards in rack = 2 -> 20 -> 32
    assert per_shard_floor(sizing, SHAPE, SizingConfig()) == 20
    assert tablet_count(sizing, SHAPE) == 32


def test_never_below_one() -> None:
    assert tablet_count(table(), {}, NO_FLOOR) == 1


def test_expected_data_size_and_colocation() -> None:
    config = SizingConfig(target_tablet_size_in_bytes=GIB, tablets_initial_scale_factor=0)
    assert tablet_count(table(hints=TabletHints(expected_data_size_in_gb=10)), SHAPE, config) == 16
    # two co-located tables halve the target size: 10 GiB / 0.5 GiB = 20 -> 32
    assert (
        tablet_count(table(hints=TabletHints(expected_data_size_in_gb=10), colocated_tables=2), SHAPE, config)
        == 32
    )
    # floor division: 1.5 GiB / 1 GiB = 1
    assert tablet_count(table(hints=TabletHints(expected_data_size_in_gb=1.5)), SHAPE, config) == 1


def test_max_count_always_wins() -> None:
    hints = TabletHints(min_tablet_count=64, max_tablet_count=48)
    # the cap rounds down to a power of two (32) even though the minimum asks for more
    assert tablet_count(table(hints=hints), SHAPE) == 32
    assert tablet_count(table(keyspace_initial=100, hints=TabletHints(max_tablet_count=16)), SHAPE) == 16


def test_size_driven_split_and_merge_with_hysteresis() -> None:
    target = 100
    assert size_driven_count(TableSize(4, 4 * 201), target) == 8
    assert size_driven_count(TableSize(4, 4 * 150), target) == 4
    assert size_driven_count(TableSize(4, 4 * 150, ResizeState.SPLIT), target) == 8
    assert size_driven_count(TableSize(4, 4 * 99, ResizeState.SPLIT), target) == 4
    assert size_driven_count(TableSize(4, 4 * 49), target) == 2
    assert size_driven_count(TableSize(4, 4 * 80), target) == 4
    assert size_driven_count(TableSize(4, 4 * 80, ResizeState.MERGE), target) == 2
    assert size_driven_count(TableSize(4, 4 * 101, ResizeState.MERGE), target) == 4
    assert size_driven_count(TableSize(1, 0), target) == 1


def test_size_driven_count_feeds_the_maximum() -> None:
    config = SizingConfig(target_tablet_size_in_bytes=100, tablets_initial_scale_factor=0)
    assert tablet_count(table(size=TableSize(8, 8 * 500)), SHAPE, config) == 16
    assert tablet_count(table(size=TableSize(8, 0), keyspace_initial=8), SHAPE, config) == 8


def test_per_shard_goal_scales_every_table() -> None:
    config = SizingConfig(tablets_per_shard_goal=10, tablets_initial_scale_factor=0)
    tables = {
        "a": table(hints=TabletHints(min_tablet_count=32)),
        "b": table(hints=TabletHints(min_tablet_count=32)),
    }
    # load per shard = (32 + 32) * 3 / 2 / 3 = 32 > 10 -> factor 10/32 -> 10 -> rounded to 16
    assert shard_load({"a": 32, "b": 32}, tables, SHAPE)[("dc1", "r1")] == 32
    assert tablet_counts(tables, SHAPE, config) == {"a": 16, "b": 16}


def test_per_shard_goal_never_below_one() -> None:
    config = SizingConfig(tablets_per_shard_goal=0.001, tablets_initial_scale_factor=0)
    assert tablet_count(table(keyspace_initial=4), SHAPE, config) == 1


def test_dc_without_nodes_or_rf_zero_is_ignored() -> None:
    sizing = TableSizing(replication={"dc1": 0, "dc9": 3})
    assert tablet_count(sizing, SHAPE) == 1


def test_resize_decision() -> None:
    assert resize_decision(4, 8) is ResizeState.SPLIT
    assert resize_decision(4, 2) is ResizeState.MERGE
    assert resize_decision(4, 4) is ResizeState.NONE
    assert resize_decision(1, 1) is ResizeState.NONE


@given(
    st.integers(0, 300),
    st.integers(0, 300),
    st.one_of(st.none(), st.integers(1, 300)),
    st.floats(0, 50),
    st.integers(1, 16),
)
def test_result_is_pow2_and_respects_cap(
    initial: int, min_count: int, max_count: int | None, m: float, shards: int
) -> None:
    hints = TabletHints(
        min_tablet_count=min_count or None,
        max_tablet_count=max_count,
        min_per_shard_tablet_count=m or None,
    )
    no_goal = SizingConfig(tablets_per_shard_goal=1e12)
    count = tablet_count(
        table(keyspace_initial=initial or None, hints=hints), {"dc1": {"r1": shards}}, no_goal
    )
    assert count & (count - 1) == 0
    if max_count is not None:
        assert count <= max_count
    else:
        assert count >= max(initial, min_count, 1)


def test_plan_resizes_for_existing_tables() -> None:
    config = SizingConfig(target_tablet_size_in_bytes=100, tablets_initial_scale_factor=0)
    tables = {
        "grow": table(size=TableSize(4, 4 * 300)),
        "shrink": table(size=TableSize(4, 4 * 10)),
        "steady": table(size=TableSize(4, 4 * 100)),
        "new": table(),
    }
    assert plan_resizes(tables, SHAPE, config) == {
        "grow": ResizeState.SPLIT,
        "shrink": ResizeState.MERGE,
        "steady": ResizeState.NONE,
    }
