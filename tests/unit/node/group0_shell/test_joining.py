"""The Raft configuration follows the topology: joiners are learners until normal, nodes that
left are dropped (``node.group0_shell.joining.voter_change``)."""

from __future__ import annotations

import uuid

from tabletdb.group0.topology import raft_id_of
from tabletdb.node.group0_shell.joining import voter_change
from tabletdb.raft.types import ConfChangeSingle, ConfChangeType, ConfState
from tabletdb.topology.state import TopologyState, TopoNode
from tabletdb.topology.states import NodeState


def host(n: int) -> uuid.UUID:
    return uuid.UUID(int=(n + 1) << 100)


def topology(**states: NodeState) -> TopologyState:
    nodes = {host(int(k[1:])): TopoNode(host(int(k[1:])), s) for k, s in states.items()}
    return TopologyState(nodes=nodes)


def rid(n: int) -> int:
    return raft_id_of(host(n))


def test_a_normal_learner_is_promoted_and_a_joining_one_is_not() -> None:
    conf = ConfState(voters=frozenset({rid(0)}), learners=frozenset({rid(1), rid(2)}))
    t = topology(h0=NodeState.NORMAL, h1=NodeState.BOOTSTRAPPING, h2=NodeState.NORMAL)
    assert voter_change(t, conf, rid(0)) == ConfChangeSingle(ConfChangeType.ADD_VOTER, rid(2))
    t = topology(h0=NodeState.NORMAL, h1=NodeState.BOOTSTRAPPING, h2=NodeState.NONE)
    assert voter_change(t, conf, rid(0)) is None


def test_nodes_that_left_are_removed_voter_or_learner_but_never_the_leader_itself() -> None:
    conf = ConfState(voters=frozenset({rid(0), rid(1)}), learners=frozenset({rid(2)}))
    t = topology(h0=NodeState.LEFT, h1=NodeState.NORMAL, h2=NodeState.LEFT)
    assert voter_change(t, conf, rid(0)) == ConfChangeSingle(ConfChangeType.REMOVE, rid(2))
    t = topology(h0=NodeState.LEFT, h1=NodeState.NORMAL)
    assert voter_change(t, conf, rid(0)) is None
    assert voter_change(t, conf, rid(1)) == ConfChangeSingle(ConfChangeType.REMOVE, rid(0))
