"""CDC description tables, rendered from group0 (issue 16 items 4-5; spec/cdc.md), never stored.

Vnode keyspaces: ``system_distributed.cdc_generation_timestamps`` (one partition 'timestamps',
newest first, with each superseded generation's expiry), ``cdc_streams_descriptions_v2`` (a
generation's streams, one row per ring range) and the pre-4.4 ``cdc_streams_descriptions`` (all
streams in one row) for old clients, which read the new tables once ``system.cdc_local`` holds
the 'rewritten' row, as it always does here. Tablets keyspaces: ``system.cdc_timestamps`` and
``system.cdc_streams`` (each stream set's streams and what it closed and opened). The
``system_distributed`` keyspace is listed as ScyllaDB creates it (SimpleStrategy, RF 3), with
these tables and ``view_build_status`` (``systables.view_builds``) only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from tabletdb.cdc.descriptions import described, longest_log_ttl
from tabletdb.cdc.generation import Generations
from tabletdb.cdc.tablet_streams import StreamSets, sets_of, stream_states
from tabletdb.cql.types import BIGINT, BLOB, TEXT, TIMESTAMP, TINYINT, UUID, SetType
from tabletdb.group0.state import Group0State
from tabletdb.schema.cdc_log import log_name
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import (
    SIMPLE,
    Catalog,
    ClusteringOrder,
    KeyspaceDef,
    KeyspaceSchema,
    Replication,
    TableDef,
)
from tabletdb.systables.definitions import virtual_table
from tabletdb.systables.view_builds import VIEW_BUILD_STATUS_TABLE, view_build_status_rows

Row = dict[str, Any]
SYSTEM_DISTRIBUTED = "system_distributed"
TIMESTAMPS_KEY = "timestamps"
_STREAMS = SetType(BLOB, frozen=True)
_ASC, _DESC = ClusteringOrder.ASC, ClusteringOrder.DESC


CDC_LOCAL_TABLE = virtual_table(
    "system",
    "cdc_local",
    ["key"],
    [],
    {"key": TEXT, "streams_timestamp": TIMESTAMP, "uuid": UUID},
    "CDC-specific information that the local node stores",
)
CDC_TIMESTAMPS_TABLE = virtual_table(
    "system",
    "cdc_timestamps",
    ["keyspace_name", "table_name"],
    [("timestamp", _DESC)],
    {"keyspace_name": TEXT, "table_name": TEXT, "timestamp": TIMESTAMP},
    "CDC stream set timestamps of tables in tablets keyspaces",
)
CDC_STREAMS_TABLE = virtual_table(
    "system",
    "cdc_streams",
    ["keyspace_name", "table_name"],
    [("timestamp", _ASC), ("stream_state", _ASC), ("stream_id", _ASC)],
    {
        "keyspace_name": TEXT,
        "table_name": TEXT,
        "timestamp": TIMESTAMP,
        "stream_state": TINYINT,
        "stream_id": BLOB,
    },
    "CDC streams of tables in tablets keyspaces: current, closed and opened per stream set",
)
GENERATION_TIMESTAMPS_TABLE = virtual_table(
    SYSTEM_DISTRIBUTED,
    "cdc_generation_timestamps",
    ["key"],
    [("time", _DESC)],
    {"key": TEXT, "time": TIMESTAMP, "expired": TIMESTAMP},
    "CDC generation timestamps",
)
STREAMS_DESCRIPTIONS_V2_TABLE = virtual_table(
    SYSTEM_DISTRIBUTED,
    "cdc_streams_descriptions_v2",
    ["time"],
    [("range_end", _ASC)],
    {"time": TIMESTAMP, "range_end": BIGINT, "streams": _STREAMS},
    "CDC generations: the streams of each token range",
)
STREAMS_DESCRIPTIONS_TABLE = virtual_table(
    SYSTEM_DISTRIBUTED,
    "cdc_streams_descriptions",
    ["time"],
    [],
    {"time": TIMESTAMP, "streams": _STREAMS, "expired": TIMESTAMP},
    "CDC generations as clients before ScyllaDB 4.4 read them",
)


def _ms(micros: int) -> int:
    return micros // 1000


def _log_ttls(catalog: Catalog) -> list[int]:
    """The TTLs of the log tables of vnode keyspaces (the ones generations serve)."""
    return [
        t.options.default_time_to_live
        for ks in catalog.keyspaces.values()
        if not ks.definition.uses_tablets
        for t in ks.tables.values()
        if t.is_cdc_log
    ]


def generation_timestamps_rows(catalog: Catalog, generations: Generations, now_micros: int) -> list[Row]:
    shown = described(generations, longest_log_ttl(_log_ttls(catalog)), now_micros)
    return [
        {
            "key": TIMESTAMPS_KEY,
            "time": _ms(d.timestamp),
            "expired": None if d.expired is None else _ms(d.expired),
        }
        for d in reversed(shown)
    ]


def streams_descriptions_v2_rows(catalog: Catalog, generations: Generations, now_micros: int) -> list[Row]:
    shown = described(generations, longest_log_ttl(_log_ttls(catalog)), now_micros)
    return [
        {"time": _ms(d.timestamp), "range_end": e.range_end, "streams": tuple(sorted(e.streams))}
        for d in shown
        for e in d.generation.entries
    ]


def streams_descriptions_rows(catalog: Catalog, generations: Generations, now_micros: int) -> list[Row]:
    shown = described(generations, longest_log_ttl(_log_ttls(catalog)), now_micros)
    return [
        {
            "time": _ms(d.timestamp),
            "streams": tuple(sorted(d.generation.streams)),
            "expired": None if d.expired is None else _ms(d.expired),
        }
        for d in shown
    ]


def cdc_local_rows(generations: Generations, now_micros: int) -> list[Row]:
    """The operating generation's time, and 'rewritten': old clients may use the v2 tables."""
    rows: list[Row] = [{"key": "rewritten", "streams_timestamp": None, "uuid": None}]
    operating = [t for t, _ in generations if t <= now_micros]
    if operating:
        rows.insert(0, {"key": "cdc_local", "streams_timestamp": _ms(operating[-1]), "uuid": None})
    return rows


