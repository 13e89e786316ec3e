"""The coordinator's vnode phase and cleanup: ranges stream only after every node writes both
rings and older writes are fenced, reads switch only after streaming, the nodes left with ranges
they lost are cleaned, and no request starts while a cleanup is pending."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from tabletdb.schema.model import SIMPLE, Replication
from tabletdb.topology import coordinator as co
from tabletdb.topology import vnode_phase as vp
from tabletdb.topology import vnode_ranges as vr
from tabletdb.topology.state import Request, TopologyState, TopoNode, state_from_plain, state_to_plain
from tabletdb.topology.states import CleanupStatus, NodeState, RequestKind, TransitionState
from tests.unit.topology.driver import TABLE, Cluster, cluster, host, new_id

VTABLE = uuid.UUID(int=0xCD)
JOINER = host(8)
RF2 = Replication(SIMPLE, (("replication_factor", "2"),))


def _tokens(n: int) -> dict[uuid.UUID, tuple[int, ...]]:
    tokens = {host(i): tuple(-9000 + 1000 * i + 4000 * k for k in range(4)) for i in range(n)}
    tokens[JOINER] = (-8500, -4500, -500, 3500)
    return tokens


def vnode_cluster(nodes: int = 3, tablets: bool = False) -> Cluster:
    if tablets:
        c = cluster(nodes=nodes, rf=min(3, nodes))
    else:
        hosts = [host(i) for i in range(nodes)]
        topo = TopologyState(state_id=new_id(), nodes={h: TopoNode(h, NodeState.NORMAL) for h in hosts})
        c = Cluster(topo, {}, set(hosts))
    c.vnode = vp.VnodeView(_tokens(nodes), (vp.VnodeTable(VTABLE, RF2),), {})
    return c


def _cleanup_states(c: Cluster) -> dict[uuid.UUID, CleanupStatus]:
    return {h: n.cleanup for h, n in c.topology.nodes.items()}


def _index(c: Cluster, kind: type, reason: str = "") -> int:
    return next(
        i
        for i, a in enumerate(c.actions)
        if isinstance(a, kind) and (not isinstance(a, co.Propose) or reason in a.command.reason)
    )


def _run_checking_fence(c: Cluster) -> None:
    """Run to idle; every stream must find the write-both version fenced."""
    for _ in range(500):
        action = c.step()
        if isinstance(action, co.Idle):
            return
        if isinstance(action, vp.StreamRanges):
            tr = c.topology.transition
            assert tr is not None and tr.state is TransitionState.WRITE_BOTH_READ_OLD
            assert c.topology.fence_version >= tr.since_version > 0
        c.execute(action)
    raise AssertionError("coordinator did not go idle")


def test_decommission_streams_the_leaving_ranges_from_the_leaving_node() -> None:
    c = vnode_cluster()
    leaving = host(0)
    old = vr.owners(c.topology, c.vnode.tokens)
    moves = vr.range_moves(old, {h: t for h, t in old.items() if h != leaving}, RF2, {})
    c.request(RequestKind.LEAVE, leaving)
    _run_checking_fence(c)
    assert c.topology.state_of(leaving) is NodeState.LEFT
    assert [r.error for r in c.topology.results] == [""]
    streams = [a for a in c.actions if isinstance(a, vp.StreamRanges)]
    assert len(streams) == 1
    got = {(t.target, r) for t in streams[0].tasks for r, _ in t.ranges}
    assert got == {(g, m.token_range) for m in moves for g in m.gained}
    assert all(src == (leaving,) for t in streams[0].tasks for _, src in t.ranges)
    assert _index(c, vp.StreamRanges) < _index(c, co.Propose, "read new") < _index(c, co.Propose, "finish")
    assert set(_cleanup_states(c).values()) == {CleanupStatus.CLEAN}  # nobody lost a range
    versions = [cmd.topology.version for cmd in c.commands]
    assert versions == sorted(versions)


def test_join_streams_from_the_losers_then_cleans_them() -> None:
    c = vnode_cluster()
    c.alive.add(JOINER)
    old = vr.owners(c.topology, c.vnode.tokens)
    moves = vr.range_moves(old, {**old, JOINER: c.vnode.tokens[JOINER]}, RF2, {})
    losers = {h for m in moves for h in m.lost}
    c.request(RequestKind.JOIN, JOINER)
    _run_checking_fence(c)
    assert c.topology.state_of(JOINER) is NodeState.NORMAL
    (stream,) = [a for a in c.actions if isinstance(a, vp.StreamRanges)]
    assert {t.target for t in stream.tasks} == {JOINER}
    (finish,) = [cmd for cmd in c.commands if cmd.reason.startswith("finish")]
    assert {h for h, n in finish.topology.nodes.items() if n.cleanup is CleanupStatus.NEEDED} == losers
    cleaned = {t.host for a in c.actions if isinstance(a, vp.CleanupRanges) for t in a.tasks}
    assert cleaned == losers and losers
    assert set(_cleanup_states(c).values()) == {CleanupStatus.CLEAN}
    running = [cmd for cmd in c.commands if "cleanup of vnode ranges on" in cmd.reason]
    assert running and all(running[0].topology.nodes[h].cleanup is CleanupStatus.RUNNING for h in losers)


def test_reads_and_writes_follow_the_phase() -> None:
    c = vnode_cluster()
    c.alive.add(JOINER)
    c.request(RequestKind.JOIN, JOINER)
    seen: list[tuple[TransitionState | None, bool, int]] = []
    for _ in range(100):
        action = c.step()
        if isinstance(action, co.Idle):
            break
        c.execute(action)
        rings = vr.rings(c.topology, c.vnode.tokens)
        tr = c.topology.transition
        seen.append((tr.state if tr else None, JOINER in rings.read, len(rings.writes)))
    phases = [s for s in dict.fromkeys(seen)]
    assert (TransitionState.WRITE_BOTH_READ_OLD, False, 2) in phases
    assert (TransitionState.WRITE_BOTH_READ_NEW, True, 2) in phases
    assert phases[-1] == (None, True, 1)
    assert all(not read for state, read, _ in phases if state is TransitionState.TABLET_MIGRATION)


def test_a_pending_cleanup_on_a_dead_node_blocks_other_requests_but_not_its_own_removal() -> None:
    c = vnode_cluster(nodes=4)
    dead = host(1)
    c.topology = c.topology.with_node(replace(c.topology.nodes[dead], cleanup=CleanupStatus.NEEDED))
    c.alive.discard(dead)
    leave = Request(new_id(), RequestKind.LEAVE, host(0))
    assert vp.blocking_cleanup(c.topology, leave) == [dead]
    c.request(RequestKind.LEAVE, host(0))
    c.run()
    idle = c.actions[-1]
    assert isinstance(idle, co.Idle) and "waits for the cleanup of vnode ranges on" in idle.reason
    assert str(dead) in idle.reason and c.topology.transition is None
    remove = Request(new_id(), RequestKind.REMOVE, dead)
    assert vp.blocking_cleanup(c.topology, remove) == []
    # the dead node comes back: it is cleaned, then the queued leave runs
    c.alive.add(dead)
    c.run()
    assert c.topology.nodes[dead].cleanup is CleanupStatus.CLEAN
    assert c.topology.state_of(host(0)) is NodeState.LEFT


@pytest.mark.parametrize("kind", [RequestKind.LEAVE, RequestKind.JOIN, RequestKind.REMOVE])
@pytest.mark.parametrize("tablets", [False, True])
def test_a_new_coordinator_resumes_the_vnode_phase_after_a_crash_at_every_step(
    kind: RequestKind, tablets: bool
) -> None:
    def operation() -> Cluster:
        c = vnode_cluster(nodes=4, tablets=tablets)
        if kind is RequestKind.JOIN:
            c.alive.add(JOINER)
            c.request(kind, JOINER)
        elif kind is RequestKind.REMOVE:
            c.alive.discard(host(2))
            c.request(kind, host(2))
        else:
            c.request(kind, host(2))
        return c

    reference = operation()
    reference.run()
    assert [r.error for r in reference.topology.results] == [""]
    for crash_at in range(1, len(reference.actions)):
        c = operation()
        for _ in range(crash_at):
            c.execute(c.step())
        c.obs = co.Observations(alive=frozenset())
        c.run()
        assert {h: (n.state, n.cleanup) for h, n in c.topology.nodes.items()} == {
            h: (n.state, n.cleanup) for h, n in reference.topology.nodes.items()
        }, f"crash after step {crash_at}"
        assert c.tablets == reference.tablets


def test_a_joiner_down_while_streaming_rolls_back_when_no_tablet_moved() -> None:
    c = vnode_cluster()
    c.config = co.CoordinatorConfig(rollback_after_ms=1_000)
    c.alive.add(JOINER)
    c.request(RequestKind.JOIN, JOINER)
    while (
        c.topology.transition is None
        or c.topology.transition.state is not TransitionState.WRITE_BOTH_READ_OLD
    ):
        c.execute(c.step())
    c.alive.discard(JOINER)
    c.obs = replace(c.obs, now_ms=5_000, down_since={JOINER: 1_000})
    c.run()
    assert c.topology.state_of(JOINER) is NodeState.LEFT
    (result,) = c.topology.results
    assert "rolled back" in result.error and "vnode ranges" in result.error
    assert JOINER not in vr.rings(c.topology, c.vnode.tokens).read


def test_once_tablets_moved_the_vnode_phase_only_goes_forward() -> None:
    c = vnode_cluster(nodes=4, tablets=True)
    c.config = co.CoordinatorConfig(rollback_after_ms=1_000)
    c.alive.add(JOINER)
    c.request(RequestKind.JOIN, JOINER)
    while (
        c.topology.transition is None
        or c.topology.transition.state is not TransitionState.WRITE_BOTH_READ_OLD
    ):
        c.execute(c.step())
    assert c.topology.transition.tablets_moved
    c.alive.discard(JOINER)
    c.obs = replace(c.obs, now_ms=5_000, down_since={JOINER: 1_000})
    for _ in range(10):
        action = c.step()
        assert not (isinstance(action, co.Propose) and "roll back" in action.command.reason)
        c.execute(action)
    assert c.replicas_of(JOINER) > 0 and TABLE in c.tablets


def test_a_tablets_only_view_has_no_vnode_phase() -> None:
    c = cluster()
    c.request(RequestKind.LEAVE, host(0))
    c.run()
    assert not any(isinstance(a, vp.StreamRanges) for a in c.actions)
    assert all(
        cmd.topology.transition is None
        or cmd.topology.transition.state
        not in (TransitionState.WRITE_BOTH_READ_OLD, TransitionState.WRITE_BOTH_READ_NEW)
        for cmd in c.commands
    )


def test_a_vnode_transition_survives_its_group0_encoding() -> None:
    c = vnode_cluster()
    c.request(RequestKind.LEAVE, host(0))
    while (
        c.topology.transition is None
        or c.topology.transition.state is not TransitionState.WRITE_BOTH_READ_OLD
    ):
        c.execute(c.step())
    tr = c.topology.transition
    assert tr.since_version > 0 and not tr.tablets_moved
    assert state_from_plain(state_to_plain(c.topology)) == c.topology
    older = state_to_plain(c.topology)
    del older["tr_vnode"]  # a state written before the vnode fields
    assert state_from_plain(older).transition == replace(tr, since_version=0, tablets_moved=True)


def test_an_operator_cleanup_runs_through_the_coordinator() -> None:
    c = vnode_cluster()
    asked = vp.ask_cleanup(c.topology, host(1))
    assert asked is not None and asked.topology.nodes[host(1)].cleanup is CleanupStatus.NEEDED
    c.topology = replace(asked.topology, state_id=new_id())
    assert vp.ask_cleanup(c.topology, host(1)) is None  # already pending
    c.run()
    assert c.topology.nodes[host(1)].cleanup is CleanupStatus.CLEAN
    assert [t.host for a in c.actions if isinstance(a, vp.CleanupRanges) for t in a.tasks] == [host(1)]
    with pytest.raises(ValueError, match="only a normal node"):
        vp.ask_cleanup(c.topology, JOINER)


def test_a_tablet_move_does_not_wait_for_a_vnode_cleanup() -> None:
    c = vnode_cluster(nodes=4)
    c.topology = c.topology.with_node(replace(c.topology.nodes[host(1)], cleanup=CleanupStatus.NEEDED))
    assert vp.blocking_cleanup(c.topology, Request(new_id(), RequestKind.MOVE, host(0))) == []
    assert vp.blocking_cleanup(c.topology, Request(new_id(), RequestKind.LEAVE, host(0))) == [host(1)]
