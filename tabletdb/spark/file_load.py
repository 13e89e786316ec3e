"""`tabletdb load` at file speed: Spark tasks write per-tablet SQLite files and send them to replicas.

Spark reads the input; each task gets its share as Arrow record batches (`bulk.arrow_map`) and
fits them to the table column by column with the CQL load's rules (`spark.bulk`: same rejects,
same reasons), keys and routes the rows, and keeps them per tablet. A tablet's rows become one
SQLite file in the store's own format, sorted, once the task's input ends (or every
``flush_rows`` rows), and the file goes to every replica of the tablet through the REST upload
restore uses (``POST /storage_service/tablets/load``: checked, then merged inside SQLite in one
synced transaction, last write wins). A vnode table's rows go as one whole-ring file to every
node, which merges the ranges it replicates.

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

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, functions

from tabletdb.dht.token import FULL_RING, MAX_TOKEN
from tabletdb.schema.model import TableDef
from tabletdb.spark.backup import tablet_layout
from tabletdb.spark.backup_rest import Cluster, Credentials
from tabletdb.spark.bulk.arrow_map import map_in_arrow
from tabletdb.spark.bulk.plan import FLUSH_ROWS, FilePlan
from tabletdb.spark.bulk.task import OUTPUT_DDL, FileLoadFailed, load_batches
from tabletdb.spark.coerce import ColumnMapping, map_columns
from tabletdb.spark.connection import SourceOptions, fetch_table_schema, session_for
from tabletdb.spark.input_options import CsvOptions
from tabletdb.spark.load import (
    CORRUPT,
    LoadError,
    LoadSummary,
    StepReporter,
    check_load_paths,
    csv_source,
    input_bytes,
    step,
)
from tabletdb.spark.ranges import tablet_ranges
from tabletdb.spark.schema_map import SchemaError, TableSchema
from tabletdb.spark.tablet_rows import table_def

__all__ = [
    "FLUSH_ROWS",
    "FileLoadFailed",
    "FileTarget",
    "choose_via",
    "clustering_orders",
    "file_plan",
    "pause_balancing",
    "refuse_unsupported",
    "run_file_load",
]


@dataclass(frozen=True)
class FileTarget:
    """Where the nodes' REST APIs are (as `tabletdb restore` takes them)."""

    api_port: int
    endpoints: dict[str, int] = field(default_factory=dict)
    credentials: Credentials | None = field(default=None, repr=False)
    flush_rows: int = FLUSH_ROWS
    """Rows of one tablet a task sends as one file."""


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


def clustering_orders(session: Any, schema: TableSchema) -> dict[str, str]:
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


def pause_balancing(cluster: Cluster) -> bool:
    """Switch tablet balancing off for a load; returns whether it was on (to put back after)."""
    was_enabled = cluster.any_node.balancing_enabled()
    if was_enabled:
        cluster.any_node.set_balancing(False)
    return was_enabled


def file_plan(
    session: Any,
    cluster: Cluster,
    schema: TableSchema,
    table: TableDef,
    mapping: ColumnMapping,
    source: tuple[tuple[str, ...], bool],
    options: SourceOptions,
    target: FileTarget,
) -> FilePlan:
    """What every task of a load needs (`source`: the input's field names and whether they are
    JSON lines), with the tablet map read now: call it with balancing paused. Every row without
    its own write time gets this moment's."""
    extras = mapping.extras
    last_tokens, ranges, replicas = _groups(session, cluster, schema)
    return FilePlan(
        table=table,
        schema=schema,
        mapping=mapping,
        input_names=source[0],
        json_lines=source[1],
        last_tokens=last_tokens,
        ranges=ranges,
        replicas=replicas,
        timestamp=time.time_ns() // 1000,
        writetime_at=extras.index(options.writetime_column) if options.writetime_column else None,
        ttl_at=extras.index(options.ttl_column) if options.ttl_column else None,
        credentials=target.credentials,
        flush_rows=target.flush_rows,
    )


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
    table = table_def(schema, clustering_orders(session, schema))
    cluster = Cluster(options.connect.hosts, target.api_port, target.endpoints, target.credentials)
    extras = tuple(e for e in (options.writetime_column, options.ttl_column) if e)
    source, names = _source(spark, schema, path, fmt, csv or CsvOptions())
    names = names or source.columns
    json_lines = fmt == "json"
    input_fields = [*(c.name for c in schema.columns), *extras] if json_lines else names
    mapping = map_columns(schema, [n for n in input_fields if n != CORRUPT], extras)
    was_enabled = pause_balancing(cluster)
    try:
        plan = file_plan(
            session, cluster, schema, table, mapping, (tuple(names), json_lines), options, target
        )
        size = input_bytes(path)
        out = map_in_arrow(_spread(spark, source), partial(load_batches, plan), OUTPUT_DDL)
        out = out.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            step(progress, "loading rows", size, "bytes")
            totals = out.agg(functions.count("reason"), functions.sum("loaded")).first()
            assert totals is not None
            rejected, loaded = int(totals[0]), int(totals[1] or 0)
            if rejected:
                step(progress, "writing rejects", rejected, "rows")
                out.where(out.reason.isNotNull()).select("reason", "record").write.json(rejects_dir)
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


def _spread(spark: SparkSession, frame: DataFrame) -> DataFrame:
    """At least one task per core: an input Spark cannot split (a multi-line CSV, one small file)
    is read by one task and repartitioned. A splittable input already comes in at least one
    split per core (Spark sizes splits by the total over the cores), and repartitioning it would
    shuffle every row through Spark's disk for nothing."""
    cores = max(1, int(spark.sparkContext.defaultParallelism))
    return frame.repartition(2 * cores) if frame.rdd.getNumPartitions() < cores else frame
