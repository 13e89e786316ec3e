"""Virtual time: an event queue ordered by (time, insertion order), so every run is replayable.

Time is an integer number of virtual milliseconds. Nothing in the simulator reads a real clock;
ties are broken by insertion order, never by object identity or hashing.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

Callback = Callable[[], None]


class EventLoop:
    def __init__(self) -> None:
        self.now = 0
        self._queue: list[tuple[int, int, Callback]] = []
        self._seq = itertools.count()
        self.processed = 0

    def at(self, time: int, callback: Callback) -> None:
        """Run `callback` at virtual time `time` (never in the past)."""
        heapq.heappush(self._queue, (max(time, self.now), next(self._seq), callback))

    def after(self, delay: int, callback: Callback) -> None:
        self.at(self.now + delay, callback)

    def run_until(self, time: int, stop: Callable[[], bool] | None = None) -> None:
        """Process events up to and including `time`, or until `stop()` becomes true."""
        while self._queue and self._queue[0][0] <= time:
            when, _, callback = heapq.heappop(self._queue)
            self.now = when
            callback()
            self.processed += 1
            if stop is not None and stop():
                return
        self.now = max(self.now, time)
