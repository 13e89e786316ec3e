"""REST endpoints for backup and restore: the balancing flag, snapshots, tablet file installs.

Each endpoint acts on this node only — the tablets it holds — and the `tabletdb backup` /
`restore` client walks the tablet map and talks to every replica, so the same endpoints serve
one node or a cluster. Paths follow Scylla's where Scylla has one
(`/storage_service/snapshots`, `/storage_service/tablets/balancing`); the file download and the
tablet load are tabletdb's own.

* ``POST /storage_service/snapshots?tag=T[&kn=ks1,ks2]`` copies every local file of the user
  tables (or of the named keyspaces) into ``<workdir>/snapshots/T/`` — one consistent copy per
  tablet replica: the pinned live file's bytes, hashed as they are copied
  (``snapshot_files.snapshot_pinned``), or SQLite's online backup when the file cannot be pinned
  at that moment — and answers with each file's tablet, token range, size, sha256 and live
  row count. As in ScyllaDB, ``cf=t1,t2`` with exactly one ``kn`` names tables (with their
  views; a view alone is refused), and ``sf=true`` skips writing the stores' deferred rows
  first (the snapshot then holds what the files held). The path also answers with a trailing
  ``/``.
* ``GET /storage_service/snapshots/file?tag=T&path=P`` downloads one of them;
  ``DELETE /storage_service/snapshots?tag=T`` removes the snapshot.
* ``POST /storage_service/tablets/load?table_id=I&first_token=A&last_token=B&sha256=H`` with a
  tablet image as the body: if a local tablet covers exactly (A, B] and is empty, the file is
  installed whole; otherwise its partitions that fall in local tablets (vnode tables: in the
  ranges this node replicates) are merged into their files inside SQLite
  (``replica.tablet_images.merge_image``: set-based, last write wins, one synced transaction per
  file, so loading the same image twice, or over live data, is harmless, and a crash leaves a
  file with all of it or none). The answer says how (``mode`` "file" or "rows"), how many
  partitions were taken, and ``covered``: whether every tablet the range overlaps is local (a
  bulk load fails rather than count an image half-taken as done). Before
  either, the image must pass `storage.image_validation` (a tablet file's schema, every token in
  (A, B] and its key's, columns of the table, no timestamp beyond now + 3 days while
  ``restrict_future_timestamp`` is on): otherwise 400 with the reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import shutil
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from aiohttp import web

from tabletdb.coordinator.placement import ReplicaPlacement
from tabletdb.dht.token import TokenRange
from tabletdb.net.file_bytes import WRITEBACK_BYTES, start_writeback
from tabletdb.node.admin.api_context import ApiContext
from tabletdb.replica.image_targets import tablet_targets, vnode_targets
from tabletdb.replica.storage_service import LocalFile, StorageService
from tabletdb.replica.tablet_images import may_replace_whole, merge_image
from tabletdb.schema.model import TableDef
from tabletdb.storage.data_paths import table_directory_name
from tabletdb.storage.fsync import fsync_path
from tabletdb.storage.images.image_validation import ImageRejected, validate_image
from tabletdb.storage.snapshot_files import (
    file_sha256,
    live_row_count,
    place_image,
    snapshot_pinned,
    snapshot_to,
)
from tabletdb.storage.tablet_store import StorageError, TabletStore
from tabletdb.tablets.tablet_map import TabletMap

log = logging.getLogger(__name__)

_TAG = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_UPLOAD_CHUNK = 1 << 20
SNAPSHOT_THREADS = 2
"""Files a snapshot copies and counts at once, on worker threads (SQLite and hashlib release the
GIL): the copy waits on the disk, the count and checksum on the CPU, so two overlap well."""


def add_routes(app: web.Application, ctx: ApiContext) -> None:
    placement = _placement(ctx)

    def bind(route: Callable[[ApiContext, web.Request], Awaitable[Any]]) -> Any:
        async def handle(request: web.Request) -> web.Response:
            return web.json_response(await route(ctx, request))

        return _readable(handle)

    app.add_routes(
        [
            web.get("/storage_service/tablets/balancing", bind(_get_balancing)),
            web.post("/storage_service/tablets/balancing", bind(_set_balancing)),
            web.post("/storage_service/snapshots", bind(_take_snapshot)),
            web.post("/storage_service/snapshots/", bind(_take_snapshot)),  # the path ScyllaDB's tools use
            web.delete("/storage_service/snapshots", bind(_delete_snapshot)),
            web.delete("/storage_service/snapshots/", bind(_delete_snapshot)),
            web.get("/storage_service/snapshots/file", _readable(lambda r: _download(ctx, r))),
            web.post("/storage_service/tablets/load", _readable(lambda r: _load_tablet(ctx, placement, r))),
        ]
    )


def _readable(
    handle: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """Failures as one line the backup/restore client can print (`HTTP 500: StorageError: ...`),
    not aiohttp's generic "Server got itself in trouble"; the traceback goes to the node's log."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        try:
            return await handle(request)
        except web.HTTPException:
            raise
        except Exception as exc:
            log.exception("REST call failed method=%s path=%s", request.method, request.path)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise web.HTTPInternalServerError(
                text=f"{type(exc).__name__} on {request.method} {request.path}: {first}"
            ) from None

    return guarded


