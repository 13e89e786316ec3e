"""The serving node's collector settings: start-up's objects frozen, young passes less often."""

from __future__ import annotations

import gc

from tabletdb.node.gc_tuning import YOUNG_THRESHOLD, tune_for_serving


def test_tune_for_serving_freezes_and_raises_the_young_threshold() -> None:
    before = gc.get_threshold()
    try:
        survivor: list[object] = [["built at start"]]
        tune_for_serving()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_THRESHOLD, before[1], before[2])
        assert gc.is_tracked(survivor)
        assert all(o is not survivor for o in gc.get_objects())  # frozen: no pass walks it
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
