"""The `tabletdb` PySpark data source: `spark.read.format("tabletdb")` / `df.write.format("tabletdb")`.

Options (strings, names case-insensitive):
  hosts (required, comma-separated), port (9042), username, password,
  table (`ks.t`, or `table` with `keyspace`), consistency (LOCAL_QUORUM),
  page_size (1000 rows per page when reading), columns (comma-separated subset to read),
  token_range (`start,end`: read only tokens in `(start, end]`), pushdown (true: `=`/`IN` on
  the partition key and clustering slices answered by the reader, `spark.pushdown`; needs the
  session's `spark.sql.python.filterPushdown.enabled`, which `spark.session` sets),
  concurrency (256 writes in flight per task), batch_rows (2000 rows grouped by tablet per round),
  writetime_column / ttl_column (DataFrame columns holding each row's USING TIMESTAMP / TTL),
  method (writing: auto | files | cql, see `bulk.frame_write`; auto, the default, sends a task
  of at least files_min_rows (10,000) rows as per-tablet files to every replica, as `tabletdb
  load` does, and smaller tasks through CQL), api_port (10000) and api_endpoints
  (`address:port,...`) where the nodes' REST APIs are (files and auto).

Reading (`spark.reading`) makes one input partition per tablet (per vnode range for vnode
tables), each a paged `token(pk) > ? AND token(pk) <= ?` scan, or groups of pushed-down partition
keys, and hands pages over as Arrow batches; the Spark schema is `schema_map.spark_schema` of
the table. Writing appends (no overwrite): through CQL (`writer`) or tablet files
(`bulk.frame_write`, with balancing paused until the driver commits or aborts the write).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from tabletdb.spark.backup_rest import Cluster
from tabletdb.spark.bulk.frame_write import WriteMethod, parse_write_method, write_batches
from tabletdb.spark.bulk.plan import FilePlan
from tabletdb.spark.coerce import map_columns
from tabletdb.spark.connection import (
    SOURCE_NAME,
    SourceOptions,
    fetch_ring_tokens,
    fetch_table_schema,
    fetch_tablet_last_tokens,
    parse_options,
    session_for,
)
from tabletdb.spark.file_load import (
    FileTarget,
    clustering_orders,
    file_plan,
    pause_balancing,
    refuse_unsupported,
)
from tabletdb.spark.load import LoadError
from tabletdb.spark.reading import PushdownReader, TabletdbReader
from tabletdb.spark.schema_map import TableSchema, spark_schema
from tabletdb.spark.tablet_rows import table_def
from tabletdb.spark.writer import WritePlan, write_rows

__all__ = ["SOURCE_NAME", "TabletdbDataSource"]

log = logging.getLogger(__name__)


class TabletdbDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _load(self) -> tuple[SourceOptions, TableSchema]:
        opts = parse_options(self.options)
        session = session_for(opts.connect)
        return opts, fetch_table_schema(session, opts.keyspace, opts.table)

    def schema(self) -> StructType:
        opts, table = self._load()
        return spark_schema(table.select(opts.columns))

    def reader(self, schema: StructType) -> DataSourceReader:
        opts, table = self._load()
        columns = table.select(schema.fieldNames() or opts.columns)
        return (PushdownReader if opts.pushdown else TabletdbReader)(opts, table, columns)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise ValueError(
                "the tabletdb data source only appends; use mode('append') (TRUNCATE first if needed)"
            )
        opts, table = self._load()
        method = parse_write_method(self.options)
        session = session_for(opts.connect)
        last_tokens = fetch_tablet_last_tokens(session, table.table_id) or sorted(
            set(fetch_ring_tokens(session))
        )
        plan = WritePlan(opts, table, tuple(schema.fieldNames()), tuple(last_tokens))
        plan.check()
        if method.method == "cql":
            return TabletdbWriter(plan)
        try:
            refuse_unsupported(session, table)
        except LoadError as exc:
            if method.method == "files":
                raise ValueError(f"method files: {str(exc).replace('--via cql', 'method cql')}") from None
            return TabletdbWriter(plan)  # auto: what only the write path maintains goes through it
        return start_file_write(session, opts, table, schema, plan, method)


class WriteResult(WriterCommitMessage):
    def __init__(self, rows: int, through_files: int = 0) -> None:
        self.rows = rows
        self.through_files = through_files


class TabletdbWriter(DataSourceWriter):
    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return WriteResult(write_rows(self.plan, iterator))


PROBE_SECONDS = 2.0


def rest_unreachable(hosts: tuple[str, ...], target: FileTarget) -> str | None:
    """Why no contact point's REST API takes a connection (None: one does). ``auto`` asks this
    once, briefly, rather than wait out `Cluster`'s patience for a port nobody listens on."""
    errors = []
    for host in hosts:
        port = target.endpoints.get(host, target.api_port)
        try:
            socket.create_connection((host, port), timeout=PROBE_SECONDS).close()
            return None
        except OSError as exc:
            errors.append(f"{host}:{port}: {exc}")
    return "no REST API answered (set option api_port or api_endpoints): " + "; ".join(errors)


def start_file_write(
    session: Any,
    opts: SourceOptions,
    table: TableSchema,
    schema: StructType,
    cql: WritePlan,
    method: WriteMethod,
) -> DataSourceWriter:
    """Balancing paused (put back by the writer's commit or abort), the file plan read, and the
    Arrow writer that runs it (`bulk.frame_write`)."""
    credentials = (opts.connect.username, opts.connect.password or "") if opts.connect.username else None
    target = FileTarget(method.api_port, dict(method.endpoints), credentials)
    if method.method == "auto":
        unreachable = rest_unreachable(opts.connect.hosts, target)
        if unreachable is not None:
            log.warning("method auto writes %s.%s through CQL: %s", table.keyspace, table.table, unreachable)
            return TabletdbWriter(cql)
    cluster = Cluster(opts.connect.hosts, target.api_port, target.endpoints, target.credentials)
    was_enabled = pause_balancing(cluster)
    try:
        extras = tuple(e for e in (opts.writetime_column, opts.ttl_column) if e)
        names = tuple(schema.fieldNames())
        mapping = map_columns(table, names, extras)
        table_def_ = table_def(table, clustering_orders(session, table))
        plan = file_plan(session, cluster, table, table_def_, mapping, (names, False), opts, target)
    except BaseException:
        if was_enabled:
            cluster.any_node.set_balancing(True)
        raise
    min_rows = method.files_min_rows if method.method == "auto" else None
    cql_plan = replace(cql, timestamp=plan.timestamp)
    return TabletdbFileWriter(plan, cql_plan, schema, min_rows, cluster if was_enabled else None)


class TabletdbFileWriter(DataSourceArrowWriter):
    """Tasks write through tablet files (`bulk.frame_write`); the driver resumes balancing."""

    def __init__(
        self, plan: FilePlan, cql: WritePlan, schema: StructType, min_rows: int | None, resume: Cluster | None
    ) -> None:
        self.plan = plan
        self.cql = cql
        self.schema = schema
        self.min_rows = min_rows
        self.resume = resume
        """The cluster whose balancing to switch back on once the write ends (None: leave it)."""

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        rows, through_files = write_batches(self.plan, self.cql, self.schema, self.min_rows, iterator)
        return WriteResult(rows, through_files)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._resume()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._resume()

    def _resume(self) -> None:
        if self.resume is not None:
            self.resume.any_node.set_balancing(True)
            self.resume = None
