"""Reading a partition back out of a tablet file as one full-fidelity Mutation.

Split, merge and cleanup move data between files by token range; re-applying these mutations in
the target file reproduces every stored version and tombstone, and because apply is
last-write-wins the copy can safely overlap writes that reach the target directly.
"""

from __future__ import annotations

import sqlite3

from tabletdb.storage.mutation import Cell, ClusteringSlice, Mutation, RangeTombstone, RowMarker, RowWrite
from tabletdb.storage.read_path import bound_from_columns
from tabletdb.storage.sqlite_schema import STATIC_KIND

_RowKey = tuple[int, bytes]


def mutations_for_partition(
    conn: sqlite3.Connection, pk: bytes, token: int, tombstone: int | None
) -> Mutation:
    """Everything stored for partition ``pk`` (its tombstone read by the caller, earlier).

    Each statement sees the file as of its own start, and a compaction may commit between two
    of them (``TabletStore.compact_written`` runs beside reads): it drops shadowed data together
    with the tombstones it then collects. So tombstones are read before the data they shadow —
    data read later can only have lost what a tombstone already read covers — and never after,
    which could pair shadowed data with its tombstone already gone."""
    collection_tombs: dict[_RowKey, list[tuple[str, int]]] = {}
    for kind, ck, col, ts in conn.execute(
        "SELECT kind, ck, col, ts FROM collection_tombstones WHERE pk = ? ORDER BY kind, ck, col", (pk,)
    ):
        collection_tombs.setdefault((kind, ck), []).append((col, ts))
    range_tombstones = tuple(
        RangeTombstone(ClusteringSlice(bound_from_columns(sk, s), bound_from_columns(ek, e)), ts)
        for sk, s, ek, e, ts in conn.execute(
            "SELECT start_kind, start, end_kind, end, ts FROM range_tombstones WHERE pk = ? "
            "ORDER BY start_kind, start, end_kind, end",
            (pk,),
        )
    )
    stored_rows = conn.execute(
        "SELECT kind, ck, marker_ts, marker_ttl, marker_expiry, tombstone FROM rows "
        "WHERE pk = ? ORDER BY kind, ck",
        (pk,),
    ).fetchall()
    cells: dict[_RowKey, list[Cell]] = {}
    for kind, ck, col, path, ts, dead, value, expiry, ttl in conn.execute(
        "SELECT kind, ck, col, path, ts, dead, value, expiry, ttl FROM cells "
        "WHERE pk = ? ORDER BY kind, ck, col, path",
        (pk,),
    ):
        cells.setdefault((kind, ck), []).append(Cell(col, None if dead else value, ts, path, ttl, expiry))
    rows: list[RowWrite] = []
    for kind, ck, marker_ts, marker_ttl, marker_expiry, row_tombstone in stored_rows:
        key = (kind, ck)
        marker = None if marker_ts is None else RowMarker(marker_ts, marker_ttl, marker_expiry)
        rows.append(
            RowWrite(
                clustering=ck,
                static=kind == STATIC_KIND,
                marker=marker,
                tombstone=row_tombstone,
                cells=tuple(cells.get(key, ())),
                collection_tombstones=tuple(collection_tombs.get(key, ())),
            )
        )
    return Mutation(pk, token, tombstone, tuple(rows), range_tombstones)
