"""What the CDC description tables show of the vnode generations: each one's time and streams,
and when a superseded one expires (spec/cdc.md, "Expiry"; ScyllaDB left it a TODO).

Pure. A generation stops receiving log rows when its successor starts operating; its rows
are gone once the longest log TTL has passed after that, so it ``expires`` at its successor's
time plus that TTL, and the tables drop it once the clock is past it. A log table without a TTL
(``ttl`` 0) keeps its rows forever, and then no generation expires.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tabletdb.cdc.generation import Generation, Generations


@dataclass(frozen=True, slots=True)
class Described:
    """A generation as the tables show it: µs it operates from, µs it expired at (None: not)."""

    timestamp: int
    generation: Generation
    expired: int | None


def longest_log_ttl(ttls: Iterable[int]) -> int | None:
    """The longest of the log tables' TTLs in seconds; None if one keeps its rows forever (0)."""
    longest = 0
    for ttl in ttls:
        if ttl <= 0:
            return None
        longest = max(longest, ttl)
    return longest


def described(generations: Generations, longest_ttl: int | None, now_micros: int) -> list[Described]:
    """The generations still shown at ``now_micros``, oldest first, each with its expiry."""
    out = []
    for index, (timestamp, generation) in enumerate(generations):
        expired = None
        if index + 1 < len(generations) and longest_ttl is not None:
            expired = generations[index + 1][0] + longest_ttl * 1_000_000
        if expired is not None and expired <= now_micros:
            continue
        out.append(Described(timestamp, generation, expired))
    return out
