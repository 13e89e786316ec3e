"""Building a new materialized view from the base table's existing rows.

Run by the coordinator of CREATE MATERIALIZED VIEW once the view is in the catalog (from then
on every base replica also maintains it for new writes, ``views.updates``). The coordinator scans
the base and writes the view rows through the write coordinator: where it is the base's only
replica it holds the table against derived writes (``DerivedLocks``) and reads its own stores;
where the base is replicated it reads at QUORUM and writes at QUORUM without a lock. Each view
row is stamped with the newest timestamp of its base row's cells (as ScyllaDB's view builder
does), not a fresh one: a write racing the build derives its changes at its own, later,
timestamp, so the build can never resurrect a view row that write moved or deleted.
"""

from __future__ import annotations

import logging

from tabletdb.coordinator.consistency import ONE, QUORUM
from tabletdb.coordinator.reads import ConsistentReads
from tabletdb.coordinator.rows import OutRow, scan_rows
from tabletdb.group0.view_builds import STARTED, SUCCESS
from tabletdb.schema.ddl_common import SchemaChangeEvent
from tabletdb.schema.model import Catalog, TableDef, ViewDef
from tabletdb.statements.restrictions import Restrictions
from tabletdb.storage.mutation import Mutation
from tabletdb.views.backfill import Backfill, record_builds
from tabletdb.views.base_snapshot import BaseRow
from tabletdb.views.view_rows import view_mutations

log = logging.getLogger(__name__)

FLUSH_ROWS = 256
"""View mutations written per round while scanning."""


async def build_view(backfill: Backfill, base: TableDef, view: ViewDef) -> int:
    """Write ``view``'s rows for the data ``base`` already holds; returns the base rows scanned."""
    if backfill.placement.local_only(base) and backfill.placement.local_only(view.table):
        async with backfill.locks.building(base.id):
            return await _build(backfill, base, view, ONE)
    return await _build(backfill, base, view, QUORUM)


async def _build(backfill: Backfill, base: TableDef, view: ViewDef, cl: int) -> int:
    now = backfill.clock.now_seconds()
    fallback = backfill.clock.timestamp()
    pending: list[Mutation] = []
    count = 0
    async for row in scan_rows(base, ConsistentReads(backfill.reads, cl), Restrictions(), now, None):
        count += 1
        backfill.progress.advance(view.keyspace, view.table.name, row.token)
        ck = row.clustering or b""
        stamp = max((c.timestamp for c in row.cells.values()), default=fallback)
        pending.extend(view_mutations(view, base, {}, {ck: _base_row(row)}, stamp, now))
        if len(pending) >= FLUSH_ROWS:
            await backfill.writes.write(view.table, pending, cl)
            pending = []
    if pending:
        await backfill.writes.write(view.table, pending, cl)
    return count


def _base_row(row: OutRow) -> BaseRow:
    """A scanned row as view derivation takes it. The scan does not show the row marker, so the
    row counts as live as long as its cells when all of them carry a TTL (else forever)."""
    ttls = [c.ttl_remaining for c in row.cells.values()]
    live = None if not ttls or any(t is None for t in ttls) else max(t for t in ttls if t is not None)
    return BaseRow(row.values, row.cells, live)


async def build_new_view(backfill: Backfill, catalog: Catalog, event: SchemaChangeEvent) -> None:
    """After CREATE MATERIALIZED VIEW: fill the view the change event names from its base."""
    view = catalog.view(event.keyspace, event.name)
    base = None if view is None else catalog.table(event.keyspace, view.base_table_name)
    if view is not None and base is not None:
        await record_builds(backfill, [view.table.id], STARTED)
        with backfill.progress.tracking(view.keyspace, view.table.name):
            scanned = await build_view(backfill, base, view)
        await record_builds(backfill, [view.table.id], SUCCESS)
        log.info("built view view=%s.%s rows=%d", view.keyspace, view.table.name, scanned)
