"""TabletMapLookup: one lookup per maps object, a new maps object seen at once."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, cast

from tabletdb.tablets.tablet_map import TabletMap, TabletMapLookup


class _CountingMaps(dict[uuid.UUID, Any]):
    gets = 0

    def get(self, key: uuid.UUID, default: Any = None) -> Any:
        type(self).gets += 1
        return super().get(key, default)


def test_looks_up_once_per_maps_object_and_follows_a_new_one() -> None:
    table, other = uuid.uuid4(), uuid.uuid4()
    first, second = object(), object()
    current: list[Mapping[uuid.UUID, TabletMap]] = [cast(Any, _CountingMaps({table: first}))]
    lookup = TabletMapLookup(lambda: current[0])
    assert lookup(table) is first
    assert lookup(uuid.UUID(bytes=table.bytes)) is first  # an equal UUID, another object
    assert lookup(other) is None
    assert _CountingMaps.gets == 2  # table once, other once
    current[0] = cast(Any, _CountingMaps({table: second, other: first}))
    assert lookup(table) is second
    assert lookup(other) is first
