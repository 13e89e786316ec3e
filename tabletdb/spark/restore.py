"""`tabletdb restore`: a backup into an empty cluster, resumable after an interruption.

1. Replay schema.cql in order. CREATE TABLE carries the original table id (WITH ID) and gets its
   tablet count pinned (`tablets = {min_tablet_count = max_tablet_count = N}`), so the new table
   is cut along the backed-up boundaries.
   CREATE INDEX waits until after the data (step 4).
2. Send each backed-up tablet file to every replica of the target tablets it overlaps. A node
   installs the file whole when its tablet has exactly the file's range and is still empty, and
   otherwise merges the file's partitions into its tablet files inside SQLite (write times, TTLs
   and tombstones kept; last write wins, so a repeated load is harmless). The node checks the
   file's sha256 against the manifest's on arrival; the sender hashes what it sends as it sends
   it (no separate read), so a file damaged in the backup is named with both checksums.
3. Put every table's own `tablets` option back, so DESCRIBE shows the backed-up schema exactly.
4. Create the secondary indexes, which the nodes build from the restored data.
5. Verify: the rows of every backed-up tablet's token range counted against the manifest, a few
   ranges at a time (`restore_verify`); never one whole-table COUNT(*) under a client timeout.

Progress (one record per finished statement, file or verified range) is kept next to the backup
by default: an append-only file synced per record on a local disk, one small object per record
on an object store (`backup_store.progress_log`); a rerun skips what it lists, so a restore
killed at any point completes when run again, and its progress bars start from what was already
done.

Step 2 runs on Spark: one `backup_tasks.UploadTask` per file, in jobs of a few files per core
(one Spark task per core runs a job's share in turn); the driver records each job's finished
files as the job ends. Executors read the files from the backup's store (`backup_store`): a
path they share with the driver, or an s3:// URI, on a real Spark cluster.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabletdb.cql.identifiers import quote_identifier
from tabletdb.spark.backup import ClusterOptions, Reporter, TabletLayout, cql_session, tablet_layout
from tabletdb.spark.backup_manifest import (
    SCHEMA,
    BackupFile,
    Manifest,
    TableEntry,
    created_table_id,
    creates_index,
    pin_tablet_count,
    read_manifest,
    split_statements,
    tablets_option,
)
from tabletdb.spark.backup_rest import Cluster
from tabletdb.spark.backup_store import BackupStore, ProgressLog, as_store, progress_log
from tabletdb.spark.backup_tasks import TaskFailed, TaskResult, UploadTask, run_on_spark
from tabletdb.spark.restore_verify import RangeCheck, count_ranges, judge, plan_checks, range_ok

PROGRESS_FILE = "restore-progress.jsonl"


class RestoreError(RuntimeError):
    """The restore cannot go on; the message says what to fix. Rerunning resumes it."""


class RestoreProgress:
    """What earlier runs of this restore finished, for one target cluster."""

    def __init__(self, log: ProgressLog, target: str) -> None:
        self.log = log
        self.statements: set[int] = set()
        self.files: set[str] = set()
        self.verified: dict[str, int] = {}
        """Token ranges whose row count matched: range key -> rows."""
        self.resumed = False
        lines = log.read()
        if lines and lines[0].get("target") != target:
            log.set_aside(f"{int(time.time())}.other-target")  # another cluster's: keep, set aside
            lines = []
        if not lines:
            self._append({"target": target})
        for line in lines[1:]:
            self.resumed = True
            if "statement" in line:
                self.statements.add(int(line["statement"]))
            elif "file" in line:
                self.files.add(str(line["file"]))
            elif "verified" in line:
                self.verified[str(line["verified"])] = int(line["rows"])

    def _append(self, record: dict[str, Any]) -> None:
        self.log.append(record)

    def statement_done(self, index: int) -> None:
        self._append({"statement": index})
        self.statements.add(index)

    def file_done(self, path: str) -> None:
        self._append({"file": path})
        self.files.add(path)

    def range_verified(self, key: str, rows: int) -> None:
        self._append({"verified": key, "rows": rows})
        self.verified[key] = rows


@dataclass
class RestoreSummary:
    tables: int = 0
    files_loaded: int = 0
    files_skipped: int = 0
    whole_file_installs: int = 0
    row_loads: int = 0
    bytes: int = 0
    rows: int = 0
    seconds: float = 0.0
    resumed: bool = False
    mismatches: list[str] = field(default_factory=list)


def run_restore(
    spark: Any,
    options: ClusterOptions,
    backup_dir: BackupStore | Path | str,
    reporter: Reporter,
    progress_path: BackupStore | Path | str | None = None,
) -> RestoreSummary:
    """Restore the backup in ``backup_dir`` (a path or a store URI; executors get it as is,
    so a path is made absolute); progress goes to ``progress_path`` (default: in the backup)."""
    started = time.monotonic()
    store = as_store(backup_dir)
    manifest = read_manifest(store)
    statements = split_statements(store.read_text(SCHEMA))
    cluster = Cluster(options.hosts, options.api_port, options.api_endpoints, options.credentials)
    target = ",".join(sorted(str(h) for h in cluster.nodes))
    progress = RestoreProgress(_progress_log(store, progress_path, target), target)
    summary = RestoreSummary(tables=len(manifest.tables), resumed=progress.resumed)
    with cql_session(options) as session:
        if not progress.resumed:
            _check_empty(cluster, manifest)
        _replay_schema(session, statements, manifest, progress, reporter, indexes=False)
        layouts = {t.id: tablet_layout(session, t.id) for t in manifest.tables}
        _load_files(spark, cluster, options, store, manifest, layouts, progress, reporter, summary)
        _unpin(session, statements, manifest, reporter)
        _replay_schema(session, statements, manifest, progress, reporter, indexes=True)
        _verify(session, manifest, progress, reporter, summary)
    summary.seconds = time.monotonic() - started
    return summary


def _progress_log(store: BackupStore, given: BackupStore | Path | str | None, target: str) -> ProgressLog:
    if given is None:
        return progress_log(store, PROGRESS_FILE, target)
    parent, name = as_store(given).split()
    return progress_log(parent, name, target)


def _check_empty(cluster: Cluster, manifest: Manifest) -> None:
    existing = set(cluster.any_node.user_keyspaces())
    clash = sorted(existing & set(manifest.keyspaces))
    if clash:
        raise RestoreError(
            f"the target cluster already has keyspace(s) {', '.join(clash)}; restore needs an empty "
            "cluster (drop them, or resume an interrupted restore with its progress file)"
        )


def _pinned(statement: str, manifest: Manifest) -> str:
    table_id = created_table_id(statement)
    entry = None if table_id is None else manifest.table_by_id(table_id)
    if entry is None or not entry.uses_tablets:
        return statement
    return pin_tablet_count(statement, entry.tablet_count)


def _replay_schema(
    session: Any,
    statements: Sequence[str],
    manifest: Manifest,
    progress: RestoreProgress,
    reporter: Reporter,
    indexes: bool,
) -> None:
    """Replay schema.cql in order, all but CREATE INDEX (``indexes`` False) or only those.

    Secondary indexes come last: the node builds an index from the base table's data when it is
    created, and whole-file loads bypass the write path that keeps indexes up to date later.
    """
    from cassandra import AlreadyExists, InvalidRequest

    chosen = [(i, s) for i, s in enumerate(statements) if creates_index(s) == indexes]
    reporter.step(
        "creating indexes from the restored data" if indexes else "replaying schema.cql", len(chosen)
    )
    for index, statement in chosen:
        if index not in progress.statements:
            try:
                session.execute(_pinned(statement, manifest))
            except AlreadyExists:
                pass  # created by the run that was interrupted before it could record it
            except InvalidRequest as exc:
                if "already exists" not in str(exc):
                    raise RestoreError(
                        f"schema.cql statement {index + 1} failed: {exc}\n{statement}"
                    ) from None
            progress.statement_done(index)
        reporter.advance(1)


def _targets(
    entry: TableEntry, f: BackupFile, layout: TabletLayout | None, cluster: Cluster
) -> list[uuid.UUID]:
    """Hosts holding a replica of any target tablet that overlaps the file's range."""
    if layout is None:
        return sorted(cluster.nodes, key=str)
    hosts: set[uuid.UUID] = set()
    previous = None
    for last, replicas in zip(layout.last_tokens, layout.replicas):
        start = previous
        previous = last
        if last <= f.first_token:
            continue
        if start is not None and start >= f.last_token:
            break
        hosts.update(replicas)
    return sorted(hosts, key=str)


