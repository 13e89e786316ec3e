"""removenode and replace in the pure coordinator: the coordinator checks again that the node is
dead, and a rolled-back request deletes the partial copies its reverted moves left on their
targets (ScyllaDB's `cleanup_target`) before it is recorded as failed."""

from __future__ import annotations

import uuid
from dataclasses import replace

from tabletdb.tablets.tablet_map import TabletReplica
from tabletdb.topology import coordinator as co
from tabletdb.topology.requests import enqueue
from tabletdb.topology.state import (
    Request,
    TopologyState,
    Transition,
    state_from_plain,
    state_to_plain,
)
from tabletdb.topology.states import NodeState, RequestKind, TransitionState
from tests.unit.topology.driver import TABLE, Cluster, cluster, host, new_id


def test_removenode_of_a_node_the_coordinator_sees_alive_fails_and_moves_nothing() -> None:
    c = cluster()
    target = host(3)
    c.alive.discard(target)
    c.request(RequestKind.REMOVE, target)  # the admitting node saw it down...
    c.alive.add(target)  # ...the coordinator sees it up
    before = c.tablets[TABLE]
    c.run()
    (result,) = c.topology.results
    assert f"sees node {target} alive" in result.error and "stop it first" in result.error
    assert c.topology.state_of(target) is NodeState.NORMAL and c.tablets[TABLE] == before


def test_replace_of_a_node_the_coordinator_sees_alive_fails_and_the_new_node_is_left() -> None:
    c = cluster()
    old, new = host(1), host(9)
    c.alive.discard(old)
    c.alive.add(new)
    c.request(RequestKind.REPLACE, new, replaced=old)
    c.alive.add(old)
    c.run()
    (result,) = c.topology.results
    assert f"sees node {old} alive" in result.error
    assert c.topology.state_of(new) is NodeState.LEFT and c.topology.state_of(old) is NodeState.NORMAL


def _rolled_back_leave(target_alive: bool) -> tuple[Cluster, list[TabletReplica]]:
    """A leave rolled back once its tablets were written to both sets: the leaving node died."""
    c = cluster()
    c.config = co.CoordinatorConfig(rollback_after_ms=1_000)
    leaving = host(0)
    c.request(RequestKind.LEAVE, leaving)
    for _ in range(3):  # start, barrier, first stage (writes go to both sets from here on)
        c.execute(c.step())
    tablets = c.tablets[TABLE].tablets
    targets = [r for t in tablets for r in t.new_replicas or () if r not in t.replicas]
    assert targets
    c.alive.discard(leaving)
    if not target_alive:
        c.alive -= {r.host for r in targets}
    c.obs = replace(c.obs, now_ms=5_000, down_since={leaving: 1_000})
    c.run()
    return c, targets


def test_a_rollback_deletes_the_partial_copies_on_the_reverted_targets() -> None:
    c, targets = _rolled_back_leave(target_alive=True)
    cleanups = [t for a in c.actions if isinstance(a, co.Cleanup) for t in a.tasks]
    assert sorted(t.replica for t in cleanups) == sorted(targets)
    last_cleanup = max(i for i, a in enumerate(c.actions) if isinstance(a, co.Cleanup))
    finish = next(
        i
        for i, a in enumerate(c.actions)
        if isinstance(a, co.Propose) and a.command.topology.transition is None
    )
    assert last_cleanup < finish  # the request ends only once its leftovers are gone
    (result,) = c.topology.results
    assert "rolled back" in result.error
    assert c.topology.state_of(host(0)) is NodeState.NORMAL


def test_a_rollback_does_not_wait_for_a_dead_target() -> None:
    c, _ = _rolled_back_leave(target_alive=False)
    assert not any(isinstance(a, co.Cleanup) for a in c.actions)
    assert c.topology.transition is None and c.topology.results[0].error


