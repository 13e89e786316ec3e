"""Statements nested too deeply on a 3-node cluster: refused with InvalidRequest or SyntaxException
before anything reaches group0's Raft log, and the cluster goes on taking schema and role changes
through every node. Types at the nesting limit work end to end (replicated writes, reads)."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness.clients import pinned_cluster, scylla_cluster
from tests.harness.node import UDF_OPTIONS, NodeFactory, TestNode

KEYSPACE = (
    "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
)
TYPE_LIMIT = 128
EXPRESSION_LIMIT = 12


def _nested(levels: int, wrap: str, inner: str = "int") -> str:
    before, after = wrap.split("{}")
    return before * levels + inner + after * levels


def _raft(node: TestNode) -> dict[str, Any]:
    with urllib.request.urlopen(node.api_url + "/raft/state", timeout=30) as response:
        state: dict[str, Any] = json.loads(response.read())
        return state


def _settled_indexes(nodes: list[TestNode]) -> list[int]:
    """Each node's applied index once every node applied all the leader committed."""
    deadline = time.monotonic() + 60
    while True:
        states = [_raft(n) for n in nodes]
        commits = {s["commit_index"] for s in states}
        if len(commits) == 1 and all(s["applied_index"] == s["commit_index"] for s in states):
            return [s["applied_index"] for s in states]
        assert time.monotonic() < deadline, f"group0 did not settle: {states}"
        time.sleep(0.2)


REFUSED: dict[str, tuple[str, str]] = {
    "CREATE TABLE, a type 500 deep": (
        f"CREATE TABLE ks.deep (k int PRIMARY KEY, v {_nested(500, 'frozen<list<{}>>')})",
        "nested too deeply",
    ),
    "CREATE TABLE, a tuple one past the limit": (
        f"CREATE TABLE ks.deep (k int PRIMARY KEY, v frozen<{_nested(TYPE_LIMIT + 1, 'tuple<{}>')}>)",
        "nested too deeply",
    ),
    "CREATE TABLE, a user type pushing a list past the limit": (
        "CREATE TABLE ks.deep (k int PRIMARY KEY, v frozen<list<frozen<list<frozen<near_limit>>>>>)",
        "nested too deeply",
    ),
    "CREATE TYPE": (
        f"CREATE TYPE ks.deep_type (a {_nested(TYPE_LIMIT + 1, 'frozen<set<{}>>')})",
        "nested too deeply",
    ),
    "ALTER TABLE ADD": (
        f"ALTER TABLE ks.t ADD w {_nested(10_000, 'frozen<map<int, {}>>')}",
        "nested too deeply",
    ),
    "CREATE FUNCTION": (
        f"CREATE FUNCTION ks.f (a {_nested(TYPE_LIMIT + 1, 'frozen<list<{}>>')}) RETURNS NULL ON NULL INPUT "
        "RETURNS int LANGUAGE lua AS 'return 1'",
        "nested too deeply",
    ),
    "CREATE ROLE OPTIONS": (
        "CREATE ROLE deep WITH OPTIONS = " + _nested(EXPRESSION_LIMIT, "{{'a': {}}}", "'x'"),
        "expression nested too deeply",
    ),
    "ALTER TABLE WITH": (
        "ALTER TABLE ks.t WITH caching = " + _nested(EXPRESSION_LIMIT, "{{'a': {}}}", "'x'"),
        "expression nested too deeply",
    ),
    "INSERT, a literal": (
        "INSERT INTO ks.t (k, l) VALUES (1, " + _nested(EXPRESSION_LIMIT, "[{}]", "1") + ")",
        "expression nested too deeply",
    ),
    "INSERT, a literal 100,000 deep": (
        "INSERT INTO ks.t (k, l) VALUES (1, " + _nested(100_000, "[{}]", "1") + ")",
        "expression nested too deeply",
    ),
    "INSERT, a type hint": (
        f"INSERT INTO ks.t (k, l) VALUES (1, ({_nested(TYPE_LIMIT + 1, 'frozen<list<{}>>')}) [1])",
        "nested too deeply",
    ),
    "INSERT JSON": ('INSERT INTO ks.t JSON \'{"k": 1, "l": ' + _nested(100_000, "[{}]", "1") + "}'", "JSON"),
    "SELECT WHERE": (
        "SELECT * FROM ks.t WHERE k = " + _nested(EXPRESSION_LIMIT, "(1, {})", "1"),
        "nested too deeply",
    ),
    "SELECT, a selector": (
        "SELECT " + _nested(EXPRESSION_LIMIT, "blobasint({})", "k") + " FROM ks.t",
        "expression nested too deeply",
    ),
}


