"""Which TabletStore serves which tablet (or vnode shard) of which table on this node.

Files follow DESIGN.md's layout, ``<workdir>/data/<keyspace>/<table>-<table id hex>/shard-<n>/``,
holding ``tablet-<id>.db`` for tablet tables and one ``vnode.db`` per shard for vnode tables (the
shard of a token is ``dht.shard_of``). Stores are opened on first use and kept open; truncate and
drop close them before deleting the files, so no write lands in a file that is going away.
Writes are committed node-wide, one log record per tick (``storage.node_commit``, log in
``<data>/.commitlog/``, synced per record or periodically), replayed when the service starts.

A file SQLite reports damaged (``TabletCorrupt``: on open, or in any read or write) is set aside
(``quarantine``): renamed ``<name>.corrupt-<UTC time>`` (never deleted), a marker
``<name>.unrepaired`` written, and a fresh file opened in its place that takes new writes but
refuses reads (``TabletStore.withheld``) until ``coordinator.replica_repair`` has copied the
range back from the other replicas and calls ``repaired``. The marker keeps that state across
restarts. Coordinators count a replica that refuses as failed (``coordinator.reads``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tabletdb.cql.errors import InvalidRequest
from tabletdb.dht.sharding import shard_of
from tabletdb.dht.token import FULL_RING, TokenRange
from tabletdb.replica.stores import Committer, Segment, WriteBoth
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import Catalog, TableDef
from tabletdb.storage.batch_rows import BatchRows
from tabletdb.storage.data_paths import table_directory_name
from tabletdb.storage.fsync import fsync_path
from tabletdb.storage.group_commit import GroupCommitter
from tabletdb.storage.node_commit import CommitCounters, NodeCommitter
from tabletdb.storage.snapshot_files import SIDE_FILES
from tabletdb.storage.tablet_store import TabletCorrupt, TabletStore
from tabletdb.tablets.count import ResizeState
from tabletdb.tablets.migration import STAGE_ORDER
from tabletdb.tablets.tablet_map import (
    TabletInfo,
    TabletMap,
    TabletMapLookup,
    TransitionKind,
    TransitionStage,
    split_point,
)

log = logging.getLogger(__name__)

VNODE_FILE = "vnode.db"
COMMIT_LOG = Path(".commitlog") / "commit.log"
"""The node-wide commit log, under the data directory (no keyspace name starts with a dot)."""
UNREPAIRED_SUFFIX = ".unrepaired"
"""Beside a data file whose replica awaits repair (its damaged predecessor was set aside)."""


def table_directory(data_dir: Path, table: TableDef) -> Path:
    return data_dir / table_directory_name(table.keyspace, table.name, table.id)


def tablet_file(data_dir: Path, table: TableDef, shard: int, tablet_id: int, generation: int = 0) -> Path:
    """A tablet replica's file; ``generation`` is the map's ``resize_seq_number`` (a split or merge
    renumbers tablets, so each generation has its own names: ``tablet-<id>.db`` for the first,
    ``tablet-<id>.g<generation>.db`` after)."""
    name = f"tablet-{tablet_id}.db" if generation == 0 else f"tablet-{tablet_id}.g{generation}.db"
    return table_directory(data_dir, table) / f"shard-{shard}" / name


def vnode_file(data_dir: Path, table: TableDef, shard: int) -> Path:
    return table_directory(data_dir, table) / f"shard-{shard}" / VNODE_FILE


@dataclass(frozen=True)
class LocalFile:
    """One file of a table on this node: a tablet replica, or one shard of a vnode table."""

    tablet_id: int | None
    """None for a vnode table's shard file."""
    shard: int
    token_range: TokenRange
    path: Path