# --- balancing ---------------------------------------------------------------------------------


async def _get_balancing(ctx: ApiContext, request: web.Request) -> dict[str, bool]:
    return {"enabled": ctx.state().balancing_enabled}


async def _set_balancing(ctx: ApiContext, request: web.Request) -> dict[str, bool]:
    text = request.query.get("enabled", "").lower()
    if text not in ("true", "false"):
        raise web.HTTPBadRequest(text=f"enabled must be true or false, got {text!r}")
    if ctx.group0 is None:
        raise web.HTTPServiceUnavailable(text="node is in maintenance mode: group0 is not running")
    await ctx.group0.set_balancing(text == "true")
    log.info("tablet balancing set enabled=%s", text)
    return {"enabled": ctx.state().balancing_enabled}


# --- snapshots ---------------------------------------------------------------------------------


def _storage(ctx: ApiContext) -> tuple[StorageService, Path]:
    if ctx.storage is None or ctx.snapshots_dir is None:
        raise web.HTTPServiceUnavailable(text="this node has no storage service")
    return ctx.storage, ctx.snapshots_dir


def _tag_dir(ctx: ApiContext, request: web.Request) -> Path:
    tag = request.query.get("tag", "")
    if not _TAG.match(tag):
        raise web.HTTPBadRequest(text=f"snapshot tag must be 1-128 of [A-Za-z0-9._-], got {tag!r}")
    return _storage(ctx)[1] / tag


def _tables(ctx: ApiContext, keyspaces: Iterable[str]) -> list[TableDef]:
    catalog = ctx.state().metadata.catalog
    names = list(keyspaces) or sorted(catalog.keyspaces)
    out: list[TableDef] = []
    for name in names:
        ks = catalog.keyspaces.get(name)
        if ks is None:
            raise web.HTTPBadRequest(text=f"keyspace {name!r} does not exist")
        out += [ks.tables[t] for t in sorted(ks.tables)] + [ks.views[v].table for v in sorted(ks.views)]
    return out


def _named_tables(ctx: ApiContext, keyspaces: list[str], names: list[str]) -> list[TableDef]:
    """The tables ``cf`` names in the one keyspace ``kn`` names, each with its views."""
    if not keyspaces:
        raise web.HTTPBadRequest(text="The keyspace of column families must be specified")
    if len(keyspaces) > 1:
        raise web.HTTPBadRequest(text="Only one keyspace allowed when specifying a column family")
    ks = ctx.state().metadata.catalog.keyspaces.get(keyspaces[0])
    if ks is None:
        raise web.HTTPBadRequest(text=f"keyspace {keyspaces[0]!r} does not exist")
    out: list[TableDef] = []
    for name in names:
        if name in ks.views:
            raise web.HTTPBadRequest(
                text="Do not take a snapshot of a materialized view or a secondary index by itself. "
                "Run snapshot on the base table instead."
            )
        table = ks.tables.get(name)
        if table is None:
            raise web.HTTPBadRequest(text=f"table {keyspaces[0]}.{name} does not exist")
        out += [table, *(v.table for v in ks.views_of(name))]
    return out


def _snapshot_name(table: TableDef, local: LocalFile) -> str:
    leaf = f"tablet-{local.tablet_id}.db" if local.tablet_id is not None else f"shard-{local.shard}-vnode.db"
    return f"{table_directory_name(table.keyspace, table.name, table.id)}/{leaf}"


