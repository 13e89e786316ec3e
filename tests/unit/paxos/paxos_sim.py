"""A deterministic simulation of single-partition Paxos: the pure proposer and acceptor over a lossy net.

Everything random comes from one seed, so a failing run replays exactly. The network holds
every message in flight; each step the simulation delivers one at random (reordering), may
keep a copy (duplication), may drop one, crashes or restarts an acceptor (its state is reopened
from the real SQLite `PaxosStateStore`), advances the clock (proposers' retries and timeouts),
or starts a client's next operation. Clients run compare-and-set on one register, the shape of
``UPDATE ... IF v = old``. At the end the faults stop, in-flight work drains and a final read
shows what the cluster holds. `check` then verifies the history against the register's rules.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path

from tabletdb.paxos.acceptor import DurableAcceptor
from tabletdb.paxos.messages import (
    BALLOT_SIZE,
    Accepted,
    Ballot,
    Message,
    Promise,
    Proposal,
    Reply,
    Request,
)
from tabletdb.paxos.proposer import Done, NeedValue, Outcome, Output, Proposer, Send, Timing
from tabletdb.storage.paxos_state import PaxosStateStore

KEY = b"k"
NEVER = b"never"
"""An expected value no operation writes: a CAS with it is a linearizable read."""


@dataclass
class Op:
    id: int
    client: int
    expected: bytes | None
    value: bytes
    start: int
    end: int | None = None
    outcome: Outcome | None = None
    observed: bytes | None = None
    read_done: bool = False


class SimAcceptor:
    """One replica: Paxos state in SQLite (reopened on restart) and a base table of one register."""

    def __init__(self, node: int, directory: Path) -> None:
        self.node = node
        self.path = directory / f"paxos-{node}.db"
        self.acceptor = DurableAcceptor(PaxosStateStore(self.path))
        self.up = True
        self.table: tuple[Ballot, bytes] | None = None
        """The register as applied: the newest committed value (last write wins by ballot)."""
        self.applied: list[Proposal] = []
        self.accepted: list[Proposal] = []

    def crash(self) -> None:
        self.acceptor.store.close()
        self.up = False

    def restart(self) -> None:
        self.acceptor = DurableAcceptor(PaxosStateStore(self.path))
        self.up = True

    def handle(self, request: Request) -> Reply:
        before, result = self.acceptor.decide(request)
        if result.apply is not None:
            p = result.apply
            self.applied.append(p)
            if self.table is None or p.ballot > self.table[0]:
                self.table = (p.ballot, p.value)
        self.acceptor.save(request.key, before, result)
        reply = result.reply
        if isinstance(reply, Accepted) and reply.ok:
            self.accepted.append(request.proposal)  # type: ignore[union-attr]
        if isinstance(reply, Promise) and reply.ok:
            read = None if self.table is None else self.table[0].to_bytes() + self.table[1]
            reply = replace(reply, read=read)
        return reply


def merged_read(reads: tuple[bytes | None, ...]) -> bytes | None:
    """The register's value in a promise quorum: the newest (by ballot) of the replicas' values."""
    best: tuple[Ballot, bytes] | None = None
    for r in reads:
        if r is not None:
            b, v = Ballot.from_bytes(r[:BALLOT_SIZE]), r[BALLOT_SIZE:]
            if best is None or b > best[0]:
                best = (b, v)
    return None if best is None else best[1]


@dataclass
class Config:
    seed: int
    acceptors: int = 3
    clients: int = 3
    steps: int = 300
    ops_per_client: int = 4
    p_drop: float = 0.05
    p_dup: float = 0.05
    p_crash: float = 0.02


@dataclass
class Sim:
    config: Config
    directory: Path
    rng: random.Random = field(init=False)
    now: int = 1_000_000
    acceptors: dict[int, SimAcceptor] = field(default_factory=dict)
    net: list[tuple[int, int, Message]] = field(default_factory=list)
    proposers: dict[int, tuple[Proposer, Op]] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    known: dict[int, bytes | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.config.seed)
        for n in range(self.config.acceptors):
            self.acceptors[n] = SimAcceptor(n, self.directory)

    # --- driving ---------------------------------------------------------------------------

    def start_op(self, client: int, expected: bytes | None, deadline: int = 3_000_000) -> Op:
        op = Op(len(self.ops), client, expected, f"v{len(self.ops)}".encode(), self.now)
        self.ops.append(op)
        replicas = tuple(self.acceptors)
        timing = Timing(self.now + deadline, round_timeout=200_000, backoff_base=1_000, backoff_max=50_000)
        proposer = Proposer(
            KEY, replicas, len(replicas) // 2 + 1, 1000 + client, op.id, timing, self.rng.getrandbits(32)
        )
        self.proposers[client] = (proposer, op)
        self._outputs(client, proposer.start(self.now))
        return op

    def _outputs(self, client: int, outputs: list[Output]) -> None:
        if client not in self.proposers:  # finished inside an earlier output of this batch
            return
        proposer, op = self.proposers[client]
        for out in outputs:
            if client not in self.proposers:
                return
            if isinstance(out, Send):
                if not self.acceptors[out.dst].up and self.rng.random() < 0.5:
                    # the shell's view: a replica known to be down is not sent to at all
                    self._outputs(client, proposer.undelivered(out.dst, out.message, self.now))
                else:
                    self.net.append((1000 + client, out.dst, out.message))
            elif isinstance(out, NeedValue):
                current = merged_read(out.reads)
                op.observed, op.read_done = current, True
                self._outputs(
                    client, proposer.provide(op.value if current == op.expected else None, self.now)
                )
            elif isinstance(out, Done):
                op.outcome, op.end = out.outcome, self.now
                if out.outcome is Outcome.APPLIED:
                    self.known[client] = op.value
                elif out.outcome is Outcome.NOT_APPLIED:
                    self.known[client] = op.observed
                del self.proposers[client]

    def deliver(self, index: int, duplicate: bool) -> None:
        src, dst, msg = self.net[index] if duplicate else self.net.pop(index)
        if dst < 1000:
            acceptor = self.acceptors[dst]
            if acceptor.up:
                self.net.append((dst, src, acceptor.handle(msg)))  # type: ignore[arg-type]
        elif dst - 1000 in self.proposers:
            proposer, _ = self.proposers[dst - 1000]
            self._outputs(dst - 1000, proposer.receive(src, msg, self.now))  # type: ignore[arg-type]

    def advance(self, micros: int) -> None:
        self.now += micros
        for client in list(self.proposers):
            if client in self.proposers:
                self._outputs(client, self.proposers[client][0].tick(self.now))

    def step(self) -> None:
        c, rng = self.config, self.rng
        roll = rng.random()
        if self.net and roll < c.p_drop:
            self.net.pop(rng.randrange(len(self.net)))
        elif roll < c.p_drop + c.p_crash:
            node = rng.choice(list(self.acceptors))
            a = self.acceptors[node]
            a.crash() if a.up else a.restart()
        elif self.net and roll < 0.8:
            self.deliver(rng.randrange(len(self.net)), duplicate=rng.random() < c.p_dup)
        elif roll < 0.9:
            self.advance(rng.randrange(1, 150_000))
        else:
            idle = [
                cl
                for cl in range(c.clients)
                if cl not in self.proposers and sum(o.client == cl for o in self.ops) < c.ops_per_client
            ]
            if idle:
                cl = rng.choice(idle)
                self.start_op(cl, self.known.get(cl))

    def run(self) -> Op:
        """The faulty phase, then healing and draining; returns the final read."""
        for _ in range(self.config.steps):
            self.step()
        for a in self.acceptors.values():
            if not a.up:
                a.restart()
        self.drain()
        final = self.start_op(self.config.clients, NEVER, deadline=10**12)
        self.drain()
        assert final.outcome is Outcome.NOT_APPLIED, f"the final read did not complete: {final}"
        return final

    def drain(self) -> None:
        while self.proposers:
            while self.net:
                self.deliver(self.rng.randrange(len(self.net)), duplicate=False)
            self.advance(100_000)
        self.net.clear()


# --- the register's rules ------------------------------------------------------------------------


def check(sim: Sim, final: Op) -> list[bytes]:
    """AssertionError naming the broken rule; returns the chain of chosen values."""
    by_ballot: dict[Ballot, bytes] = {}
    for a in sim.acceptors.values():
        for p in a.accepted + a.applied:
            seen = by_ballot.setdefault(p.ballot, p.value)
            assert seen == p.value, f"two values under ballot {p.ballot}: {seen!r} and {p.value!r}"
    committed = sorted({p.ballot: p.value for a in sim.acceptors.values() for p in a.applied}.items())
    chain: list[bytes] = []
    for _, value in committed:
        if not chain or chain[-1] != value:
            assert value not in chain, f"{value!r} chosen again after others: {chain}"
            chain.append(value)
    position = {v: i for i, v in enumerate(chain)}
    op_of = {o.value: o for o in sim.ops}
    for i, value in enumerate(chain):
        op = op_of[value]
        before = chain[i - 1] if i else None
        assert op.expected == before, f"{op} applied over {before!r}, not over what it expected"
    for op in sim.ops:
        if op.outcome is Outcome.APPLIED:
            assert op.value in position, f"{op} reported applied but its value was lost"
        if op.outcome in (Outcome.NOT_APPLIED, Outcome.TIMEOUT):
            assert op.value not in position, f"{op} reported {op.outcome} but its value was chosen"
        if op.outcome is Outcome.NOT_APPLIED:
            assert op.observed is None or op.observed in position, f"{op} read a value never chosen"
    _check_real_time(sim.ops, position)
    assert final.observed == (chain[-1] if chain else None), f"final read {final.observed!r}, chain {chain}"
    return chain


def _pos(op: Op, position: dict[bytes, int]) -> int | None:
    if op.value in position:
        return position[op.value]
    if op.outcome is Outcome.NOT_APPLIED:
        return -1 if op.observed is None else position[op.observed]
    return None


def _check_real_time(ops: list[Op], position: dict[bytes, int]) -> None:
    """An operation that began after another completed saw at least that one's effect."""
    done = [o for o in ops if o.outcome in (Outcome.APPLIED, Outcome.NOT_APPLIED)]
    for a in done:
        pa = _pos(a, position)
        assert a.end is not None and pa is not None
        for b in ops:
            pb = _pos(b, position)
            if b.start > a.end and pb is not None:
                assert pb >= pa, f"{b} started after {a} finished but is ordered before it"
