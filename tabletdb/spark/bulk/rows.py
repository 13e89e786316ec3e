"""One input batch fitted, keyed and routed: its rejects, and its rows per tablet.

The rules and their order are the row-at-a-time load's (`spark.load.checker`, then the write
time, then the row-at-a-time model of the tests): a malformed CSV record or bad JSON line first, then the
first column (in input order) that does not fit, then the writetime/TTL fields, the write time's
bounds, a value the codec cannot write, the partition key's rules, the clustering key's. So a
row rejected here is rejected with the same reason it always was; only the work is columnwise.
"""

from __future__ import annotations

import json
import time
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from operator import itemgetter
from typing import Any

import pyarrow as pa

from tabletdb.spark.bulk.cells import RowCells, build_cells
from tabletdb.spark.bulk.columns import Fitted, Input, fit_column
from tabletdb.spark.bulk.keys import row_keys
from tabletdb.spark.bulk.plan import FilePlan
from tabletdb.spark.coerce import RowRejected, json_object_row, whole_number
from tabletdb.statements.cells import WriteTime
from tabletdb.storage.images.image_validation import FUTURE_TIMESTAMP_LIMIT_US

CORRUPT = "_corrupt_record"
MALFORMED = "malformed record (wrong number of fields or bad quoting)"
MAX_TTL = 630_720_000
"""CQL's largest TTL (20 years), as the node refuses larger ones."""


@dataclass
class Chunk:
    """Rows of one tablet, column-oriented: what `TabletRows` keeps until it writes a file."""

    pk: list[bytes] = field(default_factory=list)
    token: list[int] = field(default_factory=list)
    ck: list[bytes] = field(default_factory=list)
    ts: list[int] = field(default_factory=list)
    ttl: list[int] = field(default_factory=list)
    now: list[int] = field(default_factory=list)
    native: list[list[bytes | None]] = field(default_factory=list)
    """Per `Layout.native` column: serialized values."""
    other: list[list[RowCells]] = field(default_factory=list)
    """Per `Layout.other` column: each row's cells."""

    def __len__(self) -> int:
        return len(self.pk)


@dataclass
class FittedBatch:
    rejects: list[tuple[str, str]]
    """(reason, record) per rejected row."""
    chunks: dict[int, Chunk]
    """Per tablet (index into the plan's ranges)."""


class _Verdicts:
    """The first reason per row, and the record to show for it when not the row itself."""

    def __init__(self) -> None:
        self.reasons: dict[int, str] = {}
        self.records: dict[int, str] = {}

    def add(self, reasons: dict[int, str], record: str | None = None) -> None:
        for row, reason in reasons.items():
            if row not in self.reasons:
                self.reasons[row] = reason
                if record is not None:
                    self.records[row] = record


def _json_inputs(
    plan: FilePlan, lines: list[str | None], verdicts: _Verdicts, skip: set[int]
) -> list[list[Any]]:
    """JSON lines as the table's columns then the extras, one Python list per field."""
    width = len(plan.schema.columns) + len(plan.mapping.extras)
    rows: list[list[Any] | None] = []
    for row, line in enumerate(lines):
        if not (line or "").strip():
            skip.add(row)
            rows.append(None)
            continue
        assert line is not None
        try:
            rows.append(
                json_object_row(plan.schema, json.loads(line, parse_float=Decimal), plan.mapping.extras)
            )
        except json.JSONDecodeError as exc:
            verdicts.add({row: f"not valid JSON: {exc}"}, line)
            rows.append(None)
        except RowRejected as exc:
            verdicts.add({row: str(exc)}, line)
            rows.append(None)
    return [[r[i] if r is not None else None for r in rows] for i in range(width)]


def _whens(
    plan: FilePlan, extras: list[list[Any]], rows: int, now: int, verdicts: _Verdicts
) -> list[WriteTime | None]:
    """Each row's write time (None for rejected rows), from the writetime/TTL fields if any."""
    if plan.writetime_at is None and plan.ttl_at is None:
        when = WriteTime(plan.timestamp, 0, now)
        return [None if r in verdicts.reasons else when for r in range(rows)]
    limit = time.time_ns() // 1000 + FUTURE_TIMESTAMP_LIMIT_US
    out: list[WriteTime | None] = []
    late: dict[int, str] = {}
    for row in range(rows):
        if row in verdicts.reasons:
            out.append(None)
            continue
        ts = extras[plan.writetime_at][row] if plan.writetime_at is not None else None
        ttl = extras[plan.ttl_at][row] if plan.ttl_at is not None else None
        if ts is not None and ts > limit:
            late[row] = f"write timestamp {ts} is beyond now + 3 days (restrict_future_timestamp refuses it)"
        elif ttl is not None and not 0 <= ttl <= MAX_TTL:
            late[row] = f"TTL {ttl} must be between 0 and {MAX_TTL} seconds"
        out.append(None if row in late else WriteTime(plan.timestamp if ts is None else ts, ttl or 0, now))
    verdicts.add(late)
    return out


