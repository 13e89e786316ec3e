"""A source's side of tablet streaming: the images it offers, each to one target, for a short while.

``open_image`` makes a consistent image of this node's replica of a tablet: the live file itself,
pinned with its log's committed frames to replay at the target (``storage.pinned_image.
pin_with_log``: no copy of the file, no checkpoint, no fsync), or, when the log is too long to
carry in memory, a copy staged through the online-backup API. ``OutgoingImages`` keeps each
offered image under a transfer id (16 random bytes, hex: unguessable) issued to one target node:
only that node may read it, over RPC in chunks or once over a dedicated connection, which
consumes it. An image nobody used for ``IDLE`` seconds is released (a pinned file holds its
write-ahead log from being folded in, so it must not outlive a target that went away), and so
is every image when the verbs are registered again (a restarted process starts with none).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.tablet_images import local_tablet_path
from tabletdb.schema.model import TableDef
from tabletdb.storage.images.pinned_image import pin_store_with_log
from tabletdb.storage.snapshot_files import snapshot_to
from tabletdb.storage.tablet_store import StorageError

log = logging.getLogger(__name__)

IDLE = 120.0
"""Seconds an offered image is kept without a read."""


@dataclass
class Image:
    """An open, consistent image of a tablet file: the first ``size - len(tail)`` bytes of
    ``file``, then ``tail`` (a pinned file's committed log frames, replayed into the file's bytes
    by the target: ``storage.wal_frames``)."""

    size: int
    file: BinaryIO
    kind: str
    """``pinned`` (the live file) or ``copy`` (staged through online backup)."""
    release: Callable[[], None] = field(repr=False)
    prepared_ms: float = 0.0
    """How long making the image took (the deferred rows, the pin or the copy)."""
    tail: bytes = b""

    @property
    def in_file(self) -> int:
        """Bytes of the image that are the file's."""
        return self.size - len(self.tail)


async def open_image(storage: StorageService, table: TableDef, tablet_id: int, staging: Path) -> Image | None:
    """This node's replica of the tablet as an image; None if it was never written. Rows the
    store deferred are written first, so the image holds every write committed before the call."""
    started = time.monotonic()
    path = local_tablet_path(storage, table, tablet_id)
    storage.write_deferred([path])
    if not path.exists():
        return None
    store = storage.open_committer(path).store
    pinned = await asyncio.to_thread(pin_store_with_log, store)
    if pinned is not None:
        return Image(pinned.total, pinned.file, "pinned", pinned.close, _ms_since(started), pinned.log)
    await asyncio.to_thread(snapshot_to, path, staging, sync=False)
    copy = staging.open("rb")

    def release() -> None:
        copy.close()
        staging.unlink(missing_ok=True)

    return Image(staging.stat().st_size, copy, "copy", release, _ms_since(started))


def _ms_since(started: float) -> float:
    return (time.monotonic() - started) * 1000


@dataclass
class _Offer:
    image: Image
    peer: int
    expiry: asyncio.TimerHandle | None = None


class OutgoingImages:
    """Images offered to targets, by transfer id (module docstring)."""

    def __init__(self) -> None:
        self._offers: dict[str, _Offer] = {}

    def offer(self, image: Image, peer: int) -> str:
        transfer = secrets.token_hex(16)
        self._offers[transfer] = offer = _Offer(image, peer)
        self._arm(transfer, offer)
        return transfer

    def get(self, transfer: str, peer: int) -> Image:
        """The image for a chunk read by ``peer``; its idle clock starts again."""
        offer = self._offer(transfer, peer)
        self._arm(transfer, offer)
        return offer.image

    def take(self, transfer: str, peer: int) -> Image:
        """The image, no longer offered (a dedicated transfer uses it once); the caller releases it."""
        offer = self._offer(transfer, peer)
        self._forget(transfer, offer)
        return offer.image

    def close(self, transfer: str, peer: int) -> bool:
        """Release the image; False if it was not offered (any more)."""
        offer = self._offers.get(transfer)
        if offer is None or offer.peer != peer:
            return False
        self._forget(transfer, offer)
        offer.image.release()
        return True

    def clear(self) -> None:
        for transfer, offer in list(self._offers.items()):
            self._forget(transfer, offer)
            offer.image.release()

    def __len__(self) -> int:
        return len(self._offers)

    def _offer(self, transfer: str, peer: int) -> _Offer:
        offer = self._offers.get(transfer)
        if offer is None:
            raise StorageError(
                f"no tablet image {transfer} offered by this node (closed, used, or idle too long)"
            )
        if offer.peer != peer:
            raise StorageError(f"tablet image {transfer} was offered to node {offer.peer}, not node {peer}")
        return offer

    def _arm(self, transfer: str, offer: _Offer) -> None:
        if offer.expiry is not None:
            offer.expiry.cancel()
        offer.expiry = asyncio.get_running_loop().call_later(IDLE, self._expire, transfer)

    def _forget(self, transfer: str, offer: _Offer) -> None:
        if offer.expiry is not None:
            offer.expiry.cancel()
        self._offers.pop(transfer, None)

    def _expire(self, transfer: str) -> None:
        offer = self._offers.get(transfer)
        if offer is not None:
            log.info(
                "tablet image %s offered to node %d released: idle for %.0f s", transfer, offer.peer, IDLE
            )
            self.close(transfer, offer.peer)
