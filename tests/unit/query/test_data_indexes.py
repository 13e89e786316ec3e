"""Global secondary indexes: entries tables kept in step with base writes, used by SELECT.

The main check is differential: after random writes (updates, deletes of cells, rows and
partitions, TTLs with a moving clock, collection changes), every indexed query must return
exactly what the same restriction applied to a full scan returns, in the same order, whether
read in one page or many.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tabletdb.cql import ast, codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.parser import parse_statement
from tabletdb.cql.types import INT
from tabletdb.cql.values import UNSET
from tabletdb.statements.bound_select import BoundSelect
from tabletdb.statements.keys import partition_key
from tabletdb.views.index_reads import choose_index
from tabletdb.views.index_writes import entries_tables
from tests.unit.query.data_harness import DataNode

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


def entries_of(node: DataNode, table: str, index: str, value: Any) -> int:
    """How many entries the index holds for ``value`` (read from its own table's store)."""
    base = node.metadata.catalog.table("ks", table)
    assert base is not None
    found = [e for i, e in entries_tables(base) if i.name == index]
    assert found, f"index {index} has no entries table"
    entries = found[0]
    key, token = partition_key(entries, [codec.serialize(entries.partition_key[0].type, value)])
    data = node.storage.store(entries, token).read_partition(key, int(node.clock()))
    return 0 if data is None else len(data.rows)


async def _random_writes(node: DataNode, rng: random.Random, count: int) -> None:
    for _ in range(count):
        p1, p2, c = rng.randrange(4), rng.randrange(2), rng.randrange(4)
        key = f"p1 = {p1} AND p2 = {p2}"
        op = rng.randrange(9)
        v = rng.randrange(4)
        if op == 0:
            await node.run(f"DELETE FROM ks.t WHERE {key}")
        elif op == 1:
            await node.run(f"DELETE FROM ks.t WHERE {key} AND c = {c}")
        elif op == 2:
            await node.run(f"DELETE v FROM ks.t WHERE {key} AND c = {c}")
        elif op == 3:
            await node.run(
                f"UPDATE ks.t USING TTL {rng.randrange(1, 20)} SET v = {v} WHERE {key} AND c = {c}"
            )
        elif op == 4:
            await node.run(f"UPDATE ks.t SET s = s + {{{v}}}, m['k{v}'] = {c} WHERE {key} AND c = {c}")
        elif op == 5:
            await node.run(f"UPDATE ks.t SET s = s - {{{v}}}, m = m - {{'k{c}'}} WHERE {key} AND c = {c}")
        elif op == 6:
            node.clock.now += rng.randrange(1, 8)
        else:
            ts = rng.randrange(1, 10**6) if op == 7 else None
            using = f" USING TIMESTAMP {ts}" if ts is not None else ""
            values = f"{p1}, {p2}, {c}, {v}, {{{v}}}, {{'k{v}': {v}}}"
            await node.run(f"INSERT INTO ks.t (p1, p2, c, v, s, m) VALUES ({values}){using}")


def _uses_index(node: DataNode, query: str) -> bool:
    stmt = parse_statement(query)
    assert isinstance(stmt, ast.SelectStatement)
    table = node.metadata.catalog.table("ks", "t")
    assert table is not None
    return choose_index(BoundSelect(stmt, table, [])) is not None


def _expected(rows: list[tuple[Any, ...]], keep: Callable[[tuple[Any, ...]], bool]) -> list[tuple[Any, ...]]:
    return [r for r in rows if keep(r)]


def test_indexed_queries_match_filtered_scans(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run(
            "CREATE TABLE ks.t (p1 int, p2 int, c int, v int, s set<int>, m map<text, int>, "
            "PRIMARY KEY ((p1, p2), c))"
        )
        for statement in (
            "CREATE INDEX v_idx ON ks.t (v)",
            "CREATE INDEX s_idx ON ks.t (s)",
            "CREATE INDEX mk_idx ON ks.t (keys(m))",
            "CREATE INDEX mv_idx ON ks.t (values(m))",
            "CREATE INDEX me_idx ON ks.t (entries(m))",
            "CREATE INDEX c_idx ON ks.t (c)",
            "CREATE INDEX p1_idx ON ks.t (p1)",
        ):
            await node.run(statement)
        rng = random.Random(3)
        cols = "p1, p2, c, v, s, m"
        for _ in range(5):
            await _random_writes(node, rng, 60)
            scan = await node.rows(f"SELECT {cols} FROM ks.t")
            for x in range(4):
                checks: list[tuple[str, Callable[[tuple[Any, ...]], bool]]] = [
                    (f"v = {x}", lambda r, x=x: r[3] == x),
                    (f"s CONTAINS {x}", lambda r, x=x: x in (r[4] or ())),
                    (f"m CONTAINS KEY 'k{x}'", lambda r, x=x: f"k{x}" in dict(r[5] or ())),
                    (f"m CONTAINS {x}", lambda r, x=x: x in dict(r[5] or ()).values()),
                    (f"m['k{x}'] = {x}", lambda r, x=x: dict(r[5] or ()).get(f"k{x}") == x),
                    (f"c = {x}", lambda r, x=x: r[2] == x),
                    (f"p1 = {x}", lambda r, x=x: r[0] == x),
                ]
                for where, keep in checks:
                    query = f"SELECT {cols} FROM ks.t WHERE {where}"
                    assert _uses_index(node, query), query
                    want = _expected(scan, keep)
                    assert await node.rows(query) == want, query
                    assert await node.rows(query, page_size=2) == want, query

    node.drive(go())


def test_stale_entries_are_deleted_and_ttl_entries_expire(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int, c int, v int, PRIMARY KEY (p, c))")
        await node.run("CREATE INDEX v_idx ON ks.t (v)")
        await node.run("INSERT INTO ks.t (p, c, v) VALUES (1, 1, 10)")
        await node.run("INSERT INTO ks.t (p, c, v) VALUES (1, 2, 10)")
        assert entries_of(node, "t", "v_idx", 10) == 2
        await node.run("UPDATE ks.t SET v = 11 WHERE p = 1 AND c = 1")
        assert entries_of(node, "t", "v_idx", 10) == 1
        assert entries_of(node, "t", "v_idx", 11) == 1
        await node.run("DELETE FROM ks.t WHERE p = 1")
        assert entries_of(node, "t", "v_idx", 10) == 0
        assert entries_of(node, "t", "v_idx", 11) == 0
        await node.run("INSERT INTO ks.t (p, c, v) VALUES (2, 1, 12) USING TTL 5")
        assert await node.rows("SELECT p, c FROM ks.t WHERE v = 12") == [(2, 1)]
        node.clock.now += 6
        assert entries_of(node, "t", "v_idx", 12) == 0
        assert await node.rows("SELECT p, c FROM ks.t WHERE v = 12") == []

    node.drive(go())


def test_create_index_builds_existing_data_and_drop_removes_it(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int, c int, v text, PRIMARY KEY (p, c))")
        for p in range(5):
            for c in range(3):
                await node.run(f"INSERT INTO ks.t (p, c, v) VALUES ({p}, {c}, 'v{(p * c) % 3}')")
        await node.run("CREATE INDEX ON ks.t (v)")
        want = [r for r in await node.rows("SELECT p, c, v FROM ks.t") if r[2] == "v0"]
        assert entries_of(node, "t", "t_v_idx", "v0") == len(want) == 9
        assert await node.rows("SELECT p, c, v FROM ks.t WHERE v = 'v0'") == want
        base = node.metadata.catalog.table("ks", "t")
        assert base is not None
        directory = node.storage.data_dir / "ks"
        assert [d for d in directory.iterdir() if d.name.startswith("t_v_idx_index-")]
        await node.run("DROP INDEX ks.t_v_idx")
        assert not [d for d in directory.iterdir() if d.name.startswith("t_v_idx_index-")]
        with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
            await node.run("SELECT p FROM ks.t WHERE v = 'v0'")
        assert await node.rows("SELECT p, c, v FROM ks.t WHERE v = 'v0' ALLOW FILTERING") == want

    node.drive(go())


def test_paging_through_index_resumes_after_concurrent_writes(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int PRIMARY KEY, v int)")
        await node.run("CREATE INDEX ON ks.t (v)")
        for p in range(30):
            await node.run(f"INSERT INTO ks.t (p, v) VALUES ({p}, {p % 2})")
        first = await node.run("SELECT p FROM ks.t WHERE v = 0", page_size=5)
        seen = [codec.deserialize(INT, row[0]) for row in first.rows]
        state = first.metadata.paging_state
        for p in seen:  # rows already returned move away; later ones must still come once each
            await node.run(f"UPDATE ks.t SET v = 1 WHERE p = {p}")
        while state is not None:
            page = await node.run("SELECT p FROM ks.t WHERE v = 0", page_size=5, paging_state=state)
            seen += [codec.deserialize(INT, row[0]) for row in page.rows]
            state = page.metadata.paging_state
        assert sorted(seen) == list(range(0, 30, 2))
        assert len(seen) == len(set(seen))

    node.drive(go())


def test_truncate_empties_index_and_views(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int PRIMARY KEY, v int)")
        await node.run("CREATE INDEX v_idx ON ks.t (v)")
        await node.run(
            "CREATE MATERIALIZED VIEW ks.by_v AS SELECT * FROM ks.t WHERE v IS NOT NULL AND p IS NOT NULL "
            "PRIMARY KEY (v, p)"
        )
        for p in range(5):
            await node.run(f"INSERT INTO ks.t (p, v) VALUES ({p}, 1)")
        assert entries_of(node, "t", "v_idx", 1) == 5
        await node.run("TRUNCATE ks.t")
        assert entries_of(node, "t", "v_idx", 1) == 0
        assert await node.rows("SELECT * FROM ks.by_v") == []
        assert await node.rows("SELECT * FROM ks.t WHERE v = 1") == []

    node.drive(go())


def test_which_restrictions_an_index_spares_allow_filtering(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int, c int, v int, w int, PRIMARY KEY (p, c))")
        await node.run("CREATE INDEX ON ks.t (v)")
        await node.run("CREATE INDEX ON ks.t (w)")
        for c in range(4):
            await node.run(f"INSERT INTO ks.t (p, c, v, w) VALUES (1, {c}, {c % 2}, {c})")
        answered = {
            "v = 1": [(1, 1), (1, 3)],
            "v = 1 AND c = 3": [(1, 3)],
            "v = 1 AND c > 1": [(1, 3)],
            "v = 1 AND p = 1": [(1, 1), (1, 3)],
        }
        for where, want in answered.items():
            assert await node.rows(f"SELECT p, c FROM ks.t WHERE {where}") == want, where
        for where in ("v > 0", "v IN (0, 1)", "v = 1 AND w = 3"):  # the index cannot answer it all
            with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
                await node.run(f"SELECT p, c FROM ks.t WHERE {where}")
        assert await node.rows("SELECT p, c FROM ks.t WHERE v = 1 AND w = 3 ALLOW FILTERING") == [(1, 3)]

    node.drive(go())


def test_null_and_unset_index_values_are_refused(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int PRIMARY KEY, v int)")
        await node.run("CREATE INDEX ON ks.t (v)")
        await node.run("INSERT INTO ks.t (p) VALUES (1)")
        with pytest.raises(InvalidRequest, match="Unsupported null value for column v"):
            await node.run("SELECT p FROM ks.t WHERE v = ?", [None])
        with pytest.raises(InvalidRequest, match="unset value for column v"):
            await node.run("SELECT p FROM ks.t WHERE v = ?", [UNSET])

    node.drive(go())


def test_popular_value_reads_in_narrowing_windows(node: DataNode, monkeypatch: pytest.MonkeyPatch) -> None:
    import tabletdb.views.index_reads as read_index

    monkeypatch.setattr(read_index, "ENTRY_BATCH", 4)  # windows narrow after a few entries

    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int, c int, v int, PRIMARY KEY (p, c))")
        await node.run("CREATE INDEX ON ks.t (v)")
        for p in range(40):
            for c in range(2):
                await node.run(f"INSERT INTO ks.t (p, c, v) VALUES ({p}, {c}, {p % 8 // 7})")
        want = [r[:2] for r in await node.rows("SELECT p, c, v FROM ks.t") if r[2] == 0]
        assert len(want) == 70
        for page in (None, 1, 7, 100):
            assert await node.rows("SELECT p, c FROM ks.t WHERE v = 0", page_size=page) == want

    node.drive(go())
