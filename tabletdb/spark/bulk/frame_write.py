"""`df.write.format("tabletdb")` through tablet files: the data source's Arrow writer.

A large write goes the way `tabletdb load` does (`task.load_batches`: each task fits its Arrow
batches to the table, writes one sorted tablet file per tablet and sends it to every replica),
instead of one INSERT per row. The `method` option chooses:

* ``cql``: INSERTs through the driver (`spark.writer`), as before;
* ``files``: every task through files (refused for tables the file path cannot load: counter
  tables, tables with views, indexes or CDC);
* ``auto`` (the default): files where the table allows it, decided per task by its size: a task
  whose input ends before `FILES_MIN_ROWS` rows (option ``files_min_rows``) writes its rows
  through CQL, where a file per tablet would cost more than the INSERTs; a larger one sends
  files. A table the file path cannot load goes through CQL whole.

Write time: every row of one write without its own (``writetime_column``) gets the timestamp the
driver took when the write started, whichever way its task went (CQL tasks send it as USING
TIMESTAMP), so the method does not show in the data. Two rows with the same primary key in one
DataFrame then carry equal timestamps and reconcile as equal-timestamp writes do (the greater
value wins), not by their order in the DataFrame (which Spark does not keep anyway).

Files reach every replica of their tablet or the task fails (the ``consistency`` option only
applies to CQL tasks). A row that does not fit the table fails the write with its reason, as
the CQL writer's first error does; rows already sent stay (rows are upserts: write again).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any, cast

import pyarrow as pa
from pyspark.sql.types import StructType

from tabletdb.spark.bulk.plan import FilePlan
from tabletdb.spark.bulk.task import load_batches
from tabletdb.spark.writer import WriteFailed, WritePlan, write_rows

METHODS = ("auto", "files", "cql")
FILES_MIN_ROWS = 10_000
"""In ``auto``: a task with fewer rows writes them through CQL."""


class WriteMethodError(ValueError):
    """A write option that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class WriteMethod:
    """The write options of the file path (Spark passes them as strings)."""

    method: str = "auto"
    api_port: int = 10000
    endpoints: tuple[tuple[str, int], ...] = ()
    """REST APIs whose port differs from `api_port` (``api_endpoints``: ``address:port,...``)."""
    files_min_rows: int = FILES_MIN_ROWS


def parse_write_method(raw: Mapping[str, str]) -> WriteMethod:
    """`method`, `api_port`, `api_endpoints` and `files_min_rows` from the data source options."""
    options = {k.lower(): v for k, v in raw.items()}
    method = options.get("method", "auto").strip().lower()
    if method not in METHODS:
        raise WriteMethodError(
            f"option method must be one of {', '.join(METHODS)}, got {options['method']!r}"
        )
    if method == "cql":
        given = [name for name in ("api_port", "api_endpoints", "files_min_rows") if name in options]
        if given:
            raise WriteMethodError(f"option(s) {', '.join(given)} apply to method files or auto, not cql")
        return WriteMethod("cql")
    if method == "files":
        # Files go to every replica: a consistency level would be ignored, so it is refused.
        unused = [name for name in ("consistency", "concurrency", "batch_rows") if name in options]
        if unused:
            raise WriteMethodError(
                f"option(s) {', '.join(unused)} apply to method cql (or auto's small tasks): method "
                "files sends each tablet's file to every one of its replicas"
            )
        if "files_min_rows" in options:
            raise WriteMethodError(
                "option files_min_rows applies to method auto (files sends every task's rows)"
            )
    endpoints = []
    for text in filter(None, (e.strip() for e in options.get("api_endpoints", "").split(","))):
        address, sep, port = text.rpartition(":")
        if not sep or not address or not port.isdigit():
            raise WriteMethodError(f"option api_endpoints takes ADDRESS:PORT,..., got {text!r}")
        endpoints.append((address, int(port)))
    return WriteMethod(
        method,
        _positive(options, "api_port", 10000),
        tuple(endpoints),
        _positive(options, "files_min_rows", FILES_MIN_ROWS),
    )


def _positive(options: Mapping[str, str], name: str, default: int) -> int:
    text = options.get(name)
    if text is None:
        return default
    if not text.strip().isdigit() or int(text) < 1:
        raise WriteMethodError(f"option {name} must be a positive integer, got {text!r}")
    return int(text)


def _rows(batches: list[pa.RecordBatch], schema: StructType) -> Iterator[tuple[Any, ...]]:
    """The batches as the Python values a row writer gets (PySpark's own Arrow-to-row
    conversion, as its worker does for a row-based writer)."""
    from pyspark.sql.conversion import ArrowTableToRowsConversion

    converters = [ArrowTableToRowsConversion._create_converter(f.dataType) for f in schema.fields]
    for batch in batches:
        columns = [ArrowTableToRowsConversion._to_pylist(c) for c in batch.columns]
        for row in zip(*columns):
            yield tuple(convert(value) for convert, value in zip(converters, row))


def first_rows(batches: Iterator[pa.RecordBatch], min_rows: int) -> tuple[list[pa.RecordBatch], bool]:
    """The first batches, up to the one that brings them to `min_rows` rows (then True: the
    task is large) or all of them when the input ends first (False)."""
    held: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        held.append(batch)
        count += batch.num_rows
        if count >= min_rows:
            return held, True
    return held, False


def write_batches(
    plan: FilePlan,
    cql: WritePlan,
    schema: StructType,
    min_rows: int | None,
    batches: Iterator[pa.RecordBatch],
) -> tuple[int, int]:
    """One task of a write through files (`min_rows`: ``auto``'s per-task threshold, None for
    ``files``): fit, route, write and send; the first reject fails the task. Returns the rows
    written and how many of them went as files (the rest through CQL)."""
    if min_rows is not None:
        held, large = first_rows(batches, min_rows)
        if not large:
            return write_rows(cql, _rows(held, schema)), 0
        batches = chain(held, batches)
    loaded = 0
    out = cast(Generator[pa.RecordBatch, None, None], load_batches(plan, batches))
    try:
        for result in out:
            reasons = result.column(0)
            if reasons.null_count < len(reasons):
                first = next(i for i, r in enumerate(reasons.to_pylist()) if r is not None)
                record = result.column(1)[first].as_py()
                name = f"{plan.table.keyspace}.{plan.table.name}"
                raise WriteFailed(f"cannot write row {record} to {name}: {reasons[first].as_py()}")
            loaded += sum(v for v in result.column(2).to_pylist() if v is not None)
    finally:
        out.close()
    return loaded, loaded
