"""The CDC log of base writes on this replica: the log rows of each write it applies.

Every replica of a base write derives the same log rows (``replica.cdc_rows``) and applies them
with the write in the same commit tick, to its copy of the log table's tablet, which group0
placed on the base tablet's replicas (``group0.tablets_state``). Client writes, batches, LWT
and read-modify-write commits all reach a replica through ``LocalReplica.apply``, so none of
them misses its log row.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from tabletdb.cdc.generation import Generations, operating
from tabletdb.cdc.tablet_streams import TabletStreams
from tabletdb.replica.cdc_rows import log_mutations
from tabletdb.schema.cdc_log import log_name
from tabletdb.schema.model import Catalog, TableDef
from tabletdb.storage.mutation import Mutation
from tabletdb.tablets.tablet_map import TabletMap


class CdcLog:
    """Finds a base table's log and stream set and builds the log mutations of its writes."""

    def __init__(
        self,
        catalog: Callable[[], Catalog],
        tablet_map: Callable[[uuid.UUID], TabletMap | None],
        generations: Callable[[], Generations] = tuple,
    ) -> None:
        self._catalog = catalog
        self._tablet_map = tablet_map
        self._generations = generations
        self._streams: dict[uuid.UUID, tuple[TabletMap, TabletStreams]] = {}

    def log_of(self, base: TableDef, mutations: Sequence[Mutation]) -> tuple[TableDef, list[Mutation]]:
        """(log table, its mutations) for ``mutations`` of ``base``, whose CDC is enabled."""
        ks = self._catalog().keyspace(base.keyspace)
        log = None if ks is None else ks.tables.get(log_name(base.name))
        if log is None or not log.is_cdc_log:
            raise RuntimeError(f"CDC is enabled on {base.keyspace}.{base.name} but its log table is missing")
        tablet_map = self._tablet_map(base.id)
        if tablet_map is not None:
            return log, log_mutations(base, log, mutations, self._stream_set(base, tablet_map).stream_for)
        return log, log_mutations(base, log, mutations, self._generation_streams(base, mutations))

    def _generation_streams(self, base: TableDef, mutations: Sequence[Mutation]) -> Callable[[int], bytes]:
        """Vnode tables: the generation operating at the write's time (all of one write share it)."""
        stamps = [ts for m in mutations for ts in _timestamps(m)]
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


def _timestamps(m: Mutation) -> list[int]:
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
