"""How many tablets each table should have (spec/tablets.md), as a pure function.

The count is the largest of several lower bounds (1, the keyspace's ``initial``, the table's
``min_tablet_count``, the expected data size, a per-shard floor, the size-driven count), then capped
by ``max_tablet_count``, scaled down if shards would carry more tablets than the per-shard goal,
and rounded up to a power of two. The cap is applied again after rounding (as the largest power of
two <= the maximum) because restore relies on it: every backed-up file must fit in one tablet.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from tabletdb.tablets.hints import TabletHints, pow2_ceil

K = TypeVar("K")

RackList = tuple[str, ...]
DcReplication = int | RackList
"""A DC's replication: a replica count, or the racks holding one replica each."""

ClusterShape = Mapping[str, Mapping[str, int]]
"""dc -> rack -> total shards of the live nodes in that rack."""

GIB = 1 << 30
NO_HINTS = TabletHints()


class ResizeState(Enum):
    NONE = "none"
    SPLIT = "split"
    MERGE = "merge"


@dataclass(frozen=True, slots=True)
class SizingConfig:
    target_tablet_size_in_bytes: int = 5 * GIB
    tablets_initial_scale_factor: float = 10.0
    tablets_per_shard_goal: float = 100.0

    def __post_init__(self) -> None:
        if self.target_tablet_size_in_bytes <= 0:
            raise ValueError(
                f"target_tablet_size_in_bytes must be positive, got {self.target_tablet_size_in_bytes}"
            )
        if self.tablets_per_shard_goal <= 0:
            raise ValueError(f"tablets_per_shard_goal must be positive, got {self.tablets_per_shard_goal}")


DEFAULT_SIZING = SizingConfig()


@dataclass(frozen=True, slots=True)
class TableSize:
    """What the resize loop knows about a table that already exists."""

    current_count: int
    total_bytes: int
    resize: ResizeState = ResizeState.NONE


@dataclass(frozen=True)
class TableSizing:
    """Everything about one table (or co-location group) that its tablet count depends on."""

    replication: Mapping[str, DcReplication]
    hints: TabletHints = NO_HINTS
    keyspace_initial: int | None = None
    colocated_tables: int = 1
    size: TableSize | None = None


def size_driven_count(size: TableSize, target_bytes: int) -> int:
    """Double on a large average tablet, halve on a small one; keep going once started.

    A split starts above 2x target and continues while the average stays >= target; a merge
    starts below 0.5x target and continues while it stays <= target. The hysteresis stops a table
    sitting near a threshold from flapping between split and merge.
    """
    count = max(1, size.current_count)
    average = size.total_bytes / count
    if average > 2 * target_bytes or (size.resize is ResizeState.SPLIT and average >= target_bytes):
        return count * 2
    if average < target_bytes / 2 or (size.resize is ResizeState.MERGE and average <= target_bytes):
        return max(1, count // 2)
    return count


def per_shard_floor(table: TableSizing, shape: ClusterShape, config: SizingConfig) -> int:
    """Enough tablets that every shard holding the table gets at least ``m`` of them."""
    hints = table.hints
    if hints.min_per_shard_tablet_count is not None:
        m = hints.min_per_shard_tablet_count
    elif table.keyspace_initial or hints.min_tablet_count is not None:
        m = 0.0
    else:
        m = config.tablets_initial_scale_factor
    floor = 0
    for dc, replication in table.replication.items():
        racks = shape.get(dc, {})
        if isinstance(replication, tuple):
            for rack in replication:
                floor = max(floor, math.ceil(m * racks.get(rack, 0)))
        elif replication > 0:
            floor = max(floor, math.ceil(m * sum(racks.values()) / replication))
    return floor


def lower_bound_count(table: TableSizing, shape: ClusterShape, config: SizingConfig) -> int:
    """The largest of the lower bounds, capped by ``max_tablet_count`` (before goal and rounding)."""
    hints = table.hints
    bounds = [
        1,
        table.keyspace_initial or 0,
        hints.min_tablet_count or 0,
        per_shard_floor(table, shape, config),
    ]
    if hints.expected_data_size_in_gb is not None:
        colocated = max(1, table.colocated_tables)
        bounds.append(
            int(hints.expected_data_size_in_gb * GIB * colocated // config.target_tablet_size_in_bytes)
        )
    if table.size is not None:
        bounds.append(size_driven_count(table.size, config.target_tablet_size_in_bytes))
    count = max(bounds)
    if hints.max_tablet_count is not None:
        count = min(count, hints.max_tablet_count)
    return count


def shard_load(
    counts: Mapping[K, int], tables: Mapping[K, TableSizing], shape: ClusterShape
) -> dict[tuple[str, str], float]:
    """Tablet replicas per shard in every rack, summed over all tables.

    A numeric RF spreads replicas evenly over the DC's racks; a rack list puts one replica of
    every tablet in each listed rack.
    """
    load: dict[tuple[str, str], float] = {(dc, rack): 0.0 for dc, racks in shape.items() for rack in racks}
    for key, count in counts.items():
        for dc, replication in tables[key].replication.items():
            racks = shape.get(dc, {})
            if not racks:
                continue
            if isinstance(replication, tuple):
                for rack in replication:
                    if racks.get(rack, 0) > 0:
                        load[(dc, rack)] += count / racks[rack]
            elif replication > 0:
                for rack, shards in racks.items():
                    if shards > 0:
                        load[(dc, rack)] += count * replication / shards / len(racks)
    return load


def goal_scale_factor(load: Mapping[tuple[str, str], float], goal: float) -> float:
    """The factor (<= 1) bringing the most loaded rack's shards down to the goal."""
    factor = 1.0
    for per_shard in load.values():
        if per_shard > goal:
            factor = min(factor, goal / per_shard)
    return factor


def tablet_counts(
    tables: Mapping[K, TableSizing], shape: ClusterShape, config: SizingConfig = DEFAULT_SIZING
) -> dict[K, int]:
    """The target tablet count of every table, taking the cluster-wide per-shard goal into account."""
    counts = {key: lower_bound_count(table, shape, config) for key, table in tables.items()}
    factor = goal_scale_factor(shard_load(counts, tables, shape), config.tablets_per_shard_goal)
    result: dict[K, int] = {}
    for key, count in counts.items():
        if factor < 1.0:
            count = max(1, math.floor(count * factor))
        count = pow2_ceil(count)
        cap = tables[key].hints.effective_max
        result[key] = count if cap is None else min(count, cap)
    return result


def tablet_count(table: TableSizing, shape: ClusterShape, config: SizingConfig = DEFAULT_SIZING) -> int:
    """The count for a table considered alone (the per-shard goal then only sees this table)."""
    return tablet_counts({0: table}, shape, config)[0]


def resize_decision(current: int, target: int) -> ResizeState:
    """One resize step toward ``target``: counts change by doubling or halving only."""
    if target > current:
        return ResizeState.SPLIT
    if target < current and current > 1:
        return ResizeState.MERGE
    return ResizeState.NONE


def plan_resizes(
    tables: Mapping[K, TableSizing], shape: ClusterShape, config: SizingConfig = DEFAULT_SIZING
) -> dict[K, ResizeState]:
    """The background resize loop's decision for every existing table (those with a ``size``)."""
    targets = tablet_counts(tables, shape, config)
    return {
        key: resize_decision(table.size.current_count, targets[key])
        for key, table in tables.items()
        if table.size is not None
    }
