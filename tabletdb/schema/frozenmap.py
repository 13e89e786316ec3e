"""A small persistent (immutable) hash map used for every collection inside the catalog.

The catalog is a value shared between group0 apply, query execution and system-table rendering,
so nothing may mutate it in place, and a schema change must not cost more as the schema grows.
`FrozenMap.set`/`remove` return a new map sharing all untouched structure with the old one: a
32-way hash trie, so an update copies at most one 32-slot node per level (O(log32 n)).

Iteration order follows key hashes, which differ between processes for strings; anything that
must be deterministic across nodes (rendering, serialization) sorts the keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_BITS = 5
_WIDTH = 1 << _BITS
_MASK = _WIDTH - 1
_MAX_SHIFT = 64  # past this every hash bit is used: remaining entries share a collision bucket


class _Leaf:
    __slots__ = ("key", "value")

    def __init__(self, key: Any, value: Any) -> None:
        self.key = key
        self.value = value


class _Bucket:
    """Entries whose hashes are equal in all 64 bits."""

    __slots__ = ("entries",)

    def __init__(self, entries: tuple[_Leaf, ...]) -> None:
        self.entries = entries


_Slot = Any  # None | _Leaf | _Bucket | tuple (child node of _WIDTH slots)
_EMPTY_NODE: tuple[_Slot, ...] = (None,) * _WIDTH


def _hash(key: Any) -> int:
    return hash(key) & 0xFFFFFFFFFFFFFFFF


def _lookup(node: tuple[_Slot, ...], key: Any, h: int, shift: int) -> _Leaf | None:
    while True:
        slot = node[(h >> shift) & _MASK]
        if slot is None:
            return None
        if isinstance(slot, _Leaf):
            return slot if slot.key == key else None
        if isinstance(slot, _Bucket):
            return next((e for e in slot.entries if e.key == key), None)
        node, shift = slot, shift + _BITS


def _insert(node: tuple[_Slot, ...], leaf: _Leaf, h: int, shift: int) -> tuple[tuple[_Slot, ...], bool]:
    """New node with `leaf` set; the flag says whether the key was new."""
    index = (h >> shift) & _MASK
    slot = node[index]
    if slot is None:
        new_slot: _Slot = leaf
        added = True
    elif isinstance(slot, _Leaf):
        if slot.key == leaf.key:
            new_slot, added = leaf, False
        else:
            new_slot, added = _split(slot, leaf, h, shift + _BITS), True
    elif isinstance(slot, _Bucket):
        kept = tuple(e for e in slot.entries if e.key != leaf.key)
        new_slot, added = _Bucket((*kept, leaf)), len(kept) == len(slot.entries)
    else:
        new_slot, added = _insert(slot, leaf, h, shift + _BITS)
    return _replace(node, index, new_slot), added


def _replace(node: tuple[_Slot, ...], index: int, slot: _Slot) -> tuple[_Slot, ...]:
    copy = list(node)
    copy[index] = slot
    return tuple(copy)


def _split(old: _Leaf, new: _Leaf, h: int, shift: int) -> _Slot:
    if shift >= _MAX_SHIFT:
        return _Bucket((old, new))
    child, _ = _insert(_EMPTY_NODE, old, _hash(old.key), shift)
    child, _ = _insert(child, new, h, shift)
    return child


def _delete(node: tuple[_Slot, ...], key: Any, h: int, shift: int) -> tuple[_Slot, ...] | None:
    """New node without `key`, or None if the key is absent."""
    index = (h >> shift) & _MASK
    slot = node[index]
    if slot is None:
        return None
    if isinstance(slot, _Leaf):
        if slot.key != key:
            return None
        new_slot: _Slot = None
    elif isinstance(slot, _Bucket):
        kept = tuple(e for e in slot.entries if e.key != key)
        if len(kept) == len(slot.entries):
            return None
        new_slot = kept[0] if len(kept) == 1 else _Bucket(kept)
    else:
        child = _delete(slot, key, h, shift + _BITS)
        if child is None:
            return None
        new_slot = _compact(child)
    return _replace(node, index, new_slot)


def _compact(child: tuple[_Slot, ...]) -> _Slot:
    """Collapse a child holding a single leaf (or nothing) so lookups stay short."""
    used = [s for s in child if s is not None]
    if not used:
        return None
    if len(used) == 1 and isinstance(used[0], _Leaf):
        return used[0]
    return child


def _walk(node: tuple[_Slot, ...]) -> Iterator[_Leaf]:
    for slot in node:
        if slot is None:
            continue
        if isinstance(slot, _Leaf):
            yield slot
        elif isinstance(slot, _Bucket):
            yield from slot.entries
        else:
            yield from _walk(slot)


def _missing(
    node: tuple[_Slot, ...], other: tuple[_Slot, ...], other_root: tuple[_Slot, ...], by_value: bool
) -> Iterator[_Leaf]:
    """Leaves under `node` that the map rooted at `other_root` lacks (by key, or with
    `by_value` by key and value object); `other` is the node at the same position there.

    Slots both maps share (the same object) are skipped, so two versions of a map where one
    was derived from the other by a few updates compare in O(updates * depth)."""
    for slot, other_slot in zip(node, other, strict=True):
        if slot is other_slot or slot is None:
            continue
        if isinstance(slot, tuple) and isinstance(other_slot, tuple):
            yield from _missing(slot, other_slot, other_root, by_value)
            continue
        leaves = (
            [slot] if isinstance(slot, _Leaf) else slot.entries if isinstance(slot, _Bucket) else _walk(slot)
        )
        for leaf in leaves:
            found = _lookup(other_root, leaf.key, _hash(leaf.key), 0)
            if found is None or (by_value and found.value is not leaf.value):
                yield leaf


class FrozenMap(Mapping[K, V], Generic[K, V]):
    """Read-only mapping with structure-sharing updates; hashable and comparable by content."""

    __slots__ = ("_hash", "_len", "_root")

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        root = _EMPTY_NODE
        length = 0
        pairs = items.items() if isinstance(items, Mapping) else items
        for key, value in pairs:
            root, added = _insert(root, _Leaf(key, value), _hash(key), 0)
            length += added
        self._root = root
        self._len = length
        self._hash: int | None = None

    def __getitem__(self, key: K) -> V:
        leaf = _lookup(self._root, key, _hash(key), 0)
        if leaf is None:
            raise KeyError(key)
        value: V = leaf.value
        return value

    def __contains__(self, key: object) -> bool:
        return _lookup(self._root, key, _hash(key), 0) is not None

    def __iter__(self) -> Iterator[K]:
        return (leaf.key for leaf in _walk(self._root))

    def __len__(self) -> int:
        return self._len

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FrozenMap):
            return NotImplemented
        if self._root is other._root:
            return True
        if len(self) != len(other):
            return False
        missing = object()
        return all(other.get(leaf.key, missing) == leaf.value for leaf in _walk(self._root))

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenMap({dict(self.items())!r})"

    def keys_missing_from(self, other: FrozenMap[K, V]) -> list[K]:
        """Keys of this map that `other` lacks, in time proportional to how much the two differ
        when one was derived from the other (untouched structure is shared, so skipped)."""
        return [leaf.key for leaf in _missing(self._root, other._root, other._root, False)]

    def items_missing_from(self, other: FrozenMap[K, V]) -> list[tuple[K, V]]:
        """Items of this map that `other` lacks or holds with another value object: what a
        change from this map to `other` removed or replaced (cheap like keys_missing_from)."""
        return [(leaf.key, leaf.value) for leaf in _missing(self._root, other._root, other._root, True)]

    def set(self, key: K, value: V) -> FrozenMap[K, V]:
        root, added = _insert(self._root, _Leaf(key, value), _hash(key), 0)
        return self._derive(root, self._len + added)

    def remove(self, key: K) -> FrozenMap[K, V]:
        root = _delete(self._root, key, _hash(key), 0)
        return self if root is None else self._derive(root, self._len - 1)

    def _derive(self, root: tuple[_Slot, ...], length: int) -> FrozenMap[K, V]:
        result: FrozenMap[K, V] = FrozenMap.__new__(FrozenMap)
        result._root = root
        result._len = length
        result._hash = None
        return result