@pytest.fixture(scope="module")
def cluster(address_allocator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[TestNode]]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("nesting"))
    try:
        yield factory.start_cluster(3, options=UDF_OPTIONS)
    finally:
        problems = factory.cleanup()
        assert not problems, problems


@pytest.fixture(scope="module")
def session(cluster: list[TestNode]) -> Iterator[Any]:
    with scylla_cluster(cluster) as driver:
        s = driver.connect()
        s.execute(KEYSPACE)
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, l frozen<list<int>>, m map<int, int>)")
        s.execute(f"CREATE TYPE ks.near_limit (a {_nested(TYPE_LIMIT - 2, 'frozen<list<{}>>')})")  # 127 deep
        yield s


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_before_it_reaches_raft(name: str, cluster: list[TestNode], session: Any) -> None:
    from cassandra import InvalidRequest
    from cassandra.protocol import SyntaxException

    statement, message = REFUSED[name]
    before = _settled_indexes(cluster)
    with pytest.raises((InvalidRequest, SyntaxException), match=message):
        session.execute(statement)
    assert _settled_indexes(cluster) == before, "a refused statement changed group0's log"
    assert all(n.running for n in cluster)


def test_schema_and_role_changes_go_on_through_every_node(cluster: list[TestNode], session: Any) -> None:
    from cassandra import InvalidRequest

    with pytest.raises(InvalidRequest):  # the deep type once more, then changes through every node
        session.execute(REFUSED["CREATE TABLE, a type 500 deep"][0])
    for i, node in enumerate(cluster):
        with pinned_cluster(node) as driver:
            pinned = driver.connect()
            pinned.execute(f"CREATE TABLE ks.after_{i} (k int PRIMARY KEY, v text)")
            pinned.execute(f"CREATE ROLE role_{i} WITH LOGIN = false")
            pinned.execute(f"ALTER TABLE ks.after_{i} ADD w int")
    applied = _settled_indexes(cluster)
    assert len(set(applied)) == 1
    for node in cluster:
        with pinned_cluster(node) as driver:
            local = driver.connect()
            tables = {
                r.table_name
                for r in local.execute(
                    "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'ks'"
                )
            }
            assert {"after_0", "after_1", "after_2"} <= tables and "deep" not in tables
            roles = {r.role for r in local.execute("SELECT role FROM system.roles")}
            assert {"role_0", "role_1", "role_2"} <= roles
    assert all(n.running for n in cluster)


def test_types_at_the_limit_work_end_to_end(cluster: list[TestNode], session: Any) -> None:
    session.execute(
        f"CREATE TABLE ks.at_limit (k int PRIMARY KEY, v frozen<{_nested(TYPE_LIMIT, 'tuple<{}>')}>)"
    )
    value: Any = 7
    for _ in range(TYPE_LIMIT):
        value = (value,)
    session.execute(session.prepare("INSERT INTO ks.at_limit (k, v) VALUES (?, ?)"), (1, value))
    session.execute("CREATE TABLE ks.udt_at_limit (k int PRIMARY KEY, v frozen<list<frozen<near_limit>>>)")
    for node in cluster:  # replicated at RF 3: every node reads its own copy back at ONE
        with pinned_cluster(node) as driver:
            row = driver.connect().execute("SELECT v FROM ks.at_limit WHERE k = 1").one()
            assert row.v == value
    from cassandra import InvalidRequest

    literal = "INSERT INTO ks.t (k, l) VALUES (2, " + _nested(EXPRESSION_LIMIT - 1, "[{}]", "1") + ")"
    with pytest.raises(InvalidRequest):  # as deep as a term may be: it parses, only its type is wrong
        session.execute(literal)