def test_a_rolled_back_transition_keeps_its_cleanup_targets_through_group0_encoding() -> None:
    request = Request(new_id(), RequestKind.LEAVE, host(0))
    targets = ((TABLE, 3, TabletReplica(host(2), 1)), (TABLE, 5, TabletReplica(host(4), 0)))
    state = TopologyState(
        state_id=new_id(),
        transition=Transition(request, TransitionState.ROLLBACK_TO_NORMAL, "why", targets),
    )
    assert state_from_plain(state_to_plain(state)) == state
    plain = state_to_plain(replace(state, transition=Transition(request, TransitionState.TABLET_DRAINING)))
    assert len(plain["tr"]) == 3  # no targets: the encoding entries written before them had
    assert state_from_plain(plain).transition == Transition(request, TransitionState.TABLET_DRAINING)


def _two_dead(ignore: bool) -> tuple[Cluster, uuid.UUID, uuid.UUID]:
    """5 nodes, RF=3; hosts 3 and 4 are dead (down long enough to roll back) and 3 is removed."""
    c = cluster(nodes=5, tablets=10)
    c.config = co.CoordinatorConfig(rollback_after_ms=1_000)
    removed, other = host(3), host(4)
    c.alive -= {removed, other}
    c.obs = replace(c.obs, now_ms=10_000, down_since={removed: 0, other: 0})
    ignore_nodes = frozenset({other} if ignore else ())
    request = Request(new_id(), RequestKind.REMOVE, removed, ignore_nodes=ignore_nodes)
    assert c.apply(enqueue(c.topology, request, frozenset(c.alive), new_id()))
    c.run()
    return c, removed, other


def test_removenode_rebuilds_from_the_survivors_only_when_told_to_ignore_another_dead_node() -> None:
    c, removed, other = _two_dead(ignore=True)
    (result,) = c.topology.results
    assert result.error == "" and c.topology.state_of(removed) is NodeState.LEFT
    sources = {s.host for a in c.actions if isinstance(a, co.Stream) for t in a.tasks for s in t.sources}
    assert sources and other not in sources and removed not in sources
    assert c.replicas_of(other) > 0  # still a (dead) replica: only removed from the sources


def test_removenode_rolls_back_when_another_dead_node_is_needed_and_not_ignored() -> None:
    c, removed, other = _two_dead(ignore=False)
    (result,) = c.topology.results
    assert f"node {other} has been down" in result.error and "rolled back" in result.error
    assert c.topology.state_of(removed) is NodeState.NORMAL


def test_a_barrier_waits_for_a_member_that_is_down_until_a_removenode_declares_it_dead() -> None:
    """A node the failure detector calls down may be cut off and serving by its old map, so the
    barrier of a running move waits for it; the removenode the operator queues for it (refused
    for a live node) excludes it, and so do the nodes its ``ignore_nodes`` names."""
    c = cluster(nodes=5, tablets=10)
    leaving, dead, other = host(0), host(3), host(4)
    c.request(RequestKind.LEAVE, leaving)
    c.execute(c.step())  # the decommission starts: its moves are in flight
    c.alive -= {dead, other}
    barrier = c.step()
    assert isinstance(barrier, co.Barrier) and not barrier.skip_down
    assert {dead, other} <= set(barrier.nodes)
    live = tuple(h for h in barrier.nodes if h in c.alive)
    assert barrier.asks(frozenset(c.alive)) == (live, (dead, other))
    c.execute(barrier)
    assert c.obs.barrier_version < c.topology.version  # held back: nothing moves on
    removal = Request(new_id(), RequestKind.REMOVE, dead, ignore_nodes=frozenset({other}))
    assert c.apply(enqueue(c.topology, removal, frozenset(c.alive), new_id()))
    assert set(co.barrier_members(c.topology)) == {host(0), host(1), host(2)}
    c.run()
    decommission, removal_result = c.topology.results  # the removenode ends too (here refused:
    assert decommission.error == "" and removal_result.request == removal  # too few nodes for RF 3)
    assert c.topology.state_of(leaving) is NodeState.LEFT and c.topology.transition is None


def test_a_rollback_barrier_passes_without_the_nodes_that_are_down() -> None:
    """Rolled back moves had not switched reads: a node on an older map reads what the reverted
    map reads, so the rollback does not wait for the dead node that caused it."""
    c, removed, other = _two_dead(ignore=False)
    rollback = [a for a in c.actions if isinstance(a, co.Barrier) and a.skip_down]
    assert rollback and all(other in a.nodes and removed not in a.nodes for a in rollback)
    assert c.topology.transition is None and c.topology.queue == ()
