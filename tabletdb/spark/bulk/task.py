"""A file-load Spark task: Arrow batches of input in; rejects and the count of rows loaded out.

Batches are fitted as they arrive (`rows.fit_batch`) and their rows kept per tablet; a tablet's
rows become a sorted tablet file once it holds `FilePlan.flush_rows` of them, and every tablet's
rest when the input ends. Files go to the tablet's replicas from a sender thread (each replica
in parallel), so the nodes merge one file while the task fits the next batches; at most
`IN_FLIGHT` files wait or travel at a time, which bounds the disk a task uses. A replica that
no longer holds the tablet, or whose tablet moved while it merged, fails the task (the load
fails and says to run it again: a rerun writes the same cells).

The task runs with Python's cyclic garbage collector paused (`_collector_paused`): it holds up
to `FilePlan.flush_rows` rows per tablet as Python tuples and lists, and each collection of the
oldest generation walked all of them again (about a quarter of the task's CPU on the bench's
rows). Nothing the task builds is cyclic, so reference counting frees it all the same; the
collector is put back as it was when the task ends.
"""

from __future__ import annotations

import contextlib
import gc
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa

from tabletdb.spark.backup_rest import NodeApi, file_sha256
from tabletdb.spark.bulk.plan import FilePlan
from tabletdb.spark.bulk.rows import fit_batch
from tabletdb.spark.bulk.tablet_file import TabletRows, write_rows

OUTPUT_SCHEMA = pa.schema([("reason", pa.string()), ("record", pa.string()), ("loaded", pa.int64())])
"""What a task yields: (reason, record, null) per reject, then (null, null, rows loaded)."""
OUTPUT_DDL = "reason string, record string, loaded long"
IN_FLIGHT = 2


class FileLoadFailed(RuntimeError):
    """A file could not be sent or was not taken whole; the message names the node and tablet."""


def _send(plan: FilePlan, group: int, path: Path, pool: ThreadPoolExecutor) -> None:
    """Send the file at `path` to every replica of `group` (in parallel), then delete it."""
    try:
        digest = file_sha256(path)
        first, last = plan.ranges[group]
        answers = [
            (address, port, pool.submit(_upload, plan, address, port, first, last, path, digest))
            for address, port in plan.replicas[group]
        ]
        for address, port, answer in answers:
            _check(plan, address, port, first, last, answer.result())
    finally:
        path.unlink(missing_ok=True)


def _upload(
    plan: FilePlan, address: str, port: int, first: int, last: int, path: Path, digest: str
) -> dict[str, object]:
    return NodeApi(address, port, plan.credentials).load_tablet(str(plan.table.id), first, last, path, digest)


def _check(plan: FilePlan, address: str, port: int, first: int, last: int, answer: dict[str, object]) -> None:
    name = f"{plan.table.keyspace}.{plan.table.name}"
    if not answer.get("covered", True):
        raise FileLoadFailed(
            f"node {address}:{port} no longer holds every tablet of token range ({first}, {last}] "
            f"of {name} (the tablet map changed during the load); run the load again"
        )
    if answer.get("moved", False):
        raise FileLoadFailed(
            f"the replicas of token range ({first}, {last}] of {name} changed while node "
            f"{address}:{port} merged the file (a topology change moved a tablet), so a new replica "
            "may lack it; run the load again once the change ended (a rerun writes the same cells)"
        )


class _Sender:
    """Writes tablet files and sends them from a background thread, `IN_FLIGHT` at most."""

    def __init__(self, plan: FilePlan, tmp: Path) -> None:
        self.plan = plan
        self.tmp = tmp
        self.defs = plan.columns()
        replicas = max((len(r) for r in plan.replicas), default=1)
        self.uploads = ThreadPoolExecutor(replicas, thread_name_prefix="tablet-upload")
        self.sends = ThreadPoolExecutor(1, thread_name_prefix="tablet-send")
        self.pending: list[Future[None]] = []
        self.slots = threading.Semaphore(IN_FLIGHT)
        self.loaded = 0

    def send(self, group: int, rows: TabletRows) -> None:
        self._reap()
        path = self.tmp / f"tablet-{group}-{uuid.uuid4().hex}.db"
        self.slots.acquire()
        try:
            write_rows(path, self.plan.layout, self.defs, rows.sorted())
            future = self.sends.submit(_send, self.plan, group, path, self.uploads)
        except BaseException:
            self.slots.release()
            path.unlink(missing_ok=True)
            raise
        future.add_done_callback(lambda _: self.slots.release())
        self.pending.append(future)
        self.loaded += len(rows)

    def _reap(self) -> None:
        """Raise the first failure of a finished send (the task fails with it)."""
        for future in [f for f in self.pending if f.done()]:
            self.pending.remove(future)
            future.result()

    def finish(self) -> None:
        for future in self.pending:
            future.result()
        self.pending.clear()

    def close(self) -> None:
        self.sends.shutdown(wait=True, cancel_futures=True)
        self.uploads.shutdown(wait=True, cancel_futures=True)


def _rejects(rejects: list[tuple[str, str]]) -> pa.RecordBatch:
    reasons, records = zip(*rejects)
    return pa.record_batch(
        [pa.array(reasons, pa.string()), pa.array(records, pa.string()), pa.nulls(len(rejects), pa.int64())],
        schema=OUTPUT_SCHEMA,
    )


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, then as it was (module docstring)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_batches(plan: FilePlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The task (module docstring)."""
    held: dict[int, TabletRows] = {}
    with _collector_paused(), tempfile.TemporaryDirectory(prefix="tabletdb-load-") as tmp:
        sender = _Sender(plan, Path(tmp))
        try:
            for batch in batches:
                fitted = fit_batch(plan, batch, int(time.time()))
                if fitted.rejects:
                    yield _rejects(fitted.rejects)
                for group, chunk in fitted.chunks.items():
                    rows = held.get(group)
                    if rows is None:
                        rows = held[group] = TabletRows(plan.layout)
                    rows.add(chunk)
                    if len(rows) >= plan.flush_rows:
                        sender.send(group, held.pop(group))
            for group in sorted(held):
                sender.send(group, held.pop(group))
            sender.finish()
        finally:
            sender.close()
    yield pa.record_batch(
        [pa.nulls(1, pa.string()), pa.nulls(1, pa.string()), pa.array([sender.loaded], pa.int64())],
        schema=OUTPUT_SCHEMA,
    )
