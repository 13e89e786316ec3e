"""`tabletdb load` at file speed: Spark tasks write per-tablet SQLite files and send them to replicas.

Each task reads its share of the input (``RDD.mapPartitions`` over the input rows), fits every
row to the table as the CQL load does (``load.checker``: same rejects, same reasons), turns it
into the mutation an INSERT would write (``tablet_rows``), and keeps it with the other rows of
its tablet. A tablet's rows become one SQLite file in the store's own format, sorted, once the
task's input ends (or every ``FLUSH_ROWS`` rows), and the file goes to every replica of the
tablet through the REST upload restore uses (``POST /storage_service/tablets/load``: checked,
then merged inside SQLite in one synced transaction, last write wins). A vnode table's rows go
as one whole-ring file to every node, which merges the ranges it replicates.

Every row of one load gets the load's write timestamp (or its own from the writetime field), so
running a killed load again writes the same cells again: every row ends up once. Balancing is
paused for the load (and put back as it was), so tablets do not move under it; a replica that
no longer holds a tablet says so (``covered``), and one whose tablet moved while it merged the
file says that (``moved``: a topology change, not balancing, can still move tablets); either way
the load fails rather than count it done.

The file path bypasses the write path, so it refuses what only the write path maintains:
counter tables, tables with materialized views, secondary indexes or CDC. Those load with
``--via cql``.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from tabletdb.dht.token import FULL_RING, MAX_TOKEN
from tabletdb.schema.tables import ColumnDef, TableDef
from tabletdb.spark.backup import tablet_layout
from tabletdb.spark.backup_rest import Cluster, Credentials, NodeApi, file_sha256
from tabletdb.spark.coerce import ColumnMapping, map_columns
from tabletdb.spark.connection import SourceOptions, fetch_table_schema, session_for
from tabletdb.spark.input_options import CsvOptions
from tabletdb.spark.load import (
    CORRUPT,
    REJECT_SCHEMA,
    Checked,
    LoadError,
    LoadSummary,
    StepReporter,
    check_load_paths,
    checker,
    csv_source,
    input_bytes,
    json_checker,
    record_json,
    step,
)
from tabletdb.spark.ranges import range_index, tablet_ranges
from tabletdb.spark.schema_map import SchemaError, TableSchema
from tabletdb.spark.tablet_rows import RowNotEncodable, row_mutation, table_def, write_tablet_file
from tabletdb.statements.cells import WriteTime
from tabletdb.storage.image_validation import FUTURE_TIMESTAMP_LIMIT_US
from tabletdb.storage.mutation import Mutation

FLUSH_ROWS = 100_000
"""Rows of one tablet a task holds before it sends them as a file (memory bound per task)."""
MAX_TTL = 630_720_000
"""CQL's largest TTL (20 years), as the node refuses larger ones."""


class FileLoadFailed(RuntimeError):
    """A file could not be sent or was not taken whole; the message names the node and tablet."""


@dataclass(frozen=True)
class FileTarget:
    """Where the nodes' REST APIs are (as `tabletdb restore` takes them)."""

    api_port: int
    endpoints: dict[str, int] = field(default_factory=dict)
    credentials: Credentials | None = field(default=None, repr=False)
    flush_rows: int = FLUSH_ROWS
    """Rows of one tablet a task sends as one file."""


@dataclass(frozen=True)
class FilePlan:
    """What every task needs; built on the driver, pickled to the tasks (plain values)."""

    table: TableDef
    schema: TableSchema
    mapping: ColumnMapping
    input_names: tuple[str, ...]
    json_lines: bool
    last_tokens: tuple[int, ...]
    """Tablet ends (rows are grouped by tablet); empty for a vnode table (one group)."""
    ranges: tuple[tuple[int, int], ...]
    replicas: tuple[tuple[tuple[str, int], ...], ...]
    """Per group: the REST endpoints of its replicas (a vnode table: every node)."""
    timestamp: int
    writetime_at: int | None
    ttl_at: int | None
    credentials: Credentials | None = field(default=None, repr=False)
    flush_rows: int = FLUSH_ROWS

    def columns(self) -> tuple[ColumnDef, ...]:
        found = tuple(self.table.column(c.name) for c in self.mapping.columns)
        assert all(c is not None for c in found)
        return found  # type: ignore[return-value]


def _check(plan: FilePlan) -> Callable[[Any], Checked]:
    if plan.json_lines:
        return json_checker(plan.schema, plan.mapping, spark_form=False)
    return checker(plan.mapping, list(plan.input_names), spark_form=False)


def _write_time(plan: FilePlan, extras: Sequence[Any], now: int) -> WriteTime:
    timestamp = extras[plan.writetime_at] if plan.writetime_at is not None else None
    ttl = extras[plan.ttl_at] if plan.ttl_at is not None else None
    if timestamp is not None and timestamp > time.time_ns() // 1000 + FUTURE_TIMESTAMP_LIMIT_US:
        raise RowNotEncodable(
            f"write timestamp {timestamp} is beyond now + 3 days (restrict_future_timestamp refuses it)"
        )
    if ttl is not None and not 0 <= ttl <= MAX_TTL:
        raise RowNotEncodable(f"TTL {ttl} must be between 0 and {MAX_TTL} seconds")
    return WriteTime(plan.timestamp if timestamp is None else timestamp, ttl or 0, now)


