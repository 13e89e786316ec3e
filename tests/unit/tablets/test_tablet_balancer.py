"""The pure load balancer: moves are valid, repeated planning converges and drains nodes."""

from __future__ import annotations

import uuid
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.tablets.allocation import NodeCapacity, allocate_replicas, new_tablet_map
from tabletdb.tablets.balancer import BalancerInput, plan_migrations
from tabletdb.tablets.migration import Migration, advance_stage, begin_migration
from tabletdb.tablets.tablet_map import TabletMap

TABLE = uuid.UUID(int=1000)


def host(i: int) -> uuid.UUID:
    return uuid.UUID(int=i)


def finish(tm: TabletMap, migration: Migration) -> TabletMap:
    tm = begin_migration(tm, migration)
    while tm.tablets[migration.tablet_id].in_transition:
        tm = advance_stage(tm, migration.tablet_id)
    return tm


def run_to_convergence(inp: BalancerInput, rounds: int = 500) -> tuple[dict[uuid.UUID, TabletMap], int]:
    maps = dict(inp.maps)
    for done in range(rounds):
        plan = plan_migrations(
            BalancerInput(inp.nodes, maps, inp.replication, inp.tablet_sizes, inp.draining)
        )
        if not plan:
            return maps, done
        assert len({(m.table_id, m.tablet_id) for m in plan}) == len(plan)
        for m in plan:
            maps[m.table_id] = finish(maps[m.table_id], m)
    raise AssertionError("balancer did not converge")


def node_counts(maps: dict[uuid.UUID, TabletMap]) -> dict[uuid.UUID, int]:
    counts: dict[uuid.UUID, int] = {}
    for tm in maps.values():
        for tablet in tm:
            for r in tablet.replicas:
                counts[r.host] = counts.get(r.host, 0) + 1
    return counts


def test_new_node_receives_its_share() -> None:
    old = [NodeCapacity(host(i), "dc1", f"r{i}", 2) for i in range(3)]
    tm = new_tablet_map(TABLE, 32, {"dc1": 2}, old)
    nodes = [*old, NodeCapacity(host(3), "dc1", "r3", 2)]
    maps, _ = run_to_convergence(BalancerInput(nodes, {TABLE: tm}))
    assert sorted(node_counts(maps).values()) == [16, 16, 16, 16]


def test_draining_node_is_emptied_and_racks_kept() -> None:
    nodes = [NodeCapacity(host(i), "dc1", f"r{i % 3}", 2) for i in range(6)]
    tm = new_tablet_map(TABLE, 16, {"dc1": 3}, nodes)
    maps, _ = run_to_convergence(BalancerInput(nodes, {TABLE: tm}, draining=frozenset({host(0)})))
    assert host(0) not in node_counts(maps)
    rack = {n.host_id: n.rack for n in nodes}
    for tablet in maps[TABLE]:
        assert len({rack[r.host] for r in tablet.replicas}) == 3


def test_rack_list_replicas_stay_in_their_rack() -> None:
    nodes = [NodeCapacity(host(1), "dc1", "r1", 1), NodeCapacity(host(2), "dc1", "r2", 1)]
    tm = new_tablet_map(TABLE, 8, {"dc1": ("r1",)}, nodes[:1])
    plan = plan_migrations(BalancerInput(nodes, {TABLE: tm}, replication={TABLE: {"dc1": ("r1",)}}))
    assert plan == []


def test_shards_of_one_node_are_balanced() -> None:
    nodes = [NodeCapacity(host(1), "dc1", "r1", 4)]
    piled = [NodeCapacity(host(1), "dc1", "r1", 1)]
    tm = new_tablet_map(TABLE, 8, {"dc1": 1}, piled)  # every replica on shard 0
    plan = plan_migrations(BalancerInput(nodes, {TABLE: tm}))
    assert all(m.source.host == m.target.host for m in plan)
    maps, _ = run_to_convergence(BalancerInput(nodes, {TABLE: tm}))
    shards = [0] * 4
    for tablet in maps[TABLE]:
        shards[tablet.replicas[0].shard] += 1
    assert shards == [2, 2, 2, 2]


