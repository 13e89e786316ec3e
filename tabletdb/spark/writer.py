"""The write side of a task: rows -> prepared INSERTs, grouped by tablet, at bounded concurrency.

Counter tables cannot take INSERT: their rows become `UPDATE ... SET c = c + ?` (each value is an
increment; a null adds nothing), and writetime/TTL columns are refused, as CQL refuses them.

A task buffers `batch_rows` rows, computes each row's token from the prepared statement's routing
key, and sends the buffer tablet by tablet (so one replica's store sees its rows together) with at
most `concurrency` requests in flight (scylla-driver `execute_async`; the token-aware policy routes
each to a replica). The first CQL error stops the task and fails it with the server's message and
the row's key, which is what Spark shows as the task's failure.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from tabletdb.cql.identifiers import quote_identifier
from tabletdb.cql.types import COUNTER
from tabletdb.spark.connection import SourceOptions, qualified, session_for
from tabletdb.spark.ranges import range_index
from tabletdb.spark.schema_map import CLUSTERING, PARTITION_KEY, Column, SchemaError, TableSchema
from tabletdb.spark.values import ValueConversionError, to_driver


class WriteFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class WritePlan:
    """What every task of one write needs; built once on the driver and pickled to the tasks."""

    options: SourceOptions
    table: TableSchema
    input_names: tuple[str, ...]  # the DataFrame's columns, in order
    last_tokens: tuple[int, ...]  # tablet (or vnode range) ends used to group rows
    timestamp: int | None = None
    """USING TIMESTAMP for rows without their own write time (None: the driver's clock per
    statement). A write that sends some tasks' rows as files gives the CQL tasks the files'
    timestamp, so which way a row went does not show in its write time."""

    def data_columns(self) -> tuple[Column, ...]:
        extra = {self.options.writetime_column, self.options.ttl_column} - {None}
        return tuple(self.table.column(n) for n in self.input_names if n not in extra)

    @property
    def is_counter_table(self) -> bool:
        return any(c.cql_type == COUNTER for c in self.table.columns)

    def statement_columns(self) -> tuple[Column, ...]:
        """The data columns in bind-marker order: as given for INSERT; counters, then the
        primary key, for a counter UPDATE."""
        columns = self.data_columns()
        if not self.is_counter_table:
            return columns
        keys = tuple(c for c in columns if c.kind in (PARTITION_KEY, CLUSTERING))
        return tuple(c for c in columns if c not in keys) + keys

    def check(self) -> None:
        """Fail before any task starts when the DataFrame cannot fill the table's key."""
        names = set(self.input_names)
        if self.is_counter_table and (self.options.writetime_column or self.options.ttl_column):
            raise SchemaError(
                f"{self.table.keyspace}.{self.table.table} is a counter table: counters take no "
                "writetime or TTL"
            )
        for option, column in (
            ("writetime_column", self.options.writetime_column),
            ("ttl_column", self.options.ttl_column),
        ):
            if column is not None and column not in names:
                raise SchemaError(
                    f"{option} {column!r} is not a column of the DataFrame ({', '.join(self.input_names)})"
                )
        columns = self.data_columns()
        missing = [
            c.name for c in self.table.columns if c.kind in (PARTITION_KEY, CLUSTERING) and c not in columns
        ]
        if missing:
            raise SchemaError(
                f"the DataFrame lacks primary key column(s) {', '.join(missing)} of "
                f"{self.table.keyspace}.{self.table.table}"
            )


def counter_update_cql(plan: WritePlan) -> str:
    columns = plan.statement_columns()
    counters = [quote_identifier(c.name) for c in columns if c.kind not in (PARTITION_KEY, CLUSTERING)]
    keys = [quote_identifier(c.name) for c in columns if c.kind in (PARTITION_KEY, CLUSTERING)]
    if not counters:
        raise SchemaError(f"the DataFrame has no counter column of {plan.table.keyspace}.{plan.table.table}")
    return (
        f"UPDATE {qualified(plan.table.keyspace, plan.table.table)} "
        f"SET {', '.join(f'{c} = {c} + ?' for c in counters)} WHERE {' AND '.join(f'{k} = ?' for k in keys)}"
    )


def insert_cql(plan: WritePlan, with_timestamp: bool, with_ttl: bool) -> str:
    if plan.is_counter_table:
        return counter_update_cql(plan)
    columns = plan.data_columns()
    text = (
        f"INSERT INTO {qualified(plan.table.keyspace, plan.table.table)} "
        f"({', '.join(quote_identifier(c.name) for c in columns)}) VALUES ({', '.join('?' for _ in columns)})"
    )
    using = [u for u, on in (("TIMESTAMP ?", with_timestamp), ("TTL ?", with_ttl)) if on]
    return text + (" USING " + " AND ".join(using) if using else "")


