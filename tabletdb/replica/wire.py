"""Mutations and read answers as plain msgpack-able lists, for the replica RPC verbs.

Positional lists rather than dicts: a write carries one of these per partition and the field
names would be most of the bytes. Every decoder is the exact inverse of its encoder (property
tested), so a mutation applied on a remote replica is the one the coordinator built.

A read digest is a hash of the encoded answer, write timestamps and TTLs included: two replicas
agree only if they would return the same cells with the same versions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import msgpack

from tabletdb.storage.mutation import (
    Bound,
    Cell,
    ClusteringSlice,
    Mutation,
    RangeTombstone,
    RowMarker,
    RowWrite,
)
from tabletdb.storage.reconcile import LiveCell, LiveRow, PartitionData
from tabletdb.storage.tablet_store import ScanPosition

# The replica verbs: what a coordinator asks of another node's replica.
VERB_APPLY = "data.apply"
VERB_READ = "data.read"
VERB_SCAN = "data.scan"
VERB_MUTATIONS = "data.mutations"
VERB_TRUNCATE = "data.truncate"
VERB_COUNT = "data.count"
"""``[start, end, now]`` -> the CQL rows of that range on the replica (``replica.range_reads``)."""
VERB_VALUES = "data.values"
"""``[start, end, now, columns, limit, after]`` -> ``[rows, next]``: live rows with the values of
the named columns, a multi-cell one as its packed live cells (``replica.range_reads.live_values``)."""

Plain = list[Any]


def apply_payload(table_id: bytes, mutations: Plain, topology_version: int, *, log: bool = True) -> Plain:
    """``VERB_APPLY``'s request: the table, its mutations, the topology version the coordinator
    chose the replicas by (checked against the replica's fence, ``replica.fencing``), and whether
    the replica writes the change's CDC log rows (not for read repair: already logged)."""
    return [table_id, mutations, topology_version, log]


def _bound_to_plain(b: Bound | None) -> Plain | None:
    return None if b is None else [b.key, b.inclusive]


def _bound_from_plain(p: Plain | None) -> Bound | None:
    return None if p is None else Bound(p[0], p[1])


def slice_to_plain(s: ClusteringSlice) -> Plain:
    return [_bound_to_plain(s.start), _bound_to_plain(s.end)]


def slice_from_plain(p: Plain) -> ClusteringSlice:
    return ClusteringSlice(_bound_from_plain(p[0]), _bound_from_plain(p[1]))


def _row_to_plain(r: RowWrite) -> Plain:
    marker = None if r.marker is None else [r.marker.timestamp, r.marker.ttl, r.marker.expiry]
    cells = [[c.column, c.value, c.timestamp, c.path, c.ttl, c.expiry] for c in r.cells]
    return [r.clustering, r.static, marker, r.tombstone, cells, [list(t) for t in r.collection_tombstones]]


def _row_from_plain(p: Plain) -> RowWrite:
    clustering, static, marker, tombstone, cells, collection_tombstones = p
    return RowWrite(
        clustering=clustering,
        static=static,
        marker=None if marker is None else RowMarker(marker[0], marker[1], marker[2]),
        tombstone=tombstone,
        cells=tuple(Cell(c[0], c[1], c[2], c[3], c[4], c[5]) for c in cells),
        collection_tombstones=tuple((t[0], t[1]) for t in collection_tombstones),
    )


def mutation_to_plain(m: Mutation) -> Plain:
    return [
        m.partition_key,
        m.token,
        m.partition_tombstone,
        [_row_to_plain(r) for r in m.rows],
        [[slice_to_plain(rt.clustering), rt.timestamp] for rt in m.range_tombstones],
    ]


def mutation_from_plain(p: Plain) -> Mutation:
    key, token, tombstone, rows, range_tombstones = p
    return Mutation(
        partition_key=key,
        token=token,
        partition_tombstone=tombstone,
        rows=tuple(_row_from_plain(r) for r in rows),
        range_tombstones=tuple(RangeTombstone(slice_from_plain(s), ts) for s, ts in range_tombstones),
    )


def mutations_to_plain(ms: Iterable[Mutation]) -> list[Plain]:
    return [mutation_to_plain(m) for m in ms]


def mutations_from_plain(ps: Iterable[Plain]) -> list[Mutation]:
    return [mutation_from_plain(p) for p in ps]


def _live_row_to_plain(r: LiveRow) -> Plain:
    marker = None if r.marker is None else list(r.marker)
    cells = [[c.column, c.path, c.value, c.timestamp, c.ttl_remaining] for c in r.cells]
    return [r.clustering, r.static, marker, cells]


def _live_row_from_plain(p: Plain) -> LiveRow:
    clustering, static, marker, cells = p
    return LiveRow(
        clustering,
        static,
        None if marker is None else (marker[0], marker[1]),
        tuple(LiveCell(c[0], c[1], c[2], c[3], c[4]) for c in cells),
    )


def partition_to_plain(d: PartitionData) -> Plain:
    static = None if d.static_row is None else _live_row_to_plain(d.static_row)
    return [d.partition_key, d.token, static, [_live_row_to_plain(r) for r in d.rows]]


def partition_from_plain(p: Plain) -> PartitionData:
    key, token, static, rows = p
    return PartitionData(
        key,
        token,
        None if static is None else _live_row_from_plain(static),
        tuple(_live_row_from_plain(r) for r in rows),
    )


def position_to_plain(pos: ScanPosition | None) -> Plain | None:
    return None if pos is None else [pos.token, pos.partition_key, pos.clustering, pos.rows_in_partition]


def position_from_plain(p: Plain | None) -> ScanPosition | None:
    return None if p is None else ScanPosition(p[0], p[1], p[2], p[3])


def digest_of(partitions: Sequence[Plain], next_position: Plain | None) -> bytes:
    """The digest replicas compare: the encoded answer, versions included, hashed."""
    packed = msgpack.packb([partitions, next_position], use_bin_type=True)
    return hashlib.blake2b(packed, digest_size=16).digest()
