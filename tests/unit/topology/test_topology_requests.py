"""Admission of topology requests, and topology commands inside group0 (guard, encoding, snapshot)."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from tabletdb.group0.cluster_state import (
    ClusterState,
    TopologyEntry,
    apply_entry,
    decode_entry,
    decode_snapshot,
    encode_entry,
    encode_snapshot,
)
from tabletdb.group0.state import Group0State
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.topology import coordinator as co
from tabletdb.topology.requests import RequestRefused, admit_member, enqueue, join_outcome
from tabletdb.topology.state import Request, state_from_plain, state_to_plain
from tabletdb.topology.states import NodeState, RequestKind
from tests.unit.topology.driver import TABLE, cluster, host, new_id


def refused(
    kind: RequestKind, node: uuid.UUID, alive: set[uuid.UUID], replaced: uuid.UUID | None = None
) -> str:
    c = cluster()
    with pytest.raises(RequestRefused) as info:
        enqueue(c.topology, Request(new_id(), kind, node, replaced), frozenset(alive), new_id())
    return str(info.value)


def test_removing_a_live_node_is_refused_with_scyllas_words() -> None:
    live = host(1)
    assert refused(RequestKind.REMOVE, live, {host(i) for i in range(4)}) == (
        f"removenode: Rejected removenode operation for node {live}; the node being removed is alive, "
        "maybe you should use decommission instead?"
    )


def test_other_refusals_name_the_node_and_what_to_do() -> None:
    everyone = {host(i) for i in range(4)}
    assert "stop it before replacing it" in refused(RequestKind.REPLACE, host(9), everyone, replaced=host(0))
    assert "not a normal member" in refused(RequestKind.REPLACE, host(9), set(), replaced=host(42))
    assert "is normal" in refused(RequestKind.JOIN, host(0), everyone)
    assert "not normal" in refused(RequestKind.LEAVE, host(42), everyone)


def test_one_request_per_node_and_a_node_that_left_cannot_rejoin() -> None:
    c = cluster()
    c.request(RequestKind.LEAVE, host(0))
    with pytest.raises(RequestRefused, match="already has a pending leave request"):
        enqueue(c.topology, Request(new_id(), RequestKind.LEAVE, host(0)), frozenset(c.alive), new_id())
    c.run()
    with pytest.raises(RequestRefused, match="wiped and started with a new host id"):
        enqueue(c.topology, Request(new_id(), RequestKind.JOIN, host(0)), frozenset(c.alive), new_id())


def test_the_last_token_owner_cannot_be_removed() -> None:
    c = cluster(nodes=1, tablets=2, rf=1)
    with pytest.raises(RequestRefused, match="last token owner"):
        enqueue(c.topology, Request(new_id(), RequestKind.REMOVE, host(0)), frozenset(), new_id())


def test_topology_state_round_trips_through_its_plain_form() -> None:
    c = cluster()
    c.alive.discard(host(3))
    c.request(RequestKind.REMOVE, host(3))
    c.request(RequestKind.JOIN, host(8))
    c.execute(c.step())
    assert c.topology.transition is not None and c.topology.ignored
    assert state_from_plain(state_to_plain(c.topology)) == c.topology


def test_group0_applies_a_topology_step_once_and_drops_a_stale_one() -> None:
    c = cluster()
    c.request(RequestKind.LEAVE, host(0))
    state = ClusterState(
        metadata=Group0State(tablets=FrozenMap([(TABLE, c.tablets[TABLE])])), topology_state=c.topology
    )
    first = co.step(c.view(), co.Observations(alive=frozenset(c.alive)), new_id())
    rival = co.step(c.view(), co.Observations(alive=frozenset(c.alive)), new_id())
    assert isinstance(first, co.Propose) and isinstance(rival, co.Propose)
    entry = TopologyEntry(first.command)
    assert decode_entry(encode_entry(entry)) == entry
    state, (applied,) = apply_entry(state, entry)
    assert applied.took_effect and state.topology_state.state_of(host(0)) is NodeState.DECOMMISSIONING
    moving = [t for t in state.metadata.tablets[TABLE].tablets if t.in_transition]
    assert moving and all(host(0) in t.replica_hosts() for t in moving)
    after, (again,) = apply_entry(state, TopologyEntry(rival.command))
    assert not again.took_effect and after is state
    assert decode_snapshot(encode_snapshot(state)) == state


def test_a_member_admitted_by_a_join_command_queues_a_join_and_stales_earlier_steps() -> None:
    from tabletdb.group0.topology import JoinCommand, NodeRecord

    c = cluster()
    c.request(RequestKind.LEAVE, host(0))
    state = ClusterState(
        metadata=Group0State(tablets=FrozenMap([(TABLE, c.tablets[TABLE])])), topology_state=c.topology
    )
    step = co.step(c.view(), co.Observations(alive=frozenset(c.alive)), new_id())
    assert isinstance(step, co.Propose)
    newcomer = uuid.UUID(int=77 << 80)
    record = NodeRecord(newcomer, "10.0.0.9", "10.0.0.9", "dc", "r", (1,), frozenset())
    join = JoinCommand(uuid.uuid1(), "c", record)
    state, (applied,) = apply_entry(state, join)
    topology = state.topology_state
    assert applied.took_effect and topology.state_of(newcomer) is NodeState.NONE
    assert [(r.kind, r.host_id, r.request_id) for r in topology.queue][-1] == (
        RequestKind.JOIN,
        newcomer,
        join.command_id,
    )
    assert topology.nodes[newcomer].request_id == join.command_id
    assert topology.state_id == join.command_id
    after, (stale,) = apply_entry(state, TopologyEntry(step.command))
    assert not stale.took_effect and after.topology_state == topology
    again, _ = apply_entry(state, join)  # a refreshed record of a known member changes nothing here
    assert again.topology_state == topology


def test_the_first_member_is_normal_at_once_the_next_ones_queue_joins_in_order() -> None:
    from tabletdb.group0.topology import JoinCommand, NodeRecord

    state = ClusterState()
    joins = [
        JoinCommand(
            uuid.uuid1(), "c", NodeRecord(host(i), f"10.0.0.{i}", f"10.0.0.{i}", "dc", "r", (i,), frozenset())
        )
        for i in range(4)
    ]
    for join in joins:
        state, (applied,) = apply_entry(state, join)
        assert applied.took_effect
    topology = state.topology_state
    assert topology.normal_nodes() == (host(0),)
    assert [r.host_id for r in topology.queue] == [host(1), host(2), host(3)]
    assert {topology.state_of(host(i)) for i in (1, 2, 3)} == {NodeState.NONE}
    assert decode_snapshot(encode_snapshot(state)) == state


def test_join_outcome_says_when_a_joiner_may_serve_and_why_it_never_will() -> None:
    c = cluster()
    joiner = host(9)
    c.alive.add(joiner)
    c.topology = admit_member(c.topology, joiner, new_id())
    assert join_outcome(c.topology, joiner) is None  # queued
    c.execute(c.step())  # the coordinator starts it
    assert c.topology.state_of(joiner) is NodeState.BOOTSTRAPPING
    assert join_outcome(c.topology, joiner) is None
    c.run()
    assert join_outcome(c.topology, joiner) == ""
    assert join_outcome(c.topology, host(0)) == ""


def test_a_rolled_back_join_tells_the_joiner_why_and_what_to_do() -> None:
    c = cluster()
    c.config = co.CoordinatorConfig(rollback_after_ms=1_000)
    joiner = host(9)
    c.alive.add(joiner)
    c.topology = admit_member(c.topology, joiner, new_id())
    for _ in range(3):  # start, barrier, first stage
        c.execute(c.step())
    # every node the join could stream from is down for long
    c.alive -= {host(i) for i in range(4)}
    c.obs = replace(c.obs, now_ms=5_000, down_since={host(i): 1_000 for i in range(4)})
    c.run()
    outcome = join_outcome(c.topology, joiner)
    assert c.topology.state_of(joiner) is NodeState.LEFT
    assert outcome and "rolled back" in outcome and "down for 4000 ms" in outcome
    assert outcome.endswith("wipe its data directory to start it again as a new node with a new host id")
    assert any(str(host(i)) in outcome for i in range(4))


def test_a_join_entry_from_before_join_requests_replays_as_a_normal_member() -> None:
    """Older nodes wrote join entries with random ids and admitted the member at once; a log
    replayed by this version must rebuild that state, not queue joins nobody will finish."""
    from tabletdb.group0.topology import JoinCommand, NodeRecord

    c = cluster()
    state = ClusterState(
        metadata=Group0State(tablets=FrozenMap([(TABLE, c.tablets[TABLE])])), topology_state=c.topology
    )
    newcomer = uuid.UUID(int=78 << 80)
    record = NodeRecord(newcomer, "10.0.0.8", "10.0.0.8", "dc", "r", (2,), frozenset())
    legacy = JoinCommand(uuid.uuid4(), "c", record)
    state, (applied,) = apply_entry(state, legacy)
    assert applied.took_effect and state.topology_state.state_of(newcomer) is NodeState.NORMAL
    assert not [r for r in state.topology_state.queue if r.host_id == newcomer]
