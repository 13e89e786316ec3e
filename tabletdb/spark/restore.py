"""`tabletdb restore`: a backup into an empty cluster, resumable after an interruption.

1. Replay schema.cql in order. CREATE TABLE carries the original table id (WITH ID) and gets its
   tablet count pinned (`tablets = {min_tablet_count = max_tablet_count = N}`), so the new table
   is cut along the backed-up boundaries.
   CREATE INDEX waits until after the data (step 4).
2. Send each backed-up tablet file to every replica of the target tablets it overlaps. A node
   installs the file whole when its tablet has exactly the file's range and is still empty, and
   otherwise applies the file's partitions as mutations (rows: write times, TTLs and tombstones
   kept; last write wins, so a repeated load is harmless). Each file's sha256 is checked against
   the manifest before it leaves and by the node on arrival.
3. Put every table's own `tablets` option back, so DESCRIBE shows the backed-up schema exactly.
4. Create the secondary indexes, which the nodes build from the restored data.
5. Verify: the rows of every backed-up tablet's token range counted against the manifest, a few
   ranges at a time (`restore_verify`); never one whole-table COUNT(*) under a client timeout.

Progress is an append-only file (one JSON line per finished statement, file or verified range,
synced), kept next to the backup by default; a rerun skips what it lists, so a restore killed at
any point completes when run again, and its progress bars start from what was already done.

Step 2 runs on Spark: one `backup_tasks.UploadTask` per file, in jobs of a few files per core
(one Spark task per core runs a job's share in turn); the driver records each job's finished
files as the job ends. Executors read the files from ``backup_dir``, which must be a path they
share with the driver on a real Spark cluster.
"""

from __future__ import annotations

import json
import os
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
from tabletdb.spark.backup_tasks import TaskFailed, TaskResult, UploadTask, run_on_spark
from tabletdb.spark.restore_verify import RangeCheck, count_ranges, judge, plan_checks, range_ok

PROGRESS_FILE = "restore-progress.jsonl"


class RestoreError(RuntimeError):
    """The restore cannot go on; the message says what to fix. Rerunning resumes it."""


class RestoreProgress:
    """What earlier runs of this restore finished, for one target cluster."""

    def __init__(self, path: Path, target: str) -> None:
        self.path = path
        self.statements: set[int] = set()
        self.files: set[str] = set()
        self.verified: dict[str, int] = {}
        """Token ranges whose row count matched: range key -> rows."""
        self.resumed = False
        lines = self._read()
        if lines and lines[0].get("target") != target:
            stale = path.with_name(f"{path.name}.{int(time.time())}.other-target")
            os.replace(path, stale)  # progress of a restore into another cluster: keep, set aside
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

    def _read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out: list[dict[str, Any]] = []
        for text in self.path.read_text().splitlines():
            try:
                out.append(json.loads(text))
            except json.JSONDecodeError:  # a torn last line from a kill: that step is redone
                break
        return out

    def _append(self, record: dict[str, Any]) -> None:
        with open(self.path, "a") as out:
            out.write(json.dumps(record) + "\n")
            out.flush()
            os.fsync(out.fileno())

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
    backup_dir: Path,
    reporter: Reporter,
    progress_path: Path | None = None,
) -> RestoreSummary:
    started = time.monotonic()
    backup_dir = backup_dir.resolve()  # executors get it as is
    manifest = read_manifest(backup_dir)
    statements = split_statements((backup_dir / SCHEMA).read_text())
    cluster = Cluster(options.hosts, options.api_port, options.api_endpoints, options.credentials)
    target = ",".join(sorted(str(h) for h in cluster.nodes))
    progress = RestoreProgress(progress_path or backup_dir / PROGRESS_FILE, target)
    summary = RestoreSummary(tables=len(manifest.tables), resumed=progress.resumed)
    with cql_session(options) as session:
        if not progress.resumed:
            _check_empty(cluster, manifest)
        _replay_schema(session, statements, manifest, progress, reporter, indexes=False)
        layouts = {t.id: tablet_layout(session, t.id) for t in manifest.tables}
        _load_files(spark, cluster, options, backup_dir, manifest, layouts, progress, reporter, summary)
        _unpin(session, statements, manifest, reporter)
        _replay_schema(session, statements, manifest, progress, reporter, indexes=True)
        _verify(session, manifest, progress, reporter, summary)
    summary.seconds = time.monotonic() - started
    return summary


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
    backup_dir: Path,
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
            str(backup_dir),
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