def test_tablets_in_transition_are_not_moved() -> None:
    nodes = [NodeCapacity(host(1), "dc1", "r1", 2), NodeCapacity(host(2), "dc1", "r1", 2)]
    tm = new_tablet_map(TABLE, 2, {"dc1": 1}, nodes[:1])
    source = tm.tablets[0].replicas[0]
    tm = begin_migration(tm, Migration(TABLE, 0, source, source._replace(shard=1 - source.shard)))
    plan = plan_migrations(BalancerInput(nodes, {TABLE: tm}))
    assert plan and all(m.tablet_id != 0 for m in plan)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3"]), st.integers(1, 3)), min_size=3, max_size=6),
    st.integers(1, 3),
    st.integers(1, 24),
    st.lists(st.integers(1, 50), min_size=24, max_size=24),
    st.booleans(),
)
def test_balancing_properties(
    shape: list[tuple[str, int]], rf: int, count: int, sizes: list[int], drain: bool
) -> None:
    nodes = [NodeCapacity(host(i + 1), "dc1", rack, shards) for i, (rack, shards) in enumerate(shape)]
    # place everything on the first rf nodes' racks, then let the balancer spread it
    replicas, _ = allocate_replicas(count, {"dc1": rf}, nodes[: max(rf, len(nodes) // 2)])
    tm = TabletMap.even(TABLE, replicas)
    tablet_sizes = {(TABLE, i): sizes[i] for i in range(count)}
    draining = frozenset({nodes[0].host_id}) if drain and len(nodes) > rf else frozenset()
    rack = {n.host_id: n.rack for n in nodes}
    racks_before = [len({rack[r.host] for r in t.replicas}) for t in tm]
    maps, _ = run_to_convergence(
        BalancerInput(nodes, {TABLE: tm}, tablet_sizes=tablet_sizes, draining=draining)
    )
    for tablet, before in zip(maps[TABLE], racks_before):
        hosts = [r.host for r in tablet.replicas]
        assert len(set(hosts)) == rf
        racks = {rack[h] for h in hosts}
        assert len(racks) >= before
        for stuck in set(hosts) & draining:
            # a replica stays on a draining node only if no node could take it without losing a rack
            others = {rack[h] for h in hosts if h != stuck}
            for n in nodes:
                if n.host_id not in hosts and n.host_id not in draining:
                    assert len(others | {n.rack}) < len(racks)


def node_bytes(
    nodes: list[NodeCapacity], maps: dict[uuid.UUID, TabletMap], sizes: dict[tuple[uuid.UUID, int], int]
) -> dict[uuid.UUID, int]:
    loads = {n.host_id: 0 for n in nodes}
    for table_id, tm in maps.items():
        for i, tablet in enumerate(tm):
            for r in tablet.replicas:
                loads[r.host] += sizes.get((table_id, i), 1)
    return loads


def imbalance(nodes: list[NodeCapacity], loads: dict[uuid.UUID, int]) -> Fraction:
    """Exact: a float sum depends on the order of its terms, so two equal loads in swapped
    places could compare as a (false) gain."""
    return sum((Fraction(loads[n.host_id] ** 2, n.shard_count) for n in nodes), Fraction(0))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["dc1", "dc2"]), st.sampled_from(["r1", "r2", "r3"]), st.integers(1, 4)),
        min_size=4,
        max_size=9,
    ),
    st.integers(1, 3),
    st.lists(st.integers(1, 40), min_size=2, max_size=3),
    st.lists(st.integers(1, 1000), min_size=40, max_size=40),
)
def test_every_move_lowers_imbalance_and_converged_means_no_move_helps(
    shape: list[tuple[str, str, int]], rf: int, counts: list[int], sizes: list[int]
) -> None:
    nodes = [NodeCapacity(host(i + 1), dc, rack, shards) for i, (dc, rack, shards) in enumerate(shape)]
    dcs = {n.dc for n in nodes}
    per_dc = {dc: min(rf, sum(1 for n in nodes if n.dc == dc)) for dc in dcs}
    crowded = [n for n in nodes if n.host_id.int <= max(3, len(nodes) // 2)] or nodes
    placement = [n for n in nodes if n in crowded or sum(1 for c in crowded if c.dc == n.dc) < per_dc[n.dc]]
    maps: dict[uuid.UUID, TabletMap] = {}
    tablet_sizes: dict[tuple[uuid.UUID, int], int] = {}
    for t, count in enumerate(counts):
        table = uuid.UUID(int=2000 + t)
        maps[table] = new_tablet_map(table, count, per_dc, placement)
        tablet_sizes.update({(table, i): sizes[(i * 7 + t) % len(sizes)] for i in range(count)})
    rack = {n.host_id: (n.dc, n.rack) for n in nodes}  # rack names repeat across DCs
    racks_before = {
        (t, i): len({rack[r.host] for r in tablet.replicas})
        for t, tm in maps.items()
        for i, tablet in enumerate(tm)
    }
    for _ in range(300):
        plan = plan_migrations(BalancerInput(nodes, maps, tablet_sizes=tablet_sizes))
        if not plan:
            break
        for m in plan:
            before = node_bytes(nodes, maps, tablet_sizes)
            shards_before = [r.shard for r in maps[m.table_id].tablets[m.tablet_id].replicas]
            maps[m.table_id] = finish(maps[m.table_id], m)
            after = node_bytes(nodes, maps, tablet_sizes)
            if m.source.host != m.target.host:
                assert imbalance(nodes, after) < imbalance(nodes, before), m
            else:
                assert m.source.shard in shards_before
    else:
        raise AssertionError("balancer did not converge")
    loads = node_bytes(nodes, maps, tablet_sizes)
    by_host = {n.host_id: n for n in nodes}
    for (t, i), racks in racks_before.items():
        hosts = [r.host for r in maps[t].tablets[i].replicas]
        assert len(set(hosts)) == len(hosts)
        assert len({rack[h] for h in hosts}) >= racks
        # converged: no single replica move to another node of its DC keeping its racks would help
        for source in hosts:
            src = by_host[source]
            others = [by_host[h] for h in hosts if h != source and by_host[h].dc == src.dc]
            size = tablet_sizes[(t, i)]
            for target in nodes:
                if target.dc != src.dc or target.host_id in hosts:
                    continue
                before_racks = len({o.rack for o in others} | {src.rack})
                if len({o.rack for o in others} | {target.rack}) < before_racks:
                    continue
                moved = dict(loads)
                moved[source] -= size
                moved[target.host_id] += size
                assert imbalance(nodes, moved) >= imbalance(nodes, loads)


def test_keep_racks_and_the_per_node_bound() -> None:
    nodes = [NodeCapacity(host(i), "dc1", f"r{i % 2}", 1) for i in range(4)]
    tm = new_tablet_map(TABLE, 16, {"dc1": 1}, [nodes[0], nodes[1]])  # hosts 2, 3 empty
    rack = {n.host_id: n.rack for n in nodes}
    plan = plan_migrations(BalancerInput(nodes, {TABLE: tm}, keep_racks=True, max_per_node=3), 100)
    assert plan and all(rack[m.source.host] == rack[m.target.host] for m in plan)
    touched: dict[uuid.UUID, int] = {}
    for m in plan:
        for h in {m.source.host, m.target.host}:
            touched[h] = touched.get(h, 0) + 1
    assert max(touched.values()) == 3


def test_no_crossing_stops_nearly_equal_nodes_from_swapping_tablets_back_and_forth() -> None:
    """Two one-shard nodes, three tablets of 100 bytes on A, 100 + 95 on B (and empty ones): the
    plain measure moves a 100 A -> B (300/195 becomes 200/295, a lower sum of squares), and once
    B's 95 grows to 105 (files are remeasured) a 100 B -> A: tablets swap back and forth. With
    ``no_crossing`` neither plan moves anything (each move would leave the target above the
    source)."""
    from tabletdb.tablets.tablet_map import TabletReplica

    a, b = host(1), host(2)
    nodes = [NodeCapacity(a, "dc1", "r1", 1), NodeCapacity(b, "dc1", "r1", 1)]
    tm = TabletMap.even(TABLE, [[TabletReplica(h, 0)] for h in (a, a, a, b, b, b, b, b)])
    sizes = {(TABLE, i): s for i, s in enumerate([100, 100, 100, 100, 95, 0, 0, 0])}
    plain = plan_migrations(BalancerInput(nodes, {TABLE: tm}, tablet_sizes=sizes))
    assert [(m.source.host, m.target.host) for m in plain] == [(a, b)]
    moved = finish(tm, plain[0])
    drifted = {**sizes, (TABLE, 4): 105}
    back = plan_migrations(BalancerInput(nodes, {TABLE: moved}, tablet_sizes=drifted))
    assert [(m.source.host, m.target.host) for m in back] == [(b, a)]
    for maps, measured in (({TABLE: tm}, sizes), ({TABLE: moved}, drifted)):
        assert plan_migrations(BalancerInput(nodes, maps, tablet_sizes=measured, no_crossing=True)) == []
