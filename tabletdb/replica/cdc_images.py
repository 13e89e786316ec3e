"""CDC pre-images and post-images of a base write, pure (ScyllaDB's "Preimages and postimages").

A replica that applies a write to a table with ``preimage`` or ``postimage`` enabled reads the
written partition first (``replica.cdc_log``, under the partition's lock, so the read sees every
earlier write to it and no later one). From that read:

* a pre-image row (``cdc$operation`` 0) for each clustering row (or static row) the write
  inserts, updates or deletes, if that row was live: the columns the write changes (preimage
  ``true``) or all of them (``'full'``), a null one flagged by ``cdc$deleted_<col>``;
* a post-image row (9) for each row the write inserts or updates: the read row with the
  write's changes applied, every column, no deletion flags (a row delete gets none).

Range and partition deletes get neither, since they may touch any number of rows. As in
ScyllaDB, a post-image assumes the write wins over what was read (it is the pre-image with the
delta applied, whatever the timestamps).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tabletdb.cdc.list_keys import key_of_position
from tabletdb.cql.types import ListType, MapType, SetType, UserType
from tabletdb.schema.cdc_log import DELETED
from tabletdb.schema.model import ColumnDef, ColumnKind, TableDef
from tabletdb.statements.keys import element_of_path
from tabletdb.statements.udt_cells import join_fields, live_fields
from tabletdb.storage.mutation import RowWrite
from tabletdb.storage.reconcile import LiveRow

Image = dict[str, bytes | dict[bytes, bytes]]
"""A row's columns: a single-cell column's value, or a collection's cells by path."""


@dataclass(frozen=True)
class ImageOptions:
    preimage: str  # "false" | "true" | "full"
    postimage: bool

    @property
    def wanted(self) -> bool:
        return self.preimage != "false" or self.postimage


def row_columns(base: TableDef, static: bool) -> list[ColumnDef]:
    """The non-key columns an image of a static (or clustering) row shows."""
    return [c for c in base.columns if not c.is_primary_key and (c.kind is ColumnKind.STATIC) == static]


def read_image(base: TableDef, row: LiveRow | None, static: bool) -> Image | None:
    """The live row as an image (None: no live row, so no pre-image)."""
    if row is None or (row.marker is None and not row.cells):
        return None
    kinds = {c.name: c.type.is_multi_cell for c in row_columns(base, static)}
    image: Image = {}
    for cell in row.cells:
        if cell.column not in kinds:
            continue  # a dropped column's leftovers
        if kinds[cell.column]:
            cells = image.setdefault(cell.column, {})
            assert isinstance(cells, dict)
            cells[cell.path] = cell.value
        else:
            image[cell.column] = cell.value
    return image


def changed_columns(base: TableDef, row: RowWrite) -> set[str]:
    """The columns a row write changes; all of its kind for a row delete."""
    if row.tombstone is not None:
        return {c.name for c in row_columns(base, row.static)}
    return {c.column for c in row.cells} | {name for name, _ in row.collection_tombstones}


def after_write(before: Image | None, row: RowWrite, cleared: bool) -> Image:
    """``before`` with ``row``'s changes applied; ``cleared``: a row or partition delete in the
    same write removed what was read first."""
    image: Image = {} if before is None or cleared or row.tombstone is not None else dict(before)
    for name, _ in row.collection_tombstones:
        image.pop(name, None)
    for cell in row.cells:
        if cell.path:
            current = image.get(cell.column)
            cells = dict(current) if isinstance(current, dict) else {}
            if cell.value is None:
                cells.pop(cell.path, None)
            else:
                cells[cell.path] = cell.value
            if cells:
                image[cell.column] = cells
            else:
                image.pop(cell.column, None)
        elif cell.value is None:
            image.pop(cell.column, None)
        else:
            image[cell.column] = cell.value
    return image


def image_values(base: TableDef, image: Image, columns: Iterable[str], flag_nulls: bool) -> dict[str, bytes]:
    """Log cells of ``columns`` from ``image`` (collections frozen), and ``cdc$deleted_<col>`` for
    the null ones when ``flag_nulls`` (pre-images)."""
    out: dict[str, bytes] = {}
    for name in columns:
        value = image.get(name)
        if value is None:
            if flag_nulls:
                out[DELETED + name] = b"\x01"
        elif isinstance(value, dict):
            out[name] = _frozen(base, name, value)
        else:
            out[name] = value
    return out


def _frozen(base: TableDef, name: str, cells: dict[bytes, bytes]) -> bytes:
    t = base.column(name).type  # type: ignore[union-attr]  # images hold the base's own columns
    ordered = sorted(cells.items())
    if isinstance(t, UserType):  # an old whole-value cell (empty path) sorts first, fields win
        fields = live_fields(t, ((path, value, 1 if path else 0) for path, value in ordered))
        return join_fields(fields or [None] * len(t.field_types))
    if isinstance(t, SetType):
        items = [element_of_path(t.element, path) for path, _ in ordered]
    elif isinstance(t, MapType):
        items = [b for path, value in ordered for b in (element_of_path(t.key, path), value)]
    elif isinstance(t, ListType):  # the map of elements by timeuuid key, as the log column holds
        items = [b for path, value in ordered for b in (key_of_position(path), value)]
    else:
        raise ValueError(f"CDC cannot show column {name} ({t.cql()}) in an image")
    count = len(ordered)
    return count.to_bytes(4, "big", signed=True) + b"".join(
        len(i).to_bytes(4, "big", signed=True) + i for i in items
    )
