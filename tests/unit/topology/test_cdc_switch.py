"""A join's ring change waits for a CDC generation built for the new ring and operating
(``topology.cdc_switch``): before it, a log row written under an old stream could sit on the
base's replicas but be read from the stream's. A decommission needs none: it merges vnodes the
old generation already splits."""

from __future__ import annotations

from dataclasses import replace

from tabletdb.topology import coordinator as co
from tabletdb.topology import vnode_ranges as vr
from tabletdb.topology.cdc_switch import LatestGeneration
from tabletdb.topology.states import NodeState, RequestKind, TransitionState
from tests.unit.topology.driver import Cluster, host
from tests.unit.topology.test_vnode_phase import JOINER, vnode_cluster

NOW_US = 1_800_000_000_000_000


def _ends(c: Cluster, with_joiner: bool) -> frozenset[int]:
    ring = vr.owners(c.topology, c.vnode.tokens)
    if with_joiner:
        ring = {**ring, JOINER: c.vnode.tokens[JOINER]}
    return frozenset(t for tokens in ring.values() for t in tokens)


def _until_idle(c: Cluster) -> co.Idle:
    for _ in range(100):
        action = c.step()
        if isinstance(action, co.Idle):
            return action
        c.execute(action)
    raise AssertionError("coordinator did not go idle")


def _write_both_began(c: Cluster) -> bool:
    return any(cmd.topology.transition is not None and "write both" in cmd.reason for cmd in c.commands)


def test_a_join_waits_for_the_new_rings_generation_to_be_built_then_to_operate() -> None:
    c = vnode_cluster()
    c.alive.add(JOINER)
    c.obs = replace(c.obs, wall_us=NOW_US)
    c.cdc = LatestGeneration(0, _ends(c, with_joiner=False))
    c.request(RequestKind.JOIN, JOINER)
    idle = _until_idle(c)
    assert "waits for a CDC generation built for the new ring" in idle.reason
    assert not _write_both_began(c)

    c.cdc = LatestGeneration(NOW_US + 5_000_000, _ends(c, with_joiner=True))  # committed, not yet operating
    idle = _until_idle(c)
    assert f"waits for the new ring's CDC generation to operate (at {NOW_US + 5_000_000} µs)" in idle.reason
    assert not _write_both_began(c)

    c.obs = replace(c.obs, wall_us=NOW_US + 5_000_000)
    _until_idle(c)
    assert c.topology.state_of(JOINER) is NodeState.NORMAL and _write_both_began(c)
    states = [cmd.topology.transition.state for cmd in c.commands if cmd.topology.transition is not None]
    assert TransitionState.WRITE_BOTH_READ_OLD in states


def test_a_decommission_keeps_the_generation_it_has() -> None:
    c = vnode_cluster()
    c.obs = replace(c.obs, wall_us=NOW_US)
    c.cdc = LatestGeneration(NOW_US - 1, _ends(c, with_joiner=False))
    c.request(RequestKind.LEAVE, host(0))
    _until_idle(c)
    assert c.topology.state_of(host(0)) is NodeState.LEFT


def test_without_a_vnode_cdc_table_nothing_waits() -> None:
    c = vnode_cluster()
    c.alive.add(JOINER)
    c.request(RequestKind.JOIN, JOINER)
    _until_idle(c)  # obs.wall_us is 0 and no generation is named: the join runs through
    assert c.topology.state_of(JOINER) is NodeState.NORMAL
