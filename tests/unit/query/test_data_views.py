"""Materialized views follow base-table writes (insert, key change, delete) and are readable."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.query.data_harness import DataNode


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


def test_view_tracks_base(node: DataNode) -> None:
    async def go() -> None:
        await node.run("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}")
        await node.run("CREATE TABLE ks.users (id int PRIMARY KEY, email text, name text)")
        await node.run(
            "CREATE MATERIALIZED VIEW ks.by_email AS SELECT * FROM ks.users "
            "WHERE email IS NOT NULL AND id IS NOT NULL PRIMARY KEY (email, id)"
        )
        await node.run("INSERT INTO ks.users (id, email, name) VALUES (1, 'a@x', 'Ann')")
        await node.run("INSERT INTO ks.users (id, name) VALUES (2, 'Bob')")
        assert await node.rows("SELECT email, id, name FROM ks.by_email") == [("a@x", 1, "Ann")]
        await node.run("UPDATE ks.users SET email = 'b@x' WHERE id = 2")
        await node.run("UPDATE ks.users SET email = 'c@x', name = 'Anna' WHERE id = 1")
        rows = await node.rows("SELECT email, id, name FROM ks.by_email")
        assert sorted(rows) == [("b@x", 2, "Bob"), ("c@x", 1, "Anna")]
        assert await node.rows("SELECT id FROM ks.by_email WHERE email = 'c@x'") == [(1,)]
        await node.run("DELETE FROM ks.users WHERE id = 2")
        await node.run("UPDATE ks.users SET email = null WHERE id = 1")
        assert await node.rows("SELECT * FROM ks.by_email") == []

    node.drive(go())


KS = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}"


def test_view_where_restrictions_select_base_rows(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.b (p int, c int, v int, w text, PRIMARY KEY (p, c))")
        await node.run(
            "CREATE MATERIALIZED VIEW ks.ones AS SELECT * FROM ks.b "
            "WHERE p IS NOT NULL AND c IS NOT NULL AND v = 1 PRIMARY KEY (c, p)"
        )
        await node.run(
            "CREATE MATERIALIZED VIEW ks.high AS SELECT p, c, w FROM ks.b "
            "WHERE p IS NOT NULL AND c >= 2 AND c < 4 PRIMARY KEY (c, p)"
        )
        for p in range(2):
            for c in range(5):
                await node.run(f"INSERT INTO ks.b (p, c, v, w) VALUES ({p}, {c}, {c % 2}, 'w{c}')")
        assert sorted(await node.rows("SELECT c, p, v FROM ks.ones")) == [
            (c, p, 1) for c in (1, 3) for p in range(2)
        ]
        assert sorted(await node.rows("SELECT c, p, w FROM ks.high")) == [
            (c, p, f"w{c}") for c in (2, 3) for p in range(2)
        ]
        # an update that makes a row stop (and start) matching the view's WHERE removes (adds) it
        await node.run("UPDATE ks.b SET v = 0 WHERE p = 0 AND c = 1")
        await node.run("UPDATE ks.b SET v = 1 WHERE p = 0 AND c = 2")
        assert sorted(await node.rows("SELECT c, p FROM ks.ones")) == [(1, 1), (2, 0), (3, 0), (3, 1)]
        await node.run("DELETE FROM ks.b WHERE p = 1 AND c >= 3")
        assert sorted(await node.rows("SELECT c, p FROM ks.ones")) == [(1, 1), (2, 0), (3, 0)]
        assert sorted(await node.rows("SELECT c, p FROM ks.high")) == [(2, 0), (2, 1), (3, 0)]

    node.drive(go())


def test_view_rows_expire_with_base_ttls(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.b (p int PRIMARY KEY, k int, v int)")
        await node.run(
            "CREATE MATERIALIZED VIEW ks.by_k AS SELECT * FROM ks.b "
            "WHERE k IS NOT NULL AND p IS NOT NULL PRIMARY KEY (k, p)"
        )
        await node.run("INSERT INTO ks.b (p, k, v) VALUES (1, 10, 100) USING TTL 100")
        await node.run("INSERT INTO ks.b (p, k, v) VALUES (2, 20, 200)")
        await node.run("UPDATE ks.b USING TTL 10 SET k = 30 WHERE p = 2")  # the view key itself expires
        await node.run("UPDATE ks.b USING TTL 50 SET v = 201 WHERE p = 2")
        assert await node.rows("SELECT k, p, v, ttl(v) FROM ks.by_k WHERE k = 10") == [(10, 1, 100, 100)]
        node.clock.now += 11
        # base row 2 lives on without k, so it has no view row any more
        assert await node.rows("SELECT p, k, v FROM ks.b WHERE p = 2") == [(2, None, 201)]
        assert sorted(await node.rows("SELECT k, p, v FROM ks.by_k")) == [(10, 1, 100)]
        node.clock.now += 90
        assert await node.rows("SELECT * FROM ks.b WHERE p = 1") == []
        assert await node.rows("SELECT * FROM ks.by_k") == []

    node.drive(go())


def test_view_row_moves_when_its_key_changes(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.b (p int, c int, k int, v int, PRIMARY KEY (p, c))")
        await node.run(
            "CREATE MATERIALIZED VIEW ks.by_k AS SELECT * FROM ks.b "
            "WHERE k IS NOT NULL AND p IS NOT NULL AND c IS NOT NULL PRIMARY KEY (k, p, c)"
        )
        await node.run("INSERT INTO ks.b (p, c, k, v) VALUES (1, 1, 5, 50)")
        await node.run("UPDATE ks.b SET k = 6 WHERE p = 1 AND c = 1")
        assert await node.rows("SELECT k, p, c, v FROM ks.by_k") == [(6, 1, 1, 50)]
        # a write with an older timestamp loses in the base, so the view must not move back
        await node.run("UPDATE ks.b USING TIMESTAMP 1 SET k = 5 WHERE p = 1 AND c = 1")
        assert await node.rows("SELECT k, p, c, v FROM ks.by_k") == [(6, 1, 1, 50)]
        await node.run("DELETE k FROM ks.b WHERE p = 1 AND c = 1")
        assert await node.rows("SELECT * FROM ks.by_k") == []
        await node.run("UPDATE ks.b SET k = 7 WHERE p = 1 AND c = 1")
        assert await node.rows("SELECT k, p, c, v FROM ks.by_k") == [(7, 1, 1, 50)]

    node.drive(go())


def test_moved_view_row_leaves_nothing_behind_with_client_timestamps(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.b (p int PRIMARY KEY, k int, v int)")
        await node.run(
            "CREATE MATERIALIZED VIEW ks.by_k AS SELECT * FROM ks.b "
            "WHERE k IS NOT NULL AND p IS NOT NULL PRIMARY KEY (k, p)"
        )
        await node.run("INSERT INTO ks.b (p, k, v) VALUES (1, 5, 1) USING TIMESTAMP 100")
        await node.run("UPDATE ks.b USING TIMESTAMP 300 SET v = 2 WHERE p = 1")
        # k's cell is older than v's: this write wins for k, and the view row must move whole
        await node.run("UPDATE ks.b USING TIMESTAMP 200 SET k = 6 WHERE p = 1")
        assert await node.rows("SELECT k, p, v FROM ks.by_k") == [(6, 1, 2)]
        # back to 5 at a timestamp between: the row deleted at 5 must come back
        await node.run("UPDATE ks.b USING TIMESTAMP 250 SET k = 5 WHERE p = 1")
        assert await node.rows("SELECT k, p, v FROM ks.by_k") == [(5, 1, 2)]
        await node.run("UPDATE ks.b USING TIMESTAMP 260 SET k = 6 WHERE p = 1")
        await node.run("DELETE v FROM ks.b USING TIMESTAMP 400 WHERE p = 1")
        await node.run("UPDATE ks.b USING TIMESTAMP 270 SET k = 7 WHERE p = 1")
        assert await node.rows("SELECT k, p, v FROM ks.by_k") == [(7, 1, None)]

    node.drive(go())


async def _random_base_writes(node: DataNode, rng: random.Random, count: int) -> None:
    for _ in range(count):
        p, c, k, v = rng.randrange(3), rng.randrange(3), rng.randrange(4), rng.randrange(3)
        at = f"USING TIMESTAMP {rng.randrange(1, 10**6)}" if rng.random() < 0.3 else ""
        op = rng.randrange(8)
        if op == 0:
            await node.run(f"DELETE FROM ks.b {at} WHERE p = {p}")
        elif op == 1:
            await node.run(f"DELETE FROM ks.b {at} WHERE p = {p} AND c = {c}")
        elif op == 2:
            await node.run(f"DELETE k FROM ks.b {at} WHERE p = {p} AND c = {c}")
        elif op == 3:
            ttl = at or f"USING TTL {rng.randrange(1, 15)}"
            await node.run(f"UPDATE ks.b {ttl} SET k = {k} WHERE p = {p} AND c = {c}")
        elif op == 4:
            await node.run(f"UPDATE ks.b {at} SET v = {v} WHERE p = {p} AND c = {c}")
        elif op == 5:
            node.clock.now += rng.randrange(1, 6)
        else:
            ttl = f"USING TTL {rng.randrange(1, 15)}" if op == 6 and not at else at
            await node.run(f"INSERT INTO ks.b (p, c, k, v) VALUES ({p}, {c}, {k}, {v}) {ttl}")


def test_views_mirror_the_base_under_random_writes(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.b (p int, c int, k int, v int, PRIMARY KEY (p, c))")
        await node.run(
            "CREATE MATERIALIZED VIEW ks.by_k AS SELECT * FROM ks.b "
            "WHERE k IS NOT NULL AND p IS NOT NULL AND c IS NOT NULL PRIMARY KEY (k, p, c)"
        )
        await node.run(
            "CREATE MATERIALIZED VIEW ks.high AS SELECT * FROM ks.b "
            "WHERE c IS NOT NULL AND p IS NOT NULL AND c >= 1 AND v >= 1 PRIMARY KEY (c, p)"
        )
        rng = random.Random(21)
        for _ in range(6):
            await _random_base_writes(node, rng, 50)
            base = await node.rows("SELECT p, c, k, v FROM ks.b")
            by_k = sorted((k, p, c, v) for p, c, k, v in base if k is not None)
            assert sorted(await node.rows("SELECT k, p, c, v FROM ks.by_k")) == by_k
            high = sorted((c, p, k, v) for p, c, k, v in base if c >= 1 and v is not None and v >= 1)
            assert sorted(await node.rows("SELECT c, p, k, v FROM ks.high")) == high

    node.drive(go())
