"""The per-file work of backup and restore, run as Spark tasks.

The driver plans (tablet maps, snapshot tag, which file goes where) and turns each unit of work
into a small frozen dataclass holding only plain values: a node's REST address, a table id, a
token range, a checksum and a path under the backup directory. `run_task` (top level, so Spark
pickles it by reference) runs one on an executor and returns a `TaskResult`; errors come back as
results rather than exceptions, so the driver can record what did finish (restore progress)
before failing with the task's own message instead of a JVM stack trace.

The backup's store is read and written by the executors (`backup_store`): on a real Spark
cluster it must be a path every executor and the driver see alike (a shared filesystem) or an
s3:// URI; every executor must reach the nodes' REST APIs and have tabletdb installed.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabletdb.spark.backup_rest import CHUNK, Credentials, NodeApi, RestError, file_sha256
from tabletdb.spark.backup_store import BackupStore

log = logging.getLogger(__name__)

BATCH_PER_CORE = 4
"""Default tasks per Spark job, per core of the default parallelism (see `run_on_spark`)."""


class TaskFailed(RuntimeError):
    """One or more tasks failed; the message names each one's file and its error."""


@dataclass(frozen=True)
class TaskResult:
    label: str
    error: str | None = None
    size: int = 0
    sha256: str = ""
    modes: tuple[str, ...] = ()
    """Restore: how each target node took the file ("file" whole, or "rows")."""


@dataclass(frozen=True)
class DownloadTask:
    """Copy one snapshot file from its node into the backup's store."""

    label: str
    """The file's path relative to the backup directory."""
    address: str
    port: int
    tag: str
    snapshot_path: str
    backup_dir: str
    """The store's location (`backup_store.BackupStore`): an absolute path or a store URI."""
    expected_sha256: str
    credentials: Credentials | None = field(default=None, repr=False)
    """For the node's REST API (basic auth); travels to the executor with the task."""

    def run(self) -> TaskResult:
        store = BackupStore(self.backup_dir)
        api = NodeApi(self.address, self.port, self.credentials)
        local = store.local
        if local is not None:
            target = local / self.label
            digest = api.download(self.tag, self.snapshot_path, target, _ignore)
            size = target.stat().st_size
        else:  # an object is durable once its stream has closed
            with store.writer(self.label) as out:
                digest = api.download_to(self.tag, self.snapshot_path, out, _ignore)
            size = store.size(self.label)
        if digest != self.expected_sha256:
            raise RestError(f"downloaded sha256 {digest} != the node's {self.expected_sha256}")
        return TaskResult(self.label, size=size, sha256=digest)


@dataclass(frozen=True)
class UploadTask:
    """Send one backed-up file to every node that holds a replica of a tablet it overlaps.

    A local file is sent from where it lies with sendfile and not read here at all: each node
    hashes what arrives, refuses it unless it is the manifest's sha256, and answers with the hash
    it computed. A file in an object store is fetched once into the executor's temporary directory,
    hashed on the way and checked before anything is sent, then sent from there to each node."""

    label: str
    """The file's path relative to the backup directory (the restore progress key)."""
    targets: tuple[tuple[str, int], ...]
    table_id: str
    first_token: int
    last_token: int
    backup_dir: str
    """The store's location (`backup_store.BackupStore`): an absolute path or a store URI."""
    expected_sha256: str
    credentials: Credentials | None = field(default=None, repr=False)

    def run(self) -> TaskResult:
        store = BackupStore(self.backup_dir)
        local = store.local
        if local is not None:
            return self._send(local / self.label, None)
        with tempfile.TemporaryDirectory(prefix="tabletdb-restore-") as scratch:
            copy = Path(scratch) / "tablet.db"
            digest = hashlib.sha256()
            with store.reader(self.label) as source, open(copy, "wb") as out:
                while chunk := source.read(CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
            self._check(digest.hexdigest())
            return self._send(copy, digest.hexdigest())

    def _check(self, digest: str) -> None:
        if digest != self.expected_sha256:
            raise RestError(
                f"the backup's file is damaged: sha256 {digest} does not match the manifest's"
                f" {self.expected_sha256}"
            )

    def _send(self, source: Path, known: str | None) -> TaskResult:
        """Send ``source`` to every target. Each node hashes what arrives and refuses it unless
        it is the manifest's sha256, then answers with the hash it computed; so when a send
        fails, the file is hashed here (unless it was already) to tell a damaged backup, named
        with both checksums, from a failed transfer."""
        modes: list[str] = []
        digest = known
        for address, port in self.targets:
            api = NodeApi(address, port, self.credentials)
            try:
                answer = api.load_tablet(
                    self.table_id, self.first_token, self.last_token, source, self.expected_sha256
                )
            except RestError:
                if digest is None:
                    self._check(file_sha256(source))
                raise
            digest = str(answer.get("sha256", ""))
            self._check(digest)
            modes.append(str(answer["mode"]))
        if digest is None:  # no target: still make sure the backup's file is whole
            digest = file_sha256(source)
        self._check(digest)
        return TaskResult(self.label, size=source.stat().st_size, sha256=digest, modes=tuple(modes))


SparkTask = DownloadTask | UploadTask


def _ignore(amount: int) -> None:
    """Byte progress inside a task has nowhere to go; the driver advances per finished job."""


def run_task(task: SparkTask) -> TaskResult:
    """Executor side: run one task; an error becomes the result's message."""
    try:
        return task.run()
    except (RestError, OSError, KeyError, ValueError) as exc:
        return TaskResult(
            task.label, error=f"{type(exc).__name__}: {exc}" if isinstance(exc, OSError) else str(exc)
        )


def run_on_spark(
    spark: Any,
    tasks: Sequence[SparkTask],
    batch: int = 0,
    finished: Callable[[list[TaskResult]], None] | None = None,
) -> list[TaskResult]:
    """Run ``tasks`` as Spark jobs of ``batch`` tasks each, in order; a job's tasks are spread
    over one Spark task (partition) per core of the default parallelism.

    A job's results reach the driver only when the whole job is done, so work is cut into jobs of
    a few tasks per core (``batch`` 0) and ``finished`` sees each job's successes as it ends: a
    restore records them, so one killed midway loses at most a job's worth. Raises `TaskFailed`
    with every failed task's message after handing the job's successes to ``finished``.
    """
    context = spark.sparkContext
    cores = max(1, int(context.defaultParallelism))
    size = batch if batch > 0 else BATCH_PER_CORE * cores
    results: list[TaskResult] = []
    for start in range(0, len(tasks), size):
        wave = list(tasks[start : start + size])
        # One Spark task per core, each running its share of the files in turn: a Spark task of
        # its own per file cost more in scheduling and worker set-up than copying the file did.
        got: list[TaskResult] = context.parallelize(wave, min(len(wave), cores)).map(run_task).collect()
        done = [r for r in got if r.error is None]
        if finished is not None and done:
            finished(done)
        failed = [r for r in got if r.error is not None]
        if failed:
            raise TaskFailed("; ".join(f"{r.label}: {r.error}" for r in failed))
        results.extend(got)
    return results
