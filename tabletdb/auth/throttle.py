"""How long a failed login waits before it is answered (pure bookkeeping, no clock, no I/O).

Failures are counted per user name, whether or not a role of that name exists, so an unknown
name is throttled exactly like a known one and the delay reveals nothing. Consecutive failures
of one name double its delay (`base`, 2 x base, ... up to `ceiling`); a success, or `window`
seconds without a failure, starts it over. The table is bounded (least recently failed names
are forgotten first), so guessing many names cannot grow memory.

The caller sleeps asynchronously (never blocking the event loop) before it answers the failure;
one connection therefore gets at most one guess per delay. Many connections in parallel each
wait too, and the password hash they all need is what bounds them in the end.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

BASE_DELAY_S = 0.1
MAX_DELAY_S = 2.0
WINDOW_S = 60.0
CAPACITY = 10_000


@dataclass
class LoginThrottle:
    base: float = BASE_DELAY_S
    ceiling: float = MAX_DELAY_S
    window: float = WINDOW_S
    capacity: int = CAPACITY
    _failures: OrderedDict[str, tuple[int, float]] = field(default_factory=OrderedDict)
    """user name -> (consecutive failures, time of the last one)."""

    def failed(self, username: str, now: float) -> float:
        """Record a failed login at `now` (seconds, any monotonic clock); the delay to wait."""
        count, last = self._failures.pop(username, (0, now))
        count = 1 if now - last > self.window else count + 1
        self._failures[username] = (count, now)
        if len(self._failures) > self.capacity:
            self._failures.popitem(last=False)
        return min(self.ceiling, self.base * (1 << min(count - 1, 32)))

    def succeeded(self, username: str) -> None:
        self._failures.pop(username, None)

    def tracked(self) -> int:
        return len(self._failures)
