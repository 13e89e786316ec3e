"""Fault injection for internode messaging, so tests can drop, delay or cut traffic per peer.

Faults apply on the sending side to every frame towards a peer (requests, responses and
one-way messages), which is enough to build asymmetric partitions: block A->B on A only.
Randomness comes from a seeded generator so a failing test replays.

A *failed verb* (``fail``) makes the requests of that verb to one peer fail at once on the
sender (``net.rpc.InjectedFailure``), as the peer refusing them would, while every other message
still flows. Tests hold a protocol at a chosen step with it (the topology coordinator retries a
failed stream or copy, so the step repeats until healed) without the pending calls a dropped
request leaves behind, nor Raft traffic cut with it. It is the only per-verb fault, and it acts on
the sender because the sender is what a test can name (the coordinator, or every node), and one
peer can be singled out; the peer may be the node itself, for the requests a node serves itself
without the network when its caller asks (``RpcNode.fail_if_injected``: a tablet stream the
coordinator asks of itself).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class PeerFaults:
    drop_probability: float = 0.0
    delay: float = 0.0
    """Seconds added before the frame is written."""
    blocked: bool = False
    failed_verbs: set[str] = field(default_factory=set)
    """Requests of these verbs fail at once (``fail``)."""


@dataclass
class FaultInjector:
    seed: int = 0
    peers: dict[int, PeerFaults] = field(default_factory=dict)
    dropped: int = 0
    """Frames dropped so far (by `drop` or `block`), for test assertions."""
    failed: int = 0
    """Requests failed so far by a failed verb (`fail`)."""

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def _for(self, peer: int) -> PeerFaults:
        return self.peers.setdefault(peer, PeerFaults())

    def drop(self, peer: int, probability: float) -> None:
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"drop probability must be within [0, 1], got {probability}")
        self._for(peer).drop_probability = probability

    def delay(self, peer: int, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"delay must be >= 0 seconds, got {seconds}")
        self._for(peer).delay = seconds

    def block(self, peer: int) -> None:
        self._for(peer).blocked = True

    def fail(self, peer: int, verb: str) -> None:
        """Make every request of ``verb`` to ``peer`` fail at once, until healed."""
        if not verb:
            raise ValueError("a verb to fail must be named")
        self._for(peer).failed_verbs.add(verb)

    def fails(self, peer: int, verb: str) -> bool:
        """Whether a request of ``verb`` to ``peer`` must fail now (counted in ``failed``)."""
        faults = self.peers.get(peer)
        if faults is None or verb not in faults.failed_verbs:
            return False
        self.failed += 1
        return True

    def heal(self, peer: int | None = None) -> None:
        """Remove every fault towards `peer`, or every fault."""
        if peer is None:
            self.peers.clear()
        else:
            self.peers.pop(peer, None)

    def should_drop(self, peer: int) -> bool:
        faults = self.peers.get(peer)
        if faults is None:
            return False
        if faults.blocked or (faults.drop_probability and self._rng.random() < faults.drop_probability):
            self.dropped += 1
            return True
        return False

    def delay_for(self, peer: int) -> float:
        faults = self.peers.get(peer)
        return faults.delay if faults is not None else 0.0
