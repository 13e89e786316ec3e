"""A resize on one replica: copy each tablet file into the next generation's files, and remove
the files no map generation uses any more (``topology.resize`` has the whole procedure).

While a map is being prepared for a split or merge, ``StorageService.committer`` writes every
write to the current file and to the next generation's (``stores.WriteBoth``). The copy then
only has to bring what the current file held before that: a consistent snapshot of it (SQLite
online backup, ``snapshot_files.snapshot_to``: writes continue meanwhile) merged into each new file
by token range (ATTACH + ``INSERT ... SELECT ... ON CONFLICT``, last write wins, one synced
transaction: ``TabletStore.merge_image``). Rows written both ways are merged twice, which last
write wins makes harmless. Before the snapshot, a write queued to the current file before the
node began writing both is waited for (an empty write queued behind it: the node committer and
the group committer keep order).

A split cuts tablet ``i`` into ``2i`` (up to ``split_point``) and ``2i + 1``; a merge joins the
siblings ``2i`` and ``2i + 1`` (on the same shard: a merge needs them co-located) into ``i``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from tabletdb.cql.errors import InvalidRequest
from tabletdb.dht.token import TokenRange
from tabletdb.replica.storage_service import LocalFile, StorageService, table_directory, tablet_file
from tabletdb.schema.model import TableDef
from tabletdb.storage.snapshot_files import snapshot_to
from tabletdb.tablets.count import ResizeState
from tabletdb.tablets.tablet_map import TabletMap, split_point

log = logging.getLogger(__name__)

_NAME = re.compile(r"^tablet-(\d+)(?:\.g(\d+))?\.db$")

STALE_GRACE_S = 10.0
"""A file is removed only once it has been garbage this long: a read that chose its store under
the previous map has finished by then (read timeouts are shorter)."""


@dataclass(frozen=True)
class Piece:
    """Part of a current file that goes into a next-generation file."""

    source: LocalFile
    target: Path
    token_range: TokenRange | None
    """None: the whole source (a merge)."""


def pieces(storage: StorageService, table: TableDef, tablet_map: TabletMap) -> list[Piece]:
    """Where each of this node's current files of ``table`` goes in the next generation."""
    if tablet_map.resize is ResizeState.NONE:
        raise InvalidRequest(f"table {table.keyspace}.{table.name} is not being resized on this node")
    nxt = tablet_map.resize_seq_number + 1
    out: list[Piece] = []
    for local in storage.local_files(table):
        tablet_id = local.tablet_id
        assert tablet_id is not None
        if tablet_map.resize is ResizeState.MERGE:
            target = tablet_file(storage.data_dir, table, local.shard, tablet_id // 2, nxt)
            out.append(Piece(local, target, None))
            continue
        middle = split_point(tablet_map, tablet_id)
        halves = (TokenRange(local.token_range.start, middle), TokenRange(middle, local.token_range.end))
        for half, token_range in enumerate(halves):
            target = tablet_file(storage.data_dir, table, local.shard, 2 * tablet_id + half, nxt)
            out.append(Piece(local, target, token_range))
    return out


async def copy_into_next(storage: StorageService, table: TableDef, seq: int, kind: ResizeState) -> int:
    """Copy this node's files of ``table`` into the next generation's; partitions copied.
    Refused unless this node's map is being resized as asked (a coordinator's stale request)."""
    tablet_map = storage.tablet_maps().get(table.id)
    if tablet_map is None or tablet_map.resize is not kind or tablet_map.resize_seq_number != seq:
        now = (
            "no map" if tablet_map is None else f"{tablet_map.resize.value} at {tablet_map.resize_seq_number}"
        )
        raise InvalidRequest(
            f"{table.keyspace}.{table.name} is not being {kind.value} at generation {seq} on "
            f"this node ({storage.host_id}): its map says {now}"
        )
    started = time.monotonic()
    staging_dir = storage.data_dir / ".incoming"
    staging_dir.mkdir(parents=True, exist_ok=True)
    copied = 0
    by_source: dict[Path, list[Piece]] = {}
    for piece in pieces(storage, table, tablet_map):
        by_source.setdefault(piece.source.path, []).append(piece)
    for path, group in by_source.items():
        if not path.exists():  # never written (a store's file exists from its first use)
            continue
        await storage.open_committer(path).apply([])  # behind every write that went to it alone
        storage.write_deferred([path])
        staging = staging_dir / f"{uuid.uuid4().hex}.db"
        try:
            # transient: merged into the new files (each merge a synced transaction), then deleted
            await asyncio.to_thread(snapshot_to, path, staging, sync=False)
            for piece in group:
                store = storage.open_committer(piece.target).store
                ranges = None if piece.token_range is None else [piece.token_range]
                copied += await asyncio.to_thread(store.merge_image, staging, ranges)
        finally:
            staging.unlink(missing_ok=True)
    log.info(
        "tablet files copied for %s table=%s.%s generation=%d partitions=%d ms=%.0f",
        kind.value,
        table.keyspace,
        table.name,
        seq + 1,
        copied,
        (time.monotonic() - started) * 1000,
    )
    return copied


def generation_of(path: Path) -> tuple[int, int] | None:
    """(tablet id, generation) of a tablet file's name; None for any other file."""
    found = _NAME.match(path.name)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2) or 0)


def stale_files(storage: StorageService, table: TableDef, tablet_map: TabletMap) -> list[Path]:
    """Tablet files of ``table`` whose generation the map no longer uses: older than its
    ``resize_seq_number``, or the next one when no resize is being prepared (rolled back)."""
    live = {tablet_map.resize_seq_number}
    if tablet_map.resize is not ResizeState.NONE:
        live.add(tablet_map.resize_seq_number + 1)
    out = []
    for path in sorted(table_directory(storage.data_dir, table).glob("shard-*/tablet-*.db")):
        found = generation_of(path)
        if found is not None and found[1] not in live:
            out.append(path)
    return out


class StaleFiles:
    """Removes files of unused generations once they have been garbage ``grace_s`` (checked on
    the current maps each time, so a file that a new resize wants again is kept)."""

    def __init__(self, storage: StorageService, grace_s: float = STALE_GRACE_S) -> None:
        self._storage = storage
        self._grace_s = grace_s
        self._seen: dict[Path, float] = {}

    def sweep(self, tables: list[TableDef], now: float | None = None) -> list[Path]:
        """Remove what has been garbage long enough; the files removed."""
        now = time.monotonic() if now is None else now
        maps = self._storage.tablet_maps()
        garbage: set[Path] = set()
        for table in tables:
            tablet_map = maps.get(table.id)
            if tablet_map is not None:
                garbage.update(stale_files(self._storage, table, tablet_map))
        self._seen = {p: self._seen.get(p, now) for p in garbage}
        removed = []
        for path, since in list(self._seen.items()):
            if now - since >= self._grace_s and self._storage.remove_file(path) is not None:
                del self._seen[path]
                removed.append(path)
                log.info("removed tablet file of an unused generation file=%s", path)
        return removed
