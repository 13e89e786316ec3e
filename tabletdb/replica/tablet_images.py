"""A tablet replica's data as one whole file: copied off a source, installed on a target, dropped.

The topology coordinator moves a tablet replica by streaming: the target pulls a consistent copy
of the source's SQLite file (``storage.snapshot_files``: online backup from a read-only
connection, taken while writes continue) and installs it. By then the target already takes the
tablet's writes (the migration writes to both replica sets), so a target whose file holds
anything gets the image merged into it inside SQLite (``merge_image``: one set-based,
last-write-wins transaction per file, which keeps both the image's rows and the writes it has),
and only an empty, idle target file is replaced whole. Several sources (a rebuild reads every
surviving replica) are merged the same way: the first may install whole, the next ones merge.
Restore and bulk load (``node.admin.rest_snapshots``) use the same two steps.
Cleanup closes a replica's store and deletes its file, refusing while
the current tablet map still routes reads or writes to it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

from tabletdb.cql.errors import InvalidRequest
from tabletdb.replica.image_targets import MergeTarget
from tabletdb.replica.storage_service import StorageService, tablet_file
from tabletdb.schema.model import TableDef
from tabletdb.storage.snapshot_files import has_partitions, place_image, snapshot_to
from tabletdb.tablets.migration import read_replicas, write_replicas

log = logging.getLogger(__name__)


class TabletBusy(Exception):
    """The tablet's store has writes queued or committing; the caller retries."""


def local_tablet_path(storage: StorageService, table: TableDef, tablet_id: int) -> Path:
    """The file of this node's replica of the tablet (as the current map places it)."""
    for local in storage.local_files(table):
        if local.tablet_id == tablet_id:
            return local.path
    raise InvalidRequest(
        f"this node ({storage.host_id}) holds no replica of tablet {tablet_id} of "
        f"{table.keyspace}.{table.name}"
    )


async def copy_tablet(storage: StorageService, table: TableDef, tablet_id: int, staging: Path) -> bool:
    """A consistent copy of this node's replica of the tablet at ``staging``; False (nothing
    written) if the replica was never written. Rows the store deferred are written first, so
    the copy holds every write committed before the call. The copy is not synced: it is
    transient (read once by a target, or checked, which syncs it, and installed through
    ``install_tablet``), and a crash discards it either way."""
    path = local_tablet_path(storage, table, tablet_id)
    storage.write_deferred([path])
    if not path.exists():
        return False
    await asyncio.to_thread(snapshot_to, path, staging, sync=False)
    return True


_merging: dict[Path, int] = {}
"""Files an image is being merged into right now (on a worker thread, under the store's write
lock, which ``GroupCommitter.idle`` does not see): never replaced whole meanwhile."""


def may_replace_whole(storage: StorageService, path: Path) -> bool:
    """Whether an image may replace the file at ``path`` whole: it holds nothing, no merge is
    running into it, and its store (if open) had no write queued or committing, and is now
    closed. Call with no await between this and the rename, so no write slips in."""
    return not _merging.get(path) and not has_partitions(path) and storage.release(path)


async def merge_image(
    storage: StorageService, table: TableDef, image: Path, targets: Sequence[MergeTarget]
) -> int:
    """Merge the checked image into each target file inside SQLite (``TabletStore.merge_image``:
    set-based, last write wins, one synced transaction per file); returns the partitions taken.
    Writes to a target meanwhile wait for its merge; writes already in it stay (last write wins
    decides between them and the image's, as if both had been applied as writes)."""
    total = 0
    for target in targets:
        store = storage.committer(table, target.token).store
        _merging[store.path] = _merging.get(store.path, 0) + 1
        try:
            total += await asyncio.to_thread(store.merge_image, image, target.pieces)
        finally:
            left = _merging.pop(store.path) - 1
            if left:
                _merging[store.path] = left
    return total


async def install_tablet(storage: StorageService, table: TableDef, tablet_id: int, staging: Path) -> str:
    """Put the image at ``staging``, synced and checked by the caller (``check_image``), into this
    node's replica of the tablet: ``"file"`` when it replaced an empty, idle file whole, ``"rows"``
    when it was merged into the file."""
    path = local_tablet_path(storage, table, tablet_id)
    if may_replace_whole(storage, path):
        place_image(staging, path)
        return "file"
    tablet_map = storage.tablet_maps().get(table.id)
    if tablet_map is None:
        raise InvalidRequest(f"{table.keyspace}.{table.name} has no tablet map on this node")
    token_range = tablet_map.range_of(tablet_id)
    await merge_image(storage, table, staging, [MergeTarget(token_range.end, (token_range,))])
    return "rows"


def drop_tablet(storage: StorageService, table: TableDef, tablet_id: int, shard: int) -> bool:
    """Close and delete this node's file of the tablet on ``shard``; False if there was none.

    Refused while the current map still reads or writes the tablet on this node and shard (a
    cleanup sent by a coordinator whose view is stale must not delete a live replica)."""
    tablet_map = storage.tablet_maps().get(table.id)
    if tablet_map is not None and 0 <= tablet_id < tablet_map.tablet_count:
        info = tablet_map.tablets[tablet_id]
        mine = (storage.host_id, shard)
        if any((r.host, r.shard) == mine for r in write_replicas(info) + read_replicas(info)):
            raise InvalidRequest(
                f"tablet {tablet_id} of {table.keyspace}.{table.name} is still served by this node "
                f"({storage.host_id}, shard {shard}); cleanup only deletes a replica that moved away"
            )
    generation = 0 if tablet_map is None else tablet_map.resize_seq_number
    path = tablet_file(storage.data_dir, table, shard, tablet_id, generation)
    removed = storage.remove_file(path)
    if removed is None:
        raise TabletBusy(f"tablet file {path} has writes in flight; retry the cleanup")
    if removed:
        log.info("tablet replica cleaned up table=%s tablet=%d path=%s", table.id, tablet_id, path)
    return removed
