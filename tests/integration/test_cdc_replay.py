"""Property (issue 16 acceptance): replaying the CDC log of random writes on an empty table
rebuilds the base table exactly.

Hypothesis draws sequences of writes of every kind the log records (inserts, updates, nulls,
set, map and list element changes and overwrites (list elements replayed at the timeuuid keys
the log shows, with ``SCYLLA_TIMEUUID_LIST_INDEX``), non-frozen UDT field sets and deletes and
whole-value overwrites (deleted fields named by the indexes the log shows), static cells, row,
range and partition deletes, batches) against a real node; the test then reads the log as a
client would (every row, in ``cdc$time`` / ``cdc$batch_seq_no`` order) — or as ``cdc export``
writes it to Parquet — turns each delta row
back into the CQL write it describes, stamped with the time in its ``cdc$time``, runs those on
an empty twin table and compares both tables row by row.
"""

from __future__ import annotations

import itertools
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

NTS_1 = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
COLUMNS = (
    "pk int, ck int, v int, t text, s set<int>, m map<int, text>, l list<int>, st int static, "
    "u ut, PRIMARY KEY (pk, ck)"
)
UDT_FIELDS = ("a", "b")
"""The fields of ``ut`` in index order, as the log's ``cdc$deleted_elements_u`` numbers them."""
_UUID_EPOCH_OFFSET = 0x01B21DD213814000
_names = itertools.count()

pks = st.integers(0, 2).map(lambda n: f"PK({n})")
cks = st.integers(0, 4)
small = st.integers(-3, 3)
texts = st.sampled_from(["a", "b", "ząb", ""])


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if hasattr(value, "items"):  # a dict or the driver's map
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in sorted(value.items())) + "}"
    if hasattr(value, "__iter__"):  # a set or the driver's SortedSet
        return "{" + ", ".join(_literal(v) for v in sorted(value)) + "}"
    return "null" if value is None else str(value)


def _udt(fields: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {_literal(v)}" for k, v in fields.items()) + "}"


