"""Keeps the CDC generation of vnode keyspaces current when the ring changes (issue 16 item 2).

A generation is built for one ring; once nodes join or leave, its ranges no longer refine the
vnodes and log rows could land off their base replicas. The group0 leader checks on every idle
turn of its topology task (``group0.tablet_planning.cdc_generation_outdated``, pure) and, when
a CDC table of a vnode keyspace exists and the latest generation does not fit the members' ring,
commits a schema command that puts that table again, unchanged: the deciding node's planner
builds the new generation for it (``cdc_generation_for``), operating a few seconds after it is
decided, so every node has applied it before its first write (one group0 entry carries both the
streams and the time, so no node can know the one without the other). A join's ring change waits
for that generation to operate (``latest_cdc_generation`` feeds ``topology.cdc_switch``).
"""

from __future__ import annotations

import logging
from typing import Protocol

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.tablet_planning import cdc_generation_outdated
from tabletdb.query.metadata_store import Decision
from tabletdb.schema.ddl_common import NOOP, DdlOutcome
from tabletdb.schema.model import Catalog
from tabletdb.schema.mutations import PutTable
from tabletdb.topology.cdc_switch import LatestGeneration

log = logging.getLogger(__name__)


class _Group0(Protocol):
    @property
    def state(self) -> ClusterState: ...

    async def change_schema(self, decide: Decision) -> DdlOutcome: ...


async def keep_cdc_generation(group0: _Group0) -> None:
    """Commit a new generation if the ring moved away from the latest one (see module doc)."""
    table = cdc_generation_outdated(group0.state)
    if table is None:
        return
    keyspace, name = table.keyspace, table.name

    def touch(catalog: Catalog) -> DdlOutcome:
        current = catalog.table(keyspace, name)
        if current is None or not current.options.cdc_enabled:
            return NOOP  # dropped or disabled meanwhile: the next turn looks again
        return DdlOutcome((PutTable(current),))

    log.info("CDC generation no longer fits the ring; committing a new one with table=%s.%s", keyspace, name)
    await group0.change_schema(touch)


def latest_cdc_generation(state: ClusterState) -> LatestGeneration | None:
    """What a ring change waits on: the latest vnode generation, if a vnode CDC table exists."""
    generations = state.metadata.cdc_generations
    if not generations or not _has_vnode_cdc_table(state.metadata.catalog):
        return None
    time_us, generation = generations[-1]
    return LatestGeneration(time_us, frozenset(e.range_end for e in generation.entries))


def _has_vnode_cdc_table(catalog: Catalog) -> bool:
    return any(
        t.options.cdc_enabled
        for ks in catalog.keyspaces.values()
        if not ks.definition.uses_tablets
        for t in ks.tables.values()
    )
