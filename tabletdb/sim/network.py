"""The simulated network: per-message delay (hence reordering), loss, duplication, partitions.

Partitions are a set of blocked *directed* links, so both symmetric splits and one-way
(asymmetric) cuts are expressible. Randomness is drawn from the run's seeded generator only.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from tabletdb.raft.types import Message, MessageType, NodeId
from tabletdb.sim.events import EventLoop


@dataclass
class LinkQuality:
    min_delay: int = 1
    max_delay: int = 5
    loss: float = 0.0
    duplicate: float = 0.0


class SimNetwork:
    def __init__(
        self,
        loop: EventLoop,
        rng: random.Random,
        deliver: Callable[[Message], bool],
        snapshot_status: Callable[[Message, bool], None],
    ) -> None:
        """`deliver` returns False if the destination is down; `snapshot_status` is told the fate
        of every SNAPSHOT message, as a real transport reports it to the Raft leader."""
        self.loop = loop
        self.rng = rng
        self.deliver = deliver
        self.snapshot_status = snapshot_status
        self.quality = LinkQuality()
        self.blocked: set[tuple[NodeId, NodeId]] = set()
        self.sent = 0
        self.dropped = 0

    def send(self, m: Message) -> None:
        self.sent += 1
        q = self.quality
        if (m.src, m.dst) in self.blocked or (q.loss and self.rng.random() < q.loss):
            self._drop(m)
            return
        copies = 2 if q.duplicate and self.rng.random() < q.duplicate else 1
        for _ in range(copies):
            delay = self.rng.randint(q.min_delay, q.max_delay)
            self.loop.after(delay, partial(self._arrive, m))

    def _drop(self, m: Message) -> None:
        self.dropped += 1
        if m.type == MessageType.SNAPSHOT:
            self.loop.after(self.quality.max_delay, partial(self.snapshot_status, m, False))

    def _arrive(self, m: Message) -> None:
        # A partition that starts while a message is in flight also stops it.
        if (m.src, m.dst) in self.blocked:
            self._drop(m)
            return
        delivered = self.deliver(m)
        if m.type == MessageType.SNAPSHOT:
            self.snapshot_status(m, delivered)

    def partition(self, groups: Iterable[Iterable[NodeId]]) -> None:
        """Cut every link between different groups (both directions)."""
        sides = [set(g) for g in groups]
        for i, a in enumerate(sides):
            for b in sides[i + 1 :]:
                for x in a:
                    for y in b:
                        self.blocked.add((x, y))
                        self.blocked.add((y, x))

    def cut_one_way(self, src: NodeId, dst: NodeId) -> None:
        self.blocked.add((src, dst))

    def isolate(self, node: NodeId, others: Iterable[NodeId]) -> None:
        self.partition([[node], [o for o in others if o != node]])

    def heal(self) -> None:
        self.blocked.clear()
