"""Last-write-wins rules and the live view of stored data.

Replicas must converge whatever order writes arrive in, so reconciliation is a total order on
versions: the greater version wins. For cells it is (timestamp, tombstone-over-live, value bytes,
expiry, smaller ttl): a higher timestamp wins; on a tie a tombstone beats a live value, then the
greater value bytes win, then an expiring cell beats a non-expiring one and a later expiry beats an
earlier one, and finally the smaller TTL (the later write). The same key is used by the SQL upsert
in ``sqlite_schema`` so the store and this module agree by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from tabletdb.storage.mutation import Cell, RowMarker

CellOrderKey = tuple[int, int, bytes, int, int]
MarkerOrderKey = tuple[int, int, int]


def cell_order_key(cell: Cell) -> CellOrderKey:
    return (cell.timestamp, 1 if cell.value is None else 0, cell.value or b"", cell.expiry, -cell.ttl)


def winning_cell(a: Cell, b: Cell) -> Cell:
    return a if cell_order_key(a) >= cell_order_key(b) else b


def marker_order_key(marker: RowMarker) -> MarkerOrderKey:
    return (marker.timestamp, marker.expiry, -marker.ttl)


def winning_marker(a: RowMarker | None, b: RowMarker | None) -> RowMarker | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if marker_order_key(a) >= marker_order_key(b) else b


def max_timestamp(a: int | None, b: int | None) -> int | None:
    """The later of two optional tombstone timestamps."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def is_live(value_present: bool, timestamp: int, expiry: int, deleted_at: int | None, now: int) -> bool:
    """A version is live if it holds a value, no tombstone at or after its timestamp covers it,
    and it has not expired (``expiry`` 0 means never)."""
    if not value_present:
        return False
    if deleted_at is not None and timestamp <= deleted_at:
        return False
    return expiry == 0 or expiry > now


@dataclass(frozen=True, slots=True)
class LiveCell:
    """A cell as a read returns it: value, write timestamp and the TTL left (None: no TTL)."""

    column: str
    path: bytes
    value: bytes
    timestamp: int
    ttl_remaining: int | None


@dataclass(frozen=True, slots=True)
class LiveRow:
    """A live row: its clustering key, live marker (timestamp, TTL left) if any, and live cells."""

    clustering: bytes
    static: bool
    marker: tuple[int, int | None] | None
    cells: tuple[LiveCell, ...]

    def cells_of(self, column: str) -> tuple[LiveCell, ...]:
        return tuple(c for c in self.cells if c.column == column)


@dataclass(frozen=True, slots=True)
class PartitionData:
    """The live content of one partition (or of one slice of it)."""

    partition_key: bytes
    token: int
    static_row: LiveRow | None
    rows: tuple[LiveRow, ...]

    @property
    def row_count(self) -> int:
        """Rows as CQL paging counts them: a partition with only static data counts as one."""
        return len(self.rows) or (1 if self.static_row is not None else 0)


def remaining_ttl(expiry: int, now: int) -> int | None:
    return None if expiry == 0 else expiry - now