def _snapshot_one(
    table: TableDef, local: LocalFile, store: TabletStore | None, tag_dir: Path, now: int
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "keyspace": table.keyspace,
        "table": table.name,
        "table_id": str(table.id),
        "tablet_id": local.tablet_id,
        "shard": local.shard,
        "first_token": local.token_range.start,
        "last_token": local.token_range.end,
        "path": None,
        "size": 0,
        "sha256": None,
        "rows": 0,
    }
    if not local.path.exists():  # never written: nothing to copy
        return entry
    relative = _snapshot_name(table, local)
    target = tag_dir / relative
    sha256 = None if store is None else snapshot_pinned(store, target)
    if sha256 is None:  # not pinnable at this moment: SQLite's online backup, then a hash
        snapshot_to(local.path, target, sync=False)
        sha256 = file_sha256(target)
    entry.update(path=relative, size=target.stat().st_size, sha256=sha256)
    entry["rows"] = live_row_count(target, now)
    return entry


async def _take_snapshot(ctx: ApiContext, request: web.Request) -> dict[str, Any]:
    storage, _ = _storage(ctx)
    tag_dir = _tag_dir(ctx, request)
    if tag_dir.exists():
        raise web.HTTPConflict(text=f"snapshot {tag_dir.name!r} already exists on this node")
    keyspaces = [k for k in request.query.get("kn", "").split(",") if k]
    names = [t for t in request.query.get("cf", "").split(",") if t]
    tables = _named_tables(ctx, keyspaces, names) if names else _tables(ctx, keyspaces)
    # Capture the file list on the loop (tablet maps can change later); copy off the loop.
    work = [(table, local) for table in tables for local in storage.local_files(table)]
    if request.query.get("sf", "").lower() != "true":  # ScyllaDB's skip_flush
        storage.write_deferred(local.path for _, local in work)
    tag_dir.mkdir(parents=True)
    now = int(time.time())
    gate = asyncio.Semaphore(SNAPSHOT_THREADS)

    async def one(table: TableDef, local: LocalFile) -> dict[str, Any]:
        async with gate:
            # the store (opened on the loop, as stores are) is what a pinned copy holds still
            store = storage.open_committer(local.path).store if local.path.exists() else None
            return await asyncio.to_thread(_snapshot_one, table, local, store, tag_dir, now)

    files = list(await asyncio.gather(*(one(t, local) for t, local in work)))
    log.info("snapshot taken tag=%s files=%d", tag_dir.name, len(files))
    return {"tag": tag_dir.name, "host_id": str(ctx.host_id), "time": now, "files": files}


async def _delete_snapshot(ctx: ApiContext, request: web.Request) -> dict[str, bool]:
    tag_dir = _tag_dir(ctx, request)
    existed = tag_dir.exists()
    if existed:
        await asyncio.to_thread(shutil.rmtree, tag_dir)
    return {"removed": existed}


async def _download(ctx: ApiContext, request: web.Request) -> web.StreamResponse:
    tag_dir = _tag_dir(ctx, request)
    path = (tag_dir / request.query.get("path", "")).resolve()
    if tag_dir.resolve() not in path.parents or not path.is_file():
        raise web.HTTPNotFound(text=f"no file {request.query.get('path')!r} in snapshot {tag_dir.name!r}")
    return web.FileResponse(path)


# --- loading a tablet image ----------------------------------------------------------------------


def _query_int(request: web.Request, name: str) -> int:
    try:
        return int(request.query[name])
    except (KeyError, ValueError):
        raise web.HTTPBadRequest(text=f"query parameter {name} must be an integer") from None


async def _receive(request: web.Request, staging: Path) -> str:
    """Write the body to ``staging`` and return its sha256. Every ``WRITEBACK_BYTES`` the kernel
    is asked to start writing what arrived to disk (as tablet streaming does), so the fsync of
    ``_check_upload`` finds little left to write instead of the whole file."""
    digest = hashlib.sha256()
    with open(staging, "wb") as out:
        total = started = 0
        async for chunk in request.content.iter_chunked(_UPLOAD_CHUNK):
            digest.update(chunk)
            out.write(chunk)
            total += len(chunk)
            if total - started >= WRITEBACK_BYTES:
                out.flush()
                start_writeback(out.fileno(), started, total - started)
                started = total
    return digest.hexdigest()


def _check_upload(staging: Path, table: TableDef, image_range: TokenRange, limit: int | None) -> None:
    """Sync the staged image, then every check on one read-only connection in one trip off the
    loop (`image_validation`, its b-trees included): the checks read the whole file, so each pass
    saved is a read of it saved."""
    fsync_path(staging)
    validate_image(staging, table, image_range, limit, structure=True)


