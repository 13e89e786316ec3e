"""Results of conditional statements through the real driver, prepared and not: the result
metadata (`[applied]` and, when not applied, the columns returned) matches what every row carries,
so the driver reads them (a mismatch was `IndexError: tuple index out of range` in the driver)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cassandra.query import BatchStatement

from tests.harness.clients import scylla_cluster
from tests.harness.node import TestNode


@pytest.fixture(scope="module")
def session(node: TestNode) -> Iterator[Any]:
    with scylla_cluster(node) as cluster:
        s = cluster.connect()
        s.execute(
            "CREATE KEYSPACE lp WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        s.execute("CREATE TABLE lp.t (k int, c int, v int, w text, PRIMARY KEY (k, c))")
        yield s


def test_prepared_insert_if_not_exists_applied_then_not(session: Any) -> None:
    ps = session.prepare("INSERT INTO lp.t (k, c, v, w) VALUES (?, ?, ?, ?) IF NOT EXISTS")
    first = session.execute(ps, (1, 1, 10, "a"))
    assert first.was_applied and first.one()[0] is True
    second = session.execute(ps, (1, 1, 11, "b")).one()
    assert second[0] is False
    assert (second.k, second.c, second.v, second.w) == (1, 1, 10, "a")


def test_prepared_update_with_conditions_returns_the_condition_columns(session: Any) -> None:
    ps = session.prepare("UPDATE lp.t SET v = ? WHERE k = ? AND c = ? IF v = ? AND w = ?")
    applied = session.execute(ps, (20, 1, 1, 10, "a")).one()
    assert tuple(applied) == (True,)
    refused = session.execute(ps, (30, 1, 1, 10, "a")).one()
    assert refused[0] is False and refused.v == 20 and refused.w == "a"
    missing = session.execute(ps, (30, 9, 9, 10, "a")).one()
    assert missing[0] is False


def test_prepared_delete_if_exists_and_unprepared_alike(session: Any) -> None:
    ps = session.prepare("DELETE FROM lp.t WHERE k = ? AND c = ? IF EXISTS")
    assert session.execute(ps, (1, 1)).one()[0] is True
    assert session.execute(ps, (1, 1)).one()[0] is False
    rs = session.execute("UPDATE lp.t SET v = 1 WHERE k = 5 AND c = 5 IF EXISTS").one()
    assert rs[0] is False


def test_prepared_conditional_batch(session: Any) -> None:
    ins = session.prepare("INSERT INTO lp.t (k, c, v) VALUES (?, ?, ?) IF NOT EXISTS")
    batch = BatchStatement()
    batch.add(ins, (7, 1, 1))
    batch.add(ins, (7, 2, 2))
    assert session.execute(batch).one()[0] is True
    again = BatchStatement()
    again.add(ins, (7, 1, 5))
    rows = list(session.execute(again))
    assert rows[0][0] is False
