"""The group0 command every coordinator step (and every new request) is: the whole next
topology value, guarded by the state id it was decided on, plus the tablet entries it moves.

Apply is deterministic and a no-op when the topology state moved on, so two coordinators that
both believe they lead can never both act on one state id: whichever command is applied first
wins and the other is dropped on every node alike. Tablet entries are guarded too (each names the
tablet as it was when decided), because schema commands change tablet maps on their own id: a
table dropped meanwhile simply has nothing left to move.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tabletdb.cdc.tablet_streams import StreamSet, stream_sets_from_plain, stream_sets_to_plain
from tabletdb.tablets.count import ResizeState
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap
from tabletdb.tablets.wire import (
    tablet_info_from_plain,
    tablet_info_to_plain,
    tablet_map_from_plain,
    tablet_map_to_plain,
)
from tabletdb.topology.rf_request import SchemaUpdate, schema_update_from_plain, schema_update_to_plain
from tabletdb.topology.state import TopologyState, state_from_plain, state_to_plain

COMMAND_FORMAT = 1


@dataclass(frozen=True)
class TabletUpdate:
    """Replace one tablet's entry, if it still is `before`."""

    table_id: uuid.UUID
    tablet_id: int
    before: TabletInfo
    after: TabletInfo


@dataclass(frozen=True)
class MapUpdate:
    """Replace a table's whole map (a resize: begun, rolled back, or cut over), if it still has
    the resize sequence number, resize state and tablet count it was decided on."""

    table_id: uuid.UUID
    before_seq: int
    before_resize: ResizeState
    before_count: int
    after: TabletMap

    def matches(self, tm: TabletMap | None) -> bool:
        return (
            tm is not None
            and tm.resize_seq_number == self.before_seq
            and tm.resize is self.before_resize
            and tm.tablet_count == self.before_count
        )


def map_update(before: TabletMap, after: TabletMap) -> MapUpdate:
    return MapUpdate(before.table_id, before.resize_seq_number, before.resize, before.tablet_count, after)


@dataclass(frozen=True)
class TopologyCommand:
    prev_state_id: uuid.UUID
    topology: TopologyState
    """The next value; its state_id is the command's new id."""
    tablet_updates: tuple[TabletUpdate, ...] = ()
    reason: str = ""
    """One line for logs and traces (`start leave of ...`, `advance 4 tablets to streaming`)."""
    map_updates: tuple[MapUpdate, ...] = ()
    """Whole maps a resize replaces (``topology.resize``); applied after ``tablet_updates``."""
    stream_sets: tuple[StreamSet, ...] = ()
    """CDC stream sets a resize cut-over opens (a CDC table's tablets changed)."""
    schema: SchemaUpdate | None = None
    """A keyspace definition written with this step (a finishing RF change: ``topology.rf_change``);
    the command then also needs the catalog to still be at ``schema.catalog_version``."""

    @property
    def new_state_id(self) -> uuid.UUID:
        return self.topology.state_id


def apply_tablet_updates(
    maps: Mapping[uuid.UUID, TabletMap], updates: Sequence[TabletUpdate]
) -> dict[uuid.UUID, TabletMap]:
    """The maps that `updates` change, with the updates applied (tablets no longer as decided are
    left alone); the caller merges them into its own map collection."""
    changed: dict[uuid.UUID, TabletMap] = {}
    for u in updates:
        tm = changed.get(u.table_id) or maps.get(u.table_id)
        if tm is None or not 0 <= u.tablet_id < tm.tablet_count or tm.tablets[u.tablet_id] != u.before:
            continue
        changed[u.table_id] = tm.with_tablet(u.tablet_id, u.after)
    return changed


def apply_map_updates(
    maps: Mapping[uuid.UUID, TabletMap], updates: Sequence[MapUpdate]
) -> dict[uuid.UUID, TabletMap]:
    """The maps that whole-map `updates` replace (a table dropped or changed meanwhile is left alone)."""
    return {u.table_id: u.after for u in updates if u.matches(maps.get(u.table_id))}


def apply_command(
    topology: TopologyState, tablets: Mapping[uuid.UUID, TabletMap], command: TopologyCommand
) -> tuple[TopologyState, dict[uuid.UUID, TabletMap], bool]:
    """The topology after `command`, the tablet maps it changed, and whether it took effect
    (False: the state moved on since the command was decided; nothing changes)."""
    if command.prev_state_id != topology.state_id:
        return topology, {}, False
    changed = apply_tablet_updates(tablets, command.tablet_updates)
    if command.map_updates:
        changed.update(apply_map_updates({**tablets, **changed}, command.map_updates))
    return command.topology, changed, True


def command_to_plain(c: TopologyCommand) -> dict[str, Any]:
    plain = {
        "f": COMMAND_FORMAT,
        "prev": c.prev_state_id.bytes,
        "state": state_to_plain(c.topology),
        "tablets": [
            [u.table_id.bytes, u.tablet_id, tablet_info_to_plain(u.before), tablet_info_to_plain(u.after)]
            for u in c.tablet_updates
        ],
        "why": c.reason,
        **_resize_to_plain(c),
    }
    if c.schema is not None:
        plain["schema"] = schema_update_to_plain(c.schema)
    return plain


def _resize_to_plain(c: TopologyCommand) -> dict[str, Any]:
    """Only a resize step carries these keys, so other commands encode as before."""
    out: dict[str, Any] = {}
    if c.map_updates:
        out["maps"] = [
            [
                u.table_id.bytes,
                u.before_seq,
                u.before_resize.value,
                u.before_count,
                tablet_map_to_plain(u.after),
            ]
            for u in c.map_updates
        ]
    if c.stream_sets:
        out["cdc"] = stream_sets_to_plain(c.stream_sets)
    return out


def command_from_plain(d: dict[str, Any]) -> TopologyCommand:
    if d.get("f") != COMMAND_FORMAT:
        raise ValueError(f"unknown topology command format {d.get('f')!r}, expected {COMMAND_FORMAT}")
    return TopologyCommand(
        uuid.UUID(bytes=bytes(d["prev"])),
        state_from_plain(d["state"]),
        tuple(
            TabletUpdate(
                uuid.UUID(bytes=bytes(t)), int(i), tablet_info_from_plain(b), tablet_info_from_plain(a)
            )
            for t, i, b, a in d["tablets"]
        ),
        d["why"],
        tuple(
            MapUpdate(uuid.UUID(bytes=bytes(t)), int(seq), ResizeState(rs), int(n), tablet_map_from_plain(m))
            for t, seq, rs, n, m in d.get("maps", ())
        ),
        stream_sets_from_plain(d.get("cdc", ())),
        schema_update_from_plain(d["schema"]) if "schema" in d else None,
    )
