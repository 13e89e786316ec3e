"""What a leader knows about each follower's log, and how fast it may send to it.

Mirrors the three states of etcd's Progress:

* PROBE: the leader does not know where the follower's log matches; it sends one APPEND at a
  time (pausing until a response or a heartbeat response) and walks `next` backwards on reject;
* REPLICATE: the logs match up to `match`; the leader streams APPENDs optimistically, at most
  `max_inflight` unacknowledged at once (flow control);
* SNAPSHOT: the follower needs entries the leader compacted away; nothing else is sent until
  the snapshot is acknowledged or reported failed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import IntEnum


class ProgressState(IntEnum):
    PROBE = 0
    REPLICATE = 1
    SNAPSHOT = 2


@dataclass
class Progress:
    match: int
    next: int
    max_inflight: int
    state: ProgressState = ProgressState.PROBE
    probe_sent: bool = False
    """In PROBE: an APPEND is outstanding, so hold further ones until it is answered."""
    pending_snapshot: int = 0
    """In SNAPSHOT: the index of the snapshot being sent."""
    recent_active: bool = False
    """Heard from since the last check-quorum round."""
    inflight: deque[int] = field(default_factory=deque)
    """In REPLICATE: last index of each unacknowledged APPEND, oldest first."""

    def become_probe(self) -> None:
        """Fall back to probing, e.g. after a reject or an unreachable report."""
        if self.state == ProgressState.SNAPSHOT:
            self.next = max(self.match + 1, self.pending_snapshot + 1)
        else:
            self.next = self.match + 1
        self._reset(ProgressState.PROBE)

    def become_replicate(self) -> None:
        self.next = self.match + 1
        self._reset(ProgressState.REPLICATE)

    def become_snapshot(self, index: int) -> None:
        self._reset(ProgressState.SNAPSHOT)
        self.pending_snapshot = index

    def _reset(self, state: ProgressState) -> None:
        self.state = state
        self.probe_sent = False
        self.pending_snapshot = 0
        self.inflight.clear()

    def maybe_update(self, index: int) -> bool:
        """Record an acknowledgement of `index`; False if it is stale (already known)."""
        updated = index > self.match
        if updated:
            self.match = index
            self.probe_sent = False
        self.next = max(self.next, index + 1)
        return updated

    def maybe_decrease_to(self, rejected: int, hint: int) -> bool:
        """Handle a reject of the APPEND whose previous index was `rejected`; False if stale.

        `hint` is the follower's last index (or less), so `next` can jump back past a long gap
        in one step instead of one entry per round trip.
        """
        if self.state == ProgressState.REPLICATE:
            if rejected <= self.match:
                return False
            self.next = self.match + 1
            return True
        if self.next - 1 != rejected:
            return False
        self.next = max(min(rejected, hint + 1), self.match + 1, 1)
        self.probe_sent = False
        return True

    def sent_entries(self, last: int) -> None:
        """Note that an APPEND carrying entries up to `last` (maybe none) was sent."""
        if self.state == ProgressState.REPLICATE:
            if last >= self.next:
                self.next = last + 1
                self.inflight.append(last)
        elif self.state == ProgressState.PROBE:
            self.probe_sent = True

    def free_inflight_up_to(self, index: int) -> None:
        while self.inflight and self.inflight[0] <= index:
            self.inflight.popleft()

    def is_paused(self) -> bool:
        """Whether the leader must hold further APPENDs to this follower for now."""
        if self.state == ProgressState.PROBE:
            return self.probe_sent
        if self.state == ProgressState.REPLICATE:
            return len(self.inflight) >= self.max_inflight
        return True
