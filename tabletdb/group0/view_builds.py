"""Build status of views and indexes, held in group0 (ScyllaDB's ``view_build_status``).

The coordinator of CREATE MATERIALIZED VIEW / CREATE INDEX fills the new view for the whole
cluster before it answers (``views.build``). It records the fill's start and end as group0
commands, so every node — after a restart too — can tell a view that is built from one whose
fill is running or was cut short by a crash, and ``system_distributed.view_build_status`` shows
one row per host as ScyllaDB does. As in ScyllaDB with tablets (whose view building coordinator
marks every normal node at once), a status covers the token-owning nodes of the moment it is
applied: the fill writes through the normal write path, so every replica takes its part.

A status is keyed by the view's table id (an index's: its index table's id), so a view dropped
and created again under the same name starts afresh; records of views that no longer exist are
dropped whenever a status is applied.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tabletdb.schema.model import Catalog

STARTED = "STARTED"
SUCCESS = "SUCCESS"
STATUSES = (STARTED, SUCCESS)


@dataclass(frozen=True)
class ViewBuildRecord:
    view_id: uuid.UUID
    status: str
    hosts: tuple[uuid.UUID, ...]
    """The token-owning nodes when the status was applied, sorted."""


ViewBuilds = tuple[ViewBuildRecord, ...]


@dataclass(frozen=True)
class ViewBuildCommand:
    """Set the status of one view's build. Idempotent: a proposal repeated after a lost answer
    sets the same status again."""

    command_id: uuid.UUID
    view_id: uuid.UUID
    status: str

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"view build status must be one of {STATUSES}, not {self.status!r}")


def live_view_ids(catalog: Catalog) -> frozenset[uuid.UUID]:
    """Table ids of every view and every index with an index table."""
    ids: set[uuid.UUID] = set()
    for ks in catalog.keyspaces.values():
        ids.update(view.table.id for view in ks.views.values())
        ids.update(index.table_id for index in ks.indexes.values() if index.table_id is not None)
    return frozenset(ids)


def apply_view_build(
    builds: ViewBuilds, command: ViewBuildCommand, catalog: Catalog, hosts: Iterable[uuid.UUID]
) -> ViewBuilds:
    """``builds`` with the command's status for its view (if the view still exists), records
    of dropped views left out; deterministic on every node."""
    live = live_view_ids(catalog)
    kept = [r for r in builds if r.view_id in live and r.view_id != command.view_id]
    if command.view_id in live:
        kept.append(
            ViewBuildRecord(command.view_id, command.status, tuple(sorted(hosts, key=lambda h: h.bytes)))
        )
    return tuple(sorted(kept, key=lambda r: r.view_id.bytes))


def status_of(builds: ViewBuilds, view_id: uuid.UUID | None) -> ViewBuildRecord | None:
    """The recorded status of a view (None: none recorded — a view created before statuses
    were recorded, or an index answered by filtering, which needs no fill)."""
    for record in builds:
        if record.view_id == view_id:
            return record
    return None


def command_to_plain(c: ViewBuildCommand) -> dict[str, Any]:
    return {"id": c.command_id.bytes, "view": c.view_id.bytes, "status": c.status}


def command_from_plain(d: dict[str, Any]) -> ViewBuildCommand:
    return ViewBuildCommand(uuid.UUID(bytes=d["id"]), uuid.UUID(bytes=d["view"]), str(d["status"]))


def builds_to_plain(builds: ViewBuilds) -> list[Any]:
    return [[r.view_id.bytes, r.status, [h.bytes for h in r.hosts]] for r in builds]


def builds_from_plain(data: list[Any]) -> ViewBuilds:
    return tuple(
        ViewBuildRecord(uuid.UUID(bytes=v), str(s), tuple(uuid.UUID(bytes=h) for h in hosts))
        for v, s, hosts in data
    )
