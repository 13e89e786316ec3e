"""Co-located tablets (a CDC log with its base): no plan of the topology coordinator separates
them. Random histories of joins, decommissions, removes, replaces, operator moves (naming the
base or the log) and balancer rounds, with crashes, failed steps and nodes going down; after
every applied command the log's map equals the base's, and every stream or cleanup of a base
tablet comes with the same one of the log tablet."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabletdb.tablets.colocation import (
    follow_map,
    group_sizes,
    mirror_updates,
    planning_maps,
    separated,
    with_followers,
)
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica
from tabletdb.tablets.wire import tablet_map_from_plain, tablet_map_to_plain
from tabletdb.topology import coordinator as co
from tabletdb.topology.commands import TabletUpdate
from tabletdb.topology.requests import RequestRefused, enqueue
from tabletdb.topology.state import Request, TabletMove
from tabletdb.topology.states import NodeState, RequestKind
from tests.unit.topology.driver import TABLE, Cluster, cluster, host, new_id

LOG = uuid.UUID(int=0xAC)
OTHER = uuid.UUID(int=0xAD)


def colocated_cluster(nodes: int = 4, tablets: int = 8) -> Cluster:
    c = cluster(nodes=nodes, tablets=tablets)
    base = c.tablets[TABLE]
    c.tablets[LOG] = follow_map(base, LOG)
    c.tablets[OTHER] = replace(base, table_id=OTHER)  # an unrelated table planned on its own
    return c


def test_follow_map_copies_the_base_and_names_it() -> None:
    c = colocated_cluster()
    log = c.tablets[LOG]
    assert log.tablets == c.tablets[TABLE].tablets and log.base_table == TABLE
    assert tablet_map_from_plain(tablet_map_to_plain(log)) == log
    assert "base" not in tablet_map_to_plain(c.tablets[TABLE])  # maps of their own encode as before
    assert separated(c.tablets) == []


def test_planners_see_base_tables_only_and_weigh_groups() -> None:
    c = colocated_cluster()
    assert set(planning_maps(c.tablets)) == {TABLE, OTHER}
    sizes = group_sizes(c.tablets, {(TABLE, 0): 10, (LOG, 0): 5, (OTHER, 0): 7})
    assert sizes == {(TABLE, 0): 15, (OTHER, 0): 7}


def test_mirror_repeats_base_updates_and_drops_the_logs_own() -> None:
    c = colocated_cluster()
    before = c.tablets[TABLE].tablets[0]
    after = replace(before, replicas=before.replicas[::-1])
    log_only = TabletUpdate(LOG, 1, before, after)
    out = mirror_updates(c.tablets, [TabletUpdate(TABLE, 0, before, after), log_only])
    assert out == (TabletUpdate(TABLE, 0, before, after), TabletUpdate(LOG, 0, before, after))


def test_whole_map_changes_take_the_log_along() -> None:
    c = colocated_cluster()
    split = c.tablets[TABLE].split()
    out = with_followers(c.tablets, split)
    assert out[TABLE] == split and out[LOG] == follow_map(split, LOG)
    assert separated({**c.tablets, **out}) == []


def test_a_move_naming_the_log_moves_base_and_log_together() -> None:
    c = colocated_cluster()
    tablet = c.tablets[LOG].tablets[0]
    token = c.tablets[LOG].range_of(0).end
    target = TabletReplica(host(3), 1)
    move = TabletMove(LOG, token, tablet.replicas[0], target)
    assert c.apply(
        enqueue(
            c.topology, Request(new_id(), RequestKind.MOVE, host(3), move=move), frozenset(c.alive), new_id()
        )
    )
    c.run()
    assert not c.topology.results[-1].error
    assert c.tablets[TABLE].tablets[0].replicas[0] == target
    assert separated(c.tablets) == []
    streamed = {(t.key[1], t.key[2]) for a in c.actions if isinstance(a, co.Stream) for t in a.tasks}
    assert streamed == {(TABLE, 0), (LOG, 0)}
    cleaned = {(t.key[1], t.key[2]) for a in c.actions if isinstance(a, co.Cleanup) for t in a.tasks}
    assert cleaned == {(TABLE, 0), (LOG, 0)}


def _pairs(keys: set[tuple[uuid.UUID, uuid.UUID, int]]) -> None:
    """Every base tablet task has its log twin and the other way round."""
    base = {(r, t) for r, table, t in keys if table == TABLE}
    log = {(r, t) for r, table, t in keys if table == LOG}
    assert base == log


events = st.lists(
    st.sampled_from(
        ["request", "move", "step", "step", "step", "step", "crash", "fail", "down", "up", "balance"]
    ),
    min_size=5,
    max_size=80,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events, st.randoms(use_true_random=False))
def test_no_history_separates_a_log_from_its_base(history: list[str], rnd: random.Random) -> None:
    c = colocated_cluster(nodes=5)
    c.config = co.CoordinatorConfig(rollback_after_ms=50)
    c.sizes = {(t, i): rnd.randint(1, 100) for t in (TABLE, LOG, OTHER) for i in range(8)}
    dead: set[uuid.UUID] = set()
    next_host = 100

    def execute(action: co.Action) -> None:
        if isinstance(action, (co.Stream, co.Cleanup)):
            _pairs({t.key for t in action.tasks})
        c.execute(action)
        assert separated(c.tablets) == [], c.actions[-1]

    for now, event in enumerate(history):
        c.obs = replace(c.obs, now_ms=now * 10, down_since={**c.obs.down_since, **{h: 0 for h in dead}})
        normal = [h for h in c.topology.normal_nodes() if h not in dead]
        req = None
        if event == "request":
            kind = rnd.choice([RequestKind.JOIN, RequestKind.LEAVE, RequestKind.REMOVE, RequestKind.REPLACE])
            if kind is RequestKind.JOIN:
                next_host += 1
                req = Request(new_id(), kind, host(next_host))
                c.alive.add(req.host_id)
            elif normal:
                victim = rnd.choice(normal)
                if kind in (RequestKind.REMOVE, RequestKind.REPLACE):
                    c.alive.discard(victim)
                    dead.add(victim)
                if kind is RequestKind.REPLACE:
                    next_host += 1
                    req = Request(new_id(), kind, host(next_host), victim)
                    c.alive.add(req.host_id)
                else:
                    req = Request(new_id(), kind, victim)
        elif event == "move" and normal:
            table = rnd.choice([TABLE, LOG, OTHER])
            tm = c.tablets[table]
            tid = rnd.randrange(tm.tablet_count)
            source = rnd.choice(tm.tablets[tid].replicas)
            target = TabletReplica(rnd.choice(normal), rnd.randrange(2))
            req = Request(
                new_id(),
                RequestKind.MOVE,
                target.host,
                move=TabletMove(table, tm.range_of(tid).end, source, target),
            )
        elif event == "step":
            execute(c.step())
        elif event == "crash":
            c.obs = co.Observations(alive=frozenset())
        elif event == "fail":
            c.step()
        elif event == "down" and c.alive:
            victim = rnd.choice(sorted(c.alive))
            c.alive.discard(victim)
            c.obs = replace(c.obs, down_since={**c.obs.down_since, victim: now * 10})
        elif event == "up":
            c.alive |= {h for h in c.topology.nodes if h not in dead}
        elif event == "balance":
            c.balancing = not c.balancing
        if req is not None:
            try:
                command = enqueue(c.topology, req, frozenset(c.alive), new_id())
            except RequestRefused:
                continue
            assert c.apply(command)
    c.alive |= {h for h in c.topology.nodes if h not in dead}
    c.obs = replace(c.obs, down_since={h: 0 for h in dead}, now_ms=10**9)
    c.balancing = False  # a round can keep choosing a dead node nobody removed; requests must end
    for h in sorted(dead):  # a dead member holds barriers until the operator removes it
        if c.topology.state_of(h) is NodeState.NORMAL:
            try:
                removal = enqueue(
                    c.topology, Request(new_id(), RequestKind.REMOVE, h), frozenset(c.alive), new_id()
                )
            except RequestRefused:
                continue  # already queued for it
            assert c.apply(removal)
    for _ in range(3000):
        action = c.step()
        if isinstance(action, co.Idle):
            break
        execute(action)
    assert c.topology.transition is None, c.actions[-3:]
    assert separated(c.tablets) == []
    for tablet in c.tablets[LOG].tablets:
        assert not tablet.in_transition
        assert all(c.topology.state_of(h) is NodeState.NORMAL for h in tablet.replica_hosts())


def test_log_maps_from_before_colocation_still_plan_on_their_own() -> None:
    """A log map without a base (made by an older version) keeps being drained like any table."""
    c = cluster()
    c.tablets[LOG] = TabletMap(LOG, c.tablets[TABLE].tablets)
    c.apply(enqueue(c.topology, Request(new_id(), RequestKind.LEAVE, host(0)), frozenset(c.alive), new_id()))
    c.run()
    assert all(host(0) not in t.replica_hosts() for t in c.tablets[LOG].tablets)