class StorageService:
    """Opens, caches, truncates and removes the stores of this node (implements query.DataStores)."""

    def __init__(
        self,
        data_dir: Path,
        host_id: uuid.UUID,
        smp: int,
        ignore_msb: int,
        tablet_maps: Callable[[], Mapping[uuid.UUID, TabletMap]],
        *,
        node_commit: bool = True,
        commitlog_sync_period_s: float | None = None,
        commitlog_skip_corrupt_records: bool = False,
    ) -> None:
        """``commitlog_sync_period_s``: None syncs the commit log before each write is answered
        (``commitlog_sync: batch``); a period writes it before and syncs it every period
        (``periodic``, Cassandra's default); see ``storage.node_commit``. A commit log damaged
        between valid records raises ``CommitLogCorrupt`` unless ``commitlog_skip_corrupt_records``
        (``storage.commit_replay``)."""
        self.data_dir = data_dir
        self._node_commit: NodeCommitter | None = None
        """One log record per tick for all stores (``storage.node_commit``); its log is replayed
        here, before any store is opened. False: each store syncs its own commits."""
        if node_commit:
            self._node_commit = NodeCommitter(
                data_dir / COMMIT_LOG, data_dir, sync_period_s=commitlog_sync_period_s
            )
            self._node_commit.replay(skip_corrupt=commitlog_skip_corrupt_records)
        self.host_id = host_id
        self.smp = smp
        self.ignore_msb = ignore_msb
        self._tablet_maps = tablet_maps
        self._open: dict[Path, GroupCommitter] = {}
        self._known_tables: FrozenMap[uuid.UUID, tuple[str, str]] | None = None
        self._by_key: dict[tuple[int, int], tuple[TabletMap | None, Committer]] = {}
        """(table id as an int, tablet id or -1 - shard) -> (the map it was computed from,
        committer). Keyed by ``UUID.int``, not the UUID: ``uuid.UUID.__hash__`` is Python code and
        every mutation looks up here; an int hashes in C and compares equal exactly when the
        UUIDs do."""
        self._map_of = TabletMapLookup(tablet_maps)
        self._unrepaired: dict[Path, str] = {
            marker.with_name(marker.name[: -len(UNREPAIRED_SUFFIX)]): _read_marker(marker)
            for marker in data_dir.glob(f"*/*/shard-*/*{UNREPAIRED_SUFFIX}")
        }
        """Data files whose replica awaits repair -> why (from their markers)."""

    # -- lookup ------------------------------------------------------------------------------

    def committer(self, table: TableDef, token: int) -> Committer:
        table_int = table.id.int
        tablet_map = self._map_of(table.id)
        if tablet_map is None:
            key = (table_int, -1 - shard_of(token, self.smp, self.ignore_msb))
        elif tablet_map.resize is ResizeState.NONE:
            key = (table_int, tablet_map.tablet_id_of(token))
        else:  # the two halves of a splitting tablet are written to different next files
            key = (table_int, _RESIZING - 2 * tablet_map.tablet_id_of(token) - _upper_half(tablet_map, token))
        found = self._by_key.get(key)
        if found is not None and found[0] is tablet_map:
            return found[1]
        # the path maths is slow next to a dict lookup: done once per store and tablet map
        current = self._committer_at(self._path_for(table, token))
        committer: Committer = current
        if tablet_map is not None and tablet_map.resize is not ResizeState.NONE:
            # a resize is being prepared: the write also goes to the file it will live in next
            next_path = self.next_generation_path(table, tablet_map, token)
            if next_path is not None:
                committer = WriteBoth(current.store, (current, self._committer_at(next_path)))
        self._by_key[key] = (tablet_map, committer)
        return committer

    def store(self, table: TableDef, token: int) -> TabletStore:
        return self.committer(table, token).store

    def path_of(self, table: TableDef, token: int) -> Path:
        """The file holding ``token`` of ``table`` on this node."""
        return self._path_for(table, token)

    def open_committer(self, path: Path) -> GroupCommitter:
        """The committer of the store at ``path`` (opened if needed): a resize copies into it."""
        return self._committer_at(path)

    def next_generation_path(self, table: TableDef, tablet_map: TabletMap, token: int) -> Path | None:
        """While ``tablet_map`` is being split or merged, the file ``token`` will live in after the
        cut-over on this node (same shard as now); None if this node holds no replica of it."""
        tablet_id = tablet_map.tablet_id_of(token)
        shard = self._local_shard(
            table, tablet_map.tablets[tablet_id], tablet_id, tablet_map.resize_seq_number
        )
        if shard is None:
            return None
        if tablet_map.resize is ResizeState.SPLIT:
            next_id = 2 * tablet_id + _upper_half(tablet_map, token)
        else:
            next_id = tablet_id // 2
        return tablet_file(self.data_dir, table, shard, next_id, tablet_map.resize_seq_number + 1)

    # -- damaged files -------------------------------------------------------------------------

    def unrepaired(self) -> dict[Path, str]:
        """Files whose replica awaits repair, after setting aside any open store found damaged
        since (a write on a worker thread only flags its store)."""
        for path, committer in list(self._open.items()):
            if committer.store.corrupt is not None and not committer.committing:
                self._quarantine(path, committer.store.corrupt)
        return dict(self._unrepaired)

    def repaired(self, path: Path) -> None:
        """The replica at ``path`` holds what the other replicas had: serve reads from it again."""
        marker = _marker(path)
        marker.unlink(missing_ok=True)
        fsync_path(path.parent)
        self._unrepaired.pop(path, None)
        committer = self._open.get(path)
        if committer is not None:
            committer.store.withheld = None
        log.warning("tablet file repaired from the other replicas, serving reads again file=%s", path)

    def _quarantine(self, path: Path, found: str) -> None:
        """Set the damaged file at ``path`` aside (see the module docstring) and say so once."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        marker = _marker(path)
        marker.write_text(f"{stamp} {found}\n")
        fsync_path(marker)
        committer = self._open.pop(path, None)
        self._by_key.clear()
        carried: list[BatchRows] = []
        if committer is not None:
            # No removal is logged (``_removing``): the commit log's writes for this path belong
            # in the fresh file too, and a replay after a crash puts them there.
            carried = committer.store.take_deferred()
            with contextlib.suppress(sqlite3.Error):  # the damaged file is set aside whatever closing says
                committer.store.close()
        aside = path.with_name(f"{path.name}.corrupt-{stamp}")
        n = 1
        while aside.exists():
            aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
            n += 1
        for suffix in ("", "-wal", "-shm"):
            source = Path(f"{path}{suffix}")
            if source.exists():
                os.replace(source, Path(f"{aside}{suffix}"))
        fsync_path(path.parent)
        self._unrepaired[path] = found
        fresh = self._committer_at(path).store
        for rows in carried:  # acknowledged, logged, not yet in the file: durable in the new one
            fresh.apply_rows(rows)
        keyspace, table_dir = path.parent.parent.parent.name, path.parent.parent.name
        log.error(
            "tablet file is corrupt, set aside: table=%s.%s file=%s found=%s kept_as=%s; this replica "
            "stops serving reads of it (other replicas answer), takes new writes in a fresh file, and "
            "is re-copied from the other replicas, then serves again. With no other replica "
            "(replication_factor 1) restore the table from a backup, or delete %s and restart to serve "
            "only what was written since (the set-aside file's data is then lost)",
            keyspace,
            table_dir.rsplit("-", 1)[0],
            path,
            found,
            aside,
            marker,
        )

    def segments(self, table: TableDef) -> Sequence[Segment]:
        tablet_map = self._tablet_maps().get(table.id)
        if tablet_map is None:
            stores = tuple(
                self._committer_at(vnode_file(self.data_dir, table, s)).store for s in range(self.smp)
            )
            return [Segment(FULL_RING, stores)]
        out: list[Segment] = []
        for tablet_id, info in enumerate(tablet_map.tablets):
            shard = self._local_shard(table, info, tablet_id, tablet_map.resize_seq_number)
            if shard is None:
                continue
            path = tablet_file(self.data_dir, table, shard, tablet_id, tablet_map.resize_seq_number)
            out.append(Segment(tablet_map.range_of(tablet_id), (self._committer_at(path).store,)))
        return out

    def tablet_maps(self) -> Mapping[uuid.UUID, TabletMap]:
        return self._tablet_maps()

    def local_files(self, table: TableDef) -> list[LocalFile]:
        """Every file this node holds (or would create) for ``table``, in token order; backup
        snapshots them and restore installs into them. Files never written need not exist."""
        tablet_map = self._tablet_maps().get(table.id)
        if tablet_map is None:
            shards = range(self.smp)
            return [LocalFile(None, s, FULL_RING, vnode_file(self.data_dir, table, s)) for s in shards]
        out: list[LocalFile] = []
        for tablet_id, info in enumerate(tablet_map.tablets):
            shard = self._local_shard(table, info, tablet_id, tablet_map.resize_seq_number)
            if shard is not None:
                path = tablet_file(self.data_dir, table, shard, tablet_id, tablet_map.resize_seq_number)
                out.append(LocalFile(tablet_id, shard, tablet_map.range_of(tablet_id), path))
        return out

    def commit_counters(self) -> CommitCounters | None:
        """What the node-wide commit did (None without one): metrics."""
        return None if self._node_commit is None else self._node_commit.counters

    def write_deferred(self, paths: Iterable[Path] | None = None) -> None:
        """Have the open stores at ``paths`` (None: all) write the rows they deferred: a copy is
        about to be made from the files themselves (backup), which sees only what is written."""
        for path in list(self._open) if paths is None else paths:
            committer = self._open.get(path)
            if committer is not None:
                committer.store.write_deferred()

    def release(self, path: Path) -> bool:
        """Close the store at ``path`` if it is open, so its file can be replaced (restore).
        False, and nothing closed, while it has writes queued or committing."""
        committer = self._open.get(path)
        if committer is None:
            return True
        if not committer.idle:
            return False
        self._removing(path)
        self._by_key.clear()
        del self._open[path]
        committer.store.close()
        return True

    def sync(self, path: Path) -> bool:
        """Make what was committed to the file at ``path`` durable (fsync, WAL included); False,
        with nothing done, while its store has writes queued, committing or deferred."""
        committer = self._open.get(path)
        if committer is None:
            with contextlib.suppress(FileNotFoundError):
                fsync_path(path)
            return True
        if not committer.idle:
            return False
        committer.store.sync_to_disk()
        return True

    def open_store(self, path: Path) -> TabletStore | None:
        """The store at ``path`` if it is open (nothing is opened): a flush acts on those only."""
        committer = self._open.get(path)
        return None if committer is None else committer.store

    def settle_before_gc(self, path: Path) -> TabletStore | None:
        """Ready the store at ``path`` to have tombstones dropped in place (compaction with
        garbage collection, ``replica.compactions``): its deferred rows written, the file synced,
        then its removal logged, so a commit-log replay never puts rows logged before onto what
        compaction leaves (a row older than a dropped tombstone would come back; rows logged
        after the removal are replayed as usual). None, with nothing logged, when there is no
        file or while writes to it are queued or committing (the caller retries)."""
        if path not in self._open and not path.exists():
            return None
        committer = self._committer_at(path)
        committer.store.write_deferred()
        if not committer.idle:
            return None
        committer.store.sync_to_disk()
        self._removing(path)
        return committer.store

    def create_file(self, path: Path) -> None:
        """Open (creating it empty if missing) the store at ``path``: a tablet's file that must
        exist before its first write (``replica.shard_moves``)."""
        self._committer_at(path)
        self._by_key.clear()

    def remove_file(self, path: Path) -> bool | None:
        """Close the store at ``path`` if open and delete the file with its side files: a
        tablet replica that moved away. True if there was a file, None (nothing done) while
        its store has writes queued or committing."""
        was_open = path in self._open
        self.write_deferred([path])  # rows merely deferred do not make it busy
        if not self.release(path):
            return None
        if not was_open:  # release logged the removal of an open store's file
            self._removing(path)
        existed = path.exists()
        for suffix in ("", *SIDE_FILES):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        if path.parent.exists():
            fsync_path(path.parent)
        return existed

    async def drop_ranges(self, table: TableDef, ranges: Sequence[TokenRange]) -> int:
        """Delete the partitions in ``ranges`` from this node's files of the vnode table ``table``
        (cleanup of ranges it no longer replicates); how many partitions went. The deletion is
        logged first, so a commit-log replay repeats it after the rows it replays; the deferred
        rows are written on the loop, the deletion runs on a worker thread (it may be large)."""
        if not ranges or self._tablet_maps().get(table.id) is not None:
            return 0
        removed = 0
        for shard in range(self.smp):
            path = vnode_file(self.data_dir, table, shard)
            if not path.exists():
                continue
            store = self._committer_at(path).store
            if self._node_commit is not None:
                self._node_commit.removed_ranges(path, [(r.start, r.end) for r in ranges])
            store.write_deferred()
            removed += await asyncio.to_thread(store.delete_written, ranges)
        return removed

    def _path_for(self, table: TableDef, token: int) -> Path:
        tablet_map = self._tablet_maps().get(table.id)
        if tablet_map is None:
            return vnode_file(self.data_dir, table, shard_of(token, self.smp, self.ignore_msb))
        tablet_id = tablet_map.tablet_id_of(token)
        shard = self._local_shard(
            table, tablet_map.tablets[tablet_id], tablet_id, tablet_map.resize_seq_number
        )
        if shard is None:
            raise InvalidRequest(
                f"tablet {tablet_id} of {table.keyspace}.{table.name} has no replica on this node "
                f"({self.host_id}); its replication places it elsewhere"
            )
        return tablet_file(self.data_dir, table, shard, tablet_id, tablet_map.resize_seq_number)

    def _local_shard(
        self, table: TableDef, info: TabletInfo, tablet_id: int, generation: int = 0
    ) -> int | None:
        """The shard whose file holds this node's replica of the tablet. While the tablet moves
        between two shards of this node, the old one until its file moved (at the ``streaming``
        stage, ``replica.shard_moves``; a file, not a flag, so a restart sees the same), the new
        one from then on. Outside a move between nodes, where the file is (``resident_shard``):
        an intranode move rolled back after its file moved leaves it in the other shard."""
        moving = intranode_shards(info, self.host_id)
        if moving is not None:
            old, new, stage = moving
            if stage > _STREAMING:
                return new
            return self.resident_shard(table, tablet_id, old, generation)
        for host, shard in _every_replica(info):
            if host == self.host_id:
                if info.new_replicas is not None:
                    return shard  # a move between nodes: each side's file is where the map says
                return self.resident_shard(table, tablet_id, shard, generation)
        return None

    def resident_shard(self, table: TableDef, tablet_id: int, shard: int, generation: int = 0) -> int:
        """Where this node keeps the tablet's file when its map names ``shard``: ``shard`` if the
        file is there, else the one other shard holding it. An intranode move renames the file at
        its ``streaming`` stage (``replica.shard_moves``); if the coordinator then rolls the move
        back (its node was down too long), the map names the old shard again while the file sits
        in the new one, and the node adopts it there rather than start an empty file (the same
        rule at every start, so nothing is renamed back). Two or more candidates (leftovers)
        are not guessed between: ``shard``."""
        if tablet_file(self.data_dir, table, shard, tablet_id, generation).exists():
            return shard
        found = [
            other
            for other in range(self.smp)
            if other != shard and tablet_file(self.data_dir, table, other, tablet_id, generation).exists()
        ]
        return found[0] if len(found) == 1 else shard

    def _committer_at(self, path: Path) -> GroupCommitter:
        committer = self._open.get(path)
        if committer is not None:
            if committer.store.corrupt is not None and not committer.committing:
                self._quarantine(path, committer.store.corrupt)  # opens the fresh file
                return self._open[path]
            return committer
        new = not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            store = TabletStore(path)
        except TabletCorrupt as exc:
            self._quarantine(path, exc.found)  # opens the fresh file
            return self._open[path]
        why = self._unrepaired.get(path)
        if why is not None:
            store.withheld = f"its replica awaits repair from the other replicas ({why})"
        committer = GroupCommitter(store, node=self._node_commit)
        if new and self._node_commit is not None:
            # its commits are not synced: the file's directory entries must be, or a replay
            # after power loss would find no file to apply the log to
            _fsync_directories(path.parent, self.data_dir)
        self._open[path] = committer
        return committer

    # -- removal -----------------------------------------------------------------------------

    def truncate(self, table: TableDef) -> None:
        self._remove_directory(table_directory(self.data_dir, table))

    def _removing(self, path: Path) -> None:
        """Before the data at ``path`` is removed or replaced: no write logged for it until now
        may be replayed over what comes after (``NodeCommitter.removed``)."""
        if self._node_commit is not None:
            self._node_commit.removed(path)

    def follow_schema(self, catalog: Catalog) -> None:
        """Delete the files of tables that the last catalog seen had and ``catalog`` lacks (DROP).

        Only tables seen to disappear are removed, never tables merely unknown yet: while the
        metadata log replays at start-up the catalog is behind the data on disk, and a directory
        it does not list yet is a table that will reappear, not garbage.
        """
        # catalog.ids shares structure with the previous catalog's map, so the difference costs
        # what the change touched, not the size of the schema.
        if self._known_tables is not None:
            for table_id in self._known_tables.keys_missing_from(catalog.ids):
                for directory in self.data_dir.glob(f"*/*-{table_id.hex}"):
                    self._remove_directory(directory)
        self._known_tables = catalog.ids

    def _remove_directory(self, directory: Path) -> None:
        self._removing(directory)
        self._by_key.clear()
        for path in [p for p in self._unrepaired if directory in p.parents]:
            del self._unrepaired[path]  # its data is going: nothing is left to repair
        for path in [p for p in self._open if directory in p.parents]:
            self._open.pop(path).store.close()
        if directory.exists():
            shutil.rmtree(directory)
            log.info("removed table data directory=%s", directory)

    def close(self) -> None:
        self.unrepaired()  # a store found damaged cannot write its deferred rows: set it aside first
        self._by_key.clear()
        for committer in self._open.values():
            committer.store.close()
        self._open.clear()
        if self._node_commit is not None:
            self._node_commit.close()
            self._node_commit = None


_RESIZING = -(1 << 40)
"""Cache keys of a resizing map's stores: below every shard key (-1 - shard)."""


