"""Random histories of joins, decommissions and removals of a vnode cluster through the pure
coordinator, with a model of the replicas' data: QUORUM writes go to every ring the state writes
(a quorum of each set), streaming copies what the sources hold, cleanup deletes what a node no
longer replicates, and the coordinator loses its observations now and then (a crash).

Checked after every step: every acknowledged write is on a quorum of the replica set reads use
(so a QUORUM read finds it); at the end every cleanup is done and no node holds data outside
the ranges it replicates. Skipping the copy of a stream must be caught.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field, replace

import pytest

from tabletdb.dht.ring import ReplicaTable, TokenRing
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN
from tabletdb.schema.model import SIMPLE, Replication
from tabletdb.topology import coordinator as co
from tabletdb.topology import vnode_phase as vp
from tabletdb.topology import vnode_ranges as vr
from tabletdb.topology.states import CleanupStatus, NodeState, RequestKind
from tests.unit.topology.driver import Cluster, host
from tests.unit.topology.test_vnode_phase import VTABLE, vnode_cluster

RF = 3
REPL = Replication(SIMPLE, (("replication_factor", str(RF)),))


class Violation(AssertionError):
    pass


@dataclass
class World:
    rng: random.Random
    c: Cluster
    keys: list[int]
    skip_copy: bool = False
    data: dict[uuid.UUID, dict[int, set[int]]] = field(default_factory=dict)
    acked: list[tuple[int, int]] = field(default_factory=list)
    next_write: int = 0
    joiners: list[uuid.UUID] = field(default_factory=list)
    tables: dict[frozenset[tuple[uuid.UUID, tuple[int, ...]]], ReplicaTable[uuid.UUID]] = field(
        default_factory=dict
    )

    def replicas(self, ring: vr.Ring, token: int) -> tuple[uuid.UUID, ...]:
        key = frozenset(ring.items())
        if key not in self.tables:
            self.tables[key] = vr.strategy_table(TokenRing.from_assignments(ring), REPL, {})
        return self.tables[key].for_token(token)

    def write(self) -> None:
        token = self.rng.choice(self.keys)
        rings = vr.rings(self.c.topology, self.c.vnode.tokens)
        chosen: set[uuid.UUID] = set()
        for ring in rings.writes:
            replicas = self.replicas(ring, token)
            up = [h for h in replicas if h in self.c.alive]
            quorum = len(replicas) // 2 + 1
            if len(up) < quorum:
                return  # Unavailable: nothing acknowledged (a partial write is harmless)
            chosen |= set(self.rng.sample(up, self.rng.randint(quorum, len(up))))
        self.next_write += 1
        for h in chosen:
            self.data.setdefault(h, {}).setdefault(token, set()).add(self.next_write)
        self.acked.append((token, self.next_write))

    def check(self, when: str) -> None:
        read = vr.rings(self.c.topology, self.c.vnode.tokens).read
        for token, write in self.acked:
            replicas = self.replicas(read, token)
            holders = [h for h in replicas if write in self.data.get(h, {}).get(token, ())]
            if len(holders) < len(replicas) // 2 + 1:
                raise Violation(f"{when}: write {write} of token {token} on {holders} of {replicas}")

    def execute(self, action: co.Action) -> None:
        if isinstance(action, vp.StreamRanges):
            done = set()
            for task in action.tasks:
                sources = {s for _, src in task.ranges for s in src}
                if task.target not in self.c.alive or not sources <= self.c.alive:
                    continue  # the shell's RPC fails; the step asks again
                if not self.skip_copy:
                    target = self.data.setdefault(task.target, {})
                    for r, src in task.ranges:
                        for s in src:
                            for token, writes in self.data.get(s, {}).items():
                                if r.contains(token):
                                    target.setdefault(token, set()).update(writes)
                done.add(task.key)
            self.c.obs = replace(self.c.obs, ranges_streamed=self.c.obs.ranges_streamed | done)
        elif isinstance(action, vp.CleanupRanges):
            cleaned = set()
            for task in action.tasks:
                if task.host not in self.c.alive:
                    continue
                rings = vr.rings(self.c.topology, self.c.vnode.tokens)
                kept = vr.kept_ranges(rings, task.host, REPL, {})
                held = self.data.get(task.host, {})
                for token in [t for t in held if not any(r.contains(t) for r in kept)]:
                    del held[token]
                cleaned.add((task.host, task.version))
            self.c.obs = replace(self.c.obs, ranges_cleaned=self.c.obs.ranges_cleaned | cleaned)
        else:
            self.c.execute(action)

    def operate(self) -> None:
        """Queue a random request if nothing runs or waits."""
        t = self.c.topology
        if t.transition is not None or t.queue:
            return
        normal = [h for h in t.normal_nodes() if h in self.c.alive]
        choice = self.rng.random()
        if choice < 0.4 and self.joiners:
            joiner = self.joiners.pop(0)
            self.c.alive.add(joiner)
            self.c.request(RequestKind.JOIN, joiner)
        elif choice < 0.65 and len(normal) > 2:
            self.c.request(RequestKind.LEAVE, self.rng.choice(normal))
        elif choice < 0.8 and len(normal) >= RF and self.joiners:
            dead = self.rng.choice(normal)
            self.c.alive.discard(dead)  # killed for good, then replaced
            new = self.joiners.pop(0)
            self.c.alive.add(new)
            if self.rng.random() < 0.7:  # it takes the dead node's tokens over (or keeps its own)
                tokens = {**self.c.vnode.tokens, new: self.c.vnode.tokens[dead]}
                self.c.vnode = replace(self.c.vnode, tokens=tokens)
            self.c.request(RequestKind.REPLACE, new, dead)
        elif len(normal) > RF:
            dead = self.rng.choice(normal)
            self.c.alive.discard(dead)  # killed for good, then removed
            self.c.request(RequestKind.REMOVE, dead)

    def run(self, steps: int) -> None:
        for i in range(steps):
            if self.rng.random() < 0.5:
                self.write()
            if self.rng.random() < 0.1:
                self.operate()
            if self.rng.random() < 0.05:
                self.c.obs = co.Observations(alive=frozenset())  # the coordinator crashed
            action = self.c.step()
            if not isinstance(action, co.Idle):
                self.execute(action)
            self.check(f"step {i} after {type(action).__name__}")


def world(seed: int, skip_copy: bool = False) -> World:
    rng = random.Random(seed)
    c = vnode_cluster(nodes=4)
    joiners = [host(10 + i) for i in range(4)]
    taken: set[int] = set()
    tokens: dict[uuid.UUID, tuple[int, ...]] = {}
    for h in [*sorted(c.topology.nodes), *joiners]:
        mine = set()
        while len(mine) < 3:
            t = rng.randint(MIN_TOKEN + 1, MAX_TOKEN)
            if t not in taken:
                mine.add(t)
                taken.add(t)
        tokens[h] = tuple(sorted(mine))
    c.vnode = vp.VnodeView(tokens, (vp.VnodeTable(VTABLE, REPL),), {})
    keys = [rng.randint(MIN_TOKEN + 1, MAX_TOKEN) for _ in range(60)]
    return World(rng, c, keys, skip_copy, joiners=joiners)


@pytest.mark.parametrize("seed", range(12))
def test_every_acknowledged_write_stays_readable_at_quorum(seed: int) -> None:
    w = world(seed)
    w.run(400)
    w.c.run()  # finish what is running (no new requests, no crash)
    w.check("at the end")
    t = w.c.topology
    assert all(n.cleanup is CleanupStatus.CLEAN for n in t.nodes.values() if n.state is not NodeState.LEFT)
    assert len(t.results) >= 3 and len(w.acked) > 50, (t.results, len(w.acked))  # a history, not a no-op
    rings = vr.rings(t, w.c.vnode.tokens)
    for h in t.normal_nodes():
        kept = vr.kept_ranges(rings, h, REPL, {})
        assert all(any(r.contains(token) for r in kept) for token in w.data.get(h, {})), h


def test_streaming_nothing_is_caught() -> None:
    caught = 0
    for seed in range(12):
        w = world(seed, skip_copy=True)
        try:
            w.run(400)
        except Violation:
            caught += 1
    assert caught >= 6, caught