def _placement(ctx: ApiContext) -> ReplicaPlacement:
    me = ctx.state().topology.members.get(ctx.host_id)
    return ReplicaPlacement(
        ctx.host_id,
        me.datacenter if me is not None else "",  # only labels replicas; ownership is by host
        lambda: ctx.state().topology,
        lambda: ctx.state().metadata.catalog,
        lambda: ctx.state().metadata.tablets,
        topology_state=lambda: ctx.state().topology_state,
    )


async def _load_tablet(ctx: ApiContext, placement: ReplicaPlacement, request: web.Request) -> web.Response:
    storage, _ = _storage(ctx)
    try:
        table_id = uuid.UUID(request.query.get("table_id", ""))
    except ValueError:
        raise web.HTTPBadRequest(text="query parameter table_id must be a UUID") from None
    image_range = TokenRange(_query_int(request, "first_token"), _query_int(request, "last_token"))
    table = ctx.state().metadata.catalog.by_id(table_id)
    if table is None:
        raise web.HTTPNotFound(text=f"no table with id {table_id} (replay the schema first)")
    incoming = storage.data_dir / ".incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    staging = incoming / f"{uuid.uuid4().hex}.db"
    try:
        received = await _receive(request, staging)
        expected = request.query.get("sha256")
        if expected is not None and expected != received:
            raise web.HTTPBadRequest(text=f"tablet image checksum {received} != {expected}: transfer damaged")
        limit = (
            None
            if ctx.max_future_timestamp_us is None
            else time.time_ns() // 1000 + ctx.max_future_timestamp_us
        )
        try:
            await asyncio.to_thread(_check_upload, staging, table, image_range, limit)
        except (ImageRejected, StorageError) as exc:
            log.warning("tablet image refused table=%s.%s reason=%s", table.keyspace, table.name, exc)
            raise web.HTTPBadRequest(
                text=f"tablet image for {table.keyspace}.{table.name} refused: {exc}"
            ) from None
        version_before = ctx.state().topology_state.version
        answer = await _install_or_apply(storage, placement, table, image_range, staging)
        answer["sha256"] = received  # what arrived, so the sender need not hash what it sent
        answer["moved"] = moved_during(
            version_before,
            ctx.state().topology_state.version,
            storage.tablet_maps().get(table.id),
            image_range,
        )
        return web.json_response(answer)
    finally:
        staging.unlink(missing_ok=True)


def moved_during(
    version_before: int, version_after: int, tablet_map: TabletMap | None, image_range: TokenRange
) -> bool:
    """Whether replicas of the image's range may have changed while it was installed.

    A tablet migration streams a consistent copy of the old replica's file after a barrier this
    node passed, so an install that committed after that copy is on the old replica only. Then
    this node's view already shows the change (its version moved, or the tablet is in transition):
    the sender must not count the file as loaded everywhere."""
    if version_after != version_before:
        return True
    if tablet_map is None:
        return False
    return any(
        info.in_transition
        for tablet_id, info in enumerate(tablet_map.tablets)
        if tablet_map.range_of(tablet_id).intersect(image_range)
    )


async def _install_or_apply(
    storage: StorageService,
    placement: ReplicaPlacement,
    table: TableDef,
    image_range: TokenRange,
    staging: Path,
) -> dict[str, Any]:
    local = storage.local_files(table)
    same = [f for f in local if f.tablet_id is not None and f.token_range == image_range]
    # No await between the checks and the rename, so no write slips in (see may_replace_whole).
    if same and may_replace_whole(storage, same[0].path):
        place_image(staging, same[0].path)
        return {"mode": "file", "tablet_id": same[0].tablet_id, "partitions": None, "covered": True}
    tablet_map = storage.tablet_maps().get(table.id)
    if tablet_map is not None:
        local_tablets = {f.tablet_id for f in local if f.tablet_id is not None}
        targets, covered = tablet_targets(tablet_map, local_tablets, image_range)
    else:  # a vnode table: the ranges this node replicates, by shard file
        mine = [
            r.token_range for r in placement.ranges(table) if any(placement.is_local(x) for x in r.replicas)
        ]
        targets, covered = vnode_targets(mine, image_range, storage.smp, storage.ignore_msb), True
    merged = await merge_image(storage, table, staging, targets)
    return {"mode": "rows", "tablet_id": None, "partitions": merged, "covered": covered}
