"""The direct point read (``query.point_select``) answers exactly what the general SELECT path answers:
random writes with TTLs, row and column deletions and nulls, read at random times, compared row
for row (bytes) on single and composite partition keys and on outputs it encodes itself or
hands to the general encoder."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabletdb.coordinator.consistency import ANY, ONE, QUORUM
from tabletdb.coordinator.reads import ConsistentReads
from tabletdb.cql import ast, codec
from tabletdb.cql.parser import parse_statement
from tabletdb.cql.results import RowsResult
from tabletdb.cql.types import INT, TEXT
from tabletdb.query.point_select import point_plan, point_select
from tabletdb.query.select import execute_select
from tabletdb.statements.bound_select import BoundSelect
from tests.unit.query.data_harness import DataNode

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}"
_tables = itertools.count()

KEYS = [(k, j) for k in range(3) for j in ("a", "b")]
_value = st.one_of(st.none(), st.integers(-5, 5))
_text = st.one_of(st.none(), st.text(alphabet="xyz", max_size=3))
_ttl = st.one_of(st.none(), st.integers(1, 3))
_op = st.one_of(
    st.tuples(st.just("insert"), st.sampled_from(KEYS), _text, _value, _value, _ttl, st.integers(1, 20)),
    st.tuples(st.just("update"), st.sampled_from(KEYS), _text, _value, _ttl, st.integers(1, 20)),
    st.tuples(st.just("delete_row"), st.sampled_from(KEYS), st.integers(1, 20)),
    st.tuples(
        st.just("delete_col"), st.sampled_from(KEYS), st.sampled_from(["v", "n", "s"]), st.integers(1, 20)
    ),
    st.tuples(st.just("tick"), st.integers(0, 2)),
    st.tuples(
        st.just("check"),
    ),
)


def _lit(value: Any) -> str:
    if value is None:
        return "null"
    return f"'{value}'" if isinstance(value, str) else str(value)


def _cql(op: tuple[Any, ...], table: str, composite: bool) -> str | None:
    kind = op[0]
    if kind in ("tick", "check"):
        return None
    (k, j), ts = op[1], op[-1]
    where = f"k = {k} AND j = '{j}'" if composite else f"k = {k * 2 + (j == 'b')}"
    keys = ("k, j", f"{k}, '{j}'") if composite else ("k", str(k * 2 + (j == "b")))
    if kind == "insert":
        _, _, v, n, s, ttl, _ = op
        using = f"USING TIMESTAMP {ts}" + (f" AND TTL {ttl}" if ttl else "")
        sset = "null" if s is None else "{" + str(s) + "}"
        return (
            f"INSERT INTO ks.{table} ({keys[0]}, v, n, d, s) "
            f"VALUES ({keys[1]}, {_lit(v)}, {_lit(n)}, {_lit(n)}, {sset}) {using}"
        )
    if kind == "update":
        _, _, v, n, ttl, _ = op
        using = f"USING TIMESTAMP {ts}" + (f" AND TTL {ttl}" if ttl else "")
        return f"UPDATE ks.{table} {using} SET v = {_lit(v)}, d = {_lit(n)} WHERE {where}"
    if kind == "delete_row":
        return f"DELETE FROM ks.{table} USING TIMESTAMP {ts} WHERE {where}"
    return f"DELETE {op[2]} FROM ks.{table} USING TIMESTAMP {ts} WHERE {where}"


SELECTS = [
    "SELECT * FROM ks.{t} WHERE {w}",  # decoded outputs (double, set): the general encoder
    "SELECT {kc}, v, n FROM ks.{t} WHERE {w}",  # encoded straight from key bytes and cells
    "SELECT v, writetime(v), ttl(n), d FROM ks.{t} WHERE {w}",
]


async def _compare(node: DataNode, table: str, composite: bool) -> None:
    reads = node.reads
    tdef = node.metadata.catalog.table("ks", table)
    assert tdef is not None
    where = "j = ? AND k = ?" if composite else "k = ?"
    kc = "j, k" if composite else "k"
    now = int(node.clock())
    for text in SELECTS:
        stmt = parse_statement(text.format(t=table, w=where, kc=kc))
        assert isinstance(stmt, ast.SelectStatement)
        assert point_plan(stmt, tdef) is not None
        for k, j in KEYS:
            values = (
                [codec.serialize(TEXT, j), codec.serialize(INT, k)]
                if composite
                else [codec.serialize(INT, k * 2 + (j == "b"))]
            )
            direct = point_select(BoundSelect(stmt, tdef, values), reads, ONE, now)
            general = await execute_select(
                BoundSelect(stmt, tdef, values, 100, None), ConsistentReads(reads, ONE), now
            )
            assert isinstance(direct, RowsResult)
            assert direct.rows == general.rows, (text, k, j)
            assert direct.metadata.columns == general.metadata.columns
            assert direct.metadata.paging_state is None and general.metadata.paging_state is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_op, min_size=1, max_size=25), composite=st.booleans(), frozen=st.booleans())
def test_direct_point_read_equals_the_general_path(
    ops: list[tuple[Any, ...]], composite: bool, frozen: bool
) -> None:
    """``frozen``: the set is one cell, so INSERTs write no collection tombstone and partitions
    stay simple (``read_row_cells``); a non-frozen set's INSERT makes them take the general read."""

    async def go(node: DataNode) -> None:
        await node.run(KS)
        table = f"t{next(_tables)}"
        pk = "(k, j)" if composite else "k"
        j_col = "j text, " if composite else ""
        await node.run(
            f"CREATE TABLE ks.{table} (k int, {j_col}v text, n int, d double, "
            f"s {'frozen<set<int>>' if frozen else 'set<int>'}, PRIMARY KEY ({pk}))"
        )
        for op in ops:
            cql = _cql(op, table, composite)
            if cql is not None:
                await node.run(cql)
            elif op[0] == "tick":
                node.clock.now += op[1]
            else:
                await _compare(node, table, composite)
        await _compare(node, table, composite)

    with tempfile.TemporaryDirectory(prefix="select-point-") as tmp:
        node = DataNode(Path(tmp))
        try:
            node.drive(go(node))
        finally:
            node.close()


