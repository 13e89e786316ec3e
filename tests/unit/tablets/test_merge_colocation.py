"""Co-locating sibling tablets for a merge: every pair ends on the same replicas, shards included,
in as many moves as the replica sets differ by, never two replicas of a tablet on one node, never
fewer racks for a tablet, within the per-node bound; rack lists keep replicas in their racks."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.tablets.allocation import NodeCapacity, allocate_replicas
from tabletdb.tablets.count import DcReplication
from tabletdb.tablets.merge_colocation import (
    ColocationInput,
    pairs_apart,
    plan_colocation,
    siblings_colocated,
)
from tabletdb.tablets.migration import Migration, advance_stage, begin_migration
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionKind

TABLE = uuid.UUID(int=1000)


def host(i: int) -> uuid.UUID:
    return uuid.UUID(int=i + 1)


def finish(tm: TabletMap, migration: Migration) -> TabletMap:
    tm = begin_migration(tm, migration)
    while tm.tablets[migration.tablet_id].in_transition:
        tm = advance_stage(tm, migration.tablet_id)
    return tm


def racks_of(tablet: TabletInfo, where: Mapping[uuid.UUID, NodeCapacity]) -> set[tuple[str, str]]:
    return {(where[r.host].dc, where[r.host].rack) for r in tablet.replicas}


def colocate(
    nodes: list[NodeCapacity],
    tm: TabletMap,
    replication: Mapping[str, DcReplication],
    max_per_node: int | None = 2,
) -> tuple[TabletMap, list[list[Migration]]]:
    """Rounds as the balancer loop runs them (between nodes first, then between shards), each
    round's moves completed before the next; checks every round on the way."""
    where = {n.host_id: n for n in nodes}
    racks_before = [racks_of(t, where) for t in tm.tablets]
    rounds: list[list[Migration]] = []
    for _ in range(200):
        inp = ColocationInput(nodes, {TABLE: tm}, frozenset({TABLE}), {TABLE: replication}, max_per_node)
        plan = plan_colocation(inp) or plan_colocation(replace(inp, across_nodes=False))
        if not plan:
            return tm, rounds
        assert len({m.tablet_id for m in plan}) == len(plan), "a tablet moved twice in one round"
        assert len({m.kind for m in plan}) == 1, "a round mixes moves between and inside nodes"
        if max_per_node is not None:
            per_node: dict[uuid.UUID, int] = {}
            for m in plan:
                for h in {m.source.host, m.target.host}:
                    per_node[h] = per_node.get(h, 0) + 1
            assert max(per_node.values()) <= max_per_node
        for m in plan:
            tm = finish(tm, m)  # begin_migration refuses a second replica on the target node
        for i, tablet in enumerate(tm.tablets):
            assert len({r.host for r in tablet.replicas}) == len(tablet.replicas)
            assert len(racks_of(tablet, where)) >= len(racks_before[i]), f"tablet {i} lost a rack"
        rounds.append(plan)
    raise AssertionError("co-location did not converge")


node_shapes = st.lists(
    st.tuples(st.sampled_from(["dc1", "dc2"]), st.sampled_from(["r1", "r2", "r3"]), st.integers(1, 3)),
    min_size=2,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(node_shapes, st.integers(1, 3), st.integers(1, 4), st.sampled_from([None, 1, 2]), st.data())
def test_every_pair_ends_co_located_in_the_fewest_moves(
    shape: list[tuple[str, str, int]], rf: int, log_count: int, bound: int | None, data: st.DataObject
) -> None:
    nodes = [NodeCapacity(host(i), dc, rack, shards) for i, (dc, rack, shards) in enumerate(shape)]
    per_dc = {dc: sum(1 for n in nodes if n.dc == dc) for dc in {n.dc for n in nodes}}
    replication: dict[str, DcReplication] = {dc: min(rf, count) for dc, count in per_dc.items()}
    count = 2 << log_count
    replicas, _ = allocate_replicas(count, replication, nodes)
    # shards at random too: a pair may share a host but not its shard
    shard_of = {n.host_id: n.shard_count for n in nodes}
    replicas = tuple(
        tuple(TabletReplica(r.host, data.draw(st.integers(0, shard_of[r.host] - 1))) for r in t)
        for t in replicas
    )
    tm = TabletMap.even(TABLE, replicas)
    lower_bound = pairs_apart(tm)
    done, rounds = colocate(nodes, tm, replication, bound)
    assert siblings_colocated(done)
    assert sum(len(r) for r in rounds) == lower_bound
    merged = done.merge()  # what the co-location was for
    assert merged.tablet_count == count // 2


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 3), st.integers(1, 3), st.integers(1, 3))
def test_rack_lists_keep_every_replica_in_its_rack(per_rack: int, log_count: int, shards: int) -> None:
    racks = ["r1", "r2", "r3"]
    nodes = [NodeCapacity(host(i), "dc1", racks[i % 3], shards) for i in range(3 * per_rack)]
    replication: dict[str, DcReplication] = {"dc1": ("r1", "r2", "r3")}
    replicas, _ = allocate_replicas(2 << log_count, replication, nodes)
    tm = TabletMap.even(TABLE, replicas)
    rack_of = {n.host_id: n.rack for n in nodes}
    done, rounds = colocate(nodes, tm, replication)
    assert siblings_colocated(done)
    for m in (m for r in rounds for m in r):
        assert rack_of[m.source.host] == rack_of[m.target.host]


