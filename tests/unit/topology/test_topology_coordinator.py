"""The pure topology coordinator: each operation end to end, barriers before every stage,
streaming before reads switch, resumption after a crash at every step, and rollback."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from tabletdb.tablets.migration import STAGE_ORDER
from tabletdb.tablets.tablet_map import TransitionKind, TransitionStage
from tabletdb.topology import coordinator as co
from tabletdb.topology.commands import apply_command
from tabletdb.topology.states import NodeState, RequestKind, TransitionState
from tests.unit.topology.driver import TABLE, Cluster, cluster, host


def assert_healthy(c: Cluster, rf: int = 3) -> None:
    for tablet in c.tablets[TABLE].tablets:
        assert not tablet.in_transition
        hosts = tablet.replica_hosts()
        assert len(set(hosts)) == rf
        assert all(c.topology.state_of(h) is NodeState.NORMAL for h in hosts)


def test_decommission_moves_every_replica_away_stage_by_stage() -> None:
    c = cluster()
    leaving = host(0)
    before = c.replicas_of(leaving)
    req = c.request(RequestKind.LEAVE, leaving)
    c.run()
    assert c.topology.state_of(leaving) is NodeState.LEFT
    assert c.replicas_of(leaving) == 0 and before > 0
    assert_healthy(c)
    assert [r.error for r in c.topology.results] == [""]
    assert c.topology.results[0].request == req
    assert c.topology.transition is None and not c.topology.queue
    reasons = [cmd.reason for cmd in c.commands]
    stages = [r.rsplit(" to ", 1)[1] for r in reasons if r.startswith("advance")]
    assert stages == [s.value for s in STAGE_ORDER[1:]] + ["done"]
    # every ownership change raised the version, and the fence followed one step behind
    versions = [cmd.topology.version for cmd in c.commands]
    assert versions == sorted(versions) and len(set(versions[1:])) == len(versions) - 1


def test_every_stage_change_waits_for_a_barrier_on_the_current_version() -> None:
    c = cluster()
    c.request(RequestKind.LEAVE, host(1))
    c.run()
    for i, action in enumerate(c.actions):
        if isinstance(action, co.Propose) and action.command.reason.startswith(("advance", "finish")):
            previous = c.actions[i - 1]
            waits = [a for a in c.actions[:i] if isinstance(a, co.Barrier)]
            assert waits and waits[-1].version == action.command.topology.version - 1, previous
            assert action.command.topology.fence_version == waits[-1].version


def test_reads_switch_only_after_streaming_and_old_replicas_are_cleaned_after() -> None:
    c = cluster()
    c.request(RequestKind.LEAVE, host(2))
    c.run()
    kinds = [type(a).__name__ for a in c.actions]
    stream_at = kinds.index("Stream")
    switch_at = next(
        i
        for i, a in enumerate(c.actions)
        if isinstance(a, co.Propose) and a.command.reason.endswith(TransitionStage.WRITE_BOTH_READ_NEW.value)
    )
    cleanup_at = kinds.index("Cleanup")
    assert stream_at < switch_at < cleanup_at
    stream = c.actions[stream_at]
    assert isinstance(stream, co.Stream)
    assert all(t.sources == (next(r for r in t.sources if r.host == host(2)),) for t in stream.tasks)


def test_planted_bug_switches_reads_without_streaming() -> None:
    c = cluster()
    c.config = co.CoordinatorConfig(planted_bug=True)
    c.request(RequestKind.LEAVE, host(0))
    c.run()
    assert not any(isinstance(a, co.Stream) for a in c.actions)


def test_join_takes_a_fair_share_of_replicas() -> None:
    c = cluster(nodes=4, tablets=16)
    new = host(9)
    c.alive.add(new)
    c.request(RequestKind.JOIN, new)
    c.run()
    assert c.topology.state_of(new) is NodeState.NORMAL
    assert c.replicas_of(new) == 16 * 3 // 5
    assert_healthy(c)


def test_removenode_rebuilds_from_every_surviving_replica() -> None:
    c = cluster()
    dead = host(3)
    c.alive.discard(dead)
    c.obs = replace(c.obs, down_since={dead: 0})
    c.request(RequestKind.REMOVE, dead)
    c.step()  # start
    c.execute(c.actions[-1])
    moving = [t for t in c.tablets[TABLE].tablets if t.in_transition]
    assert moving and all(t.transition is TransitionKind.REBUILD for t in moving)
    assert dead in c.topology.ignored
    c.run()
    streams = [a for a in c.actions if isinstance(a, co.Stream)]
    assert streams and all(
        len(t.sources) == 2 and dead not in {s.host for s in t.sources} for t in streams[0].tasks
    )
    assert c.topology.state_of(dead) is NodeState.LEFT and c.replicas_of(dead) == 0
    assert dead not in c.topology.ignored
    assert_healthy(c)


def test_replace_puts_the_new_node_exactly_where_the_old_one_was() -> None:
    c = cluster()
    old, new = host(1), host(7)
    c.alive.discard(old)
    c.alive.add(new)
    owned = [i for i, t in enumerate(c.tablets[TABLE].tablets) if old in t.replica_hosts()]
    c.request(RequestKind.REPLACE, new, replaced=old)
    c.run()
    assert [i for i, t in enumerate(c.tablets[TABLE].tablets) if new in t.replica_hosts()] == owned
    assert c.topology.state_of(old) is NodeState.LEFT
    assert c.topology.state_of(new) is NodeState.NORMAL
    assert_healthy(c)


@pytest.mark.parametrize("kind", [RequestKind.LEAVE, RequestKind.JOIN, RequestKind.REMOVE])
def test_a_new_coordinator_resumes_after_a_crash_at_every_step(kind: RequestKind) -> None:
    reference = _operation(kind)
    reference.run()
    steps = len(reference.actions)
    for crash_at in range(1, steps):
        c = _operation(kind)
        for _ in range(crash_at):
            action = c.step()
            c.execute(action)
        c.obs = co.Observations(alive=frozenset())  # the coordinator died: its observations are gone
        c.run()
        assert c.tablets == reference.tablets, f"crash after step {crash_at}"
        assert {h: n.state for h, n in c.topology.nodes.items()} == {
            h: n.state for h, n in reference.topology.nodes.items()
        }


def _operation(kind: RequestKind) -> Cluster:
    c = cluster()
    if kind is RequestKind.JOIN:
        c.alive.add(host(8))
        c.request(kind, host(8))
    elif kind is RequestKind.REMOVE:
        c.alive.discard(host(2))
        c.request(kind, host(2))
    else:
        c.request(kind, host(2))
    return c


def test_a_step_decided_by_a_deposed_coordinator_is_dropped() -> None:
    c = cluster()
    c.request(RequestKind.LEAVE, host(0))
    old_view = c.view()
    stale = co.step(old_view, co.Observations(alive=frozenset(c.alive)), uuid.uuid4())
    fresh = c.step()
    assert isinstance(stale, co.Propose) and isinstance(fresh, co.Propose)
    assert c.apply(fresh.command)
    topology, changed, ok = apply_command(c.topology, c.tablets, stale.command)
    assert not ok and not changed and topology is c.topology


def test_leave_rolls_back_when_the_leaving_node_stays_down_before_streaming() -> None:
    c = cluster()
    c.config = co.CoordinatorConfig(rollback_after_ms=1_000)
    leaving = host(0)
    before = c.tablets[TABLE]
    c.request(RequestKind.LEAVE, leaving)
    for _ in range(3):  # start, barrier, first stage
        c.execute(c.step())
    c.alive.discard(leaving)
    c.obs = replace(c.obs, now_ms=5_000, down_since={leaving: 1_000})
    c.run()
    assert c.topology.state_of(leaving) is NodeState.NORMAL
    assert c.tablets[TABLE] == before
    (result,) = c.topology.results
    assert (
        "rolled back" in result.error and str(leaving) in result.error and "down for 4000 ms" in result.error
    )
    assert any(
        isinstance(a, co.Propose)
        and a.command.topology.transition is not None
        and a.command.topology.transition.state is TransitionState.ROLLBACK_TO_NORMAL
        for a in c.actions
    )


def test_once_reads_switched_a_request_only_goes_forward() -> None:
    c = cluster()
    c.config = co.CoordinatorConfig(rollback_after_ms=1)
    leaving = host(0)
    c.request(RequestKind.LEAVE, leaving)
    while not any(t.stage is TransitionStage.WRITE_BOTH_READ_NEW for t in c.tablets[TABLE].tablets):
        c.execute(c.step())
    c.alive.discard(leaving)
    c.obs = replace(c.obs, now_ms=10_000, down_since={leaving: 0})
    for _ in range(50):
        c.execute(c.step())
    assert c.topology.results == () and c.topology.state_of(leaving) is NodeState.DECOMMISSIONING
    assert isinstance(c.actions[-1], co.Barrier)  # no rollback: it waits for the node to be back
    c.alive.add(leaving)
    c.run()
    assert c.topology.state_of(leaving) is NodeState.LEFT
    assert c.topology.results[0].error == ""


def test_a_decommission_with_nowhere_to_move_fails_and_leaves_the_node_normal() -> None:
    c = cluster(nodes=3)
    c.request(RequestKind.LEAVE, host(0))
    c.run()
    (result,) = c.topology.results
    assert "no other node to take it" in result.error and "add a node there first" in result.error
    assert c.topology.state_of(host(0)) is NodeState.NORMAL
    assert c.topology.transition is None


def test_queued_joins_all_end_normal() -> None:
    c = cluster()
    new = [host(10 + i) for i in range(3)]
    for h in new:
        c.alive.add(h)
        c.request(RequestKind.JOIN, h)
    assert len(c.topology.queue) == 3
    c.run()
    assert all(c.topology.state_of(h) is NodeState.NORMAL for h in new)
    assert [r.request.host_id for r in c.topology.results] == new
    assert_healthy(c)


def _two_dcs() -> Cluster:
    """Hosts 0-3 in dc1 (racks a, b, b, a) and 4-7 in dc2; each tablet has two replicas per DC,
    on two racks in dc1."""
    c = cluster(nodes=8, tablets=8, rf=2)
    dc1, dc2 = [host(i) for i in range(4)], [host(i) for i in range(4, 8)]
    from tabletdb.tablets.tablet_map import TabletMap, TabletReplica

    replicas = [
        [
            TabletReplica(dc1[i % 4], 0),
            TabletReplica(dc1[(i + 2) % 4], 0),
            TabletReplica(dc2[i % 4], 0),
            TabletReplica(dc2[(i + 1) % 4], 0),
        ]
        for i in range(8)
    ]
    c.tablets = {TABLE: TabletMap.even(TABLE, replicas)}
    c.locations = {h: ("dc1", "abba"[i]) for i, h in enumerate(dc1)} | {h: ("dc2", "r") for h in dc2}
    return c


def _per_dc(c: Cluster) -> list[tuple[int, int]]:
    return [
        (
            sum(c.locations[h][0] == "dc1" for h in t.replica_hosts()),
            sum(c.locations[h][0] == "dc2" for h in t.replica_hosts()),
        )
        for t in c.tablets[TABLE].tablets
    ]


def test_replicas_stay_in_their_datacenter_and_spread_over_racks() -> None:
    c = _two_dcs()
    assert set(_per_dc(c)) == {(2, 2)}
    c.request(RequestKind.LEAVE, host(0))
    c.run()
    assert set(_per_dc(c)) == {(2, 2)} and c.replicas_of(host(0)) == 0
    # host 0's partner is always host 2 (rack b); of the equally loaded hosts 1 (b) and 3 (a) the
    # move must pick 3, whose rack the tablet does not use yet
    for t in c.tablets[TABLE].tablets:
        assert {c.locations[h][1] for h in t.replica_hosts() if c.locations[h][0] == "dc1"} == {"a", "b"}
    new = host(20)
    c.locations[new] = ("dc2", "r")
    c.alive.add(new)
    c.request(RequestKind.JOIN, new)
    c.run()
    assert set(_per_dc(c)) == {(2, 2)} and c.replicas_of(new) == 16 // 5


def test_replace_in_another_datacenter_is_refused() -> None:
    c = _two_dcs()
    old, new = host(1), host(30)
    c.locations[new] = ("dc2", "r")
    c.alive.discard(old)
    c.alive.add(new)
    c.request(RequestKind.REPLACE, new, replaced=old)
    c.run()
    (result,) = c.topology.results
    assert "in datacenter 'dc2'" in result.error and "same datacenter" in result.error
    assert c.topology.state_of(new) is NodeState.LEFT and c.topology.state_of(old) is NodeState.NORMAL


def test_barriers_include_the_joining_node_and_not_nodes_that_left_or_only_queued() -> None:
    c = cluster()
    c.request(RequestKind.LEAVE, host(3))
    c.run()
    joining, queued = host(20), host(21)
    c.alive |= {joining, queued}
    c.request(RequestKind.JOIN, joining)
    c.request(RequestKind.JOIN, queued)
    c.execute(c.step())  # start the first join
    barrier = c.step()
    assert isinstance(barrier, co.Barrier)
    assert set(barrier.nodes) == {host(0), host(1), host(2), joining}
