"""Seeded random histories (reordering, loss, duplication, partitions, crashes, membership
changes, snapshots, transfers): the safety checker must stay silent and the cluster must
converge once the faults stop. The same run with the planted figure-8 bug must not pass."""

from __future__ import annotations

import contextlib
import random

import pytest

from tabletdb.raft.errors import ConfChangeError, NotLeaderError, ProposalDroppedError
from tabletdb.raft.types import ConfChange, ConfChangeSingle, ConfChangeType, Role

from .harness import Network

NODES = [1, 2, 3, 4, 5]


def _random_step(net: Network, rng: random.Random, step: int) -> None:
    live = [n for n in NODES if n not in net.down]
    roll = rng.random()
    if roll < 0.55:
        for _ in range(min(5, len(net.queue))):
            i = rng.randrange(len(net.queue))  # reorder
            m = net.queue[i] if rng.random() < 0.05 else net.queue.pop(i)  # duplicate sometimes
            if rng.random() > 0.05:  # lose 5%
                net.deliver(m)
            else:
                net.lose(m)
    elif roll < 0.70:
        for n in live:
            net.node(n).tick()
            net.flush(n)
    elif roll < 0.90:
        n = rng.choice(live)
        with contextlib.suppress(NotLeaderError, ProposalDroppedError):
            net.node(n).propose(b"p%d" % step)
        net.flush(n)
    elif roll < 0.905:
        side = [n for n in NODES if rng.random() < 0.5]
        net.partition(side, [n for n in NODES if n not in side])
    elif roll < 0.945:
        net.heal()
    elif roll < 0.955 and len(net.down) < 2:
        net.crash(rng.choice(live))
    elif roll < 0.975 and net.down:
        net.restart(rng.choice(sorted(net.down)))
    elif roll < 0.985:
        _random_conf_change(net, rng)
    elif roll < 0.995:
        n = rng.choice(live)
        if net.node(n).applied > net.peers[n].log.snapshot().meta.index:
            net.snapshot(n)
    else:
        lead = net.leader()
        if lead is not None:
            net.node(lead).transfer_leadership(rng.choice(NODES))
            net.flush(lead)


def _random_conf_change(net: Network, rng: random.Random) -> None:
    lead = net.leader()
    if lead is None:
        return
    kinds = [ConfChangeType.ADD_VOTER, ConfChangeType.ADD_LEARNER, ConfChangeType.REMOVE]
    count = rng.choice([1, 1, 2])
    cc = ConfChange(
        changes=tuple(ConfChangeSingle(rng.choice(kinds), rng.choice(NODES)) for _ in range(count))
    )
    try:
        net.node(lead).propose_conf_change(cc)
    except (ConfChangeError, ProposalDroppedError):
        return
    net.flush(lead)


def _run(seed: int, unsafe: bool) -> Network:
    rng = random.Random(seed)
    net = Network(NODES[:3], extra=NODES[3:], max_entries_per_append=3, max_inflight_appends=2)
    for n in NODES:
        net.node(n).unsafe_commit_previous_term_by_count = unsafe
    for step in range(2000):
        _random_step(net, rng, step)
        for n in NODES:  # restarted nodes come back with the switch set as well
            net.node(n).unsafe_commit_previous_term_by_count = unsafe
        if net.violations:
            return net
    return net


@pytest.mark.parametrize("seed", range(12))
def test_random_histories_are_safe_and_converge(seed: int) -> None:
    net = _run(seed, unsafe=False)
    assert not net.violations, net.violations[:3]
    net.heal()
    for n in sorted(net.down):
        net.restart(n)
    net.converge(ticks=200)
    net.tick(20)  # let any leadership transfer still in flight finish or time out
    net.converge()
    lead = net.leader()
    assert lead is not None
    members = net.node(lead).progress
    net.propose(lead, b"final")
    for n in members:
        assert net.data(n) == net.data(lead), n
    assert all(net.node(n).role != Role.LEADER for n in NODES if n != lead)
    assert not net.violations
