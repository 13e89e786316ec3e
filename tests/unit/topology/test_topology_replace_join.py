"""A replacing node's join: one group0 entry records the node and queues its `replace` request;
it may take the dead node's address; the leader admits it only for a dead normal member and no
vnode data; the option's parsing."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tabletdb.group0.cluster_state import ClusterState, apply_entry, decode_entry, encode_entry
from tabletdb.group0.state import Group0State
from tabletdb.group0.topology import JoinCommand, JoinRefused, NodeRecord, Topology
from tabletdb.node.config import ConfigError, NodeConfig
from tabletdb.node.group0_shell.member_checks import check_replacement
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.topology.states import NodeState, RequestKind
from tests.unit.topology.driver import TABLE, cluster, host


def _record(h: uuid.UUID, address: str) -> NodeRecord:
    return NodeRecord(h, address, address, "dc", "r", (1,), frozenset())


def _state() -> ClusterState:
    c = cluster()
    members = {h: _record(h, f"10.0.0.{i + 1}") for i, h in enumerate(sorted(c.topology.nodes))}
    return ClusterState(
        metadata=Group0State(tablets=FrozenMap([(TABLE, c.tablets[TABLE])])),
        topology=Topology("c", members, frozenset(), host(0)),
        topology_state=c.topology,
    )


def test_a_replacing_join_records_the_node_and_queues_its_replace_in_one_entry() -> None:
    state = _state()
    dead, new = host(2), uuid.UUID(int=99 << 80)
    same_address = state.topology.members[dead].address
    join = JoinCommand(uuid.uuid1(), "c", _record(new, same_address), replaces=dead)
    assert decode_entry(encode_entry(join)) == join
    after, (applied,) = apply_entry(state, join)
    assert applied.took_effect and new in after.topology.members
    (request,) = after.topology_state.queue
    assert (request.kind, request.host_id, request.replaced_id) == (RequestKind.REPLACE, new, dead)
    assert request.request_id == join.command_id
    assert after.topology_state.state_of(new) is NodeState.NONE  # not normal before its replicas are in
    again, _ = apply_entry(after, join)  # a retried join refreshes the record only
    assert again.topology_state.queue == after.topology_state.queue


def test_a_plain_join_may_not_take_a_members_address() -> None:
    state = _state()
    taken = state.topology.members[host(2)].address
    after, (applied,) = apply_entry(state, JoinCommand(uuid.uuid1(), "c", _record(uuid.uuid4(), taken)))
    assert not applied.took_effect and after is state


def test_a_replacing_join_for_a_node_that_is_not_normal_changes_nothing() -> None:
    state = _state()
    join = JoinCommand(uuid.uuid1(), "c", _record(uuid.uuid4(), "10.9.9.9"), replaces=uuid.uuid4())
    after, (applied,) = apply_entry(state, join)
    assert not applied.took_effect and after is state


def test_the_leader_admits_a_replacement_only_for_a_dead_normal_member() -> None:
    state = _state()
    dead = host(1)
    check_replacement(state, uuid.uuid4(), dead, alive=lambda h: False)
    with pytest.raises(JoinRefused, match=f"node {dead} is alive; stop it before replacing it"):
        check_replacement(state, uuid.uuid4(), dead, alive=lambda h: True)
    stranger = uuid.uuid4()
    with pytest.raises(JoinRefused, match=f"node {stranger} is not a normal member"):
        check_replacement(state, uuid.uuid4(), stranger, alive=lambda h: False)


def test_replace_node_first_boot_takes_a_host_id(tmp_path: Path) -> None:
    h = uuid.uuid4()
    assert NodeConfig(
        workdir=tmp_path, replace_node_first_boot=f" {str(h).upper()} "
    ).replace_node_first_boot == str(h)
    assert NodeConfig(workdir=tmp_path).replace_node_first_boot == ""
    with pytest.raises(ConfigError, match="replace_node_first_boot"):
        NodeConfig(workdir=tmp_path, replace_node_first_boot="127.0.0.3")


def test_the_leader_admits_a_replacement_while_a_vnode_keyspace_holds_tables() -> None:
    """Their ranges follow through the replace's ring phase (``topology.vnode_phase``)."""
    from dataclasses import replace

    from tests.unit.schema.helpers import with_keyspace, with_table

    state = _state()
    vnode_table = with_table(with_keyspace(name="vk", tablets={"enabled": False}), keyspace="vk")
    with_vnodes = replace(state, metadata=replace(state.metadata, catalog=vnode_table))
    check_replacement(with_vnodes, uuid.uuid4(), host(1), lambda h: False)
