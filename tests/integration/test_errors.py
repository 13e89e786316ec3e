"""Bad statements reach the driver as the matching exception and the connection keeps working."""

from __future__ import annotations

from typing import Any

import pytest
from cassandra import AlreadyExists, InvalidRequest
from cassandra.protocol import ConfigurationException, SyntaxException

from tests.harness.clients import scylla_cluster
from tests.harness.node import TestNode

CASES: list[tuple[str, type[Exception], str]] = [
    ("SELEKT * FROM system.local", SyntaxException, "line 1:0"),
    ("SELECT * FORM system.local", SyntaxException, "line 1:9"),
    ("CREATE TABLE errs.t (k int PRIMARY KEY", SyntaxException, "line 1"),
    ("SELECT * FROM nope.t", InvalidRequest, "Keyspace nope does not exist"),
    ("SELECT * FROM errs.missing", InvalidRequest, "unconfigured table missing"),
    ("SELECT * FROM system.peers_v2", InvalidRequest, "unconfigured table peers_v2"),
    ("SELECT nosuch FROM system.local", InvalidRequest, "Undefined column name nosuch"),
    ("USE nope", InvalidRequest, "does not exist"),
    (
        "CREATE KEYSPACE errs WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        AlreadyExists,
        "errs",
    ),
    ("CREATE TABLE errs.t (k int PRIMARY KEY, v int)", AlreadyExists, "t"),
    ("CREATE TABLE errs.u (k int, v int)", InvalidRequest, "PRIMARY KEY"),
    ("CREATE TABLE errs.u (k int PRIMARY KEY, v int) WITH nonsense = 1", SyntaxException, "nonsense"),
    (
        "CREATE KEYSPACE bad WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        " AND x = 1",
        SyntaxException,
        "Unknown property 'x'",
    ),
    ("CREATE TABLE errs.u (k list<int> PRIMARY KEY)", InvalidRequest, "k"),
    ("CREATE TABLE errs.u (k int PRIMARY KEY, v frozen<nosuchtype>)", InvalidRequest, "nosuchtype"),
    (
        "CREATE KEYSPACE bad WITH replication = {'class': 'NoSuchStrategy'}",
        ConfigurationException,
        "NoSuchStrategy",
    ),
    (
        "CREATE KEYSPACE bad WITH replication = {'class': 'SimpleStrategy'}",
        ConfigurationException,
        "replication_factor",
    ),
    ("DROP KEYSPACE nope", ConfigurationException, "nope"),
    ("DROP TABLE errs.nope", ConfigurationException, "nope"),
    ("DROP TYPE errs.used", InvalidRequest, "still used"),
    ("ALTER TABLE errs.t DROP k", InvalidRequest, "k"),
    ("CREATE TABLE system.mine (k int PRIMARY KEY)", Exception, "system"),
]


@pytest.fixture(scope="module")
def errs(node: TestNode) -> Any:
    with scylla_cluster(node) as cluster:
        session = cluster.connect()
        session.execute(
            "CREATE KEYSPACE errs WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        session.execute("CREATE TYPE errs.used (a int)")
        session.execute("CREATE TABLE errs.t (k int PRIMARY KEY, v frozen<used>)")
        yield session


@pytest.mark.parametrize(("statement", "error", "fragment"), CASES, ids=[c[0][:60] for c in CASES])
def test_error_reaches_driver_and_connection_survives(
    errs: Any, statement: str, error: type[Exception], fragment: str
) -> None:
    with pytest.raises(error) as info:
        errs.execute(statement)
    assert fragment in str(info.value)
    # The same session (and connection) keeps serving.
    assert errs.execute("SELECT key FROM system.local").one().key == "local"


def test_prepared_statement_errors(errs: Any) -> None:
    prepared = errs.prepare(
        "SELECT keyspace_name, table_name FROM system_schema.tables WHERE keyspace_name = ?"
    )
    rows = list(errs.execute(prepared, ["errs"]))
    assert [(r.keyspace_name, r.table_name) for r in rows] == [("errs", "t")]
    with pytest.raises(InvalidRequest):
        errs.prepare("SELECT * FROM errs.nope WHERE k = ?")
    assert errs.execute("SELECT key FROM system.local").one().key == "local"