def test_what_the_direct_read_leaves_to_the_general_path(tmp_path: Path) -> None:
    async def go(node: DataNode) -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.kv (k int PRIMARY KEY, v text)")
        await node.run("CREATE TABLE ks.wide (k int, c int, v text, PRIMARY KEY (k, c))")
        await node.run("INSERT INTO ks.kv (k, v) VALUES (1, 'one')")
        catalog = node.metadata.catalog
        kv, wide = catalog.table("ks", "kv"), catalog.table("ks", "wide")
        assert kv is not None and wide is not None
        for text, table in (
            ("SELECT * FROM ks.kv WHERE k = ? LIMIT 1", kv),
            ("SELECT DISTINCT k FROM ks.kv WHERE k = ?", kv),
            ("SELECT JSON * FROM ks.kv WHERE k = ?", kv),
            ("SELECT count(*) FROM ks.kv WHERE k = ?", kv),
            ("SELECT * FROM ks.kv WHERE k IN (?)", kv),
            ("SELECT * FROM ks.kv WHERE token(k) = ?", kv),
            ("SELECT * FROM ks.wide WHERE k = ?", wide),
        ):
            stmt = parse_statement(text)
            assert isinstance(stmt, ast.SelectStatement)
            assert point_plan(stmt, table) is None, text
        stmt = parse_statement("SELECT v FROM ks.kv WHERE k = ?")
        assert isinstance(stmt, ast.SelectStatement)
        one = BoundSelect(stmt, kv, [codec.serialize(INT, 1)])
        assert point_select(one, node.reads, ANY, 0) is None  # the general path refuses ANY
        for cl in (ONE, QUORUM):  # one node: its store alone answers every level
            result = point_select(one, node.reads, cl, 0)
            assert result is not None and result.rows == [[b"one"]]
        # through the processor (the prepared EXECUTE path)
        assert await node.rows("SELECT v FROM ks.kv WHERE k = 1") == [("one",)]

    node = DataNode(tmp_path)
    try:
        node.drive(go(node))
    finally:
        node.close()
