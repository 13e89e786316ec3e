"""What Paxos carries for a lightweight transaction: mutations as values, partitions as reads.

A proposal's value is the mutations of the conditional statement (or batch), encoded once by
the coordinator and applied unchanged by every replica that learns the commit. A promise's read
is the replica's whole partition as one full-fidelity mutation (every cell version, tombstone
and timestamp), so the coordinator can reconcile replicas exactly as storage does: it applies
the reads to a private in-memory store and reads the row back with the normal read path.

The encoding is msgpack over plain lists; it names no CQL types, only storage's bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
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
from tabletdb.storage.tablet_store import TabletStore


def _bound(b: Bound | None) -> list[Any] | None:
    return None if b is None else [b.key, b.inclusive]


def _bound_of(data: Any) -> Bound | None:
    return None if data is None else Bound(bytes(data[0]), bool(data[1]))


def _row(r: RowWrite) -> list[Any]:
    marker = None if r.marker is None else [r.marker.timestamp, r.marker.ttl, r.marker.expiry]
    cells = [[c.column, c.value, c.timestamp, c.path, c.ttl, c.expiry] for c in r.cells]
    return [r.clustering, r.static, marker, r.tombstone, cells, [list(t) for t in r.collection_tombstones]]


def _row_of(d: Any) -> RowWrite:
    marker = None if d[2] is None else RowMarker(*d[2])
    cells = tuple(
        Cell(c[0], None if c[1] is None else bytes(c[1]), c[2], bytes(c[3]), c[4], c[5]) for c in d[4]
    )
    return RowWrite(bytes(d[0]), bool(d[1]), marker, d[3], cells, tuple((t[0], t[1]) for t in d[5]))


def mutation_to_plain(m: Mutation) -> list[Any]:
    tombs = [[_bound(t.clustering.start), _bound(t.clustering.end), t.timestamp] for t in m.range_tombstones]
    return [m.partition_key, m.token, m.partition_tombstone, [_row(r) for r in m.rows], tombs]


def mutation_of(d: Any) -> Mutation:
    tombs = tuple(RangeTombstone(ClusteringSlice(_bound_of(t[0]), _bound_of(t[1])), t[2]) for t in d[4])
    return Mutation(bytes(d[0]), d[1], d[2], tuple(_row_of(r) for r in d[3]), tombs)


def encode_mutations(mutations: Sequence[Mutation]) -> bytes:
    return bytes(msgpack.packb([mutation_to_plain(m) for m in mutations], use_bin_type=True))


def decode_mutations(data: bytes) -> list[Mutation]:
    try:
        return [mutation_of(d) for d in msgpack.unpackb(data, raw=False)]
    except (ValueError, TypeError, IndexError, msgpack.ExtraData) as exc:
        raise ValueError(f"malformed Paxos value ({len(data)} bytes): {exc}") from exc


def reconciled_store(reads: Sequence[bytes | None]) -> TabletStore:
    """A private in-memory store holding the replicas' partitions merged last-write-wins.

    The caller reads the row it needs with the usual read path, then closes the store.
    """
    store = TabletStore(":memory:")
    try:
        store.apply([m for r in reads if r is not None for m in decode_mutations(r)])
    except BaseException:
        store.close()
        raise
    return store