def group_by_range(items: Sequence[tuple[int, Any]], last_tokens: Sequence[int]) -> list[Any]:
    """Items (token, payload) reordered so each range's payloads are together, ranges in ring order
    and rows of one range in arrival order (a stable sort)."""
    if not last_tokens:
        return [payload for _, payload in items]
    keyed = sorted(range(len(items)), key=lambda i: range_index(items[i][0], last_tokens))
    return [items[i][1] for i in keyed]


@dataclass
class _Window:
    """At most `limit` requests in flight; remembers the first failure."""

    limit: int
    slots: threading.Semaphore = field(init=False)
    idle: threading.Condition = field(default_factory=threading.Condition)
    in_flight: int = 0
    error: str | None = None

    def __post_init__(self) -> None:
        self.slots = threading.Semaphore(self.limit)

    def submit(self, send: Callable[[], Any], describe: Callable[[], str]) -> None:
        self.slots.acquire()
        with self.idle:
            self.in_flight += 1
        future = send()
        future.add_callbacks(lambda _rows: self._done(None), lambda exc: self._done(f"{describe()}: {exc}"))

    def _done(self, error: str | None) -> None:
        with self.idle:
            if error is not None and self.error is None:
                self.error = error
            self.in_flight -= 1
            self.idle.notify_all()
        self.slots.release()

    def drain(self) -> None:
        with self.idle:
            self.idle.wait_for(lambda: self.in_flight == 0)


def write_rows(plan: WritePlan, rows: Iterable[Sequence[Any]]) -> int:
    """Write every row; returns how many. Raises WriteFailed on the first error."""
    from cassandra import ConsistencyLevel
    from cassandra.murmur3 import murmur3

    session = session_for(plan.options.connect)
    columns = plan.statement_columns()
    counter_deltas = plan.is_counter_table
    positions = {n: i for i, n in enumerate(plan.input_names)}
    value_at = [positions[c.name] for c in columns]
    ts_at = positions.get(plan.options.writetime_column or "")
    ttl_at = positions.get(plan.options.ttl_column or "")
    consistency = ConsistencyLevel.name_to_value[plan.options.consistency]
    prepared: dict[tuple[bool, bool], Any] = {}

    def statement(with_ts: bool, with_ttl: bool) -> Any:
        key = (with_ts, with_ttl)
        if key not in prepared:
            stmt = session.prepare(insert_cql(plan, with_ts, with_ttl))
            stmt.consistency_level = consistency
            prepared[key] = stmt
        return prepared[key]

    def bind(row: Sequence[Any]) -> tuple[int, Any]:
        values = []
        for c, i in zip(columns, value_at):
            if counter_deltas and row[i] is None and c.cql_type == COUNTER:
                values.append(0)  # a missing increment adds nothing
                continue
            try:
                values.append(to_driver(c.cql_type, row[i]))
            except ValueConversionError as exc:
                raise WriteFailed(
                    f"cannot write {_describe(plan, row)} to {plan.table.keyspace}.{plan.table.table}: "
                    f"column {c.name}: {exc}"
                ) from None
        ts = row[ts_at] if ts_at is not None else None
        if ts is None:
            ts = plan.timestamp
        ttl = row[ttl_at] if ttl_at is not None else None
        values += [int(v) for v in (ts, ttl) if v is not None]
        bound = statement(ts is not None, ttl is not None).bind(values)
        routing = bound.routing_key
        return (murmur3(routing) if routing is not None else 0), (bound, row)

    window = _Window(plan.options.concurrency)
    written = 0
    for chunk in _chunks(rows, plan.options.batch_rows):
        try:
            ordered = group_by_range([bind(r) for r in chunk], plan.last_tokens)
        except (ValueError, TypeError) as exc:
            window.drain()
            raise WriteFailed(
                f"cannot bind a row for {plan.table.keyspace}.{plan.table.table}: {exc}"
            ) from None
        for bound, row in ordered:
            if window.error is not None:
                break
            window.submit(partial(session.execute_async, bound), partial(_describe, plan, row))
        window.drain()
        if window.error is not None:
            raise WriteFailed(f"writing to {plan.table.keyspace}.{plan.table.table} failed at {window.error}")
        written += len(ordered)
    return written


def _describe(plan: WritePlan, row: Sequence[Any]) -> str:
    """The failing row's primary key, so the error can be acted on."""
    positions = {n: i for i, n in enumerate(plan.input_names)}
    key = ", ".join(f"{c.name}={row[positions[c.name]]!r}" for c in plan.table.primary_key)
    return f"row ({key})"


def _chunks(rows: Iterable[Sequence[Any]], size: int) -> Iterator[list[Sequence[Any]]]:
    chunk: list[Sequence[Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
