"""Hypothesis: random requests, coordinator crashes, failed barriers and streams, and steps
decided by deposed coordinators, checked against a simple model of what each request must end as."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabletdb.tablets.tablet_map import TransitionStage
from tabletdb.topology import coordinator as co
from tabletdb.topology.commands import TopologyCommand
from tabletdb.topology.requests import RequestRefused, enqueue
from tabletdb.topology.state import Request
from tabletdb.topology.states import NodeState, RequestKind
from tests.unit.topology.driver import TABLE, Cluster, cluster, host, new_id

EXPECTED = {  # (kind, succeeded) -> final state of the request's node (and of a replaced node)
    (RequestKind.JOIN, True): NodeState.NORMAL,
    (RequestKind.JOIN, False): NodeState.LEFT,
    (RequestKind.REPLACE, True): NodeState.NORMAL,
    (RequestKind.REPLACE, False): NodeState.LEFT,
    (RequestKind.LEAVE, True): NodeState.LEFT,
    (RequestKind.LEAVE, False): NodeState.NORMAL,
    (RequestKind.REMOVE, True): NodeState.LEFT,
    (RequestKind.REMOVE, False): NodeState.NORMAL,
}

events = st.lists(
    st.sampled_from(["request", "step", "step", "step", "crash", "stale", "fail", "down", "up"]),
    min_size=5,
    max_size=80,
)


def _check_command(c: Cluster, command: TopologyCommand, obs: co.Observations) -> None:
    # the version never goes back, and rises with every change of who receives writes or serves reads
    assert command.topology.version >= c.topology.version
    owners = {h for h, n in c.topology.nodes.items() if n.state is NodeState.NORMAL}
    new_owners = {h for h, n in command.topology.nodes.items() if n.state is NodeState.NORMAL}
    if command.tablet_updates or owners != new_owners:
        assert command.topology.version > c.topology.version, command.reason
    for u in command.tablet_updates:
        if u.after.stage is TransitionStage.WRITE_BOTH_READ_NEW:  # reads switch to the new replicas
            assert command.topology.transition is not None
            key = (command.topology.transition.request.request_id, u.table_id, u.tablet_id)
            assert key in obs.streamed, f"reads switched on tablet {u.tablet_id} before it was streamed"
        assert len(set(u.after.replica_hosts())) == len(u.after.replicas)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events, st.randoms(use_true_random=False), st.integers(min_value=4, max_value=6))
def test_random_histories_end_as_the_model_says(history: list[str], rnd: random.Random, nodes: int) -> None:
    c = cluster(nodes=nodes, tablets=8)
    c.config = co.CoordinatorConfig(rollback_after_ms=50)
    c.check = _check_command
    admitted: list[Request] = []
    dead: set[uuid.UUID] = set()
    stale: list[TopologyCommand] = []
    next_host = 100
    for now, event in enumerate(history):
        c.obs = replace(c.obs, now_ms=now * 10, down_since={h: 0 for h in dead})
        if event == "request" and len(admitted) < 6:
            kind = rnd.choice(list(RequestKind))
            normal = [h for h in c.topology.normal_nodes() if h not in dead]
            if kind is RequestKind.JOIN:
                next_host += 1
                req = Request(new_id(), kind, host(next_host))
                c.alive.add(req.host_id)
            elif kind is RequestKind.REPLACE and normal:
                victim = rnd.choice(normal)
                next_host += 1
                req = Request(new_id(), kind, host(next_host), victim)
                c.alive.add(req.host_id)
                c.alive.discard(victim)
                dead.add(victim)
            elif normal:
                victim = rnd.choice(normal)
                if kind is RequestKind.REMOVE:
                    c.alive.discard(victim)
                    dead.add(victim)
                req = Request(new_id(), kind, victim)
            else:
                continue
            try:
                command = enqueue(c.topology, req, frozenset(c.alive), new_id())
            except RequestRefused:
                continue
            assert c.apply(command)
            admitted.append(req)
        elif event == "step":
            c.execute(c.step())
        elif event == "crash":
            c.obs = co.Observations(alive=frozenset())
        elif event == "stale":
            action = co.step(c.view(), replace(c.obs, alive=frozenset(c.alive)), new_id(), c.config)
            if isinstance(action, co.Propose):
                stale.append(action.command)
        elif event == "fail":  # a barrier or stream that failed: nothing observed
            c.step()
        elif event == "down" and c.alive:
            victim = rnd.choice(sorted(c.alive))
            c.alive.discard(victim)
            c.obs = replace(c.obs, down_since={**c.obs.down_since, victim: now * 10})
        elif event == "up":
            c.alive |= {h for h in c.topology.nodes if h not in dead}
        if stale and rnd.random() < 0.3:  # a deposed coordinator's step arrives late
            command = stale.pop(0)
            if command.prev_state_id != c.topology.state_id:
                assert not c.apply(command)
    # faults heal: every node that is not dead for good comes back
    c.alive |= {h for h in c.topology.nodes if h not in dead}
    c.obs = replace(c.obs, down_since={h: 0 for h in dead}, now_ms=10**9)
    c.run()
    results = {r.request.request_id: r for r in c.topology.results}
    for req in admitted:
        assert req.request_id in results, f"{req.kind.value} of {req.host_id} never ended"
        ok = not results[req.request_id].error
        # a later request may have moved the node on (e.g. a joined node later decommissioned)
        later = [r for r in admitted[admitted.index(req) + 1 :] if req.host_id in (r.host_id, r.replaced_id)]
        if not later:
            assert c.topology.state_of(req.host_id) is EXPECTED[(req.kind, ok)], results[req.request_id]
        if req.kind is RequestKind.REPLACE and ok:
            assert c.topology.state_of(req.replaced_id) is NodeState.LEFT  # type: ignore[arg-type]
    for tablet in c.tablets[TABLE].tablets:
        assert not tablet.in_transition
        assert len(set(tablet.replica_hosts())) == 3
        for h in tablet.replica_hosts():
            assert c.topology.state_of(h) is NodeState.NORMAL