def _load_files(
    spark: Any,
    cluster: Cluster,
    options: ClusterOptions,
    store: BackupStore,
    manifest: Manifest,
    layouts: dict[str, TabletLayout | None],
    progress: RestoreProgress,
    reporter: Reporter,
    summary: RestoreSummary,
) -> None:
    work = [(t, f) for t in manifest.tables for f in t.files]
    todo = [(t, f) for t, f in work if f.path not in progress.files]
    summary.files_skipped = len(work) - len(todo)
    for t in manifest.tables:
        layout = layouts[t.id]
        if t.uses_tablets and layout is None:
            raise RestoreError(f"{t.keyspace}.{t.table} was restored without tablets; the backup has them")
    reporter.step("loading tablet files", sum(f.size for _, f in work), "bytes")
    reporter.advance(sum(f.size for _, f in work if f.path in progress.files))  # a resumed run
    expected = {f.path: f for _, f in todo}
    tasks = [
        UploadTask(
            f.path,
            tuple(
                (api.address, api.port) for api in map(cluster.node, _targets(t, f, layouts[t.id], cluster))
            ),
            t.id,
            f.first_token,
            f.last_token,
            store.location,
            f.sha256,
            cluster.credentials,
        )
        for t, f in todo
    ]

    def loaded(results: list[TaskResult]) -> None:
        for result in results:
            f = expected[result.label]
            if result.sha256 != f.sha256 or result.size != f.size:
                raise RestoreError(
                    f"{f.path}: read {result.size} bytes with sha256 {result.sha256}, "
                    f"the manifest has {f.size} bytes with sha256 {f.sha256}"
                )
            progress.file_done(f.path)
            summary.files_loaded += 1
            summary.bytes += f.size
            summary.whole_file_installs += result.modes.count("file")
            summary.row_loads += result.modes.count("rows")
            reporter.advance(f.size)

    try:
        run_on_spark(spark, tasks, options.batch, loaded)
    except TaskFailed as exc:
        raise RestoreError(str(exc)) from None