def _upper_half(tablet_map: TabletMap, token: int) -> int:
    """1 if ``token`` falls in the upper half of its tablet when the map splits (else 0; and 0
    while merging, where both siblings' writes go to one next file but their own current files)."""
    if tablet_map.resize is not ResizeState.SPLIT:
        return 0
    return int(token > split_point(tablet_map, tablet_map.tablet_id_of(token)))


_STREAMING = STAGE_ORDER.index(TransitionStage.STREAMING)


def intranode_shards(info: TabletInfo, host_id: uuid.UUID) -> tuple[int, int, int] | None:
    """(old shard, new shard, stage index) while the tablet moves between two shards of
    ``host_id`` (an intranode migration); None otherwise."""
    if info.transition is not TransitionKind.INTRANODE_MIGRATION or info.new_replicas is None:
        return None
    if info.stage is None:
        return None
    old = next((r.shard for r in info.replicas if r.host == host_id), None)
    new = next((r.shard for r in info.new_replicas if r.host == host_id), None)
    if old is None or new is None or old == new:
        return None
    return old, new, STAGE_ORDER.index(info.stage)


def _every_replica(info: TabletInfo) -> Sequence[tuple[uuid.UUID, int]]:
    """The tablet's replicas and, while it migrates, the new ones: a migration's target holds
    the tablet (and receives its writes) from the stage that writes to both sets on."""
    if info.new_replicas is None:
        return info.replicas
    return info.replicas + info.new_replicas


def _marker(path: Path) -> Path:
    return path.with_name(path.name + UNREPAIRED_SUFFIX)


def _read_marker(marker: Path) -> str:
    try:
        return marker.read_text().strip() or "damaged file set aside"
    except OSError as exc:
        return f"damaged file set aside (marker unreadable: {exc})"


def _fsync_directories(directory: Path, top: Path) -> None:
    """fsync ``directory`` and its parents up to and including ``top``."""
    for current in (directory, *directory.parents):
        fsync_path(current)
        if current == top or top not in current.parents:
            return
