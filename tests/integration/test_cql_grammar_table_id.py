"""`WITH ID = null` on CREATE TABLE and CREATE MATERIALIZED VIEW is accepted, as ScyllaDB's grammar
accepts it, and means no id was given; ALTER with any id, null included, is refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cassandra import InvalidRequest
from cassandra.protocol import SyntaxException

from tests.harness.clients import scylla_cluster
from tests.harness.node import TestNode


@pytest.fixture(scope="module")
def session(node: TestNode) -> Iterator[Any]:
    with scylla_cluster(node) as cluster:
        s = cluster.connect()
        s.execute(
            "CREATE KEYSPACE gi WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        yield s


def test_id_null_creates_a_table_and_a_view_with_generated_ids(session: Any) -> None:
    session.execute("CREATE TABLE gi.t (k int PRIMARY KEY, v int) WITH ID = null")
    session.execute(
        "CREATE MATERIALIZED VIEW gi.by_v AS SELECT * FROM gi.t WHERE v IS NOT NULL AND k IS NOT NULL "
        "PRIMARY KEY (v, k) WITH ID = null"
    )
    session.execute("INSERT INTO gi.t (k, v) VALUES (1, 2)")
    assert tuple(session.execute("SELECT k FROM gi.by_v WHERE v = 2").one()) == (1,)
    ids = {
        r.id for r in session.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = 'gi'")
    } | {r.id for r in session.execute("SELECT id FROM system_schema.views WHERE keyspace_name = 'gi'")}
    assert len(ids) == 2 and None not in ids


def test_alter_with_an_id_is_refused_even_null(session: Any) -> None:
    session.execute("CREATE TABLE IF NOT EXISTS gi.a (k int PRIMARY KEY)")
    with pytest.raises(InvalidRequest, match="Cannot alter table id"):
        session.execute("ALTER TABLE gi.a WITH ID = null")
    session.execute("CREATE TABLE IF NOT EXISTS gi.b (k int PRIMARY KEY, v int)")
    session.execute(
        "CREATE MATERIALIZED VIEW IF NOT EXISTS gi.bv AS SELECT * FROM gi.b WHERE v IS NOT NULL "
        "AND k IS NOT NULL PRIMARY KEY (v, k)"
    )
    with pytest.raises(SyntaxException, match="only table properties"):
        session.execute("ALTER MATERIALIZED VIEW gi.bv WITH ID = null")