def _unpin(session: Any, statements: Sequence[str], manifest: Manifest, reporter: Reporter) -> None:
    """Give every pinned table its own `tablets` option back (idempotent, so always run)."""
    reporter.step("restoring table options", None)
    for statement in statements:
        table_id = created_table_id(statement)
        entry = None if table_id is None else manifest.table_by_id(table_id)
        if entry is None or not entry.uses_tablets:
            continue
        name = f"{quote_identifier(entry.keyspace)}.{quote_identifier(entry.table)}"
        session.execute(f"ALTER TABLE {name} WITH tablets = {tablets_option(statement)}")


def _verify(
    session: Any, manifest: Manifest, progress: RestoreProgress, reporter: Reporter, summary: RestoreSummary
) -> None:
    """Count every tablet range (vnode tables: slices of the ring) against the manifest; ranges
    that match are recorded, so a rerun after a failure here counts only the rest."""
    checks = plan_checks(manifest)
    exact = manifest.replicas == "one"
    counts = {c.key: progress.verified[c.key] for c in checks if c.key in progress.verified}
    reporter.step(f"verifying row counts of {len(checks)} token ranges", len(checks))
    reporter.advance(len(counts))

    def counted(check: RangeCheck, rows: int) -> None:
        counts[check.key] = rows
        if range_ok(check, rows, exact):
            progress.range_verified(check.key, rows)
        reporter.advance(1)

    count_ranges(session, [c for c in checks if c.key not in counts], counted)
    summary.rows = sum(counts.values())
    summary.mismatches.extend(judge(manifest, checks, counts))
