"""Paxos under a deterministic faulty network: committed values stay linearizable.

Hypothesis picks the seed and the shape; a failure prints the seed, and `Sim(Config(seed=...))`
replays it exactly.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.paxos import acceptor as paxos_acceptor
from tabletdb.paxos.acceptor import AcceptorState, Step
from tabletdb.paxos.messages import Accept, Accepted
from tabletdb.paxos.proposer import Outcome
from tests.unit.paxos.paxos_sim import Config, Sim, check


def _scratch() -> tempfile.TemporaryDirectory[str]:
    """SQLite files in /dev/shm where there is one: the fsyncs are real but cheap."""
    shm = Path("/dev/shm")
    return tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None)


def run(config: Config) -> tuple[Sim, list[bytes]]:
    with _scratch() as d:
        sim = Sim(config, Path(d))
        final = sim.run()
        chain = check(sim, final)
        for a in sim.acceptors.values():
            a.acceptor.store.close()
        return sim, chain


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    acceptors=st.sampled_from([3, 5]),
    clients=st.integers(1, 4),
    p_drop=st.sampled_from([0.0, 0.05, 0.2]),
    p_crash=st.sampled_from([0.0, 0.02, 0.08]),
)
def test_random_faults_keep_the_register_linearizable(
    seed: int, acceptors: int, clients: int, p_drop: float, p_crash: float
) -> None:
    run(Config(seed, acceptors=acceptors, clients=clients, p_drop=p_drop, p_crash=p_crash))


@pytest.mark.parametrize("seed", [1, 7, 42, 2026])
def test_fixed_seeds_replay_identically(seed: int) -> None:
    config = Config(seed, clients=4, p_drop=0.1, p_crash=0.05)
    first, chain = run(config)
    second, again = run(config)
    assert chain == again
    assert [(o.value, o.outcome, o.end) for o in first.ops] == [
        (o.value, o.outcome, o.end) for o in second.ops
    ]


def test_without_faults_every_uncontended_cas_applies() -> None:
    sim, chain = run(Config(3, clients=1, p_drop=0.0, p_dup=0.0, p_crash=0.0, ops_per_client=5))
    ops = [o for o in sim.ops if o.client == 0]
    assert [o.outcome for o in ops] == [Outcome.APPLIED] * 5
    assert chain == [o.value for o in ops]


def test_contention_without_loss_still_chooses_values() -> None:
    """Competing proposers back off and retry. (Slow deliveries can still end one in UNKNOWN.)"""
    for seed in range(5):
        sim, chain = run(Config(seed, clients=4, p_drop=0.0, p_dup=0.0, p_crash=0.0))
        answered = [o for o in sim.ops if o.outcome in (Outcome.APPLIED, Outcome.NOT_APPLIED)]
        assert chain and len(answered) > len(sim.ops) // 2


@pytest.fixture
def broken_acceptor(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An acceptor that ignores its promises (accepts any ballot): Paxos without phase 1's guarantee."""

    def accept_anything(state: AcceptorState, req: Accept) -> Step:
        new = AcceptorState(state.promised, req.proposal, state.committed)
        return Step(new, Accepted(req.key, req.proposal.ballot, True, state.promised))

    monkeypatch.setattr(paxos_acceptor, "_accept", accept_anything)
    yield


@pytest.mark.usefixtures("broken_acceptor")
def test_the_checker_catches_an_acceptor_that_breaks_its_promises() -> None:
    """Guards the simulation itself: if it could not catch this, passing runs would mean little."""
    failures = 0
    for seed in range(40):
        try:
            run(Config(seed, clients=4, p_drop=0.1, p_crash=0.0, ops_per_client=6))
        except AssertionError:
            failures += 1
    assert failures > 0


def test_a_short_commit_history_degrades_to_unknown_never_to_a_wrong_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With room for only two commits, a proposer often cannot tell whether its value was chosen."""
    from tabletdb.paxos import proposer as paxos_proposer

    monkeypatch.setattr(paxos_acceptor, "HISTORY", 2)
    monkeypatch.setattr(paxos_proposer, "HISTORY", 2)
    for seed in range(30):
        run(Config(seed, clients=5, p_drop=0.1, p_crash=0.02, ops_per_client=6))