Output = tuple[str | None, str | None, int | None]
"""What a task yields: (reason, record, None) per reject, then (None, None, rows loaded)."""


def load_rows(plan: FilePlan, rows: Iterator[Sequence[Any]]) -> Iterator[Output]:
    """A task: its input rows in; its rejects and how many rows it loaded out."""
    check = _check(plan)
    columns = plan.columns()
    width = len(columns)
    names = list(plan.input_names)
    groups: dict[int, list[Mutation]] = {}
    loaded = 0
    now = int(time.time())
    with tempfile.TemporaryDirectory(prefix="tabletdb-load-") as tmp:
        for count, row in enumerate(rows):
            if count % 10_000 == 0:
                now = int(time.time())  # TTL expiry counts from (about) the write
            if plan.json_lines and not (row[0] or "").strip():
                continue
            ok, fitted = check(row)
            if not ok:
                yield fitted[0], fitted[1], None
                continue
            try:
                when = _write_time(plan, fitted[width:], now)
                mutation = row_mutation(plan.table, columns, fitted[:width], when)
            except RowNotEncodable as exc:
                yield str(exc), row[0] if plan.json_lines else record_json(names, row), None
                continue
            group = range_index(mutation.token, plan.last_tokens) if plan.last_tokens else 0
            pending = groups.setdefault(group, [])
            pending.append(mutation)
            if len(pending) >= plan.flush_rows:
                loaded += send_file(plan, group, groups.pop(group), Path(tmp))
        for group in sorted(groups):
            loaded += send_file(plan, group, groups[group], Path(tmp))
    yield None, None, loaded


def send_file(plan: FilePlan, group: int, mutations: list[Mutation], tmp: Path) -> int:
    """Write one group's rows as a tablet file and send it to each of its replicas; the rows."""
    path = tmp / f"group-{group}-{uuid.uuid4().hex}.db"
    try:
        write_tablet_file(path, mutations)
        digest = file_sha256(path)
        first, last = plan.ranges[group]
        for address, port in plan.replicas[group]:
            api = NodeApi(address, port, plan.credentials)
            answer = api.load_tablet(str(plan.table.id), first, last, path, digest)
            if not answer.get("covered", True):
                raise FileLoadFailed(
                    f"node {address}:{port} no longer holds every tablet of token range ({first}, {last}] "
                    f"of {plan.table.keyspace}.{plan.table.name} (the tablet map changed during the "
                    "load); run the load again"
                )
            if answer.get("moved", False):
                raise FileLoadFailed(
                    f"the replicas of token range ({first}, {last}] of "
                    f"{plan.table.keyspace}.{plan.table.name} changed while node {address}:{port} merged "
                    "the file (a topology change moved a tablet), so a new replica may lack it; run the "
                    "load again once the change ended (a rerun writes the same cells)"
                )
    finally:
        path.unlink(missing_ok=True)
    return len(mutations)


def refuse_unsupported(session: Any, schema: TableSchema) -> None:
    """LoadError naming why the file path cannot load the table (the write path must)."""
    name = f"{schema.keyspace}.{schema.table}"
    if any(c.cql_type.is_counter for c in schema.columns):
        raise LoadError(f"{name} is a counter table: counters load with --via cql (as increments)")
    ks = schema.keyspace
    views = session.execute(
        "SELECT view_name, base_table_name FROM system_schema.views WHERE keyspace_name = %s", (ks,)
    )
    found = [r.view_name for r in views if r.base_table_name == schema.table]
    if found:
        raise LoadError(f"{name} has materialized views ({', '.join(found)}): load it with --via cql")
    indexes = session.execute(
        "SELECT index_name FROM system_schema.indexes WHERE keyspace_name = %s AND table_name = %s",
        (ks, schema.table),
    )
    found = [r.index_name for r in indexes]
    if found:
        raise LoadError(f"{name} has secondary indexes ({', '.join(found)}): load it with --via cql")
    log_table = f"{schema.table}_scylla_cdc_log"
    logs = session.execute(
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
        (ks, log_table),
    )
    if list(logs):
        raise LoadError(f"{name} has CDC enabled (its log must be written): load it with --via cql")


def choose_via(options: SourceOptions, via: str | None) -> str:
    """ "files" or "cql": as asked (a table the file path cannot load is refused for "files"), or
    with nothing asked, "files" where the table allows it and "cql" where it does not."""
    if via == "cql":
        return via
    try:
        session = session_for(options.connect)
        schema = fetch_table_schema(session, options.keyspace, options.table)
    except Exception as exc:  # the driver's NoHostAvailable, auth errors, ...
        if isinstance(exc, SchemaError):
            raise
        raise LoadError(f"cannot read the schema of {options.keyspace}.{options.table}: {exc}") from None
    try:
        refuse_unsupported(session, schema)
    except LoadError:
        if via == "files":
            raise
        return "cql"
    return "files"


