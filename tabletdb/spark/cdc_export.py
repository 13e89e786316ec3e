"""``tabletdb cdc export``'s passes: read a CDC log stream by stream through Spark into Parquet.

Each pass (``cdc_plan``) lists the table's stream sets from the description tables (vnode
keyspaces: ``system_distributed``'s generations; tablets keyspaces: ``system.cdc_timestamps`` and
``system.cdc_streams``), cuts ``[from, to)`` into per-stream spans, and gives each Spark task a
group of streams adjacent in token order. A task reads its streams with single-partition
queries (``"cdc$stream_id" = ? AND "cdc$time" >= ? AND "cdc$time" < ?``, paged), so every read
goes to the stream's own replicas. The rows go to Parquet in a staging directory that is renamed
to ``pass-<from>-<to>`` once Spark finished it: the commit, and the checkpoint the next run
resumes from. ``--to`` must therefore be a filesystem path every Spark worker writes to (local
master, or a shared mount), where a rename is atomic.
"""

from __future__ import annotations

import calendar
import datetime
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabletdb.cql.identifiers import quote_identifier
from tabletdb.schema.cdc_log import STREAM_ID, TIME, log_name
from tabletdb.spark.cdc_plan import (
    SAFETY_US,
    StreamSpan,
    committed_upto,
    groups,
    pass_name,
    spans,
    time_bound,
    windows,
)
from tabletdb.spark.connection import ConnectOptions, fetch_table_schema, qualified, session_for
from tabletdb.spark.schema_map import Column, SchemaError, spark_schema
from tabletdb.spark.values import to_spark

STAGING_PREFIX = ".staging-"


class ExportError(ValueError):
    """The export cannot start: no such table, no CDC log, or an output directory it cannot use."""


@dataclass(frozen=True)
class ExportOptions:
    connect: ConnectOptions
    keyspace: str
    table: str
    out_dir: Path
    since: int = 0
    """µs: where the first pass starts when the directory holds no committed pass."""
    consistency: str = "LOCAL_QUORUM"
    page_size: int = 1000
    tasks: int = 8


@dataclass(frozen=True)
class PassResult:
    lower: int
    upper: int
    rows: int
    streams: int
    path: Path


def _micros(moment: datetime.datetime) -> int:
    return calendar.timegm(moment.utctimetuple()) * 1_000_000 + moment.microsecond


_TABLET_SETS = "SELECT timestamp FROM system.cdc_timestamps WHERE keyspace_name = %s AND table_name = %s"
_TABLET_STREAMS = (
    "SELECT stream_id FROM system.cdc_streams WHERE keyspace_name = %s AND table_name = %s "
    "AND timestamp = %s AND stream_state = 0"
)
_GENERATIONS = "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'"
_GENERATION_STREAMS = "SELECT streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = %s"


def stream_sets(session: Any, keyspace: str, table: str) -> list[tuple[int, list[bytes]]]:
    """(µs the set operates from, its streams) for the table, from the description tables: a
    tablets table's own sets, or else the vnode generations."""
    stamps = [r.timestamp for r in session.execute(_TABLET_SETS, (keyspace, table))]
    if stamps:
        return [
            (_micros(t), [r.stream_id for r in session.execute(_TABLET_STREAMS, (keyspace, table, t))])
            for t in stamps
        ]
    times = [r.time for r in session.execute(_GENERATIONS)]
    return [
        (_micros(t), [s for r in session.execute(_GENERATION_STREAMS, (t,)) for s in r.streams])
        for t in times
    ]


def _read_group(
    connect: ConnectOptions,
    cql: str,
    consistency: str,
    page_size: int,
    columns: Sequence[Column],
    group: Sequence[StreamSpan],
) -> Iterator[tuple[Any, ...]]:
    """A Spark task: every row of its streams' spans, as Spark values."""
    from cassandra import ConsistencyLevel

    session = session_for(connect)
    statement = session.prepare(cql)
    statement.consistency_level = ConsistencyLevel.name_to_value[consistency]
    statement.fetch_size = page_size
    types = [c.cql_type for c in columns]
    for span in group:
        for row in session.execute(statement, (span.stream, time_bound(span.lower), time_bound(span.upper))):
            yield tuple(to_spark(t, v) for t, v in zip(types, row))


def prepare_out_dir(out_dir: Path) -> int | None:
    """Remove what killed passes left (staging directories); the committed passes' end, if any."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportError(f"--to {out_dir} exists and is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    for entry in out_dir.iterdir():
        if entry.name.startswith(STAGING_PREFIX):
            shutil.rmtree(entry)
    names = [e.name for e in out_dir.iterdir()]
    return committed_upto(names, -1) if any(n.startswith("pass-") for n in names) else None


PassStarted = Callable[[int, int, int, int], None]
"""Told (lower µs, upper µs, streams, Spark tasks) once a pass is planned, before its job runs:
what a progress display needs to draw the pass."""


def run_pass(
    spark: Any, opts: ExportOptions, now: int | None = None, started: PassStarted | None = None
) -> PassResult | None:
    """Export the next pass; None if the watermark cannot move yet (less than the safety lag)."""
    resumed = prepare_out_dir(opts.out_dir)
    lower = opts.since if resumed is None else resumed
    upper = (time.time_ns() // 1000 if now is None else now) - SAFETY_US
    upper -= upper % 1000
    if upper <= lower:
        return None
    session = session_for(opts.connect)
    log = log_name(opts.table)
    try:
        schema = fetch_table_schema(session, opts.keyspace, log)
    except SchemaError:
        raise ExportError(
            f"{opts.keyspace}.{opts.table} has no CDC log table ({opts.keyspace}.{log}): "
            "is it a table with cdc = {'enabled': true}?"
        ) from None
    columns = schema.columns
    selected = ", ".join(quote_identifier(c.name) for c in columns)
    cql = (
        f"SELECT {selected} FROM {qualified(opts.keyspace, log)} WHERE {quote_identifier(STREAM_ID)} = ? "
        f"AND {quote_identifier(TIME)} >= ? AND {quote_identifier(TIME)} < ?"
    )
    plan = groups(spans(windows(stream_sets(session, opts.keyspace, opts.table)), lower, upper), opts.tasks)
    if started is not None:
        started(lower, upper, sum(len(g) for g in plan), max(1, len(plan)))
    staging = opts.out_dir / f"{STAGING_PREFIX}{lower}-{upper}-{os.getpid()}"
    rows = spark.sparkContext.accumulator(0)
    connect, consistency, page_size = opts.connect, opts.consistency, opts.page_size

    def read(group: list[StreamSpan]) -> Iterator[tuple[Any, ...]]:
        for row in _read_group(connect, cql, consistency, page_size, columns, group):
            rows.add(1)
            yield row

    rdd = spark.sparkContext.parallelize(plan, max(1, len(plan))).flatMap(read)
    spark.createDataFrame(rdd, spark_schema(columns)).write.parquet(str(staging))
    final = opts.out_dir / pass_name(lower, upper)
    os.rename(staging, final)  # the commit: the next run resumes after it
    return PassResult(lower, upper, rows.value, sum(len(g) for g in plan), final)
