"""A small immutable mapping used for every collection inside the catalog.

The catalog is a value shared between group0 apply, query execution and system-table rendering,
so nothing may mutate it in place. `FrozenMap.set`/`remove` return a new map; the old one stays
valid. The copy is a C-level dict copy (fast even for thousands of entries), which keeps schema
changes cheap without a full persistent-trie implementation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(Mapping[K, V], Generic[K, V]):
    """Read-only mapping with copy-on-write updates; hashable and comparable by content."""

    __slots__ = ("_data", "_hash")

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._data: dict[K, V] = dict(items)
        self._hash: int | None = None

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._data == other._data
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def set(self, key: K, value: V) -> FrozenMap[K, V]:
        data = self._data.copy()
        data[key] = value
        return FrozenMap._wrap(data)

    def remove(self, key: K) -> FrozenMap[K, V]:
        data = self._data.copy()
        data.pop(key, None)
        return FrozenMap._wrap(data)

    @staticmethod
    def _wrap(data: dict[K, V]) -> FrozenMap[K, V]:
        result: FrozenMap[K, V] = FrozenMap.__new__(FrozenMap)
        result._data = data
        result._hash = None
        return result
