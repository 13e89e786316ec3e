"""A table whose tablets were placed by a schema command decided before a leave, remove or
replace began, and applied after its moves were planned, still has a replica on the node the
request takes away: the coordinator moves it the same way before the request goes on."""

from __future__ import annotations

import uuid

import pytest

from tabletdb.tablets.tablet_map import TabletMap, TabletReplica
from tabletdb.topology import coordinator as co
from tabletdb.topology.states import NodeState, RequestKind, TransitionState
from tests.unit.topology.driver import TABLE, Cluster, cluster, host

LATE = uuid.UUID(int=0xCD)


def _add_late_table(c: Cluster, on: uuid.UUID) -> None:
    """Once the request's planned moves are done, a table appears with a replica on ``on``."""
    tr = c.topology.transition
    if LATE in c.tablets or tr is None:
        return
    if tr.state not in (TransitionState.TABLET_DRAINING, TransitionState.TABLET_MIGRATION):
        return
    if any(t.in_transition for t in c.tablets[TABLE].tablets):
        return
    others = [h for h in c.topology.normal_nodes() if h != on and h not in c.topology.ignored]
    replicas = [[TabletReplica(on, 0), TabletReplica(others[i % len(others)], 1)] for i in range(4)]
    c.tablets[LATE] = TabletMap.even(LATE, replicas)


def _late_hosts(c: Cluster) -> set[uuid.UUID]:
    return {r.host for t in c.tablets[LATE].tablets for r in t.replicas}


@pytest.mark.parametrize("kind", [RequestKind.LEAVE, RequestKind.REMOVE])
def test_a_late_tables_replicas_leave_the_node_too(kind: RequestKind) -> None:
    c = cluster(nodes=5)
    gone = host(0)
    if kind is RequestKind.REMOVE:
        c.alive.discard(gone)
    c.request(kind, gone)
    c.run(before=lambda c: _add_late_table(c, gone))
    (result,) = c.topology.results
    assert result.error == "" and c.topology.state_of(gone) is NodeState.LEFT
    assert LATE in c.tablets and gone not in _late_hosts(c)
    assert all(len(t.replicas) == 2 and not t.in_transition for t in c.tablets[LATE].tablets)
    assert any("late tablet move" in cmd.reason for cmd in c.commands)


def test_a_late_tables_replicas_of_a_replaced_node_go_to_the_replacing_node() -> None:
    c = cluster()
    old, new = host(1), host(9)
    c.alive.discard(old)
    c.alive.add(new)
    c.request(RequestKind.REPLACE, new, replaced=old)
    c.run(before=lambda c: _add_late_table(c, old))
    (result,) = c.topology.results
    assert result.error == "" and c.topology.state_of(new) is NodeState.NORMAL
    assert old not in _late_hosts(c) and new in _late_hosts(c)


def test_a_join_does_not_replan_for_late_tables() -> None:
    """A joining node gets its share once (the balancer evens out the rest)."""
    c = cluster()
    new = host(9)
    c.alive.add(new)
    c.request(RequestKind.JOIN, new)
    c.run(before=lambda c: _add_late_table(c, host(0)))
    assert not any("late tablet move" in cmd.reason for cmd in c.commands)
    assert isinstance(c.actions[-1], co.Idle)