def _list(values: list[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _where(pk: int | str, ck: int | None = None) -> str:
    return f"pk = {pk}" + ("" if ck is None else f" AND ck = {ck}")


statements = st.one_of(
    st.builds(
        lambda p, c, v, t: f"INSERT INTO {{T}} (pk, ck, v, t) VALUES ({p}, {c}, {v}, {_literal(t)})",
        pks,
        cks,
        small,
        texts,
    ),
    st.builds(lambda p, c: f"INSERT INTO {{T}} (pk, ck) VALUES ({p}, {c})", pks, cks),
    st.builds(
        lambda p, c, v: f"UPDATE {{T}} SET v = {_literal(v)} WHERE {_where(p, c)}",
        pks,
        cks,
        st.none() | small,
    ),
    st.builds(
        lambda p, c, e: f"UPDATE {{T}} SET s = s + {_literal(e)} WHERE {_where(p, c)}",
        pks,
        cks,
        st.sets(small, min_size=1, max_size=3),
    ),
    st.builds(
        lambda p, c, e: f"UPDATE {{T}} SET s = s - {_literal(e)} WHERE {_where(p, c)}",
        pks,
        cks,
        st.sets(small, min_size=1, max_size=2),
    ),
    st.builds(
        lambda p, c, e: f"UPDATE {{T}} SET s = {_literal(e)} WHERE {_where(p, c)}",
        pks,
        cks,
        st.sets(small, max_size=3),
    ),
    st.builds(
        lambda p, c, k, t: f"UPDATE {{T}} SET m[{k}] = {_literal(t)} WHERE {_where(p, c)}",
        pks,
        cks,
        small,
        texts,
    ),
    st.builds(lambda p, c, k: f"DELETE m[{k}] FROM {{T}} WHERE {_where(p, c)}", pks, cks, small),
    st.builds(
        lambda p, c, e: f"UPDATE {{T}} SET m = {_literal(e)} WHERE {_where(p, c)}",
        pks,
        cks,
        st.dictionaries(small, texts, max_size=2),
    ),
    st.builds(
        lambda p, c, e, front: (
            f"UPDATE {{T}} SET l = {_list(e)} + l WHERE {_where(p, c)}"
            if front
            else f"UPDATE {{T}} SET l = l + {_list(e)} WHERE {_where(p, c)}"
        ),
        pks,
        cks,
        st.lists(small, min_size=1, max_size=3),
        st.booleans(),
    ),
    st.builds(
        lambda p, c, e: f"UPDATE {{T}} SET l = l - {_list(e)} WHERE {_where(p, c)}",
        pks,
        cks,
        st.lists(small, min_size=1, max_size=2),
    ),
    st.builds(
        lambda p, c, e: f"UPDATE {{T}} SET l = {_list(e)} WHERE {_where(p, c)}",
        pks,
        cks,
        st.lists(small, max_size=3),
    ),
    st.builds(lambda p, c: f"DELETE l FROM {{T}} WHERE {_where(p, c)}", pks, cks),
    st.builds(lambda p, v: f"UPDATE {{T}} SET st = {_literal(v)} WHERE {_where(p)}", pks, st.none() | small),
    st.builds(
        lambda p, c, f, v: f"UPDATE {{T}} SET u.{f} = {_literal(v)} WHERE {_where(p, c)}",
        pks,
        cks,
        st.sampled_from(UDT_FIELDS),
        st.none() | small,
    ),
    st.builds(
        lambda p, c, a, b: f"UPDATE {{T}} SET u.a = {_literal(a)}, u.b = {_literal(b)} WHERE {_where(p, c)}",
        pks,
        cks,
        st.none() | small,
        st.none() | small,
    ),
    st.builds(
        lambda p, c, fields: f"UPDATE {{T}} SET u = {_udt(fields)} WHERE {_where(p, c)}",
        pks,
        cks,
        st.dictionaries(st.sampled_from(UDT_FIELDS), st.none() | small),
    ),
    st.builds(
        lambda p, c, f: f"DELETE u.{f} FROM {{T}} WHERE {_where(p, c)}", pks, cks, st.sampled_from(UDT_FIELDS)
    ),
    st.builds(lambda p, c: f"DELETE u FROM {{T}} WHERE {_where(p, c)}", pks, cks),
    st.builds(lambda p, c: f"DELETE t, s FROM {{T}} WHERE {_where(p, c)}", pks, cks),
    st.builds(lambda p, c: f"DELETE FROM {{T}} WHERE {_where(p, c)}", pks, cks),
    st.builds(lambda p: f"DELETE FROM {{T}} WHERE {_where(p)}", pks),
    st.builds(
        lambda p, lo, hi, lo_op, hi_op: (
            f"DELETE FROM {{T}} WHERE pk = {p} AND ck {lo_op} {lo} AND ck {hi_op} {hi}"
        ),
        pks,
        cks,
        cks,
        st.sampled_from([">", ">="]),
        st.sampled_from(["<", "<="]),
    ),
    st.builds(lambda p, hi: f"DELETE FROM {{T}} WHERE pk = {p} AND ck < {hi}", pks, cks),
)
writes = st.one_of(
    statements,
    st.lists(statements, min_size=2, max_size=4).map(
        lambda ss: "BEGIN UNLOGGED BATCH " + "; ".join(ss) + "; APPLY BATCH"
    ),
)


def _micros(time_uuid: Any) -> int:
    return int((time_uuid.time - _UUID_EPOCH_OFFSET) // 10)


def _replayed(log: list[Any], table: str) -> Iterator[str]:
    """The CQL writes the delta rows describe, each stamped with its row's write time."""
    pending_start: tuple[int, Any] | None = None
    for row in log:
        op, ts = row.cdc_operation, _micros(row.cdc_time)
        using = f"USING TIMESTAMP {ts}"
        if op == 4:
            yield f"DELETE FROM {table} {using} WHERE {_where(row.pk)}"
        elif op == 3:
            yield f"DELETE FROM {table} {using} WHERE {_where(row.pk, row.ck)}"
        elif op in (5, 6):
            pending_start = (op, row.ck)
        elif op in (7, 8):
            assert pending_start is not None, "a range end without its start"
            start_op, start_ck = pending_start
            bounds = []
            if start_ck is not None:
                bounds.append(f"ck {'>=' if start_op == 5 else '>'} {start_ck}")
            if row.ck is not None:
                bounds.append(f"ck {'<=' if op == 7 else '<'} {row.ck}")
            yield f"DELETE FROM {table} {using} WHERE pk = {row.pk}" + "".join(f" AND {b}" for b in bounds)
            pending_start = None
        elif op in (1, 2):
            yield from _cells(row, table, using, insert=op == 2)


def _cells(row: Any, table: str, using: str, insert: bool) -> Iterator[str]:
    where = _where(row.pk, row.ck)
    if insert:
        yield f"INSERT INTO {table} (pk, ck) VALUES ({row.pk}, {row.ck}) {using}"
    sets = []
    for name in ("v", "t", "st"):
        value = getattr(row, name)
        if value is not None:
            sets.append(f"{name} = {_literal(value)}")
        elif getattr(row, f"cdc_deleted_{name}"):
            sets.append(f"{name} = null")
    for name, empty in (("s", set()), ("m", {})):
        value = getattr(row, name)
        if getattr(row, f"cdc_deleted_{name}"):  # an overwrite (or a delete): the whole collection
            sets.append(f"{name} = {_literal(value if value is not None else empty)}")
        elif value is not None:
            sets.append(f"{name} = {name} + {_literal(value)}")
        removed = getattr(row, f"cdc_deleted_elements_{name}")
        if removed:
            sets.append(f"{name} = {name} - {_literal(set(removed))}")
    sets += _udt_sets(row)
    target = _where(row.pk) if row.ck is None else where
    if sets:
        yield f"UPDATE {table} {using} SET {', '.join(sets)} WHERE {target}"
    yield from _list_cells(row, table, using, target)


def _udt_sets(row: Any) -> list[str]:
    """A UDT's changes: an overwrite (or delete) as the whole value, else each added field, and
    each deleted field by the name its index stands for."""
    added = {} if row.u is None else {f: getattr(row.u, f) for f in UDT_FIELDS}
    if row.cdc_deleted_u:
        return [f"u = {_udt(added)}"]
    sets = [f"u.{f} = {_literal(v)}" for f, v in added.items() if v is not None]
    sets += [f"u.{UDT_FIELDS[i]} = null" for i in sorted(row.cdc_deleted_elements_u or ())]
    return sets


def _list_cells(row: Any, table: str, using: str, target: str) -> Iterator[str]:
    """A list's changes by element key: the whole-list delete (the tombstone just below the
    write time, as an overwrite writes it), then each added or removed element at its key."""
    if row.cdc_deleted_l:
        yield f"UPDATE {table} {using} SET l = [] WHERE {target}"
    elements = [f"l[SCYLLA_TIMEUUID_LIST_INDEX({k})] = {v}" for k, v in (row.l or {}).items()]
    elements += [f"l[SCYLLA_TIMEUUID_LIST_INDEX({k})] = null" for k in row.cdc_deleted_elements_l or ()]
    if elements:
        yield f"UPDATE {table} {using} SET {', '.join(elements)} WHERE {target}"


_TABLES: dict[int, tuple[str, str]] = {}
_offsets = itertools.count(0, 10)


def _tables(session: Any) -> tuple[str, str]:
    """One base and twin table per node (created once): each example writes its own partitions."""
    key = id(session.cluster)
    if key not in _TABLES:
        session.execute(f"CREATE KEYSPACE IF NOT EXISTS cdcr WITH replication = {NTS_1}")
        session.execute("CREATE TYPE IF NOT EXISTS cdcr.ut (a int, b int)")
        n = next(_names)
        base, twin = f"cdcr.base{n}", f"cdcr.twin{n}"
        session.execute(f"CREATE TABLE {base} ({COLUMNS}) WITH cdc = {{'enabled': true}}")
        session.execute(f"CREATE TABLE {twin} ({COLUMNS})")
        _TABLES[key] = (base, twin)
    return _TABLES[key]


LogReader = Callable[[str, int], list[Any]]
"""The log rows of a base table written since a µs time, as the driver shows rows."""


def _cql_log(session: Any) -> LogReader:
    return lambda base, since: list(session.execute(f"SELECT * FROM {base}_scylla_cdc_log"))


def _exported_log(session: Any, spark: Any, node: Any) -> LogReader:
    """The log as ``cdc export`` writes it: one pass from ``since`` to a watermark past every
    write, through Spark into Parquet, read back and shaped as the driver's rows."""
    from tabletdb.spark.cdc_export import ExportOptions, run_pass
    from tabletdb.spark.cdc_plan import SAFETY_US
    from tabletdb.spark.connection import ConnectOptions

    def read(base: str, since: int) -> list[Any]:
        keyspace, _, table = base.partition(".")
        out = Path(tempfile.mkdtemp(prefix="cdc-replay-"))
        try:
            connect = ConnectOptions((node.host,), node.port)
            opts = ExportOptions(connect, keyspace, table, out, since, tasks=2)
            done = run_pass(spark, opts, now=time.time_ns() // 1000 + SAFETY_US + 1_000_000)
            assert done is not None
            return parquet_log_rows(done.path)
        finally:
            shutil.rmtree(out)

    return read


def parquet_log_rows(path: Path) -> list[Any]:
    """Exported log rows as the driver shows log rows (``cdc$x`` as ``cdc_x``, sets, maps and
    UDT values as the driver's types), from the Spark form Parquet holds (timeuuids as text,
    maps as key/value pairs, UDTs as structs)."""
    import pyarrow.parquet as pq

    rows = []
    for raw in pq.read_table(str(path)).to_pylist():
        row = {name.replace("$", "_"): value for name, value in raw.items()}
        row["cdc_time"] = uuid.UUID(row["cdc_time"])
        if "l" in row:  # the replay table's collections and UDT (other tables: atomic columns)
            for name in ("s", "cdc_deleted_elements_s", "cdc_deleted_elements_m", "cdc_deleted_elements_u"):
                row[name] = None if row[name] is None else set(row[name])
            row["m"] = None if row["m"] is None else dict(row["m"])
            row["l"] = None if row["l"] is None else {uuid.UUID(k): v for k, v in row["l"]}
            removed = row["cdc_deleted_elements_l"]
            row["cdc_deleted_elements_l"] = None if removed is None else {uuid.UUID(k) for k in removed}
            row["u"] = None if row["u"] is None else SimpleNamespace(**row["u"])
        rows.append(SimpleNamespace(**row))
    return rows


def _check_replay(session: Any, ops: list[str], read_log: LogReader) -> None:
    base, twin = _tables(session)
    offset = next(_offsets)
    keys = ", ".join(str(offset + n) for n in range(3))
    since = time.time_ns() // 1000 - 1_000_000
    for op in ops:
        session.execute(
            re.sub(r"PK\((\d)\)", lambda m: str(offset + int(m.group(1))), op.replace("{T}", base))
        )
    log = sorted(
        read_log(base, since), key=lambda r: (_micros(r.cdc_time), r.cdc_time.bytes, r.cdc_batch_seq_no)
    )
    replay = list(_replayed([r for r in log if offset <= r.pk < offset + 3], twin))
    for statement in replay:
        session.execute(statement)
    note("\n".join(replay))
    columns = "pk, ck, v, t, s, m, l, st, u"
    rows = [
        sorted(tuple(r) for r in session.execute(f"SELECT {columns} FROM {t} WHERE pk IN ({keys})"))
        for t in (twin, base)
    ]
    assert rows[0] == rows[1]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(writes, min_size=1, max_size=12))
def test_replaying_the_log_rebuilds_the_table(session: Any, ops: list[str]) -> None:
    _check_replay(session, ops, _cql_log(session))


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(writes, min_size=1, max_size=30))
def test_replaying_the_log_rebuilds_the_table_many(session: Any, ops: list[str]) -> None:
    _check_replay(session, ops, _cql_log(session))


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(writes, min_size=1, max_size=12))
def test_replaying_the_exported_parquet_rebuilds_the_table(
    session: Any, spark: Any, node: Any, ops: list[str]
) -> None:
    """The same property over what ``cdc export`` writes: Parquet read back, not CQL."""
    _check_replay(session, ops, _exported_log(session, spark, node))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(writes, min_size=1, max_size=30))
def test_replaying_the_exported_parquet_rebuilds_the_table_many(
    session: Any, spark: Any, node: Any, ops: list[str]
) -> None:
    _check_replay(session, ops, _exported_log(session, spark, node))
