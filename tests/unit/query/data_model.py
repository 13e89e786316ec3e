"""A small pure-Python model of Cassandra's write semantics, the oracle of the state-machine test.

Table ``t (p int, c int, v int, st set<int>, PRIMARY KEY (p, c))``. Every write carries an
explicit, unique timestamp, so last-write-wins never needs its tie-breaks. A version is live
when no tombstone at or after its timestamp covers it and it has not expired.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Version:
    ts: int
    value: int | None  # None: tombstone
    expiry: int = 0

    def live(self, deleted_at: int, now: int) -> bool:
        return self.value is not None and self.ts > deleted_at and (self.expiry == 0 or self.expiry > now)


def _newer(old: Version | None, new: Version) -> Version:
    return new if old is None or new.ts > old.ts else old


@dataclass
class ModelRow:
    marker: Version | None = None
    tombstone: int = -1
    v: Version | None = None
    set_tombstone: int = -1
    elements: dict[int, Version] = field(default_factory=dict)


@dataclass
class ModelPartition:
    tombstone: int = -1
    ranges: list[tuple[int, int]] = field(default_factory=list)  # (c >= lo, ts)
    rows: dict[int, ModelRow] = field(default_factory=dict)


class Model:
    def __init__(self) -> None:
        self.partitions: dict[int, ModelPartition] = {}

    def _row(self, p: int, c: int) -> ModelRow:
        return self.partitions.setdefault(p, ModelPartition()).rows.setdefault(c, ModelRow())

    @staticmethod
    def _expiry(now: int, ttl: int) -> int:
        return now + ttl if ttl else 0

    def insert(self, p: int, c: int, v: int | None, ts: int, ttl: int, now: int) -> None:
        row = self._row(p, c)
        row.marker = _newer(row.marker, Version(ts, 0, self._expiry(now, ttl)))
        self.update_v(p, c, v, ts, ttl, now)

    def update_v(self, p: int, c: int, v: int | None, ts: int, ttl: int, now: int) -> None:
        row = self._row(p, c)
        row.v = _newer(row.v, Version(ts, v, self._expiry(now, ttl) if v is not None else 0))

    def add_elements(self, p: int, c: int, elements: list[int], ts: int, ttl: int, now: int) -> None:
        row = self._row(p, c)
        for e in elements:
            row.elements[e] = _newer(row.elements.get(e), Version(ts, 0, self._expiry(now, ttl)))

    def remove_elements(self, p: int, c: int, elements: list[int], ts: int) -> None:
        row = self._row(p, c)
        for e in elements:
            row.elements[e] = _newer(row.elements.get(e), Version(ts, None))

    def set_elements(self, p: int, c: int, elements: list[int], ts: int, ttl: int, now: int) -> None:
        row = self._row(p, c)
        row.set_tombstone = max(row.set_tombstone, ts - 1)
        self.add_elements(p, c, elements, ts, ttl, now)

    def delete_v(self, p: int, c: int, ts: int) -> None:
        row = self._row(p, c)
        row.v = _newer(row.v, Version(ts, None))

    def delete_row(self, p: int, c: int, ts: int) -> None:
        row = self._row(p, c)
        row.tombstone = max(row.tombstone, ts)

    def delete_from(self, p: int, lo: int, ts: int) -> None:
        self.partitions.setdefault(p, ModelPartition()).ranges.append((lo, ts))

    def delete_partition(self, p: int, ts: int) -> None:
        part = self.partitions.setdefault(p, ModelPartition())
        part.tombstone = max(part.tombstone, ts)

    def rows(self, now: int) -> list[tuple[int, int, int | None, tuple[int, ...] | None]]:
        """Live rows as SELECT p, c, v, st returns them (an empty set reads as null)."""
        out = []
        for p, part in self.partitions.items():
            for c, row in part.rows.items():
                deleted = max([part.tombstone, row.tombstone] + [ts for lo, ts in part.ranges if c >= lo])
                v = row.v.value if row.v is not None and row.v.live(deleted, now) else None
                set_deleted = max(deleted, row.set_tombstone)
                st = tuple(sorted(e for e, ver in row.elements.items() if ver.live(set_deleted, now)))
                marker = row.marker is not None and row.marker.live(deleted, now)
                if marker or v is not None or st:
                    out.append((p, c, v, st or None))
        return sorted(out)
