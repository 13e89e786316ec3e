"""One tablet replica moved by an operator: a MOVE request through the coordinator's stages."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tabletdb.tablets.tablet_map import TabletReplica
from tabletdb.topology import coordinator as co
from tabletdb.topology.requests import RequestRefused, enqueue
from tabletdb.topology.state import Request, TabletMove, request_from_plain, request_to_plain
from tabletdb.topology.states import NodeState, RequestKind
from tests.unit.topology.driver import TABLE, cluster, host, new_id


def _move(source: TabletReplica, target: TabletReplica, token: int) -> Request:
    return Request(new_id(), RequestKind.MOVE, target.host, move=TabletMove(TABLE, token, source, target))


def test_a_move_streams_switches_and_cleans_one_replica_and_leaves_nodes_normal() -> None:
    c = cluster(nodes=4, tablets=8, rf=3)
    tablet = c.tablets[TABLE].tablets[0]  # replicas on hosts 0, 1, 2
    token = c.tablets[TABLE].range_of(0).end
    source, target = tablet.replicas[0], TabletReplica(host(3), 1)
    request = _move(source, target, token)
    assert c.apply(enqueue(c.topology, request, frozenset(c.alive), new_id()))
    c.run()
    moved = c.tablets[TABLE].tablets[0]
    assert not moved.in_transition
    assert moved.replicas == (target, *tablet.replicas[1:])
    assert all(t == c.tablets[TABLE].tablets[i] for i, t in enumerate(c.tablets[TABLE].tablets) if i != 0)
    streams = [a for a in c.actions if isinstance(a, co.Stream)]
    assert [(t.sources, t.target) for a in streams for t in a.tasks] == [((source,), target)]
    cleanups = [t.replica for a in c.actions if isinstance(a, co.Cleanup) for t in a.tasks]
    assert cleanups == [source]
    assert all(n.state is NodeState.NORMAL and n.request_id is None for n in c.topology.nodes.values())
    assert c.topology.results[-1].request == request and not c.topology.results[-1].error


def test_a_move_that_cannot_be_planned_ends_with_the_reason_and_changes_nothing() -> None:
    c = cluster(nodes=4, tablets=8, rf=3)
    before = c.tablets[TABLE]
    token = before.range_of(0).end
    onto_a_replica = _move(before.tablets[0].replicas[0], TabletReplica(host(1), 0), token)
    assert c.apply(enqueue(c.topology, onto_a_replica, frozenset(c.alive), new_id()))
    c.run()
    assert c.tablets[TABLE] == before
    assert "already has a replica on" in c.topology.results[-1].error
    not_a_replica = _move(TabletReplica(host(3), 0), TabletReplica(host(3), 1), token)
    assert c.apply(enqueue(c.topology, not_a_replica, frozenset(c.alive), new_id()))
    c.run()
    assert "has no replica" in c.topology.results[-1].error
    wrong_source = _move(TabletReplica(host(3), 0), TabletReplica(host(0), 1), before.range_of(3).end)
    assert c.apply(enqueue(c.topology, wrong_source, frozenset(c.alive), new_id()))
    c.run()
    assert "has no replica" in c.topology.results[-1].error
    no_shard = _move(before.tablets[0].replicas[0], TabletReplica(host(3), 7), token)
    assert c.apply(enqueue(c.topology, no_shard, frozenset(c.alive), new_id()))
    c.run()
    assert "there is no shard 7" in c.topology.results[-1].error
    assert c.tablets[TABLE] == before


def test_a_move_needs_normal_nodes_and_a_tablet() -> None:
    c = cluster(nodes=4)
    bare = Request(new_id(), RequestKind.MOVE, host(3))
    with pytest.raises(RequestRefused, match="must name its tablet"):
        enqueue(c.topology, bare, frozenset(c.alive), new_id())
    c.topology = c.topology.with_node(replace(c.topology.nodes[host(3)], state=NodeState.LEFT))
    with pytest.raises(RequestRefused, match=r"target node .* is left, not normal"):
        enqueue(
            c.topology, _move(TabletReplica(host(0), 0), TabletReplica(host(3), 0), 0), frozenset(), new_id()
        )


def test_a_move_request_survives_encoding() -> None:
    request = _move(TabletReplica(host(0), 1), TabletReplica(host(3), 0), -(2**63) + 5)
    assert request_from_plain(request_to_plain(request)) == request
    plain = Request(new_id(), RequestKind.LEAVE, host(1))
    assert len(request_to_plain(plain)) == 5 and request_from_plain(request_to_plain(plain)) == plain
