"""The balancer loop in the pure coordinator: idle with balancing on, it starts rounds of moves
through the migration stages until no move helps; requests always go first."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tabletdb.topology import coordinator as co
from tabletdb.topology.balancing import MAX_PER_NODE
from tabletdb.topology.requests import RequestRefused, enqueue
from tabletdb.topology.state import Request, TopoNode
from tabletdb.topology.states import NodeState, RequestKind
from tests.unit.topology.driver import TABLE, Cluster, cluster, host, new_id


def with_empty_node(c: Cluster) -> Cluster:
    """A fourth NORMAL node that holds nothing (as if it joined before balancing existed)."""
    c.topology = c.topology.with_node(TopoNode(host(3), NodeState.NORMAL))
    c.alive.add(host(3))
    return c


def balance_commands(c: Cluster) -> list[co.Propose]:
    return [a for a in c.actions if isinstance(a, co.Propose) and a.command.reason.startswith("balance:")]


def test_a_new_node_is_filled_round_by_round_within_the_per_node_bound() -> None:
    c = with_empty_node(cluster(nodes=3, tablets=16, rf=2))
    c.balancing = True
    results_before = c.topology.results
    c.run(limit=2000)
    counts = [c.replicas_of(host(i)) for i in range(4)]
    assert counts == [8, 8, 8, 8]
    rounds = balance_commands(c)
    assert len(rounds) >= 2  # the bound splits the work into rounds
    for action in rounds:
        touched: dict[object, int] = {}
        for u in action.command.tablet_updates:
            assert u.after.new_replicas is not None
            for r in set(u.before.replicas) ^ set(u.after.new_replicas):
                touched[r.host] = touched.get(r.host, 0) + 1
        assert max(touched.values()) <= MAX_PER_NODE
    assert all(n.state is NodeState.NORMAL for n in c.topology.nodes.values())
    assert c.topology.transition is None and c.topology.results == results_before
    assert all(not t.in_transition for t in c.tablets[TABLE].tablets)


def test_sizes_decide_what_moves() -> None:
    c = with_empty_node(cluster(nodes=3, tablets=6, rf=1))
    c.balancing = True
    c.sizes = {(TABLE, i): (1000 if i == 0 else 1) for i in range(6)}
    big_home = c.tablets[TABLE].tablets[0].replicas[0].host
    c.run(limit=2000)
    # the big tablet's node keeps only it; the small ones spread over the other three
    assert [r.host for t in c.tablets[TABLE].tablets for r in t.replicas].count(big_home) == 1


def test_balancing_off_leaves_tablets_where_they_are() -> None:
    c = with_empty_node(cluster(nodes=3, tablets=16, rf=2))
    before = dict(c.tablets)
    assert isinstance(c.step(), co.Idle)
    assert c.tablets == before


def test_a_queued_request_goes_before_balancing() -> None:
    c = with_empty_node(cluster(nodes=3, tablets=16, rf=2))
    c.balancing = True
    c.request(RequestKind.LEAVE, host(0))
    first = c.step()
    assert isinstance(first, co.Propose) and first.command.reason.startswith("start leave")
    c.execute(first)
    c.run(limit=3000)
    assert c.replicas_of(host(0)) == 0
    assert c.topology.nodes[host(0)].state is NodeState.LEFT
    counts = sorted(c.replicas_of(host(i)) for i in (1, 2, 3))
    assert counts[-1] - counts[0] <= 1


def test_nobody_can_queue_a_balance_round() -> None:
    c = cluster(nodes=3)
    request = Request(new_id(), RequestKind.BALANCE, host(0))
    with pytest.raises(RequestRefused, match="never queued"):
        enqueue(c.topology, request, frozenset(c.alive), new_id())


def test_a_round_rolls_back_when_a_target_stays_down() -> None:
    c = with_empty_node(cluster(nodes=3, tablets=16, rf=2))
    c.balancing = True
    c.config = replace(c.config, rollback_after_ms=10)
    first = c.step()
    assert isinstance(first, co.Propose) and first.command.reason.startswith("balance:")
    c.execute(first)
    c.alive.discard(host(3))
    c.obs = replace(c.obs, now_ms=100, down_since={host(3): 0})
    c.balancing = False  # so the run ends once the round is undone
    c.run(limit=200)
    assert c.replicas_of(host(3)) == 0
    assert all(not t.in_transition for t in c.tablets[TABLE].tablets)
    assert "rolled back" in c.topology.results[-1].error
