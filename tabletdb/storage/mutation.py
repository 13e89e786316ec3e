"""The write unit of the storage layer: a partition's worth of cells, markers and tombstones.

A Mutation is what replicas receive and apply; it carries everything needed to reconcile it
with what is stored (Cassandra semantics, DESIGN.md decision 6) and nothing about CQL types:
keys and values are bytes already encoded by the caller. Clustering keys must be byte-comparable
(memcmp order == clustering order) so SQLite can order and slice them natively.

Times: ``timestamp`` is the write time in microseconds (client or coordinator supplied);
``expiry`` and ``now`` are seconds since the epoch; ``ttl`` is in seconds, 0 meaning none.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell version. ``value`` None is a cell tombstone; ``path`` is the collection element key.

    For a live cell with a TTL, ``expiry`` is when it stops being live. For a tombstone,
    ``expiry`` is the local deletion time (only used to order otherwise identical tombstones).
    """

    column: str
    value: bytes | None
    timestamp: int
    path: bytes = b""
    ttl: int = 0
    expiry: int = 0

    def __post_init__(self) -> None:
        if self.ttl < 0:
            raise ValueError(f"cell {self.column!r}: ttl must not be negative, got {self.ttl}")
        if self.value is not None and (self.ttl > 0) != (self.expiry > 0):
            raise ValueError(
                f"cell {self.column!r}: a live cell has both a ttl and an expiry or neither "
                f"(ttl={self.ttl}, expiry={self.expiry})"
            )

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


@dataclass(frozen=True, slots=True)
class RowMarker:
    """Row liveness written by INSERT: the row exists even if all its cells are null."""

    timestamp: int
    ttl: int = 0
    expiry: int = 0


@dataclass(frozen=True, slots=True)
class Bound:
    """One end of a clustering range: a byte-comparable key and whether it is included."""

    key: bytes
    inclusive: bool = True


def prefix_end(prefix: bytes) -> Bound | None:
    """The exclusive end bound covering every key that starts with ``prefix`` (None: no end).

    Deleting or reading "all rows whose clustering starts with P" becomes the byte range
    [P, prefix_end(P)); the successor is P with trailing 0xFF bytes dropped and the last byte
    incremented.
    """
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return Bound(stripped[:-1] + bytes([stripped[-1] + 1]), inclusive=False)


@dataclass(frozen=True, slots=True)
class ClusteringSlice:
    """Clustering keys between ``start`` and ``end`` (None: unbounded on that side)."""

    start: Bound | None = None
    end: Bound | None = None

    def contains(self, key: bytes) -> bool:
        if self.start is not None and (
            key < self.start.key or (key == self.start.key and not self.start.inclusive)
        ):
            return False
        return not (
            self.end is not None and (key > self.end.key or (key == self.end.key and not self.end.inclusive))
        )


FULL_SLICE = ClusteringSlice()


@dataclass(frozen=True, slots=True)
class RangeTombstone:
    """Deletes the regular rows whose clustering key lies in ``clustering`` (ts <= timestamp)."""

    clustering: ClusteringSlice
    timestamp: int


@dataclass(frozen=True, slots=True)
class RowWrite:
    """Changes to one row. ``static`` rows hold static columns (one per partition, no marker)."""

    clustering: bytes = b""
    static: bool = False
    marker: RowMarker | None = None
    tombstone: int | None = None
    cells: tuple[Cell, ...] = ()
    collection_tombstones: tuple[tuple[str, int], ...] = ()
    """(column, timestamp): deletes every element of that collection written at or before it."""

    def __post_init__(self) -> None:
        if self.static and (self.clustering or self.marker is not None or self.tombstone is not None):
            raise ValueError("a static row has no clustering key, row marker or row tombstone")


@dataclass(frozen=True, slots=True)
class Mutation:
    """All changes to one partition, identified by its key bytes and token."""

    partition_key: bytes
    token: int
    partition_tombstone: int | None = None
    rows: tuple[RowWrite, ...] = ()
    range_tombstones: tuple[RangeTombstone, ...] = field(default=())
