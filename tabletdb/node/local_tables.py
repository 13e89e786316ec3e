"""What this process tells its local virtual tables (``systables.local_tables.LocalNode``):
its settings (``system.config``, `live_config`), its CQL listeners, its runtime figures and its
snapshots on disk.

``system.runtime_info`` shows what this node has: ``generic`` (whether internode membership
runs, bytes on disk, uptime, the tracing probability — nothing is traced — and incremental
backups, which do not exist here) and ``memory`` (the machine's memory and the process's
resident share of it). ScyllaDB's ``memtable`` and ``cache`` groups are left out: SQLite stores
have neither a memtable nor a row cache to report.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tabletdb.node.live_config import LiveConfig
from tabletdb.node.operator_view import data_size
from tabletdb.protocol.server import CqlServer
from tabletdb.schema.model import Catalog
from tabletdb.storage.data_paths import table_directory_name
from tabletdb.systables.local_tables import ConfigEntry, ProtocolServer, SnapshotEntry
from tabletdb.systables.node_info import CQL_VERSION


@dataclass
class NodeLocalTables:
    settings: LiveConfig
    server: Callable[[], CqlServer]
    data_dir: Path
    snapshots_dir: Path
    catalog: Callable[[], Catalog]
    started_wall: float
    membership_running: bool
    """Internode membership (group0, failure detection) runs: false in maintenance mode."""

    def config_entries(self) -> Sequence[ConfigEntry]:
        return self.settings.entries()

    def update_config(self, name: str, value: str) -> None:
        self.settings.update(name, value)

    def protocol_servers(self) -> Sequence[ProtocolServer]:
        """The CQL server ("native transport", ScyllaDB's name) and what it listens on now."""
        server = self.server()
        addresses: list[str] = []
        if server.serving:
            ports = [server.port, server.shard_aware_port, server.tls_port]
            addresses = [f"{server.host}:{p}" for p in ports if p is not None]
        return [ProtocolServer("native transport", "cql", CQL_VERSION, tuple(addresses))]

    async def runtime_info(self) -> Sequence[tuple[str, str, str]]:
        load = await asyncio.to_thread(data_size, self.data_dir)
        total, used = _memory()
        uptime = int(time.time() - self.started_wall)
        return [
            ("generic", "gossip_active", "true" if self.membership_running else "false"),
            ("generic", "load", str(load)),
            ("generic", "uptime", f"{uptime} seconds"),
            ("generic", "trace_probability", "0"),
            ("generic", "incremental_backup_enabled", "false"),
            ("memory", "total", str(total)),
            ("memory", "used", str(used)),
            ("memory", "free", str(max(total - used, 0))),
        ]

    async def snapshots(self) -> Sequence[SnapshotEntry]:
        return await asyncio.to_thread(_snapshots, self.snapshots_dir, self.catalog())


def _memory() -> tuple[int, int]:
    """The machine's physical memory and this process's resident set, in bytes."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = page * os.sysconf("SC_PHYS_PAGES")
    try:
        resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):  # not Linux: the peak instead of the current size
        import resource

        return total, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return total, resident_pages * page


def _snapshots(snapshots_dir: Path, catalog: Catalog) -> list[SnapshotEntry]:
    """``<snapshots>/<tag>/<keyspace>/<table>-<id>/<files>``: one entry per tag and table of the
    catalog (a dropped table's files are not listed, as in ScyllaDB). Snapshot files are copies,
    so all of a snapshot's bytes are its own: ``live`` equals ``total``."""
    directories = {
        table_directory_name(t.keyspace, t.name, t.id): (t.keyspace, t.name)
        for ks in catalog.keyspaces.values()
        for t in [*ks.tables.values(), *(v.table for v in ks.views.values())]
    }
    entries = []
    try:
        tags = sorted(p for p in snapshots_dir.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []
    for tag in tags:
        table_dirs = [t for ks in tag.iterdir() if ks.is_dir() for t in ks.iterdir() if t.is_dir()]
        for table_dir in table_dirs:
            owner = directories.get(f"{table_dir.parent.name}/{table_dir.name}")
            if owner is None:
                continue
            size = data_size(table_dir)
            entries.append(SnapshotEntry(owner[0], owner[1], tag.name, size, size))
    return entries
