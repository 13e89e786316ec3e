"""What the data path needs from the node's storage: stores by token, and stores by range.

The query layer cannot import the node layer (DESIGN.md layering), so the node's storage
service implements this protocol and is handed to the executors. A ``Segment`` is a token range
and the stores holding it on this node, in token order; a range held by several stores (a vnode
table's shards) is merged by the reader.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from tabletdb.cql.consistency import ONE
from tabletdb.cql.errors import ReadFailure
from tabletdb.dht.token import TokenRange
from tabletdb.schema.model import TableDef
from tabletdb.storage.group_commit import GroupCommitter
from tabletdb.storage.mutation import Mutation
from tabletdb.storage.tablet_store import StorageError, TabletStore
from tabletdb.tablets.tablet_map import TabletMap


@dataclass(frozen=True)
class Segment:
    token_range: TokenRange
    stores: tuple[TabletStore, ...]


class Committer(Protocol):
    """Where a write of one token goes: one store's group committer, or two while a resize is
    prepared (``WriteBoth``); reads use ``store``."""

    @property
    def store(self) -> TabletStore: ...

    def apply(self, mutations: Sequence[Mutation]) -> Awaitable[object]: ...


class WriteBoth:
    """A write applied to the current file and to the next generation's (a split or merge being
    prepared: ``topology.resize``); durable once both are. Reads stay on ``store`` (the current)."""

    __slots__ = ("committers", "store")

    def __init__(self, store: TabletStore, committers: tuple[GroupCommitter, GroupCommitter]) -> None:
        self.store = store
        self.committers = committers

    def apply(self, mutations: Sequence[Mutation]) -> Awaitable[object]:
        return asyncio.gather(*(c.apply(mutations) for c in self.committers))


class DataStores(Protocol):
    def committer(self, table: TableDef, token: int) -> Committer:
        """The group committer of the store that owns ``token`` of ``table`` on this node."""
        ...

    def store(self, table: TableDef, token: int) -> TabletStore:
        """The store that owns ``token`` of ``table`` on this node."""
        ...

    def segments(self, table: TableDef) -> Sequence[Segment]:
        """Every range of ``table`` this node holds, in token order."""
        ...

    def tablet_maps(self) -> Mapping[uuid.UUID, TabletMap]:
        """The tablet maps this node routes by (from group0)."""
        ...

    def truncate(self, table: TableDef) -> None:
        """Remove all data of ``table`` on this node (its files)."""
        ...


def damaged_replica(table: TableDef, exc: StorageError) -> ReadFailure:
    """The client's error when a write must read this node's replica first (list index, UDT field,
    view maintenance at RF=1) and that replica is damaged or being repaired: a CQL error naming
    the table, never ServerError (the storage service has logged the file and what to do)."""
    return ReadFailure(
        f"Cannot read {table.keyspace}.{table.name} on this node before writing: {exc}",
        ONE,
        0,
        1,
        1,
        False,
    )