def _cdc_tablet_tables(catalog: Catalog) -> list[TableDef]:
    """Base tables of tablets keyspaces that have a CDC log (enabled now or before)."""
    out = []
    for ks in sorted(catalog.keyspaces.values(), key=lambda k: k.definition.name):
        if not ks.definition.uses_tablets:
            continue
        for name in sorted(ks.tables):
            table = ks.tables[name]
            log = ks.tables.get(log_name(name))
            if not table.is_cdc_log and log is not None and log.is_cdc_log:
                out.append(table)
    return out


def cdc_timestamps_rows(catalog: Catalog, history: StreamSets) -> list[Row]:
    return [
        {"keyspace_name": t.keyspace, "table_name": t.name, "timestamp": _ms(s.timestamp)}
        for t in _cdc_tablet_tables(catalog)
        for s in reversed(sets_of(history, t.id))
    ]


def cdc_streams_rows(catalog: Catalog, history: StreamSets) -> list[Row]:
    return [
        {
            "keyspace_name": t.keyspace,
            "table_name": t.name,
            "timestamp": _ms(timestamp),
            "stream_state": state,
            "stream_id": stream,
        }
        for t in _cdc_tablet_tables(catalog)
        for timestamp, state, stream in stream_states(sets_of(history, t.id))
    ]


DistributedRenderer = Callable[[Group0State, int, tuple[uuid.UUID, ...]], list[Row]]
"""Rows of a ``system_distributed`` table from group0's state, the time (µs) and the cluster's
member host ids."""


def _cdc_renderer(render: Callable[[Catalog, Generations, int], list[Row]]) -> DistributedRenderer:
    return lambda g0, now, _hosts: render(g0.catalog, g0.cdc_generations, now)


DISTRIBUTED_RENDERERS: dict[str, tuple[TableDef, DistributedRenderer]] = {
    t.name: (t, render)
    for t, render in (
        (GENERATION_TIMESTAMPS_TABLE, _cdc_renderer(generation_timestamps_rows)),
        (STREAMS_DESCRIPTIONS_V2_TABLE, _cdc_renderer(streams_descriptions_v2_rows)),
        (STREAMS_DESCRIPTIONS_TABLE, _cdc_renderer(streams_descriptions_rows)),
        (
            VIEW_BUILD_STATUS_TABLE,
            lambda g0, _now, hosts: view_build_status_rows(g0.catalog, g0.view_builds, hosts),
        ),
    )
}


def system_distributed_keyspace() -> KeyspaceSchema:
    definition = KeyspaceDef(SYSTEM_DISTRIBUTED, Replication(SIMPLE, (("replication_factor", "3"),)))
    tables = FrozenMap({name: t for name, (t, _) in DISTRIBUTED_RENDERERS.items()})
    return KeyspaceSchema(definition, tables=tables)
