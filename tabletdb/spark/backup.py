"""`tabletdb backup`: a consistent, per-tablet copy of a cluster's data plus its schema and roles.

Order (DESIGN.md decision 9): pause tablet balancing in group0, so the tablet map read below is
the one the files are cut along; snapshot every node under one tag (each node copies the tablet
files it holds through SQLite's online backup: consistent per file); write the schema from
DESC SCHEMA WITH INTERNALS AND PASSWORDS (table ids, role hashes, grants); download one replica's
file per tablet — files never span a tablet boundary — checking each sha256; write the manifest
last. The snapshots are removed and balancing is put back as it was whether or not this worked.

The driver (this module) plans, snapshots and verifies; the file copies run as Spark tasks (a
job's files spread over one task per core, `backup_tasks`), so on a real Spark cluster the backup
goes to a store every executor reaches alike (`backup_store`): a path they all mount, or an
s3:// URI.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tabletdb.cql.identifiers import quote_identifier
from tabletdb.spark.backup_manifest import (
    MANIFEST,
    SCHEMA,
    BackupFile,
    Manifest,
    TableEntry,
    granted_keyspace,
    write_manifest,
)
from tabletdb.spark.backup_rest import DEFAULT_API_PORT, Cluster, RestError
from tabletdb.spark.backup_store import BackupStore, as_store
from tabletdb.spark.backup_tasks import DownloadTask, TaskFailed, TaskResult, run_on_spark
from tabletdb.storage.data_paths import table_directory_name

log = logging.getLogger(__name__)

DDL_TIMEOUT = 120.0
CONNECT_TIMEOUT = 30.0
"""Seconds to open a CQL connection (the driver's default, 5, failed on a busy machine: a node
merging files or a Spark job on the same cores answers late, not never)."""


class BackupError(RuntimeError):
    """The backup could not be taken; the message says which step and why."""


class Reporter(Protocol):
    """Where progress goes (the CLI draws it with rich; tests and benchmarks ignore it)."""

    def step(self, description: str, total: int | None, unit: str = "items") -> None:
        """Start a step of ``total`` units ("bytes", "rows" or "items"); None: unknown."""

    def advance(self, amount: int) -> None: ...


class QuietReporter:
    def step(self, description: str, total: int | None, unit: str = "items") -> None:
        pass

    def advance(self, amount: int) -> None:
        pass


@dataclass(frozen=True)
class ClusterOptions:
    """How to reach the cluster: CQL for schema and counts, REST for files and flags."""

    hosts: tuple[str, ...]
    port: int = 9042
    username: str | None = None
    password: str | None = None
    api_port: int = DEFAULT_API_PORT
    api_endpoints: dict[str, int] = field(default_factory=dict)
    batch: int = 0
    """Files per Spark job (0: a few per core); restore records progress after each job."""
    all_replicas: bool = False
    """Backup: copy every replica of each tablet, not one (restore merges them, last write wins)."""

    @property
    def credentials(self) -> tuple[str, str] | None:
        """For the REST APIs too: the same role logs in over CQL and HTTP basic auth."""
        return (self.username, self.password or "") if self.username else None


@contextmanager
def cql_session(options: ClusterOptions) -> Iterator[Any]:
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import Cluster as CqlCluster

    auth = PlainTextAuthProvider(options.username, options.password or "") if options.username else None
    cluster = CqlCluster(
        list(options.hosts),
        port=options.port,
        auth_provider=auth,
        protocol_version=4,
        connect_timeout=CONNECT_TIMEOUT,
    )
    try:
        session = cluster.connect()
        session.default_timeout = DDL_TIMEOUT
        yield session
    finally:
        cluster.shutdown()


@dataclass(frozen=True)
class TabletLayout:
    """A table's tablet boundaries and replica hosts, as system.tablets shows them."""

    last_tokens: list[int]
    replicas: list[list[uuid.UUID]]


def tablet_layout(session: Any, table_id: str) -> TabletLayout | None:
    """None for a vnode table."""
    rows = session.execute(
        "SELECT last_token, replicas FROM system.tablets WHERE table_id = %s", (uuid.UUID(table_id),)
    )
    tablets = sorted((int(r.last_token), [host for host, _ in r.replicas or ()]) for r in rows)
    if not tablets:
        return None
    return TabletLayout([t for t, _ in tablets], [hosts for _, hosts in tablets])


@dataclass(frozen=True)
class BackupSummary:
    directory: str
    tables: int
    files: int
    bytes: int
    rows: int
    seconds: float


def _schema_rows(session: Any, keyspaces: Sequence[str]) -> list[Any]:
    rows = list(session.execute("DESC SCHEMA WITH INTERNALS AND PASSWORDS"))
    if not keyspaces:
        return rows

    # Roles, grants and service levels have no keyspace; they go with any partial backup, except
    # grants on objects of keyspaces left out (restore could not replay them).
    def kept(row: Any) -> bool:
        if row.keyspace_name is not None:
            return bool(row.keyspace_name in keyspaces)
        granted = granted_keyspace(row.create_statement) if row.type == "grant_permission" else None
        return granted is None or granted in keyspaces

    return [r for r in rows if kept(r)]