def _extras(plan: FilePlan, inputs: Sequence[Input], verdicts: _Verdicts) -> list[list[Any]]:
    out = []
    for name, data in zip(plan.mapping.extras, inputs):
        raws = data.to_pylist() if isinstance(data, pa.Array | pa.ChunkedArray) else list(data)
        values: list[Any] = []
        reasons: dict[int, str] = {}
        for row, raw in enumerate(raws):
            try:
                values.append(whole_number(name, raw))
            except RowRejected as exc:
                reasons[row] = str(exc)
                values.append(None)
        verdicts.add(reasons)
        out.append(values)
    return out


def fit_batch(plan: FilePlan, batch: pa.RecordBatch, now: int) -> FittedBatch:
    """Reject what does not fit; key, route and encode the rest (module docstring)."""
    count = batch.num_rows
    verdicts = _Verdicts()
    skip: set[int] = set()
    mapping = plan.mapping
    if plan.json_lines:
        fields = _json_inputs(plan, batch.column(0).to_pylist(), verdicts, skip)
        inputs: list[Input] = [fields[p] for p in mapping.positions]
        extra_inputs: list[Input] = [fields[p] for p in mapping.extra_positions]
    else:
        names = list(plan.input_names)
        if CORRUPT in names:
            corrupt = batch.column(names.index(CORRUPT))
            if corrupt.null_count < count:
                texts = corrupt.to_pylist()
                for row, text in enumerate(texts):
                    if text is not None:
                        verdicts.add({row: MALFORMED}, text)
        inputs = [batch.column(p) for p in mapping.positions]
        extra_inputs = [batch.column(p) for p in mapping.extra_positions]
    fitted: list[Fitted] = []
    for column, data in zip(mapping.columns, inputs):
        fitted.append(fit_column(column, data))
        verdicts.add(fitted[-1].reasons)
    extras = _extras(plan, extra_inputs, verdicts)
    whens = _whens(plan, extras, count, now, verdicts)
    layout = plan.layout
    defs = plan.columns()
    built = {i: build_cells(defs[i], fitted[i].values, whens) for i in layout.other}
    for i in range(len(fitted)):
        verdicts.add(built[i].late if i in built else fitted[i].late)
    chunks = _route(plan, fitted, built, whens, verdicts, skip, count)
    rejects = [
        (reason, verdicts.records.get(row) or _record(batch, row))
        for row, reason in sorted(verdicts.reasons.items())
    ]
    return FittedBatch(rejects, chunks)


def _record(batch: pa.RecordBatch, row: int) -> str:
    """The input row as JSON (what a reject shows of it)."""
    return json.dumps(batch.slice(row, 1).to_pylist()[0], default=str, ensure_ascii=False)


def _route(
    plan: FilePlan,
    fitted: list[Fitted],
    built: dict[int, Any],
    whens: list[WriteTime | None],
    verdicts: _Verdicts,
    skip: set[int],
    count: int,
) -> dict[int, Chunk]:
    layout = plan.layout
    live = [r for r in range(count) if r not in verdicts.reasons and r not in skip]
    if not live:
        return {}
    every = len(live) == count

    def take(values: list[Any]) -> list[Any]:
        return values if every else [values[r] for r in live]

    keys = row_keys(
        plan.table,
        [take(fitted[i].values) for i in layout.partition],
        [take(fitted[i].values) for i in layout.clustering],
    )
    if keys.reasons:
        verdicts.add({live[i]: reason for i, reason in keys.reasons.items()})
        kept = [i for i in range(len(live)) if i not in keys.reasons]
        live = [live[i] for i in kept]
        keys.partition = [keys.partition[i] for i in kept]
        keys.tokens = [keys.tokens[i] for i in kept]
        keys.clustering = [keys.clustering[i] for i in kept]
        every = False
    live_whens = take(whens)
    chunk = Chunk(
        pk=keys.partition,
        token=keys.tokens,
        ck=keys.clustering,
        ts=[w.timestamp for w in live_whens],
        ttl=[w.ttl for w in live_whens],
        now=[w.now for w in live_whens],
        native=[take(fitted[i].values) for i in layout.native],
        other=[take(built[i].cells) for i in layout.other],
    )
    if not plan.last_tokens:
        return {0: chunk}
    groups = list(map(partial(bisect_left, plan.last_tokens), chunk.token))
    first = groups[0]
    if groups.count(first) == len(groups):
        return {first: chunk}
    members: dict[int, list[int]] = {}
    for row, group in enumerate(groups):
        members.setdefault(group, []).append(row)
    return {group: _subset(chunk, rows) for group, rows in members.items()}


def _subset(chunk: Chunk, rows: list[int]) -> Chunk:
    if len(rows) == 1:
        (only,) = rows

        def pick(values: list[Any]) -> list[Any]:
            return [values[only]]

    else:
        getter = itemgetter(*rows)  # one C call per column, not a Python step per row

        def pick(values: list[Any]) -> list[Any]:
            return list(getter(values))

    return Chunk(
        pick(chunk.pk),
        pick(chunk.token),
        pick(chunk.ck),
        pick(chunk.ts),
        pick(chunk.ttl),
        pick(chunk.now),
        [pick(v) for v in chunk.native],
        [pick(v) for v in chunk.other],
    )