def _clustering_orders(session: Any, schema: TableSchema) -> dict[str, str]:
    rows = session.execute(
        "SELECT column_name, clustering_order FROM system_schema.columns "
        "WHERE keyspace_name = %s AND table_name = %s",
        (schema.keyspace, schema.table),
    )
    return {r.column_name: r.clustering_order for r in rows}


def _source(
    spark: SparkSession, schema: TableSchema, path: str, fmt: str, csv: CsvOptions
) -> tuple[DataFrame, list[str]]:
    if fmt == "json":
        return spark.read.text(path), ["value"]
    if fmt == "csv":
        return csv_source(spark, schema, path, csv)[0], []
    return spark.read.parquet(path), []


def _groups(
    session: Any, cluster: Cluster, schema: TableSchema
) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...], tuple[tuple[tuple[str, int], ...], ...]]:
    assert schema.table_id is not None
    layout = tablet_layout(session, schema.table_id)
    if layout is None:  # a vnode table: one whole-ring file to every node
        everyone = tuple((n.address, n.port) for n in cluster.nodes.values())
        return (), ((FULL_RING.start, FULL_RING.end),), (everyone,)
    if layout.last_tokens[-1] != MAX_TOKEN:
        raise LoadError(f"system.tablets of {schema.keyspace}.{schema.table} does not end at {MAX_TOKEN}")
    ranges = tuple((r.start, r.end) for r in tablet_ranges(layout.last_tokens))
    replicas = tuple(
        tuple((cluster.node(h).address, cluster.node(h).port) for h in hosts) for hosts in layout.replicas
    )
    return tuple(layout.last_tokens), ranges, replicas


def run_file_load(
    spark: SparkSession,
    options: SourceOptions,
    target: FileTarget,
    path: str,
    fmt: str,
    rejects_dir: str,
    progress: StepReporter | None = None,
    csv: CsvOptions | None = None,
) -> LoadSummary:
    """Load `path` into the table named by `options` through per-tablet files (module docstring)."""
    check_load_paths(path, fmt, rejects_dir)
    started = time.monotonic()
    session = session_for(options.connect)
    schema = fetch_table_schema(session, options.keyspace, options.table)
    refuse_unsupported(session, schema)
    table = table_def(schema, _clustering_orders(session, schema))
    cluster = Cluster(options.connect.hosts, target.api_port, target.endpoints, target.credentials)
    extras = tuple(e for e in (options.writetime_column, options.ttl_column) if e)
    source, names = _source(spark, schema, path, fmt, csv or CsvOptions())
    names = names or source.columns
    json_lines = fmt == "json"
    input_fields = [*(c.name for c in schema.columns), *extras] if json_lines else names
    mapping = map_columns(schema, [n for n in input_fields if n != CORRUPT], extras)
    was_enabled = cluster.any_node.balancing_enabled()
    if was_enabled:
        cluster.any_node.set_balancing(False)
    try:
        last_tokens, ranges, replicas = _groups(session, cluster, schema)
        plan = FilePlan(
            table=table,
            schema=schema,
            mapping=mapping,
            input_names=tuple(names),
            json_lines=json_lines,
            last_tokens=last_tokens,
            ranges=ranges,
            replicas=replicas,
            timestamp=time.time_ns() // 1000,
            writetime_at=extras.index(options.writetime_column) if options.writetime_column else None,
            ttl_at=extras.index(options.ttl_column) if options.ttl_column else None,
            credentials=target.credentials,
            flush_rows=target.flush_rows,
        )
        size = input_bytes(path)
        out = _spread(spark, source, size).rdd.mapPartitions(partial(load_rows, plan))
        out = out.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            step(progress, "loading rows", size, "bytes")
            loaded, rejected = out.map(_tally).fold((0, 0), _add)
            if rejected:
                step(progress, "writing rejects", rejected, "rows")
                bad = out.filter(lambda r: r[0] is not None).map(lambda r: (r[0], r[1]))
                spark.createDataFrame(bad, REJECT_SCHEMA).write.json(rejects_dir)
            step(progress, "", None, "")
        finally:
            out.unpersist()
    finally:
        if was_enabled:
            cluster.any_node.set_balancing(True)
    return LoadSummary(
        loaded + rejected,
        loaded,
        rejected,
        rejects_dir if rejected else None,
        time.monotonic() - started,
    )


def _tally(output: Output) -> tuple[int, int]:
    """(rows loaded, rows rejected) of one output record."""
    return (0, 1) if output[0] is not None else (output[2] or 0, 0)


def _add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] + b[0], a[1] + b[1]


def _spread(spark: SparkSession, frame: DataFrame, size: int | None) -> DataFrame:
    """A few tasks per core at least (one multi-line CSV or small file is read by one task)."""
    from tabletdb.spark.load import SPREAD_BYTES, SPREAD_MAX

    wanted = 2 * max(1, int(spark.sparkContext.defaultParallelism))
    wanted = max(wanted, min(SPREAD_MAX, (size or 0) // (16 * SPREAD_BYTES)))
    return frame.repartition(wanted) if frame.rdd.getNumPartitions() < wanted else frame
