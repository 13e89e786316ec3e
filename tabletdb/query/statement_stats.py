"""What the statements a node coordinates add up to: counts by kind and latency histograms.

The counters behind ScyllaDB's ``scylla_cql_*`` families (reads, inserts, updates and deletes
with or without conditions, batches and their statements, rows returned, SELECTs with ALLOW
FILTERING) and its coordinator latency histograms (``node.admin.scylla_metrics`` renders
them). Recording a statement is a few integer increments and one bisect: the request path pays
nothing else, and nothing is formatted until a scrape.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field

from tabletdb.cql import ast
from tabletdb.cql.results import Result, RowsResult

LATENCY_BOUNDS_US: tuple[int, ...] = tuple(2**i for i in range(7, 26))
"""Histogram bucket upper bounds in microseconds: 128 µs doubling to about 33.5 s."""


@dataclass
class LatencyHistogram:
    """Counts per bucket (the last one past every bound), their sum and count, in microseconds."""

    buckets: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BOUNDS_US) + 1))
    sum_us: int = 0
    count: int = 0

    def add(self, micros: int) -> None:
        self.buckets[bisect.bisect_left(LATENCY_BOUNDS_US, micros)] += 1
        self.sum_us += micros
        self.count += 1

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations at or below it), ending with (+inf, count)."""
        out, running = [], 0
        for bound, n in zip((*LATENCY_BOUNDS_US, float("inf")), self.buckets, strict=True):
            running += n
            out.append((float(bound), running))
        return out


_KINDS: dict[type[ast.Statement], str] = {
    ast.InsertStatement: "inserts",
    ast.UpdateStatement: "updates",
    ast.DeleteStatement: "deletes",
}


def _conditional(stmt: ast.Statement) -> bool:
    if isinstance(stmt, ast.InsertStatement):
        return stmt.if_not_exists
    if isinstance(stmt, ast.UpdateStatement | ast.DeleteStatement):
        return stmt.if_exists or bool(stmt.conditions)
    return False


@dataclass
class StatementStats:
    """``modifications[(kind, conditional)]``: INSERT/UPDATE/DELETE executions."""

    reads: int = 0
    modifications: Counter[tuple[str, bool]] = field(default_factory=Counter)
    batches: Counter[bool] = field(default_factory=Counter)
    statements_in_batches: Counter[bool] = field(default_factory=Counter)
    rows_read: int = 0
    select_allow_filtering: int = 0
    read_latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    write_latency: LatencyHistogram = field(default_factory=LatencyHistogram)

    def statement(self, stmt: ast.Statement, result: Result | None, seconds: float) -> None:
        """One executed statement (other kinds than SELECT/INSERT/UPDATE/DELETE are not counted)."""
        micros = int(seconds * 1_000_000)
        if isinstance(stmt, ast.SelectStatement):
            self.reads += 1
            if stmt.allow_filtering:
                self.select_allow_filtering += 1
            if isinstance(result, RowsResult):
                self.rows_read += len(result.rows)
            self.read_latency.add(micros)
            return
        if isinstance(stmt, ast.BatchStatement):  # BEGIN BATCH ... as a QUERY or EXECUTE
            self.batch(list(stmt.statements), seconds)
            return
        kind = _KINDS.get(type(stmt))
        if kind is not None:
            self.modifications[(kind, _conditional(stmt))] += 1
            self.write_latency.add(micros)

    def batch(self, statements: list[ast.ModificationStatement], seconds: float) -> None:
        conditional = any(_conditional(s) for s in statements)
        self.batches[conditional] += 1
        self.statements_in_batches[conditional] += len(statements)
        self.write_latency.add(int(seconds * 1_000_000))