def _tables(session: Any, keyspaces: Sequence[str]) -> list[tuple[str, str, str, bool]]:
    """(keyspace, name, id, is_view) of every table and view of the keyspaces."""
    out: list[tuple[str, str, str, bool]] = []
    for ks in keyspaces:
        for row in session.execute(
            "SELECT table_name, id FROM system_schema.tables WHERE keyspace_name = %s", (ks,)
        ):
            out.append((ks, row.table_name, str(row.id), False))
        for row in session.execute(
            "SELECT view_name, id FROM system_schema.views WHERE keyspace_name = %s", (ks,)
        ):
            out.append((ks, row.view_name, str(row.id), True))
    return sorted(out)


def _choose_files(
    table: tuple[str, str, str, bool],
    layout: TabletLayout | None,
    snapshots: dict[uuid.UUID, dict[str, Any]],
    all_replicas: bool,
) -> list[tuple[uuid.UUID, dict[str, Any]]]:
    """The snapshot entries to copy: one replica's file per tablet (every replica's with
    ``all_replicas``), or every node's vnode files."""
    _, _, table_id, _ = table
    entries = {
        host: [f for f in snap["files"] if f["table_id"] == table_id and f["path"] is not None]
        for host, snap in snapshots.items()
    }
    if layout is None:
        return [(host, f) for host in sorted(entries, key=str) for f in entries[host]]
    chosen: list[tuple[uuid.UUID, dict[str, Any]]] = []
    for tablet_id, hosts in enumerate(layout.replicas):
        for host in hosts:
            found = [f for f in entries.get(host, []) if f["tablet_id"] == tablet_id]
            if found:
                if found[0]["last_token"] != layout.last_tokens[tablet_id]:
                    raise BackupError(
                        f"tablet {tablet_id} of table {table_id} moved during the backup "
                        f"(snapshot ends at {found[0]['last_token']}, map at {layout.last_tokens[tablet_id]})"
                    )
                chosen.append((host, found[0]))
                if not all_replicas:
                    break
    return chosen


def _file_name(host: uuid.UUID, entry: dict[str, Any], all_replicas: bool) -> str:
    directory = "data/" + table_directory_name(
        entry["keyspace"], entry["table"], uuid.UUID(entry["table_id"])
    )
    if entry["tablet_id"] is not None:
        replica = f"-{host}" if all_replicas else ""
        return f"{directory}/tablet-{entry['tablet_id']}{replica}.db"
    return f"{directory}/{host}-shard-{entry['shard']}.db"


def check_target(out_dir: BackupStore | Path | str) -> None:
    """Refuse a directory that already holds a finished backup (before anything starts)."""
    store = as_store(out_dir)
    if store.exists(MANIFEST):
        raise BackupError(f"{store} already holds a backup ({MANIFEST}); choose another directory")


def run_backup(
    spark: Any,
    options: ClusterOptions,
    out_dir: BackupStore | Path | str,
    keyspaces: Sequence[str],
    reporter: Reporter,
) -> BackupSummary:
    """Back up into ``out_dir`` (a path, made absolute as executors get it as is, or a store URI)."""
    started = time.monotonic()
    store = as_store(out_dir)
    check_target(store)
    store.make_root()
    cluster = Cluster(options.hosts, options.api_port, options.api_endpoints, options.credentials)
    tag = f"backup-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    with cql_session(options) as session:
        cluster_name = session.execute("SELECT cluster_name FROM system.local").one().cluster_name
        user_keyspaces = cluster.any_node.user_keyspaces()
        missing = sorted(set(keyspaces) - set(user_keyspaces))
        if missing:
            raise BackupError(f"keyspace(s) {', '.join(missing)} do not exist")
        chosen_keyspaces = sorted(keyspaces) if keyspaces else user_keyspaces
        reporter.step("pausing tablet balancing", None)
        was_enabled = cluster.any_node.balancing_enabled()
        cluster.any_node.set_balancing(False)
        try:
            manifest = _copy(
                spark, session, cluster, options, store, tag, chosen_keyspaces, cluster_name, reporter
            )
        except TaskFailed as exc:
            _clean_up(cluster, tag, was_enabled, reporter, failing=True)
            raise BackupError(str(exc)) from None
        except BaseException:
            _clean_up(cluster, tag, was_enabled, reporter, failing=True)  # the first error is the news
            raise
        _clean_up(cluster, tag, was_enabled, reporter)
    return BackupSummary(
        store.location,
        len(manifest.tables),
        sum(len(t.files) for t in manifest.tables),
        manifest.total_bytes,
        manifest.total_rows,
        time.monotonic() - started,
    )


def _snapshot_all(
    cluster: Cluster, tag: str, keyspaces: list[str], reporter: Reporter
) -> dict[uuid.UUID, dict[str, Any]]:
    """Driver side, all nodes at once: each call only waits while its node copies its own files,
    and the snapshots should be taken close together."""
    hosts = sorted(cluster.nodes, key=str)
    reporter.step(f"snapshot {tag} on {len(hosts)} node(s)", len(hosts))

    def snapshot(host: uuid.UUID) -> dict[str, Any]:
        answer = cluster.node(host).take_snapshot(tag, keyspaces)
        reporter.advance(1)
        return answer

    with ThreadPoolExecutor(max_workers=len(hosts), thread_name_prefix="snapshot") as pool:
        return dict(zip(hosts, pool.map(snapshot, hosts)))


