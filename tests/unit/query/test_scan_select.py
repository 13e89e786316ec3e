"""Full scans and ``COUNT(*)`` taken the short way (``query.scan_select``) answer exactly what the
general SELECT path answers: random writes with TTLs, row, range, partition and column deletions
and nulls over partitions spread across tablets, read at random times; every page compared byte
for byte, paging states included, and pages of one path resumed by the other."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabletdb.coordinator.consistency import ONE, QUORUM
from tabletdb.coordinator.range_reads import RangeReads
from tabletdb.coordinator.reads import ConsistentReads
from tabletdb.cql import ast
from tabletdb.cql.parser import parse_statement
from tabletdb.cql.results import RowsResult
from tabletdb.query.scan_select import scan_select
from tabletdb.query.select import execute_select
from tabletdb.statements.bound_select import BoundSelect
from tests.unit.query.data_harness import DataNode

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}"
_tables = itertools.count()

KEYS = list(range(12))
_text = st.one_of(st.none(), st.text(alphabet="xyz", max_size=3))
_int = st.one_of(st.none(), st.integers(-5, 5))
_ttl = st.one_of(st.none(), st.integers(1, 3))
_ts = st.integers(1, 20)
_op = st.one_of(
    st.tuples(st.just("insert"), st.sampled_from(KEYS), st.integers(0, 3), _text, _int, _ttl, _ts),
    st.tuples(st.just("update"), st.sampled_from(KEYS), st.integers(0, 3), _text, _ttl, _ts),
    st.tuples(st.just("delete_row"), st.sampled_from(KEYS), st.integers(0, 3), _ts),
    st.tuples(st.just("delete_range"), st.sampled_from(KEYS), st.integers(0, 3), _ts),
    st.tuples(st.just("delete_partition"), st.sampled_from(KEYS), _ts),
    st.tuples(st.just("delete_col"), st.sampled_from(KEYS), st.integers(0, 3), _ts),
    st.tuples(st.just("set_map"), st.sampled_from(KEYS), st.integers(0, 3), _ts),  # collection tombstones
    st.tuples(st.just("tick"), st.integers(0, 2)),
)
_words = st.lists(st.text(alphabet="xyz", max_size=2), max_size=3)
_few_keys = st.sampled_from(KEYS[:3])
_few_cks = st.integers(0, 1)
_collection_op = st.one_of(
    _op,
    st.tuples(st.just("insert_all"), _few_keys, _few_cks, _words, _words, _int, _ttl, _ts),
    st.tuples(st.just("set_list"), _few_keys, _few_cks, _words, _ttl, _ts),
    st.tuples(st.just("append"), _few_keys, _few_cks, _words, _ttl, _ts),
    st.tuples(st.just("remove"), _few_keys, _few_cks, _words, _ts),
    st.tuples(st.just("add_set"), _few_keys, _few_cks, _words, _ttl, _ts),
    st.tuples(st.just("del_set"), _few_keys, _few_cks, _words, _ts),
    st.tuples(st.just("field"), _few_keys, _few_cks, _int, _ts),
    st.tuples(st.just("delete_colls"), _few_keys, _few_cks, _ts),
)
"""Writes of the collection table: whole values (a collection tombstone each), appends,
removals, set elements, a user type's field, deleted columns; with TTLs. On few rows, so that
whole values overwrite earlier ones (whose elements the tombstone then shadows)."""


def _lit(value: Any) -> str:
    if value is None:
        return "null"
    return f"'{value}'" if isinstance(value, str) else str(value)


def _cql(op: tuple[Any, ...], t: str) -> str | None:
    kind = op[0]
    if kind == "insert":
        _, k, c, v, n, ttl, ts = op
        using = f"USING TIMESTAMP {ts}" + (f" AND TTL {ttl}" if ttl else "")
        return (
            f"INSERT INTO ks.{t} (k, c, v, n, d) VALUES ({k}, {c}, {_lit(v)}, {_lit(n)}, {_lit(n)}) {using}"
        )
    if kind == "update":
        _, k, c, v, ttl, ts = op
        using = f"USING TIMESTAMP {ts}" + (f" AND TTL {ttl}" if ttl else "")
        return f"UPDATE ks.{t} {using} SET v = {_lit(v)} WHERE k = {k} AND c = {c}"
    if kind == "delete_row":
        return f"DELETE FROM ks.{t} USING TIMESTAMP {op[3]} WHERE k = {op[1]} AND c = {op[2]}"
    if kind == "delete_range":
        return f"DELETE FROM ks.{t} USING TIMESTAMP {op[3]} WHERE k = {op[1]} AND c > {op[2]}"
    if kind == "delete_partition":
        return f"DELETE FROM ks.{t} USING TIMESTAMP {op[2]} WHERE k = {op[1]}"
    if kind == "set_map":
        return f"UPDATE ks.{t} USING TIMESTAMP {op[3]} SET m = {{1: 2}} WHERE k = {op[1]} AND c = {op[2]}"
    if kind in _COLLECTION_WRITES:
        return _collection_cql(op, t)
    if kind == "delete_col":
        return f"DELETE n FROM ks.{t} USING TIMESTAMP {op[3]} WHERE k = {op[1]} AND c = {op[2]}"
    return None


def _list(words: list[str]) -> str:
    return "[" + ", ".join(_lit(w) for w in words) + "]"


def _set(words: list[str]) -> str:
    return "{" + ", ".join(_lit(w) for w in words) + "}"


def _using(ts: int, ttl: int | None) -> str:
    return f"USING TIMESTAMP {ts}" + (f" AND TTL {ttl}" if ttl else "")


def _collection_cql(op: tuple[Any, ...], t: str) -> str:
    kind, k, c = op[0], op[1], op[2]
    where = f"WHERE k = {k} AND c = {c}"
    if kind == "insert_all":
        _, _, _, words, more, n, ttl, ts = op
        values = f"{k}, {c}, {_list(words)}, {_set(more)}, {{1: {_lit(n)}}}, {{a: {_lit(n)}, b: 'x'}}"
        if n is None:
            values = f"{k}, {c}, {_list(words)}, {_set(more)}, {{}}, null"
        return f"INSERT INTO ks.{t} (k, c, l, s, m, u) VALUES ({values}) {_using(ts, ttl)}"
    if kind == "set_list":
        return f"UPDATE ks.{t} {_using(op[5], op[4])} SET l = {_list(op[3])} {where}"
    if kind == "append":
        return f"UPDATE ks.{t} {_using(op[5], op[4])} SET l = l + {_list(op[3])} {where}"
    if kind == "remove":
        return f"UPDATE ks.{t} USING TIMESTAMP {op[4]} SET l = l - {_list(op[3])} {where}"
    if kind == "add_set":
        return f"UPDATE ks.{t} {_using(op[5], op[4])} SET s = s + {_set(op[3])} {where}"
    if kind == "del_set":
        return f"UPDATE ks.{t} USING TIMESTAMP {op[4]} SET s = s - {_set(op[3])} {where}"
    if kind == "field":
        return f"UPDATE ks.{t} USING TIMESTAMP {op[4]} SET u.a = {_lit(op[3])} {where}"
    assert kind == "delete_colls"
    return f"DELETE l, u FROM ks.{t} USING TIMESTAMP {op[3]} {where}"


_COLLECTION_WRITES = (
    "insert_all",
    "set_list",
    "append",
    "remove",
    "add_set",
    "del_set",
    "field",
    "delete_colls",
)

SCANS = [
    "SELECT k, c, v, n, d FROM ks.{t}",  # a double: decoded and encoded again
    "SELECT v, k, c FROM ks.{t}",  # stored bytes and key components
    "SELECT n, n FROM ks.{t} LIMIT 5",
    "SELECT c, v FROM ks.{t} WHERE token(k) > -3000000000000000000 AND token(k) <= 5000000000000000000",
]
COUNTS = [
    "SELECT count(*) FROM ks.{t}",
    "SELECT count(1), count(*) AS c FROM ks.{t} WHERE token(k) > 0",
]


def _select(node: DataNode, text: str, page: int | None, state: bytes | None) -> BoundSelect:
    stmt = parse_statement(text)
    assert isinstance(stmt, ast.SelectStatement)
    table = node.metadata.catalog.table("ks", stmt.table.name)
    assert table is not None
    return BoundSelect(stmt, table, [], page, state)


async def _pages(node: DataNode, text: str, page: int, fast: bool, mix: bool = False) -> list[RowsResult]:
    now = int(node.clock())
    source = ConsistentReads(node.reads, ONE)
    ranges = RangeReads(node.reads.replicas)
    out: list[RowsResult] = []
    state = None
    for i in range(1000):
        bound = _select(node, text, page, state)
        use_fast = fast if not mix else i % 2 == 0
        result = await scan_select(bound, ranges, source, ONE, now) if use_fast else None
        if use_fast:
            assert result is not None, text
        else:
            result = await execute_select(bound, source, now)
        out.append(result)
        state = result.metadata.paging_state
        if state is None:
            return out
    raise AssertionError("paging did not end")


async def _compare(node: DataNode, table: str, page: int, scans: list[str] = SCANS) -> None:
    for text in scans:
        query = text.format(t=table)
        fast = await _pages(node, query, page, True)
        general = await _pages(node, query, page, False)
        assert [r.rows for r in fast] == [r.rows for r in general], query
        assert [r.metadata.paging_state for r in fast] == [r.metadata.paging_state for r in general]
        mixed = await _pages(node, query, page, False, mix=True)
        assert [r.rows for r in mixed] == [r.rows for r in general], query
    now = int(node.clock())
    for text in COUNTS:
        query = text.format(t=table)
        general = await execute_select(
            _select(node, query, page, None), ConsistentReads(node.reads, ONE), now
        )
        for cl in (ONE, QUORUM):
            source = ConsistentReads(node.reads, cl)
            fast = await scan_select(
                _select(node, query, page, None), RangeReads(node.reads.replicas), source, cl, now
            )
            assert fast is not None and fast.rows == general.rows, query
            assert fast.metadata.paging_state is None


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_op, min_size=1, max_size=30), page=st.integers(1, 7))
def test_short_way_equals_the_general_path(ops: list[tuple[Any, ...]], page: int) -> None:
    async def go(node: DataNode) -> None:
        await node.run(KS)
        table = f"t{next(_tables)}"
        await node.run(
            f"CREATE TABLE ks.{table} (k int, c int, v text, n int, d double, m map<int, int>,"
            " PRIMARY KEY (k, c)) WITH tablets = {'min_tablet_count': 4}"
        )
        for op in ops:
            cql = _cql(op, table)
            if cql is not None:
                await node.run(cql)
            else:
                node.clock.now += op[1]
        await _compare(node, table, page)

    with tempfile.TemporaryDirectory(prefix="scan-select-") as tmp:
        node = DataNode(Path(tmp))
        try:
            node.drive(go(node))
        finally:
            node.close()


COLLECTION_SCANS = [
    "SELECT * FROM ks.{t}",
    "SELECT l, k, s, m, c, u, v FROM ks.{t} LIMIT 7",
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_collection_op, min_size=1, max_size=30), page=st.integers(1, 7))
def test_short_way_equals_the_general_path_for_collections(ops: list[tuple[Any, ...]], page: int) -> None:
    """Non-frozen lists, sets, maps and a user type, whose partitions the replica decides in SQL
    (only collection tombstones) or reads with ``PartitionReader`` (range and partition
    deletions), come back as the general path returns them."""

    async def go(node: DataNode) -> None:
        await node.run(KS)
        await node.run("CREATE TYPE IF NOT EXISTS ks.ut (a int, b text)")
        table = f"t{next(_tables)}"
        await node.run(
            f"CREATE TABLE ks.{table} (k int, c int, v text, n int, d double, m map<int, int>,"
            " l list<text>, s set<text>, u ut, PRIMARY KEY (k, c)) WITH tablets = {'min_tablet_count': 4}"
        )
        for op in ops:
            cql = _cql(op, table)
            if cql is not None:
                await node.run(cql)
            else:
                node.clock.now += op[1]
        await _compare(node, table, page, COLLECTION_SCANS)

    with tempfile.TemporaryDirectory(prefix="scan-select-") as tmp:
        node = DataNode(Path(tmp))
        try:
            node.drive(go(node))
        finally:
            node.close()


def test_what_the_short_way_leaves_to_the_general_path(tmp_path: Path) -> None:
    async def go(node: DataNode) -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.wide (k int, c int, v text, m set<int>, PRIMARY KEY (k, c))")
        await node.run("CREATE TABLE ks.st (k int, c int, s int STATIC, PRIMARY KEY (k, c))")
        await node.run("INSERT INTO ks.wide (k, c, v, m) VALUES (1, 2, 'x', {3})")
        await node.run("INSERT INTO ks.st (k, s) VALUES (1, 5)")  # a partition with only a static row
        source = ConsistentReads(node.reads, ONE)
        ranges = RangeReads(node.reads.replicas)
        for text in (
            "SELECT writetime(v) FROM ks.wide",
            "SELECT JSON k FROM ks.wide",
            "SELECT DISTINCT k FROM ks.wide",
            "SELECT k FROM ks.wide PER PARTITION LIMIT 1",
            "SELECT k FROM ks.wide WHERE k = 1",
            "SELECT k FROM ks.wide WHERE c = 2 ALLOW FILTERING",
            "SELECT count(v) FROM ks.wide",
            "SELECT max(c) FROM ks.wide",
            "SELECT count(*) FROM ks.wide WHERE k IN (1, 2)",
            "SELECT count(*) FROM ks.wide GROUP BY k",
            "SELECT * FROM ks.st",  # static columns
        ):
            assert await scan_select(_select(node, text, 10, None), ranges, source, ONE, 0) is None, text
        # a count over static data is still pushed down, and counts the static-only partition
        count = await scan_select(
            _select(node, "SELECT count(*) FROM ks.st", 10, None), ranges, source, ONE, 0
        )
        assert count is not None and count.rows == [[(1).to_bytes(8, "big")]]
        assert await node.rows("SELECT count(*) FROM ks.wide") == [(1,)]
        assert await node.rows("SELECT * FROM ks.wide", page_size=1) == [(1, 2, frozenset({3}), "x")] or (
            await node.rows("SELECT k, c, v FROM ks.wide", page_size=1) == [(1, 2, "x")]
        )

    node = DataNode(tmp_path)
    try:
        node.drive(go(node))
    finally:
        node.close()
