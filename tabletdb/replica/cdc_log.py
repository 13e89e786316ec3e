"""The CDC log of base writes on this replica: the log rows of each write it applies.

Every replica of a base write derives the same log rows (``replica.cdc_rows``) and applies them
with the write in the same commit tick, to its copy of the log table's tablet, which group0
placed on the base tablet's replicas (``group0.tablets_state``). Client writes, batches, LWT
and read-modify-write commits all reach a replica through ``LocalReplica.apply``, so none of
them misses its log row.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Sequence

from tabletdb.cdc.generation import Generations, operating
from tabletdb.cdc.tablet_streams import TabletStreams
from tabletdb.replica.cdc_rows import Before, StreamOf, log_mutations
from tabletdb.replica.derived_locks import DerivedLocks
from tabletdb.replica.stores import DataStores, damaged_replica
from tabletdb.schema.cdc_log import CdcOptions, log_name
from tabletdb.schema.model import Catalog, TableDef
from tabletdb.storage.mutation import Mutation
from tabletdb.storage.reconcile import PartitionData
from tabletdb.storage.tablet_store import TabletCorrupt, TabletUnavailable
from tabletdb.tablets.tablet_map import TabletMap


class CdcLog:
    """Finds a base table's log and stream set and builds the log mutations of its writes."""

    def __init__(
        self,
        catalog: Callable[[], Catalog],
        tablet_map: Callable[[uuid.UUID], TabletMap | None],
        generations: Callable[[], Generations] = tuple,
        locks: DerivedLocks | None = None,
        now_seconds: Callable[[], int] | None = None,
    ) -> None:
        self._catalog = catalog
        self._tablet_map = tablet_map
        self._generations = generations
        self._streams: dict[uuid.UUID, tuple[TabletMap, TabletStreams]] = {}
        self._locks = locks
        """Partition locks for writes that read before they write (images); None: no images."""
        self._now = now_seconds

    def wants_images(self, base: TableDef) -> bool:
        """Whether ``base``'s writes log pre- or post-images, so must read before they write."""
        options = CdcOptions.of(base)
        return (options.preimage != "false" or options.postimage) and self._now is not None

    @contextlib.asynccontextmanager
    async def reading(
        self, base: TableDef, mutations: Sequence[Mutation], stores: DataStores
    ) -> AsyncIterator[Before]:
        """Hold the written partitions and give them as read before the write (for the images).

        The lock is per partition, in a lock space of its own (the table id's CDC twin), so the
        view maintenance the base write may do inside it takes its own lock without waiting on
        this one. Every image-logging write to a partition passes here, and each one holds the
        lock until its write is applied, so the read sees every earlier write and no later one.
        """
        keys = sorted({(m.partition_key, m.token) for m in mutations})
        assert self._now is not None, "images need a clock"
        hold = (
            self._locks.writing(_image_lock_id(base.id), [k for k, _ in keys])
            if self._locks is not None
            else contextlib.nullcontext()
        )
        async with hold:
            now = self._now()
            yield {key: _read(stores, base, key, token, now) for key, token in keys}

    def log_of(
        self, base: TableDef, mutations: Sequence[Mutation], before: Before | None = None
    ) -> tuple[TableDef, list[Mutation]]:
        """(log table, its mutations) for ``mutations`` of ``base``, whose CDC is enabled; with
        ``before`` (``reading``), also the pre- and post-images its options ask for."""
        ks = self._catalog().keyspace(base.keyspace)
        log = None if ks is None else ks.tables.get(log_name(base.name))
        if log is None or not log.is_cdc_log:
            raise RuntimeError(f"CDC is enabled on {base.keyspace}.{base.name} but its log table is missing")
        tablet_map = self._tablet_map(base.id)
        stream_of: StreamOf
        if tablet_map is not None:
            stream_of = self._stream_set(base, tablet_map).stream_for
        else:
            stream_of = self._generation_streams(base, mutations)
        return log, log_mutations(base, log, mutations, stream_of, before)

    def _generation_streams(self, base: TableDef, mutations: Sequence[Mutation]) -> Callable[[int], bytes]:
        """Vnode tables: the generation operating at the write's time (all of one write share it)."""
        stamps = [ts for m in mutations for ts in write_timestamps(m)]
        generation = operating(self._generations(), max(stamps, default=0))
        if generation is None:
            raise RuntimeError(
                f"CDC on {base.keyspace}.{base.name}: no CDC generation is committed yet (the ring was "
                "empty when CDC was enabled); ALTER the table's cdc options again once the node has joined"
            )
        return generation.stream_for

    def _stream_set(self, base: TableDef, tablet_map: TabletMap) -> TabletStreams:
        cached = self._streams.get(base.id)
        if cached is not None and cached[0] is tablet_map:
            return cached[1]
        streams = TabletStreams(base.id, tuple(t.last_token for t in tablet_map.tablets))
        self._streams[base.id] = (tablet_map, streams)
        return streams


def _image_lock_id(table_id: uuid.UUID) -> uuid.UUID:
    return uuid.uuid5(table_id, "cdc images")


def _read(stores: DataStores, base: TableDef, key: bytes, token: int, now: int) -> PartitionData | None:
    try:
        return stores.store(base, token).read_partition(key, now)
    except (TabletCorrupt, TabletUnavailable) as exc:
        raise damaged_replica(base, exc) from exc


def write_timestamps(m: Mutation) -> list[int]:
    """Every timestamp a base mutation writes with (cells, markers, tombstones)."""
    stamps = [rt.timestamp for rt in m.range_tombstones]
    if m.partition_tombstone is not None:
        stamps.append(m.partition_tombstone)
    for row in m.rows:
        stamps += [c.timestamp for c in row.cells]
        if row.marker is not None:
            stamps.append(row.marker.timestamp)
        if row.tombstone is not None:
            stamps.append(row.tombstone)
    return stamps
