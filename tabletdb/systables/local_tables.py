"""The node's own virtual tables that tools read: ``system.config``, ``runtime_info``,
``protocol_servers``, ``snapshots`` and ``one_row`` (ScyllaDB's schemas: its
``db/virtual_tables.cc``).

Their rows describe this process (its settings, listeners, files and memory), not group0, so
the node hands them over through `LocalNode`, asked only when one of these tables is read.
Partitions come in token order of their key, as ScyllaDB's virtual readers emit them; rows
inside a partition in clustering order. Nothing is stored: every SELECT renders anew.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tabletdb.cql.types import BIGINT, TEXT, ListType
from tabletdb.dht.murmur3 import token_of
from tabletdb.schema.model import TableDef
from tabletdb.systables.definitions import system_table

Row = dict[str, Any]


@dataclass(frozen=True)
class ConfigEntry:
    """One ``system.config`` row: ``value`` as it would appear in a JSON config file."""

    name: str
    type: str
    source: str
    status: str
    value: str


@dataclass(frozen=True)
class ProtocolServer:
    name: str
    protocol: str
    protocol_version: str
    listen_addresses: tuple[str, ...]


@dataclass(frozen=True)
class SnapshotEntry:
    keyspace: str
    table: str
    snapshot: str
    live: int
    """Bytes deleting the snapshot would free (its files are copies, shared with nothing)."""
    total: int


class ConfigUpdateRefused(Exception):
    """An UPDATE of ``system.config`` the node does not carry out; the text is ScyllaDB's."""


class LocalNode(Protocol):
    """What the node tells its local virtual tables (implemented in ``node.local_tables``)."""

    def config_entries(self) -> Sequence[ConfigEntry]: ...

    def update_config(self, name: str, value: str) -> None:
        """Set a live-updatable key; raises `ConfigUpdateRefused` with ScyllaDB's reason."""
        ...

    def protocol_servers(self) -> Sequence[ProtocolServer]: ...

    async def runtime_info(self) -> Sequence[tuple[str, str, str]]:
        """(group, item, value) rows."""
        ...

    async def snapshots(self) -> Sequence[SnapshotEntry]: ...


CONFIG_TABLE = system_table(
    "config",
    ["name"],
    [],
    {"name": TEXT, "type": TEXT, "source": TEXT, "status": TEXT, "value": TEXT},
    "",
)
RUNTIME_INFO_TABLE = system_table(
    "runtime_info",
    ["group"],
    ["item"],
    {"group": TEXT, "item": TEXT, "value": TEXT},
    "Runtime system information.",
)
PROTOCOL_SERVERS_TABLE = system_table(
    "protocol_servers",
    ["name"],
    [],
    {"name": TEXT, "protocol": TEXT, "protocol_version": TEXT, "listen_addresses": ListType(TEXT)},
    "Lists all client protocol servers and their status.",
)
SNAPSHOTS_TABLE = system_table(
    "snapshots",
    ["keyspace_name"],
    ["table_name", "snapshot_name"],
    {"keyspace_name": TEXT, "table_name": TEXT, "snapshot_name": TEXT, "live": BIGINT, "total": BIGINT},
    "Lists all the snapshots along with their size, dropped tables are not part of the listing.",
)
ONE_ROW_TABLE = system_table(
    "one_row",
    ["system$dummy"],
    [],
    {"system$dummy": TEXT},
    "A table with exactly one row, backing SELECT statements without a FROM clause.",
)


def _ring_order(rows: list[Row], key: str) -> list[Row]:
    """Partitions in token order of their (text) key; a stable sort keeps each one's rows in
    the clustering order they were given in."""
    return sorted(rows, key=lambda r: token_of(str(r[key]).encode()))


async def config_rows(local: LocalNode) -> list[Row]:
    rows = [
        {"name": e.name, "type": e.type, "source": e.source, "status": e.status, "value": e.value}
        for e in local.config_entries()
    ]
    return _ring_order(rows, "name")


async def runtime_info_rows(local: LocalNode) -> list[Row]:
    rows = [{"group": g, "item": i, "value": v} for g, i, v in sorted(await local.runtime_info())]
    return _ring_order(rows, "group")


async def protocol_servers_rows(local: LocalNode) -> list[Row]:
    rows = [
        {
            "name": s.name,
            "protocol": s.protocol,
            "protocol_version": s.protocol_version,
            "listen_addresses": list(s.listen_addresses),
        }
        for s in local.protocol_servers()
    ]
    return _ring_order(rows, "name")


async def snapshots_rows(local: LocalNode) -> list[Row]:
    entries = sorted(await local.snapshots(), key=lambda e: (e.keyspace, e.table, e.snapshot))
    rows = [
        {
            "keyspace_name": e.keyspace,
            "table_name": e.table,
            "snapshot_name": e.snapshot,
            "live": e.live,
            "total": e.total,
        }
        for e in entries
    ]
    return _ring_order(rows, "keyspace_name")


async def one_row_rows(local: LocalNode) -> list[Row]:
    return [{"system$dummy": ""}]


LocalRenderer = Callable[[LocalNode], Awaitable[list[Row]]]

LOCAL_RENDERERS: dict[str, tuple[TableDef, LocalRenderer]] = {
    "config": (CONFIG_TABLE, config_rows),
    "runtime_info": (RUNTIME_INFO_TABLE, runtime_info_rows),
    "protocol_servers": (PROTOCOL_SERVERS_TABLE, protocol_servers_rows),
    "snapshots": (SNAPSHOTS_TABLE, snapshots_rows),
    "one_row": (ONE_ROW_TABLE, one_row_rows),
}
