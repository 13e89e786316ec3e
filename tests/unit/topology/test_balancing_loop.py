"""The balancer loop in the pure coordinator: idle with balancing on, it starts rounds of moves
through the migration stages until no move helps; requests always go first."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tabletdb.tablets.tablet_map import TabletReplica, TransitionKind
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


def shard_counts(c: Cluster, h: object) -> list[int]:
    counts = [0, 0]
    for t in c.tablets[TABLE].tablets:
        for r in t.replicas:
            if r.host == h:
                counts[r.shard] += 1
    return counts


def all_on_shard_zero(c: Cluster) -> Cluster:
    """Every replica on shard 0 of its node (each node has two shards): only intranode moves help."""
    tm = c.tablets[TABLE]
    moved = (replace(t, replicas=tuple(TabletReplica(r.host, 0) for r in t.replicas)) for t in tm.tablets)
    c.tablets[TABLE] = replace(tm, tablets=tuple(moved))
    return c


def test_shards_of_a_node_are_evened_out_by_intranode_rounds() -> None:
    c = all_on_shard_zero(cluster(nodes=3, tablets=12, rf=1))
    c.balancing = True
    c.run(limit=2000)
    assert [shard_counts(c, host(i)) for i in range(3)] == [[2, 2]] * 3
    rounds = balance_commands(c)
    kinds = {u.after.transition for a in rounds for u in a.command.tablet_updates}
    assert rounds and kinds == {TransitionKind.INTRANODE_MIGRATION}


def test_a_round_never_mixes_moves_between_nodes_with_moves_inside_one() -> None:
    c = with_empty_node(all_on_shard_zero(cluster(nodes=3, tablets=16, rf=2)))
    c.balancing = True
    c.run(limit=4000)
    assert [c.replicas_of(host(i)) for i in range(4)] == [8, 8, 8, 8]
    assert all(max(shard_counts(c, host(i))) - min(shard_counts(c, host(i))) <= 1 for i in range(4))
    kinds = [{u.after.transition for u in a.command.tablet_updates} for a in balance_commands(c)]
    assert all(len(k) == 1 for k in kinds)
    assert {TransitionKind.MIGRATION} in kinds and {TransitionKind.INTRANODE_MIGRATION} in kinds


def test_an_intranode_move_rolls_back_when_its_node_stays_down_and_its_shard_is_not_cleaned() -> None:
    """Like a move between nodes, so a dead node never holds the round (and its removenode);
    the new shard's file may be the only copy (the node adopts it, ``resident_shard``), so the
    rollback asks no cleanup of it."""
    c = all_on_shard_zero(cluster(nodes=3, tablets=12, rf=1))
    c.balancing = True
    c.config = replace(c.config, rollback_after_ms=10)
    first = c.step()
    assert isinstance(first, co.Propose)
    c.execute(first)
    moved = {(u.table_id, u.tablet_id) for u in first.command.tablet_updates}
    mover = first.command.tablet_updates[0].after.replicas[0].host
    c.alive.discard(mover)
    c.obs = replace(c.obs, now_ms=1000, down_since={mover: 0})
    rolled_back = False
    for _ in range(40):
        action = c.step()
        if isinstance(action, co.Propose) and "roll back" in action.command.reason:
            rolled_back = True
            assert action.command.topology.transition is not None
            assert not action.command.topology.transition.cleanup_targets
        assert not isinstance(action, co.Cleanup)
        if isinstance(action, co.Idle):
            break
        if not isinstance(action, co.Stream):  # asked of the dead node: fails, asked again
            c.execute(action)
    assert rolled_back
    assert any("rolled back" in r.error for r in c.topology.results)
    for table_id, tablet_id in moved:  # back on the shard it started from
        info = c.tablets[table_id].tablets[tablet_id]
        assert not info.in_transition and all(r.shard == 0 for r in info.replicas if r.host == mover)


def test_no_round_starts_while_a_node_is_down() -> None:
    c = with_empty_node(cluster(nodes=3, tablets=16, rf=2))
    c.balancing = True
    c.alive.discard(host(1))
    assert isinstance(c.step(), co.Idle)
    c.alive.add(host(1))
    assert isinstance(c.step(), co.Propose)
