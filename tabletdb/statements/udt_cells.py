"""A non-frozen user type stored as one cell per field, as ScyllaDB stores it.

A field's cell path is its index as a big-endian ``smallint`` (the form ScyllaDB's CDC log shows
in ``cdc$deleted_elements_<col>``), so ``SET u.f = ?`` writes one cell and a whole-value
assignment is a column-wide tombstone just below the write timestamp plus the non-null fields,
exactly like a non-frozen map. A value with no live field is null.

Files written before this form stored the whole value as one cell with an empty path. Such a
cell still reads: it gives every field the value it holds, at its own timestamp, and a field
cell written later wins over it. A field update that finds one (the update reads the column
first) rewrites the value in this form, so the old cell never has to be merged with a field
deletion it cannot see (``statements.udt_fields``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tabletdb.cql import wire
from tabletdb.cql.types import UserType

WHOLE_VALUE_PATH = b""
"""The path of a value stored whole by an earlier version."""


def field_path(index: int) -> bytes:
    return index.to_bytes(2, "big", signed=True)


def field_index(path: bytes) -> int:
    return int.from_bytes(path, "big", signed=True)


def split_value(t: UserType, data: bytes) -> list[bytes | None]:
    """Each field's serialized bytes (None: null) of a serialized value, padded to every field."""
    fields = wire.split_fields(data, t, len(t.field_types))
    return list(fields) + [None] * (len(t.field_types) - len(fields))


def join_fields(fields: Sequence[bytes | None]) -> bytes:
    """The serialized value of a user type from its fields' serialized bytes (None: null)."""
    return b"".join(wire.pack_bytes(f) for f in fields)


def live_fields(t: UserType, cells: Iterable[tuple[bytes, bytes, int]]) -> list[bytes | None] | None:
    """The fields of a column from its live cells ``(path, value, timestamp)``; None when no field
    is live (the value is null). An old whole-value cell gives each field its value unless a
    newer field cell exists."""
    fields: list[bytes | None] = [None] * len(t.field_types)
    stamps = [-1] * len(t.field_types)
    for path, value, ts in cells:
        if path == WHOLE_VALUE_PATH:
            for i, raw in enumerate(split_value(t, value)):
                if ts > stamps[i]:
                    fields[i], stamps[i] = raw, ts
            continue
        i = field_index(path)
        if 0 <= i < len(fields) and ts >= stamps[i]:
            fields[i], stamps[i] = value, ts
    if all(f is None for f in fields):
        return None
    return fields
