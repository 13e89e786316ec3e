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

Measured with ``bench/bench_request_path`` (docs/benchmarks.md, perf4).
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000
"""Net container allocations between young-generation passes (CPython's default is 700)."""


def tune_for_serving() -> None:
    """Freeze what start-up built and collect the young generation less often."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
