"""Merges on any RF in the pure coordinator: a table the re-evaluation wants merged whose sibling
tablets are apart gets rounds of co-location moves (within the per-node bound, as few moves as
the pairs differ by), then the merge; co-located siblings never come apart on the way."""

from __future__ import annotations

import uuid
from dataclasses import replace

from tabletdb.tablets.count import ResizeState, SizingConfig, TableSizing
from tabletdb.tablets.merge_colocation import pairs_apart, siblings_colocated
from tabletdb.tablets.tablet_map import TabletMap
from tabletdb.topology import coordinator as co
from tabletdb.topology import resize as rs
from tabletdb.topology.balancing import MAX_PER_NODE, plan_round
from tabletdb.topology.state import TopoNode
from tabletdb.topology.states import NodeState
from tests.unit.topology.driver import TABLE, Cluster, cluster, host, new_id

TARGET = 1000
LOG = uuid.UUID(int=0xCD)


def merging_cluster(nodes: int = 3, rf: int = 2, tablets: int = 16, initial: int = 8) -> Cluster:
    """Siblings apart (the driver places tablet i on nodes i, i+1, ... at alternating shards),
    every tablet nearly empty: the re-evaluation wants ``tablets`` -> ``tablets // 2``."""
    c = cluster(nodes=nodes, tablets=tablets, rf=rf)
    c.locations = {h: ("dc1", f"r{i % 3}") for i, h in enumerate(sorted(c.topology.nodes))}
    table = TableSizing({"dc1": rf}, keyspace_initial=initial)
    c.resize = rs.ResizeInputs(
        {TABLE: table}, shape={"dc1": {"r0": 2, "r1": 2, "r2": 2}}, config=SizingConfig(TARGET)
    )
    c.sizes = {(TABLE, i): 10 for i in range(tablets)}
    return c


def shared(tm: TabletMap) -> list[int]:
    return [len(set(a.replicas) & set(b.replicas)) for a, b in zip(tm.tablets[0::2], tm.tablets[1::2])]


def round_commands(c: Cluster) -> list[co.Propose]:
    return [a for a in c.actions if isinstance(a, co.Propose) and a.command.reason.startswith("balance:")]


def test_siblings_apart_are_co_located_round_by_round_then_the_table_merges() -> None:
    c = merging_cluster()
    before = c.tablets[TABLE]
    assert not siblings_colocated(before) and pairs_apart(before) > 0
    assert rs.pending_merges(c.tablets, c.resize, c.sizes) == {TABLE}
    c.balancing = True
    seen: list[list[int]] = []

    def co_located_stay_so(c: Cluster) -> None:
        if c.tablets[TABLE].tablet_count == 16 and not any(t.in_transition for t in c.tablets[TABLE]):
            now = shared(c.tablets[TABLE])
            if seen:
                assert all(a >= b for a, b in zip(now, seen[-1])), f"siblings separated: {seen[-1]} -> {now}"
            seen.append(now)

    c.run(limit=5000, before=co_located_stay_so)
    merged = c.tablets[TABLE]
    assert merged.tablet_count == 8 and merged.resize_seq_number == 1
    rounds = round_commands(c)
    colocating = [a for a in rounds if "co-locating sibling tablets" in a.command.reason]
    assert len(colocating) >= 2  # the per-node bound splits the work into rounds
    assert sum(len(a.command.tablet_updates) for a in colocating) == pairs_apart(before)
    for action in colocating:
        touched: dict[uuid.UUID, int] = {}
        for u in action.command.tablet_updates:
            assert u.after.new_replicas is not None
            for h in {r.host for r in set(u.before.replicas) ^ set(u.after.new_replicas)}:
                touched[h] = touched.get(h, 0) + 1
        assert max(touched.values()) <= MAX_PER_NODE
    merges = [
        a for a in c.actions if isinstance(a, co.Propose) and a.command.reason.startswith("begin merge")
    ]
    assert len(merges) == 1
    assert c.actions.index(merges[0]) > c.actions.index(colocating[-1])


def test_with_balancing_off_nothing_moves_and_nothing_merges() -> None:
    c = merging_cluster()
    before = dict(c.tablets)
    assert isinstance(c.step(), co.Idle)
    assert c.tablets == before


def test_a_paused_balancer_or_a_growing_table_has_no_pending_merge() -> None:
    c = merging_cluster()
    assert c.resize is not None
    assert rs.pending_merges(c.tablets, replace(c.resize, paused="backup"), c.sizes) == frozenset()
    big = {k: TARGET for k in c.sizes}  # the average tablet is no longer below half the target
    assert rs.pending_merges(c.tablets, c.resize, big) == frozenset()
    assert rs.pending_merges(c.tablets, c.resize, {}) == frozenset()  # not measured: not sized


def test_a_pending_merge_includes_a_log_map_that_plans_on_its_own() -> None:
    """A CDC log map from before maps named their base is in the merge group: it is co-located too."""
    c = merging_cluster()
    assert c.resize is not None
    c.tablets[LOG] = replace(c.tablets[TABLE], table_id=LOG)
    c.resize = replace(c.resize, colocated={TABLE: (LOG,)})
    c.sizes |= {(LOG, i): 0 for i in range(16)}
    assert rs.pending_merges(c.tablets, c.resize, c.sizes) == {TABLE, LOG}
    c.balancing = True
    c.run(limit=8000)
    assert c.tablets[TABLE].tablet_count == 8 and c.tablets[LOG].tablet_count == 8


def test_a_round_beside_a_pending_merge_moves_co_located_siblings_together() -> None:
    """A split table (every pair co-located) and an empty fourth node: the round's moves of the
    table come in sibling pairs with the same source and target; without the pending merge they
    need not."""
    c = merging_cluster(nodes=3, rf=2, tablets=8)
    tm = c.tablets[TABLE].split()
    c.tablets[TABLE] = tm
    c.topology = c.topology.with_node(TopoNode(host(3), NodeState.NORMAL))
    locations = {**c.locations, host(3): ("dc1", "r0")}
    shards = {h: 2 for h in c.topology.nodes}
    sizes = {(TABLE, i): 1 + (i * 7) % 5 for i in range(16)}
    held = plan_round(c.topology, c.tablets, shards, locations, sizes, new_id(), merging=frozenset({TABLE}))
    assert held is not None
    moves = sorted((u.tablet_id, u.before.replicas, u.after.new_replicas) for u in held.updates)
    assert len(moves) % 2 == 0
    for left, right in zip(moves[0::2], moves[1::2]):
        assert (left[0] // 2, left[1:]) == (right[0] // 2, right[1:]) and left[0] % 2 == 0
    free = plan_round(c.topology, c.tablets, shards, locations, sizes, new_id())
    assert free is not None
    ids = {u.tablet_id for u in free.updates}
    assert any((i ^ 1) not in ids for i in ids)  # some tablet moves without its sibling


def test_a_prepared_merge_is_not_pending_and_gets_no_co_location_moves() -> None:
    c = merging_cluster()
    tm = c.tablets[TABLE]
    c.tablets[TABLE] = replace(tm, resize=ResizeState.MERGE)
    assert rs.pending_merges(c.tablets, c.resize, c.sizes) == frozenset()
