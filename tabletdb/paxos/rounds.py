"""What Paxos carries for a lightweight transaction: mutations as values, partitions as reads.

A proposal's value is the mutations of the conditional statement (or batch), encoded once by
the coordinator and applied unchanged by every replica that learns the commit. A promise's read
is the replica's whole partition as one full-fidelity mutation (every cell version, tombstone
and timestamp), so the coordinator can reconcile replicas exactly as storage does: it applies
the reads to a scratch in-memory store and reads the row back with the normal read path.

The encoding is msgpack over the data path's wire form of mutations (``replica.wire``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import msgpack

from tabletdb.cql.consistency import SERIAL
from tabletdb.dht.token import TokenRange
from tabletdb.paxos.messages import Ballot
from tabletdb.replica.wire import mutations_from_plain, mutations_to_plain
from tabletdb.schema.model import TableDef
from tabletdb.statements.modifications import CurrentCells
from tabletdb.storage.mutation import Bound, ClusteringSlice, Mutation
from tabletdb.storage.reconcile import LiveCell
from tabletdb.storage.tablet_store import TabletStore

OnRead = Callable[[Ballot, Sequence[bytes | None]], bytes | None]
"""Given the ballot and the promise quorum's reads, the value to propose (None: do not write)."""


class PaxosRounds(Protocol):
    """The cluster side of a transaction (``node.paxos_service`` implements it over the network)."""

    async def transact(
        self,
        table: TableDef,
        token: int,
        partition_key: bytes,
        on_read: OnRead,
        serial: int = SERIAL,
        commit: int | None = None,
        budget: float | None = None,
    ) -> bool:
        """Run Paxos for the partition; True if our value was committed, False if none was proposed.

        ``serial`` is SERIAL (all replicas) or LOCAL_SERIAL (those in the coordinator's DC).
        ``commit``: a consistency level the commit must meet as well as a quorum (None: a quorum).
        ``budget``: seconds the whole transaction may take (None: the CAS contention timeout
        plus the write timeout).

        Raises Unavailable when fewer than a quorum of replicas are alive, and WriteTimeout (write
        type CAS) when time ran out, including when our value may or may not have been chosen.
        """
        ...


def encode_mutations(mutations: Sequence[Mutation]) -> bytes:
    return bytes(msgpack.packb(mutations_to_plain(mutations), use_bin_type=True))


def decode_mutations(data: bytes) -> list[Mutation]:
    try:
        return mutations_from_plain(msgpack.unpackb(data, raw=False))
    except (ValueError, TypeError, IndexError, msgpack.ExtraData) as exc:
        raise ValueError(f"malformed Paxos value ({len(data)} bytes): {exc}") from exc


class Reconciler:
    """Merges replicas' reads of a partition last-write-wins, in one reused in-memory store.

    Opening a store costs over a millisecond (its schema), more than the rest of a transaction's
    CPU; one scratch store per node, emptied after each use, avoids that. `reconciled` must
    not be held across an ``await``: two transactions would see each other's partitions.
    """

    def __init__(self) -> None:
        self._store: TabletStore | None = None

    @contextlib.contextmanager
    def reconciled(self, reads: Sequence[bytes | None]) -> Iterator[TabletStore | None]:
        """The merged partition in a store (None when no replica has any data for it)."""
        mutations = [m for r in reads if r is not None for m in decode_mutations(r)]
        if not mutations:
            yield None
            return
        if self._store is None:
            self._store = TabletStore(":memory:")
        store = self._store
        try:
            store.apply(mutations)
            yield store
        finally:
            for token in {m.token for m in mutations}:
                store.delete_token_range(TokenRange(token - 1, token))


def cells_in(store: TabletStore | None, now: int) -> CurrentCells:
    """``CurrentCells`` answered from one store (None: nothing stored anywhere, every cell absent)."""

    def read(key: bytes, token: int, ck: bytes, static: bool, column: str) -> Sequence[LiveCell]:
        if store is None:
            return ()
        if static:
            data = store.read_partition(key, now, limit=0)
            row = None if data is None else data.static_row
        else:
            slice_ = ClusteringSlice(Bound(ck), Bound(ck))
            data = store.read_partition(key, now, slice_, include_static=False)
            row = None if data is None or not data.rows else data.rows[0]
        return () if row is None else row.cells_of(column)

    return read