def test_a_replica_on_a_shared_host_moves_between_shards_not_to_another_node() -> None:
    """ScyllaDB's example: tablet 0 on [n2:s1, n3:s0], tablet 1 on [n1:s0, n2:s0]. Tablet 1's n1
    replica cannot follow tablet 0's n2 one (two replicas on n2): its n2 replica moves to shard 1."""
    nodes = [NodeCapacity(host(i), "dc1", "r1", 2) for i in range(1, 4)]
    r = TabletReplica
    tm = TabletMap.even(TABLE, [[r(host(2), 1), r(host(3), 0)], [r(host(1), 0), r(host(2), 0)]])
    across = plan_colocation(ColocationInput(nodes, {TABLE: tm}, frozenset({TABLE}), {TABLE: {"dc1": 2}}))
    assert across == [Migration(TABLE, 1, r(host(1), 0), r(host(3), 0))]
    inside = plan_colocation(
        ColocationInput(nodes, {TABLE: tm}, frozenset({TABLE}), {TABLE: {"dc1": 2}}, across_nodes=False)
    )
    assert inside == [Migration(TABLE, 1, r(host(2), 0), r(host(2), 1))]
    assert inside[0].kind is TransitionKind.INTRANODE_MIGRATION


def test_the_sibling_spanning_fewer_racks_is_the_one_that_moves() -> None:
    nodes = [NodeCapacity(host(1), "dc1", "r1", 1), NodeCapacity(host(2), "dc1", "r1", 1)]
    nodes += [NodeCapacity(host(3), "dc1", "r2", 1)]
    r = TabletReplica
    # tablet 0 spans r1 only, tablet 1 spans r1 and r2: tablet 0 moves onto tablet 1's replicas
    tm = TabletMap.even(TABLE, [[r(host(1), 0), r(host(2), 0)], [r(host(1), 0), r(host(3), 0)]])
    plan = plan_colocation(ColocationInput(nodes, {TABLE: tm}, frozenset({TABLE}), {TABLE: {"dc1": 2}}))
    assert plan == [Migration(TABLE, 0, r(host(2), 0), r(host(3), 0))]
    # the same with racks kept (a rack list, or replication unknown): no move crosses racks
    assert plan_colocation(ColocationInput(nodes, {TABLE: tm}, frozenset({TABLE}))) == []


def test_pairs_moving_or_changing_rf_wait_and_other_tables_are_left_alone() -> None:
    nodes = [NodeCapacity(host(i), "dc1", "r1", 1) for i in range(4)]
    r = TabletReplica
    tm = TabletMap.even(
        TABLE,
        [
            [r(host(0), 0), r(host(1), 0)],
            [r(host(2), 0), r(host(3), 0)],  # apart, its sibling moving (below)
            [r(host(0), 0)],
            [r(host(1), 0), r(host(2), 0)],  # an RF change gave it its second replica only
        ],
    )
    tm = begin_migration(tm, Migration(TABLE, 0, r(host(0), 0), r(host(3), 0)))
    replication = {TABLE: {"dc1": 2}}
    assert plan_colocation(ColocationInput(nodes, {TABLE: tm}, frozenset({TABLE}), replication)) == []
    assert plan_colocation(ColocationInput(nodes, {TABLE: tm}, frozenset(), replication)) == []
