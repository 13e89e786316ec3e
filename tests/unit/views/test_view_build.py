"""CREATE MATERIALIZED VIEW over existing data fills the view (``views.build``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.query.data_harness import DataNode

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}"
VIEW = (
    "CREATE MATERIALIZED VIEW ks.by_v AS SELECT * FROM ks.t "
    "WHERE v IS NOT NULL AND k IS NOT NULL AND c IS NOT NULL AND c > 0 PRIMARY KEY (v, k, c)"
)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


def test_a_new_view_shows_existing_rows_and_then_follows_writes(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (k int, c int, v int, w text, PRIMARY KEY (k, c))")
        for k in range(4):
            for c in range(3):
                await node.run(f"INSERT INTO ks.t (k, c, v, w) VALUES ({k}, {c}, {k + c}, 'w{k}')")
        await node.run("INSERT INTO ks.t (k, c, w) VALUES (9, 1, 'no v')")
        await node.run(VIEW)
        expected = {(k + c, k, c, f"w{k}") for k in range(4) for c in range(1, 3)}
        assert set(await node.rows("SELECT v, k, c, w FROM ks.by_v")) == expected
        assert sorted(await node.rows("SELECT k, c FROM ks.by_v WHERE v = 3")) == [(1, 2), (2, 1)]
        # the built rows carry the base rows' timestamps: a later write moves them cleanly
        await node.run("UPDATE ks.t SET v = 100 WHERE k = 1 AND c = 2")
        await node.run("DELETE FROM ks.t WHERE k = 2")
        expected = {row for row in expected if row[1] != 2 and row[1:3] != (1, 2)} | {(100, 1, 2, "w1")}
        assert set(await node.rows("SELECT v, k, c, w FROM ks.by_v")) == expected

    node.drive(go())


def test_built_view_rows_keep_the_base_write_times_and_ttls(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (k int, c int, v int, w text, PRIMARY KEY (k, c))")
        await node.run(
            "INSERT INTO ks.t (k, c, v, w) VALUES (1, 1, 5, 'x') USING TIMESTAMP 1000 AND TTL 5000"
        )
        await node.run(VIEW)
        rows = await node.rows("SELECT writetime(w), ttl(w) FROM ks.by_v WHERE v = 5")
        assert len(rows) == 1 and rows[0][0] == 1000 and 0 < rows[0][1] <= 5000

    node.drive(go())
