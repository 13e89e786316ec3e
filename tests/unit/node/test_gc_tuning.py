"""The serving node's collector settings: start-up's objects frozen, young passes less often."""

from __future__ import annotations

import gc
import weakref

from tabletdb.node.gc_tuning import YOUNG_THRESHOLD, MetadataFreezer, tune_for_serving


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


def test_metadata_freezer_freezes_at_most_once_per_interval() -> None:
    now = [100.0]
    freezer = MetadataFreezer(clock=lambda: now[0], every=5.0)
    try:
        freezer.changed()
        first = gc.get_freeze_count()
        assert freezer.freezes == 1 and first > 0
        grown: list[object] = [[i] for i in range(1000)]  # metadata that arrives meanwhile
        now[0] += 4.9
        freezer.changed()
        assert freezer.freezes == 1  # throttled: the new objects are still the collector's
        assert any(o is grown for o in gc.get_objects())
        now[0] += 0.2
        freezer.changed()
        assert freezer.freezes == 2 and gc.get_freeze_count() >= first + len(grown)
        assert all(o is not grown for o in gc.get_objects())  # frozen: no pass walks it
    finally:
        gc.unfreeze()


def test_metadata_freezer_frees_recent_cyclic_garbage_instead_of_freezing_it() -> None:
    class Node:
        peer: object = None

    freezer = MetadataFreezer(clock=lambda: 0.0)
    try:
        a, b = Node(), Node()
        a.peer, b.peer = b, a
        ref = weakref.ref(a)
        del a, b  # a cycle: only the collector can free it
        freezer.changed()
        assert ref() is None
    finally:
        gc.unfreeze()
