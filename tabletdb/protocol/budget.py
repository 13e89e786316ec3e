"""The memory budget of requests in flight, shared by a server's connections (sans-I/O).

Every received request holds its bytes until it is answered; without a bound, many connections
sending large requests grow the node without limit. A request charges its size before it is
dispatched and gives it back when answered. When the budget is used up the request waits (its
connection stops reading) instead of failing, like Scylla's request memory semaphore: a busy node
slows clients down rather than erroring. Waiters are granted in arrival order so a large request
is not starved by small ones. A request larger than the whole budget charges the whole budget, so
it runs alone rather than never.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

Grant = Callable[[int], None]


class InFlightBudget:
    """Bytes available to requests in flight; `acquire` grants now or queues the grant callback."""

    __slots__ = ("_waiters", "available", "capacity")

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"in-flight budget must be positive, got {capacity}")
        self.capacity = capacity
        self.available = capacity
        self._waiters: deque[tuple[int, Grant]] = deque()

    def charge_for(self, size: int) -> int:
        """What a request of `size` bytes charges: its size, at most the whole budget."""
        return min(max(size, 0), self.capacity)

    def try_acquire(self, size: int) -> int | None:
        """Charge `size` now if it fits and nobody waits; the charge, or None to wait."""
        charge = self.charge_for(size)
        if self._waiters or charge > self.available:
            return None
        self.available -= charge
        return charge

    def wait(self, size: int, grant: Grant) -> None:
        """Queue `grant`, called with the charge once the request's bytes are available."""
        self._waiters.append((self.charge_for(size), grant))

    def cancel(self, grant: Grant) -> None:
        """Forget a queued grant (its connection closed); later waiters may now proceed."""
        self._waiters = deque(w for w in self._waiters if w[1] is not grant)
        self._grant_waiters()

    def release(self, charge: int) -> None:
        """Give back what a request charged, and grant the waiters that now fit, in order."""
        self.available = min(self.capacity, self.available + charge)
        self._grant_waiters()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def _grant_waiters(self) -> None:
        waiters = self._waiters
        while waiters and waiters[0][0] <= self.available:
            charge, grant = waiters.popleft()
            self.available -= charge
            grant(charge)
