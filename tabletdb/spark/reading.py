"""The data source's reader: input partitions, the CQL each runs, rows handed over as Arrow batches.

Without pushed key filters there is one input partition per tablet (per vnode range), each a
paged ``token(pk) > ? AND token(pk) <= ?`` scan — which the node answers tablet by tablet from
SQLite (``query.scan_select``). With ``=``/``IN`` on the whole partition key (``spark.pushdown``)
the partitions are groups of keys, each key one ``WHERE pk = ?`` read. A pushed clustering slice
is appended to either.

Each page of rows is handed to Spark as one ``pyarrow.RecordBatch`` when every column is of an
atomic Spark type (numbers, strings, binary, boolean, date, timestamp) or a list or set of one
(a ``list<text>`` column is common): Spark then skips its per-row conversion of Python tuples.
Tables with maps, tuples, UDTs or nested collections are handed over as tuples, which Spark
converts itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import types as st
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema

from tabletdb.cql.identifiers import quote_identifier
from tabletdb.spark.connection import (
    SourceOptions,
    fetch_ring_tokens,
    fetch_tablet_last_tokens,
    qualified,
    session_for,
)
from tabletdb.spark.pushdown import Pushed, push
from tabletdb.spark.ranges import ScanPlan, plan_scans, ring_ranges, tablet_ranges
from tabletdb.spark.schema_map import Column, TableSchema, spark_schema
from tabletdb.spark.values import to_spark

KEYS_PER_PARTITION = 256
"""Partition keys read by one input partition when the keys are pushed down."""
KEYS_IN_FLIGHT = 32
"""Key reads one task keeps in flight."""

_ATOMIC = (
    st.ByteType,
    st.ShortType,
    st.IntegerType,
    st.LongType,
    st.FloatType,
    st.DoubleType,
    st.StringType,
    st.BinaryType,
    st.BooleanType,
    st.DateType,
    st.TimestampType,
)


def _arrow_ready(t: st.DataType) -> bool:
    """Values Spark takes as Arrow columns: atomic ones, and lists and sets of them."""
    if isinstance(t, st.ArrayType):
        return isinstance(t.elementType, _ATOMIC)
    return isinstance(t, _ATOMIC)


class ScanPartition(InputPartition):
    def __init__(self, plan: ScanPlan) -> None:
        super().__init__(plan)
        self.plan = plan


class KeyPartition(InputPartition):
    def __init__(self, index: int, keys: tuple[tuple[Any, ...], ...]) -> None:
        super().__init__(index)
        self.keys = keys


class TabletdbReader(DataSourceReader):
    def __init__(self, opts: SourceOptions, table: TableSchema, columns: Sequence[Column]) -> None:
        self.opts = opts
        self.table = table
        self.columns = tuple(columns)
        self.pushed = Pushed()

    def partitions(self) -> Sequence[InputPartition]:
        keys = self.pushed.keys
        if keys is not None:
            return [
                KeyPartition(i, keys[start : start + KEYS_PER_PARTITION])
                for i, start in enumerate(range(0, len(keys), KEYS_PER_PARTITION))
            ]
        session = session_for(self.opts.connect)
        last_tokens = fetch_tablet_last_tokens(session, self.table.table_id)
        ranges = tablet_ranges(last_tokens) if last_tokens else ring_ranges(fetch_ring_tokens(session))
        return [ScanPartition(p) for p in plan_scans(ranges, self.opts.token_range)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from cassandra import ConsistencyLevel

        session = session_for(self.opts.connect)
        if isinstance(partition, KeyPartition):
            statement = session.prepare(key_cql(self.table, self.columns, self.pushed))
        else:
            statement = session.prepare(scan_cql(self.table, self.columns, self.pushed))
        statement.consistency_level = ConsistencyLevel.name_to_value[self.opts.consistency]
        statement.fetch_size = self.opts.page_size
        pages = (
            _key_pages(session, statement, partition, self.pushed)
            if isinstance(partition, KeyPartition)
            else _scan_pages(session, statement, partition, self.pushed)
        )
        types = [c.cql_type for c in self.columns]
        schema = spark_schema(self.columns)
        if all(_arrow_ready(f.dataType) for f in schema.fields):
            arrow = to_arrow_schema(schema, timezone="UTC")
            for rows in pages:
                if rows:
                    yield _batch(arrow, types, rows)
            return
        for rows in pages:
            for row in rows:
                yield tuple(to_spark(t, v) for t, v in zip(types, row))


class PushdownReader(TabletdbReader):
    """The reader that takes Spark's filters (``spark.pushdown``); Spark calls ``pushFilters``
    only when the session's ``spark.sql.python.filterPushdown.enabled`` is true, and refuses a
    reader that has it otherwise, hence a class of its own (option ``pushdown=false``)."""

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        self.pushed, left = push(filters, self.table)
        return left


def _batch(arrow: pa.Schema, types: Sequence[Any], rows: list[Any]) -> pa.RecordBatch:
    columns = []
    for i, (field, t) in enumerate(zip(arrow, types)):
        columns.append(pa.array([to_spark(t, row[i]) for row in rows], type=field.type))
    return pa.RecordBatch.from_arrays(columns, schema=arrow)


def _scan_pages(
    session: Any, statement: Any, partition: InputPartition, pushed: Pushed
) -> Iterator[list[Any]]:
    assert isinstance(partition, ScanPartition)
    for start, end in partition.plan.ranges:
        result = session.execute(statement, (start, end, *pushed.values()))
        while True:
            yield list(result.current_rows)
            if not result.has_more_pages:
                break
            result.fetch_next_page()


def _key_pages(
    session: Any, statement: Any, partition: InputPartition, pushed: Pushed
) -> Iterator[list[Any]]:
    from cassandra.concurrent import execute_concurrent_with_args

    assert isinstance(partition, KeyPartition)
    args = [(*key, *pushed.values()) for key in partition.keys]
    for ok, result in execute_concurrent_with_args(session, statement, args, concurrency=KEYS_IN_FLIGHT):
        if not ok:
            raise result
        yield list(result)


def scan_cql(table: TableSchema, columns: Sequence[Column], pushed: Pushed) -> str:
    token = f"token({', '.join(quote_identifier(c.name) for c in table.partition_key)})"
    selected = ", ".join(quote_identifier(c.name) for c in columns)
    where = f"{token} > ? AND {token} <= ?"
    if pushed.clustering:
        where += f" AND {pushed.where()} ALLOW FILTERING"
    return f"SELECT {selected} FROM {qualified(table.keyspace, table.table)} WHERE {where}"


def key_cql(table: TableSchema, columns: Sequence[Column], pushed: Pushed) -> str:
    selected = ", ".join(quote_identifier(c.name) for c in columns)
    where = " AND ".join(f"{quote_identifier(c.name)} = ?" for c in table.partition_key)
    if pushed.clustering:
        where += f" AND {pushed.where()}"
    return f"SELECT {selected} FROM {qualified(table.keyspace, table.table)} WHERE {where}"
