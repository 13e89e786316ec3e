"""Resize in the pure coordinator: the re-evaluation with every factor of spec/tablets.md, the
prepare / copy / cut-over steps, rollback, a coordinator crash, and the maps' split and merge."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cdc.tablet_streams import StreamSet
from tabletdb.tablets.count import ResizeState, SizingConfig, TableSizing
from tabletdb.tablets.hints import TabletHints
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica
from tabletdb.topology import coordinator as co
from tabletdb.topology import resize as rs
from tabletdb.topology.commands import command_from_plain, command_to_plain
from tabletdb.topology.states import RequestKind
from tests.unit.topology.driver import TABLE, Cluster, cluster, host

LOG = uuid.UUID(int=0xCD)
TARGET = 1000
SHAPE = {"dc1": {"r1": 8}}
NO_HINTS = TabletHints()
SIZING = SizingConfig(TARGET)


def inputs(
    hints: TabletHints = NO_HINTS,
    initial: int | None = 8,
    config: SizingConfig = SIZING,
    shape: dict[str, dict[str, int]] | None = None,
    **kw: object,
) -> rs.ResizeInputs:
    table = TableSizing({"dc1": 3}, hints, keyspace_initial=initial)
    return rs.ResizeInputs({TABLE: table}, shape=SHAPE if shape is None else shape, config=config, **kw)  # type: ignore[arg-type]


def sizes(count: int, each: int, table: uuid.UUID = TABLE) -> dict[tuple[uuid.UUID, int], int]:
    return {(table, i): each for i in range(count)}


def colocated(count: int) -> TabletMap:
    """A map whose sibling tablets share their replicas (so it can merge)."""
    return TabletMap.even(
        TABLE, [[TabletReplica(host((i // 2 + j) % 4), 0) for j in range(3)] for i in range(count)]
    )


ALL = frozenset(host(i) for i in range(4))


def decide(tm: TabletMap, each: int, given_inputs: rs.ResizeInputs | None = None) -> ResizeState:
    found = rs.decide({TABLE: tm}, given_inputs or inputs(), sizes(tm.tablet_count, each), ALL)
    return ResizeState.NONE if found is None else found.kind


# --- the decision, factor by factor --------------------------------------------------------------


def test_split_above_twice_the_target_merge_below_half_none_between() -> None:
    tm, floor_1 = colocated(8), inputs(initial=1)
    assert decide(tm, 2 * TARGET + 1, floor_1) is ResizeState.SPLIT
    assert decide(tm, 2 * TARGET, floor_1) is ResizeState.NONE
    assert decide(tm, TARGET // 2, floor_1) is ResizeState.NONE
    assert decide(tm, TARGET // 2 - 1, floor_1) is ResizeState.MERGE


def test_a_table_not_fully_measured_is_left_alone() -> None:
    tm = colocated(8)
    partial = sizes(7, 10 * TARGET)
    assert rs.decide({TABLE: tm}, inputs(), partial, ALL) is None


def test_keyspace_initial_is_a_floor_for_merges() -> None:
    assert decide(colocated(8), 0, inputs(initial=8)) is ResizeState.NONE
    assert decide(colocated(8), 0, inputs(initial=4)) is ResizeState.MERGE


def test_min_and_max_tablet_count() -> None:
    assert decide(colocated(8), 0, inputs(TabletHints(min_tablet_count=8), initial=None)) is ResizeState.NONE
    assert decide(colocated(8), 10 * TARGET, inputs(TabletHints(max_tablet_count=8))) is ResizeState.NONE
    assert decide(colocated(8), 10 * TARGET, inputs(TabletHints(max_tablet_count=16))) is ResizeState.SPLIT


def test_expected_data_size_is_a_floor() -> None:
    gib = 1 << 30
    config = SizingConfig(gib)
    assert (
        decide(colocated(8), 0, inputs(TabletHints(expected_data_size_in_gb=8), config=config))
        is ResizeState.NONE
    )
    assert (
        decide(colocated(8), 0, inputs(TabletHints(expected_data_size_in_gb=16), config=config))
        is ResizeState.SPLIT
    )


def test_per_shard_floors() -> None:
    # 8 shards, RF 3: min_per_shard_tablet_count 6 wants ceil(6 * 8 / 3) = 16 tablets
    assert decide(colocated(8), 0, inputs(TabletHints(min_per_shard_tablet_count=6))) is ResizeState.SPLIT
    # with neither initial nor min_tablet_count, tablets_initial_scale_factor is the per-shard floor
    config = SizingConfig(TARGET, tablets_initial_scale_factor=3.0)  # ceil(3 * 8 / 3) = 8
    assert decide(colocated(8), 0, inputs(initial=None, config=config)) is ResizeState.NONE
    config = SizingConfig(TARGET, tablets_initial_scale_factor=6.0)
    assert decide(colocated(8), 0, inputs(initial=None, config=config)) is ResizeState.SPLIT


def test_per_shard_goal_scales_a_split_down() -> None:
    # 16 tablets x RF 3 over 8 shards = 6 per shard: a goal of 3 scales 16 to 8 however large
    # (a goal of 4 would scale it to 10, which rounds up to 16 again)
    config = SizingConfig(TARGET, tablets_per_shard_goal=3)
    assert decide(colocated(8), 10 * TARGET, inputs(config=config)) is ResizeState.NONE
    config = SizingConfig(TARGET, tablets_per_shard_goal=6)
    assert decide(colocated(8), 10 * TARGET, inputs(config=config)) is ResizeState.SPLIT


def test_colocated_tables_are_sized_together() -> None:
    tm = colocated(8)
    both = inputs(colocated={TABLE: (LOG,)})
    maps = {TABLE: tm, LOG: replace(tm, table_id=LOG)}
    measured = {**sizes(8, TARGET), **sizes(8, TARGET + 8, LOG)}  # each 1x, together above 2x
    found = rs.decide(maps, both, measured, ALL)
    assert found is not None and found.kind is ResizeState.SPLIT
    assert rs.decide(maps, both, sizes(8, TARGET), ALL) is None  # the log table unmeasured


def test_a_dead_replica_or_siblings_apart_hold_a_resize_back() -> None:
    tm = colocated(8)
    assert rs.decide({TABLE: tm}, inputs(), sizes(8, 10 * TARGET), ALL - {host(0)}) is None
    apart = cluster(nodes=4, tablets=8).tablets[TABLE]  # siblings on different replicas
    assert decide(apart, 0, inputs(initial=1)) is ResizeState.NONE
    assert decide(colocated(8), 0, inputs(initial=1)) is ResizeState.MERGE


# --- the steps -------------------------------------------------------------------------------------


def resizing_cluster(tm: TabletMap, each: int, **kw: object) -> Cluster:
    c = cluster(nodes=4, tablets=tm.tablet_count)
    c.tablets[TABLE] = tm
    c.resize = inputs(**kw)  # type: ignore[arg-type]
    c.sizes = sizes(tm.tablet_count, each)
    return c


def test_a_split_runs_prepare_barrier_copies_and_one_cut_over() -> None:
    c = resizing_cluster(colocated(8), 3 * TARGET)
    before = c.tablets[TABLE]
    action = c.step()
    assert isinstance(action, co.Propose) and action.command.reason.startswith("begin split")
    c.execute(action)
    assert c.tablets[TABLE].resize is ResizeState.SPLIT
    assert c.tablets[TABLE].tablets == before.tablets  # replicas and tokens as they were
    assert isinstance(c.step(), co.Barrier)
    c.execute(c.actions[-1])
    copies = c.step()
    assert isinstance(copies, rs.ResizeFiles)
    hosts = {r.host for t in before.tablets for r in t.replicas}
    assert {t.key[0] for t in copies.tasks} == hosts
    assert all(t.kind is ResizeState.SPLIT and t.seq == 0 and t.tables == (TABLE,) for t in copies.tasks)
    c.execute(copies)
    c.sizes = sizes(16, TARGET + TARGET // 2)
    cut = c.step()
    assert isinstance(cut, co.Propose) and "8 -> 16 tablets" in cut.command.reason
    c.execute(cut)
    after = c.tablets[TABLE]
    assert after.tablet_count == 16 and after.resize_seq_number == 1 and after.resize is ResizeState.NONE
    assert after == before.split()
    assert isinstance(c.step(), co.Idle)  # 1.5x the target: neither split nor merge


def test_the_cut_over_splits_the_cdc_log_and_opens_a_stream_set() -> None:
    tm = colocated(8)
    c = resizing_cluster(tm, 3 * TARGET)
    c.tablets[LOG] = replace(tm, table_id=LOG)
    old = StreamSet(TABLE, 1_000_000, tm.last_tokens)
    c.resize = inputs(
        colocated={TABLE: (LOG,)}, cdc_tables=frozenset({TABLE}), cdc_history=(old,), now_us=5_000_123
    )
    c.sizes = {**sizes(8, 3 * TARGET), **sizes(8, 0, LOG)}
    cut = None
    for _ in range(10):
        action = c.step()
        if isinstance(action, co.Propose) and "->" in action.command.reason:
            cut = action.command
        c.execute(action)
        if cut is not None:
            break
    assert cut is not None
    assert c.tablets[TABLE].tablet_count == 16 and c.tablets[LOG] == replace(c.tablets[TABLE], table_id=LOG)
    assert cut.stream_sets == (StreamSet(TABLE, 5_000_000, c.tablets[TABLE].last_tokens),)
    assert command_from_plain(command_to_plain(cut)) == cut


def test_a_queued_request_rolls_a_prepared_resize_back() -> None:
    c = resizing_cluster(colocated(8), 3 * TARGET)
    c.execute(c.step())  # prepare
    c.request(RequestKind.LEAVE, host(3))
    action = c.step()
    assert isinstance(action, co.Propose) and "roll back resize: leave of" in action.command.reason
    c.execute(action)
    assert c.tablets[TABLE].resize is ResizeState.NONE and c.tablets[TABLE].tablet_count == 8
    assert "start leave" in str(c.step())  # the request goes first


def test_a_replica_down_too_long_rolls_back_then_the_resize_waits_for_it() -> None:
    c = resizing_cluster(colocated(8), 3 * TARGET)
    c.execute(c.step())
    c.execute(c.step())  # barrier
    c.alive.discard(host(2))
    c.obs = replace(c.obs, down_since={host(2): 0}, now_ms=c.config.rollback_after_ms - 1)
    assert isinstance(c.step(), rs.ResizeFiles)  # not long enough: the copy is retried
    c.obs = replace(c.obs, now_ms=c.config.rollback_after_ms)
    action = c.step()
    assert isinstance(action, co.Propose) and f"node {host(2)}" in action.command.reason
    c.execute(action)
    assert c.tablets[TABLE].resize is ResizeState.NONE
    assert isinstance(c.step(), co.Idle)  # a replica is down: no new resize begins


def test_a_new_coordinator_copies_again_and_a_new_attempt_never_reuses_old_copies() -> None:
    c = resizing_cluster(colocated(8), 3 * TARGET)
    c.execute(c.step())
    c.execute(c.step())
    copies = c.step()
    assert isinstance(copies, rs.ResizeFiles)
    c.execute(copies)
    c.obs = co.Observations(alive=frozenset())  # crash: what it saw is gone
    assert isinstance(c.step(), co.Barrier)
    c.execute(c.actions[-1])
    assert c.step() == copies  # copied again (idempotent), then cut over
    # an attempt rolled back and begun again is a new version: the copies of the first do not count
    c.execute(copies)
    c.request(RequestKind.LEAVE, host(3))
    c.execute(c.step())  # roll back
    c.topology = replace(c.topology, queue=())
    c.execute(c.step())  # begin again
    c.execute(c.step())  # barrier
    again = c.step()
    assert isinstance(again, rs.ResizeFiles) and len(again.tasks) == len(copies.tasks)


def test_a_merge_runs_to_half_the_tablets() -> None:
    c = resizing_cluster(colocated(8), TARGET // 4, initial=2)
    before = c.tablets[TABLE]
    for _ in range(6):
        action = c.step()
        c.execute(action)
        if c.tablets[TABLE].tablet_count == 4:
            break
    assert c.tablets[TABLE] == before.merge()


def test_no_balance_round_starts_while_a_resize_is_prepared() -> None:
    c = resizing_cluster(colocated(8), 3 * TARGET)
    c.balancing = True
    c.execute(c.step())
    assert all(
        not isinstance(a, co.Propose) or not a.command.reason.startswith("balance") for a in [c.step()]
    )


# --- maps ------------------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=0, max_value=6), st.integers(min_value=1, max_value=4), st.data())
def test_split_then_merge_returns_the_same_map(log_count: int, rf: int, data: st.DataObject) -> None:
    count = 1 << log_count
    hosts = [host(i) for i in range(6)]
    replicas = [
        [TabletReplica(h, data.draw(st.integers(0, 3))) for h in data.draw(st.permutations(hosts))[:rf]]
        for _ in range(count)
    ]
    tm = TabletMap.even(TABLE, replicas)
    split = tm.split()
    assert split.tablet_count == 2 * count
    for i in range(count):  # halves cover the tablet's range exactly, on its replicas
        left, right = split.range_of(2 * i), split.range_of(2 * i + 1)
        assert (left.start, right.end) == (
            tm.range_of(i).start,
            tm.range_of(i).end,
        ) and left.end == right.start
        assert split.tablets[2 * i].replicas == split.tablets[2 * i + 1].replicas == tm.tablets[i].replicas
    merged = split.merge()
    assert merged.tablets == tm.tablets and merged.resize_seq_number == tm.resize_seq_number + 2


def test_a_merge_of_siblings_apart_is_refused() -> None:
    with pytest.raises(ValueError, match="co-locate them before merging"):
        cluster(nodes=4, tablets=8).tablets[TABLE].merge()


def test_paused_balancing_holds_resizes_back_and_rolls_a_prepared_one_back() -> None:
    c = resizing_cluster(colocated(8), 3 * TARGET)
    c.resize = replace(inputs(), paused="backup")
    assert isinstance(c.step(), co.Idle)
    c.resize = inputs()
    c.execute(c.step())
    c.resize = replace(inputs(), paused="backup")
    action = c.step()
    assert isinstance(action, co.Propose) and action.command.reason == "roll back resize: backup"


def test_a_map_co_located_by_base_table_resizes_with_its_base_and_stays_co_located() -> None:
    from tabletdb.tablets.colocation import follow_map, separated

    tm = colocated(8)
    c = resizing_cluster(tm, 3 * TARGET)
    c.tablets[LOG] = follow_map(tm, LOG)
    c.sizes = {**sizes(8, 3 * TARGET), **sizes(8, 0, LOG)}
    c.resize = inputs()  # the catalog names no CDC log: the maps' base_table does
    c.resize = replace(c.resize, tables={**c.resize.tables, LOG: c.resize.tables[TABLE]})
    for _ in range(6):
        c.execute(c.step())
        assert separated(c.tablets) == []
        if c.tablets[TABLE].tablet_count == 16:
            break
    assert c.tablets[LOG] == follow_map(c.tablets[TABLE], LOG) and c.tablets[LOG].tablet_count == 16
