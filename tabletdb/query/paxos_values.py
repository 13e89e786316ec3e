"""What Paxos carries for a lightweight transaction: mutations as values, partitions as reads.

A proposal's value is the mutations of the conditional statement (or batch), encoded once by
the coordinator and applied unchanged by every replica that learns the commit. A promise's read
is the replica's whole partition as one full-fidelity mutation (every cell version, tombstone
and timestamp), so the coordinator can reconcile replicas exactly as storage does: it applies
the reads to a private in-memory store and reads the row back with the normal read path.

The encoding is msgpack over the data path's wire form of mutations (``replica_wire``).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgpack

from tabletdb.query.replica_wire import mutations_from_plain, mutations_to_plain
from tabletdb.storage.mutation import Mutation
from tabletdb.storage.tablet_store import TabletStore


def encode_mutations(mutations: Sequence[Mutation]) -> bytes:
    return bytes(msgpack.packb(mutations_to_plain(mutations), use_bin_type=True))


def decode_mutations(data: bytes) -> list[Mutation]:
    try:
        return mutations_from_plain(msgpack.unpackb(data, raw=False))
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
