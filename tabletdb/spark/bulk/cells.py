"""A batch's non-key columns as cell fragments, as the node's INSERT writes them.

Native-typed columns stay serialized values (`tablet_file` turns them into cells with one SQL
statement per column). Non-frozen lists, sets and maps become a collection tombstone just below
the write timestamp plus one cell per element (`statements.cells.whole_value`'s layout), built
here without its per-element objects: list elements take positions above the list middle
numbered from the write timestamp and the element's index, so a load run again writes the very
same cells (the node's INSERT numbers them from a process-wide counter instead). Every other type
(frozen values, tuples, UDTs) goes through `whole_value` itself, so its layout is the INSERT's
whatever it is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice, repeat
from typing import Any, overload

from tabletdb.cql import codec
from tabletdb.cql.errors import CqlError
from tabletdb.cql.types import ListType, MapType, SetType
from tabletdb.schema.model import ColumnDef
from tabletdb.spark.bulk.columns import Elements
from tabletdb.statements.cells import CellChanges, WriteTime, is_multi_cell, whole_value
from tabletdb.statements.keys import LIST_MIDDLE, element_path

Fragment = tuple[Any, ...]
"""A cell without its row: (column, path, timestamp, dead, value, expiry, ttl)."""


class ListFragments(Sequence[Fragment]):
    """The cells of one row's non-frozen list given as serialized elements, made only when
    asked for: what varies per row is the elements, and a file whose rows share a write time
    (`staging`) takes them as they are, so a million rows do not build a tuple per element to
    be taken apart again. Equal to the tuple of its fragments."""

    __slots__ = ("elements", "expiry", "name", "paths", "ts", "ttl")

    def __init__(
        self, elements: Elements, name: str, paths: list[bytes], ts: int, expiry: int, ttl: int
    ) -> None:
        self.elements = elements
        self.name = name
        self.paths = paths
        """At least as many as the elements (more may follow)."""
        self.ts = ts
        self.expiry = expiry
        self.ttl = ttl

    def __len__(self) -> int:
        return len(self.elements)

    def __iter__(self) -> Iterator[Fragment]:
        paths = islice(self.paths, len(self.elements))
        return zip(
            repeat(self.name),
            paths,
            repeat(self.ts),
            repeat(0),
            self.elements,
            repeat(self.expiry),
            repeat(self.ttl),
        )

    @overload
    def __getitem__(self, index: int) -> Fragment: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Fragment, ...]: ...
    def __getitem__(self, index: int | slice) -> Fragment | tuple[Fragment, ...]:
        return tuple(self)[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ListFragments):
            other = tuple(other)
        return isinstance(other, tuple) and tuple(self) == other

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


RowCells = tuple[Sequence[Fragment], tuple[tuple[str, int], ...]]
"""One row's cells of one column (a tuple of fragments, or `ListFragments`), and its collection
tombstones (column, timestamp)."""


@dataclass(frozen=True)
class Built:
    cells: list[RowCells | None]
    """Per row (None for rows not built)."""
    late: dict[int, str]


def _live(when: WriteTime) -> tuple[int, int]:
    """(expiry, ttl) of a live cell written at `when`."""
    return (when.now + when.ttl if when.ttl else 0), when.ttl


def _elements(column: ColumnDef, value: Any, when: WriteTime) -> tuple[Fragment, ...]:
    t = column.type
    name = column.name
    ts = when.timestamp
    expiry, ttl = _live(when)
    if isinstance(t, ListType | SetType):
        serialized = value if isinstance(value, Elements) else [codec.serialize(t.element, e) for e in value]
        if isinstance(t, SetType):
            return tuple((name, element_path(t.element, e), ts, 0, b"", expiry, ttl) for e in serialized)
        paths = _list_paths(ts, len(serialized))
        # zip builds the tuples in C; the constants repeat, the paths and elements pair up
        return tuple(zip(repeat(name), paths, repeat(ts), repeat(0), serialized, repeat(expiry), repeat(ttl)))
    assert isinstance(t, MapType)
    return tuple(
        (
            name,
            element_path(t.key, codec.serialize(t.key, k)),
            ts,
            0,
            codec.serialize(t.value, v),
            expiry,
            ttl,
        )
        for k, v in value
    )


_paths: tuple[int, list[bytes]] = (-1, [])


def _list_paths(ts: int, count: int) -> list[bytes]:
    """The paths of a list's first `count` elements written at `ts` (at least `count` of them):
    above the list middle, numbered from the write timestamp and the index. A load writes most
    rows at one timestamp, so they are made once and kept for the next row."""
    global _paths
    cached_ts, paths = _paths
    if cached_ts != ts or len(paths) < count:
        base = LIST_MIDDLE + ts * 1024
        paths = [(base + i).to_bytes(8, "big") for i in range(max(count, 16))]
        _paths = (ts, paths)
    return paths


def _whole(column: ColumnDef, value: Any, when: WriteTime) -> RowCells:
    changes = CellChanges([], [])
    whole_value(column, value, when, changes)
    fragments = tuple(
        (c.column, c.path, c.timestamp, 1 if c.value is None else 0, c.value or b"", c.expiry, c.ttl)
        for c in changes.cells
    )
    return fragments, tuple(changes.collection_tombstones)


def _list_cells(column: ColumnDef, values: Sequence[Any], whens: Sequence[WriteTime | None]) -> Built:
    """`build_cells` for a non-frozen list whose values came serialized (`Elements`, the common
    case): what varies per row is only the elements, so the rest is worked out once per write
    time (rows of a batch share one) and each row is one `ListFragments`."""
    name = column.name
    out: list[RowCells | None] = []
    late: dict[int, str] = {}
    last: WriteTime | None = None
    tombstone: tuple[tuple[str, int], ...] = ()
    ts = expiry = ttl = 0
    paths: list[bytes] = []
    for row, (value, when) in enumerate(zip(values, whens)):
        if when is None:
            out.append(None)
            continue
        if when is not last:
            last, ts = when, when.timestamp
            expiry, ttl = _live(when)
            tombstone = ((name, ts - 1),)
            paths = _list_paths(ts, 0)
        if value is None:
            out.append(((), tombstone))
            continue
        if not isinstance(value, Elements):
            try:
                out.append((_elements(column, value, when), tombstone))
            except CqlError as exc:
                late[row] = exc.message
                out.append(None)
            continue
        if len(value) > len(paths):
            paths = _list_paths(ts, len(value))
        out.append((ListFragments(value, name, paths, ts, expiry, ttl), tombstone))
    return Built(out, late)


def build_cells(column: ColumnDef, values: Sequence[Any], whens: Sequence[WriteTime | None]) -> Built:
    """Cells of a non-native column for each row with a `when` (others: None)."""
    multi = is_multi_cell(column.type)
    if multi and isinstance(column.type, ListType):
        return _list_cells(column, values, whens)
    out: list[RowCells | None] = []
    late: dict[int, str] = {}
    for row, (value, when) in enumerate(zip(values, whens)):
        if when is None:
            out.append(None)
            continue
        try:
            if multi:
                tombstone = ((column.name, when.timestamp - 1),)
                out.append((() if value is None else _elements(column, value, when), tombstone))
            else:
                out.append(_whole(column, value, when))
        except CqlError as exc:
            late[row] = exc.message
            out.append(None)
    return Built(out, late)
