"""Multi-column clustering slices over columns of mixed ASC/DESC order, as byte ranges.

``(c1, c2) > (1, 2)`` compares tuples by value, column by column, whatever the declared order;
with c1 ASC and c2 DESC the rows it selects are not one contiguous range of storage order. It is
the union of ``c1 > 1`` and ``c1 = 1 AND c2 > 2``: each piece an equality prefix plus a range on
one column, which is a contiguous range in that column's own order. Both bounds of a slice
become such unions; their pairwise intersections, sorted, are the slices to read (disjoint, so
rows come back once each, in clustering order).
"""

from __future__ import annotations

from collections.abc import Sequence

from tabletdb.cql.bytecomparable import upper_bound
from tabletdb.schema.model import ClusteringOrder, TableDef
from tabletdb.statements.keys import clustering_bound
from tabletdb.storage.mutation import Bound, ClusteringSlice

TupleBound = tuple[list[bytes], bool]
"""(values, inclusive) of one end of a multi-column slice."""


def _piece(
    table: TableDef, equal: list[bytes], value: bytes | None, greater: bool, inclusive: bool
) -> tuple[bytes, bytes]:
    """[start, end) of keys starting with ``equal`` whose next column is greater (or less) than
    ``value`` (``value`` None: exactly the prefix ``equal``)."""
    if value is None:
        return (
            clustering_bound(table, equal, lower=True, inclusive=True),
            clustering_bound(table, equal, lower=False, inclusive=True),
        )
    descending = table.clustering_key[len(equal)].clustering_order is ClusteringOrder.DESC
    after_in_storage = greater != descending
    whole_start = clustering_bound(table, equal, lower=True, inclusive=True)
    whole_end = clustering_bound(table, equal, lower=False, inclusive=True)
    at = [*equal, value]
    if after_in_storage:
        return clustering_bound(table, at, lower=True, inclusive=inclusive), whole_end
    return whole_start, clustering_bound(table, at, lower=False, inclusive=inclusive)


def _union(
    table: TableDef, prefix: list[bytes], bound: TupleBound, greater: bool
) -> list[tuple[bytes, bytes]]:
    values, inclusive = bound
    pieces = [_piece(table, prefix + values[:j], values[j], greater, False) for j in range(len(values))]
    if inclusive:
        pieces.append(_piece(table, prefix + values, None, greater, True))
    return pieces


def mixed_order_slices(
    table: TableDef, prefix: list[bytes], lower: TupleBound | None, upper: TupleBound | None
) -> list[ClusteringSlice]:
    """The storage slices holding keys with ``prefix`` whose next columns lie within the bounds."""
    whole = [_piece(table, prefix, None, True, True)]
    lows = _union(table, prefix, lower, True) if lower is not None else whole
    highs = _union(table, prefix, upper, False) if upper is not None else whole
    ranges: list[tuple[bytes, bytes]] = []
    for lo_start, lo_end in lows:
        for hi_start, hi_end in highs:
            start, end = max(lo_start, hi_start), min(lo_end, hi_end)
            if start < end:
                ranges.append((start, end))
    return [_slice(start, end) for start, end in sorted(ranges)]


def _slice(start: bytes, end: bytes) -> ClusteringSlice:
    return ClusteringSlice(
        None if not start else Bound(start, inclusive=True),
        None if end == upper_bound([], True) else Bound(end, inclusive=False),
    )


def is_mixed(table: TableDef, position: int, bounds: Sequence[TupleBound | None]) -> bool:
    """Whether the columns a multi-column slice covers (from ``position``) mix ASC and DESC."""
    width = max((len(b[0]) for b in bounds if b is not None), default=0)
    orders = {
        c.clustering_order is ClusteringOrder.DESC for c in table.clustering_key[position : position + width]
    }
    return len(orders) > 1


def _start_key(bound: Bound | None) -> tuple[bytes, int] | None:
    """A start bound as a point of the key line: (key, 0) from key on, (key, 1) after it."""
    return None if bound is None else (bound.key, 0 if bound.inclusive else 1)


def _end_key(bound: Bound | None) -> tuple[bytes, int] | None:
    """An end bound as a point of the key line: (key, 1) up to key included, (key, 0) before it."""
    return None if bound is None else (bound.key, 1 if bound.inclusive else 0)


def intersect(a: Sequence[ClusteringSlice], b: Sequence[ClusteringSlice]) -> list[ClusteringSlice]:
    """The keys in both lists of slices, as sorted disjoint slices: several restrictions on the
    same clustering columns (``c > 1 AND c > 3``, ``(c) < (1) AND (c, d) < (1, 2)``) select the
    rows every one of them selects."""
    out = []
    for x in a:
        for y in b:
            xs, ys = _start_key(x.start), _start_key(y.start)
            start = x.start if ys is None or (xs is not None and xs >= ys) else y.start
            xe, ye = _end_key(x.end), _end_key(y.end)
            end = x.end if ye is None or (xe is not None and xe <= ye) else y.end
            s, e = _start_key(start), _end_key(end)
            if s is None or e is None or s < e:
                out.append(ClusteringSlice(start, end))
    return sorted(out, key=lambda sl: _start_key(sl.start) or (b"", -1))