def _copy(
    spark: Any,
    session: Any,
    cluster: Cluster,
    options: ClusterOptions,
    store: BackupStore,
    tag: str,
    keyspaces: list[str],
    cluster_name: str,
    reporter: Reporter,
) -> Manifest:
    # Schema and tablet maps after the pause: nothing moves tablets while we copy them.
    schema_rows = _schema_rows(session, keyspaces)
    tables = _tables(session, keyspaces)
    layouts = {t[2]: tablet_layout(session, t[2]) for t in tables}
    snapshots = _snapshot_all(cluster, tag, keyspaces, reporter)
    plan = [
        (t, host, entry)
        for t in tables
        for host, entry in _choose_files(t, layouts[t[2]], snapshots, options.all_replicas)
    ]
    reporter.step("copying tablet files", sum(entry["size"] for _, _, entry in plan), "bytes")
    tasks = [
        DownloadTask(
            _file_name(host, entry, options.all_replicas),
            cluster.node(host).address,
            cluster.node(host).port,
            tag,
            entry["path"],
            store.location,
            entry["sha256"],
            cluster.credentials,
        )
        for _, host, entry in plan
    ]

    def copied(results: list[TaskResult]) -> None:
        reporter.advance(sum(r.size for r in results))

    results = run_on_spark(spark, tasks, options.batch, copied)
    files = [_verified(host, entry, result) for (_, host, entry), result in zip(plan, results)]
    entries: list[TableEntry] = []
    for table in tables:
        table_files = [f for (t, _, _), f in zip(plan, files) if t == table]
        layout = layouts[table[2]]
        entries.append(
            TableEntry(
                keyspace=table[0],
                table=table[1],
                id=table[2],
                uses_tablets=layout is not None,
                tablet_count=0 if layout is None else len(layout.last_tokens),
                last_tokens=[] if layout is None else layout.last_tokens,
                row_count=_row_count(session, table, table_files, layout, len(cluster.nodes)),
                files=table_files,
                is_view=table[3],
            )
        )
    schema = "\n".join(r.create_statement.rstrip("\n") for r in schema_rows) + "\n"
    store.write_atomic(SCHEMA, schema.encode())
    manifest = Manifest(
        cluster_name=cluster_name,
        time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        tag=tag,
        keyspaces=keyspaces,
        tables=entries,
        replicas="all" if options.all_replicas else "one",
    )
    write_manifest(store, manifest)
    return manifest


def _verified(host: uuid.UUID, entry: dict[str, Any], result: TaskResult) -> BackupFile:
    """The manifest entry of a copied file, once its size and checksum match the snapshot's."""
    if result.sha256 != entry["sha256"] or result.size != entry["size"]:
        raise BackupError(
            f"{result.label}: copied {result.size} bytes with sha256 {result.sha256}, "
            f"the node's snapshot has {entry['size']} bytes with sha256 {entry['sha256']}"
        )
    return BackupFile(
        entry["tablet_id"],
        entry["first_token"],
        entry["last_token"],
        result.label,
        entry["size"],
        result.sha256,
        entry["rows"],
        str(host),
    )


def _row_count(
    session: Any,
    table: tuple[str, str, str, bool],
    files: list[BackupFile],
    layout: TabletLayout | None,
    nodes: int,
) -> int:
    """Live rows at snapshot time: the sum over tablets (of the fullest replica's file when
    several replicas were copied: a lower bound if they diverged). A vnode table's files overlap
    (every node holds RF copies of each range), so on several nodes it is counted through CQL."""
    if layout is not None:
        per_tablet: dict[int | None, int] = {}
        for f in files:
            per_tablet[f.tablet_id] = max(per_tablet.get(f.tablet_id, 0), f.rows)
        return sum(per_tablet.values())
    if nodes == 1:
        return sum(f.rows for f in files)
    name = f"{quote_identifier(table[0])}.{quote_identifier(table[1])}"
    return int(session.execute(f"SELECT COUNT(*) FROM {name}").one()[0])


def _clean_up(
    cluster: Cluster, tag: str, was_enabled: bool, reporter: Reporter, failing: bool = False
) -> None:
    """Drop the snapshots and put balancing back; every step is tried even if one fails. While
    another error is propagating, problems here are logged instead of replacing it."""
    reporter.step("removing snapshots, resuming balancing", None)
    problems: list[str] = []
    for node in cluster.nodes.values():
        try:
            node.delete_snapshot(tag)
        except RestError as exc:
            problems.append(str(exc))
    if was_enabled:
        try:
            cluster.any_node.set_balancing(True)
        except RestError as exc:
            problems.append(f"could not resume tablet balancing: {exc}")
    if problems and failing:
        log.error("backup clean-up after a failure: %s", "; ".join(problems))
    elif problems:
        raise BackupError("; ".join(problems))
