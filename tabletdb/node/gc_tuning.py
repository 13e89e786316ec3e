"""Garbage-collector settings for a serving node.

CPython's default collector runs a young-generation pass every 700 net container allocations;
a request allocates a few hundred (frames, dicts, dataclasses, futures), so the default makes a
pass every couple of requests, and every tenth of those also walks the older generation. The
long-lived heap of a node (catalog, parser tables, modules: ~200k objects) is built at start
and barely changes while serving, yet each full pass walks it. So once the node serves:

* ``gc.freeze()``: what start-up built moves to the permanent generation, which passes never
  walk. No ``gc.collect()`` first: on a node that full pass takes tens of milliseconds right
  when the first clients connect (start-up time is a goal of its own), and the cyclic garbage
  it would free is a bounded, one-time amount that stays frozen instead;
* a young threshold of ``YOUNG_THRESHOLD``: fewer, larger passes. Request garbage is almost all
  freed by reference counting; the collector is only for cycles, which are rare on the request
  path, so this costs a few megabytes of uncollected cycles at most.

Group0 state keeps growing while serving, though: every CREATE TABLE of a tablets table adds
its tablet map (tens of tablets, each with replica UUIDs) to the persistent maps. Left to the
collector, that heap is walked by every full pass; at 5,000 tablet tables a full pass took
~0.65 s on the event loop, two or three times per hundred DDLs (docs/benchmarks.md, group0
round 4). ``MetadataFreezer`` therefore freezes again after metadata changes, at most once per
``REFREEZE_SECONDS``, after a young/middle pass so that recent cyclic garbage is freed rather
than frozen. ``gc.freeze`` only moves list heads, so it costs nothing per object. What it gives
up: an object alive at a freeze that later becomes *cyclic* garbage is never freed (acyclic
garbage, most of it, is still freed by reference counting); old group0 states are trees of
immutable values, freed by reference counting.

Measured with ``bench/bench_request_path`` (docs/benchmarks.md, perf4) and
``bench/bench_group0`` (round 4).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

YOUNG_THRESHOLD = 20_000
"""Net container allocations between young-generation passes (CPython's default is 700)."""
REFREEZE_SECONDS = 5.0
"""Least time between two freezes that follow metadata changes."""


def tune_for_serving() -> None:
    """Freeze what start-up built and collect the young generation less often."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


class MetadataFreezer:
    """Freezes the collector's view of the heap after metadata changes, throttled (see above)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, every: float = REFREEZE_SECONDS) -> None:
        self._clock = clock
        self._every = every
        self._last: float | None = None
        self.freezes = 0

    def changed(self) -> None:
        """Metadata changed: freeze what is alive now, unless a freeze happened lately."""
        now = self._clock()
        if self._last is not None and now - self._last < self._every:
            return
        self._last = now
        gc.collect(1)  # young and middle generations only: cheap, frees recent cyclic garbage
        gc.freeze()
        self.freezes += 1
