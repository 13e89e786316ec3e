"""Simulated clients: register, set and append-log operations, recorded for the linearizability check.

Each client runs one operation at a time against some node (usually the one it believes leads).
Writes are proposals, complete when the client's node applies them; reads are read barriers
(`read_index`) served from the node's state machine once it has applied up to the barrier.
An operation the client stops waiting for (its deadline passed or its node crashed) is recorded
as indeterminate: it may still take effect later, or never.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import msgpack

from tabletdb.raft.errors import RaftError
from tabletdb.sim.events import EventLoop
from tabletdb.sim.linearizability import Operation
from tabletdb.sim.node import SimNode
from tabletdb.sim.statemachine import OpId, encode_command

MODELS = {"register": ("write", "r"), "set": ("add", "s"), "log": ("append", "l")}
"""Object kind -> (its write verb, its key prefix)."""


class ClusterView(Protocol):
    loop: EventLoop
    nodes: dict[int, SimNode]
    leader_hint: int | None


@dataclass
class PendingOp:
    client: int
    seq: int
    model: str
    key: str
    input: tuple[Any, ...]
    node: int
    call: int


class Workload:
    def __init__(
        self, cluster: ClusterView, rng: random.Random, ops: int, clients: int, timeout: int
    ) -> None:
        self.cluster = cluster
        self.rng = rng
        self.remaining = ops
        self.clients = clients
        self.timeout = timeout
        self.history: dict[str, list[Operation]] = {m: [] for m in MODELS}
        self.pending: dict[OpId, PendingOp] = {}
        self._seq = 0
        self.completed = 0
        self.indeterminate = 0
        self.rejected = 0

    @property
    def done(self) -> bool:
        return self.remaining <= 0 and not self.pending

    def start(self) -> None:
        for client in range(self.clients):
            self.cluster.loop.after(self.rng.randint(0, 20), partial(self.issue, client))

    def _choose_node(self) -> SimNode | None:
        alive = [n for n in self.cluster.nodes.values() if n.alive]
        if not alive:
            return None
        hint = self.cluster.leader_hint
        if hint is not None and self.cluster.nodes[hint].alive and self.rng.random() < 0.7:
            return self.cluster.nodes[hint]
        return self.rng.choice(alive)

    def issue(self, client: int) -> None:
        """Start the client's next operation (or retry later if nothing can take it now)."""
        if self.remaining <= 0:
            return
        node = self._choose_node()
        if node is None or node.raft is None:
            self.cluster.loop.after(20, lambda: self.issue(client))
            return
        self._seq += 1
        model = self.rng.choice(list(MODELS))
        verb, prefix = MODELS[model]
        key = f"{prefix}{self.rng.randrange(3)}"
        is_read = self.rng.random() < 0.4
        inp: tuple[Any, ...] = ("read",) if is_read else (verb, self._seq)
        op = PendingOp(client, self._seq, model, key, inp, node.id, self.cluster.loop.now)
        op_id = (client, self._seq)
        try:
            if is_read:
                node.raft.read_index(msgpack.packb([client, self._seq]))
            else:
                node.raft.propose(encode_command(client, self._seq, verb, key, self._seq))
        except RaftError:
            self.rejected += 1  # refused up front: it never happened, so it is not in the history
            self.cluster.loop.after(self.rng.randint(5, 30), lambda: self.issue(client))
            return
        self.remaining -= 1
        self.pending[op_id] = op
        node.process()
        self.cluster.loop.after(self.timeout, lambda: self._expire(op_id))

    def _finish(self, op_id: OpId, output: Any, indeterminate: bool) -> None:
        op = self.pending.pop(op_id)
        ret = None if indeterminate else self.cluster.loop.now
        if indeterminate:
            self.indeterminate += 1
        else:
            self.completed += 1
        self.history[op.model].append(Operation(op.client, op.key, op.input, output, op.call, ret))
        self.cluster.loop.after(self.rng.randint(5, 60), lambda: self.issue(op.client))

    def _expire(self, op_id: OpId) -> None:
        if op_id in self.pending:
            self._finish(op_id, None, indeterminate=True)

    def node_crashed(self, node: int) -> None:
        for op_id, op in list(self.pending.items()):
            if op.node == node:
                self._finish(op_id, None, indeterminate=True)

    def op_applied(self, node: SimNode, op_id: OpId) -> None:
        op = self.pending.get(op_id)
        if op is not None and op.node == node.id and op.input[0] != "read":
            self._finish(op_id, None, indeterminate=False)

    def read_done(self, node: SimNode, context: bytes) -> None:
        client, seq = msgpack.unpackb(context)
        op = self.pending.get((client, seq))
        if op is not None and op.node == node.id:
            self._finish((client, seq), node.sm.read(op.model, op.key), indeterminate=False)
