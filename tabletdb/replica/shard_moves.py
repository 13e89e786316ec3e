"""A tablet replica moved between two shards of this node: its file renamed between shard directories.

An intranode migration (the balancer evening out a node's shards) goes through the same stages as
a move between nodes, but both replica sets name this node, so there is nothing to stream: at the
``streaming`` stage the coordinator asks the node to move the file. Until then every read and
write of the tablet uses the old shard's file, from then on the new one's
(``StorageService._local_shard`` decides by which file exists, so a restart at any point sees the
same). The move is one rename, made safe against a crash by doing it in this order, with no
await in between (so no write slips in):

1. write the store's deferred rows and fsync the file and its WAL (everything acknowledged is
   in the file on disk);
2. close the store, which logs the file's removal in the node's commit log: a replay no longer
   puts earlier rows at the old path (they are in the file being moved);
3. fold a WAL left behind into the file, rename it into the new shard directory, fsync both
   directories.

A tablet never written has no file; the new shard then gets an empty one, so the tablet's first
write after the move cannot land in the old shard. A move asked again (the coordinator's answer
was lost) finds the old file gone and the new one there, and answers the same.

The coordinator may roll such a move back like any other (its node down too long): the map then
names the old shard while the file may already sit in the new one. The node keeps using the file
where it is (``StorageService.resident_shard``), and a later move takes it from there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from pathlib import Path

from tabletdb.cql.errors import InvalidRequest
from tabletdb.replica.storage_service import StorageService, intranode_shards, tablet_file
from tabletdb.schema.model import TableDef
from tabletdb.storage.fsync import fsync_path
from tabletdb.storage.snapshot_files import SIDE_FILES
from tabletdb.tablets.migration import STAGE_ORDER
from tabletdb.tablets.tablet_map import TransitionStage

log = logging.getLogger(__name__)

_STREAMING = STAGE_ORDER.index(TransitionStage.STREAMING)


class ShardMoveBusy(Exception):
    """The tablet's store has writes queued or committing right now; the caller retries."""


def move_between_shards(
    storage: StorageService, table: TableDef, tablet_id: int, from_shard: int, to_shard: int
) -> str:
    """Move this node's file of the tablet from ``from_shard`` to ``to_shard``: ``"moved"``,
    ``"empty"`` (never written: an empty file was made in the new shard) or ``"done before"``.

    Refused unless this node's tablet map has the tablet moving between exactly these shards of
    this node at the ``streaming`` stage (a coordinator's stale view must not move a live file);
    ``ShardMoveBusy`` while writes are in flight to it."""
    where = f"tablet {tablet_id} of {table.keyspace}.{table.name} on this node ({storage.host_id})"
    tablet_map = storage.tablet_maps().get(table.id)
    if tablet_map is None or not 0 <= tablet_id < tablet_map.tablet_count:
        raise InvalidRequest(f"{where}: no such tablet in this node's tablet map")
    moving = intranode_shards(tablet_map.tablets[tablet_id], storage.host_id)
    if moving is None or moving[:2] != (from_shard, to_shard):
        raise InvalidRequest(f"{where} is not moving from shard {from_shard} to shard {to_shard}")
    generation = tablet_map.resize_seq_number
    resident = storage.resident_shard(table, tablet_id, from_shard, generation)
    old = tablet_file(storage.data_dir, table, resident, tablet_id, generation)
    new = tablet_file(storage.data_dir, table, to_shard, tablet_id, generation)
    if moving[2] > _STREAMING or resident == to_shard:
        return "done before"
    if moving[2] < _STREAMING:
        raise InvalidRequest(f"{where} has not reached the streaming stage yet; retry")
    if old in storage.unrepaired():
        raise InvalidRequest(f"{where}: the file at shard {from_shard} awaits repair; retry once repaired")
    if not old.exists():
        storage.create_file(new)  # an empty file: from now on the tablet's writes land there
        return "empty"
    storage.write_deferred([old])
    if not storage.sync(old):
        raise ShardMoveBusy(f"{where}: writes in flight to {old}; retry")
    released = storage.release(old)  # logs the removal: a replay keeps the old path's rows out
    assert released, "the store was idle and nothing ran since"
    _fold_wal(old, where)
    _replace(old, new)
    log.info("tablet moved between shards table=%s tablet=%d from=%s to=%s", table.id, tablet_id, old, new)
    return "moved"


def _fold_wal(path: Path, where: str) -> None:
    """Checkpoint a WAL left beside the closed file into it, so the file alone is the data.

    Closing the store folds it unless another connection had the file open (a load-statistics
    measurement, a copy being streamed off it); while one still reads, the checkpoint cannot
    finish, and the file is not moved (``ShardMoveBusy``: the caller retries; until then the old
    file with its WAL stays the tablet's, its writes reopen it there)."""
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            busy, log_frames, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy or log_frames != done or (wal.exists() and wal.stat().st_size > 0):
            raise ShardMoveBusy(f"{where}: another reader holds {path}'s write-ahead log; retry")
    fsync_path(path)


def _replace(old: Path, new: Path) -> None:
    new.parent.mkdir(parents=True, exist_ok=True)
    for suffix in SIDE_FILES:  # a leftover of an earlier replica in the new shard goes
        Path(f"{new}{suffix}").unlink(missing_ok=True)
    os.replace(old, new)
    for suffix in SIDE_FILES:
        Path(f"{old}{suffix}").unlink(missing_ok=True)
    for directory in (new.parent, new.parent.parent, old.parent):
        fsync_path(directory)
