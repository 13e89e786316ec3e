"""writetime() and ttl() of parts of a column, as ScyllaDB selects them: an element of a non-frozen
map or set (`writetime(m['k'])`, `ttl(s[e])`) and a field of a non-frozen UDT each have their own
cell; a list element, an element of a frozen collection, a field of a frozen UDT and a tuple
element have none and are refused with ScyllaDB's messages. Collection slices (`m['a'..'b']`) are
not CQL ScyllaDB takes (its issue 22075): a syntax error, in the select list and in WHERE.
Through the driver on one node."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cassandra import InvalidRequest
from cassandra.protocol import SyntaxException

from tests.harness.clients import scylla_cluster
from tests.harness.node import TestNode

T1, T2 = 1_000_000, 2_000_000


@pytest.fixture(scope="module")
def session(node: TestNode) -> Iterator[Any]:
    with scylla_cluster(node) as cluster:
        s = cluster.connect()
        s.execute(
            "CREATE KEYSPACE ew WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        s.execute("CREATE TYPE ew.pair (a int, b int)")
        s.execute(
            "CREATE TABLE ew.t (k int, c int, m map<text, int>, s set<int>, l list<int>, "
            "fm frozen<map<int, int>>, tu tuple<int, int>, u pair, fu frozen<pair>, v int, "
            "PRIMARY KEY (k, c))"
        )
        s.execute(
            "INSERT INTO ew.t (k, c, m, s, l, fm, tu, u, fu) VALUES (1, 1, {'a': 1, 'b': 2}, {10, 20}, [7], "
            f"{{1: 1}}, (1, 2), {{a: 1, b: 2}}, {{a: 1, b: 2}}) USING TIMESTAMP {T1}"
        )
        s.execute(
            f"UPDATE ew.t USING TIMESTAMP {T2} AND TTL 5000 SET m = m + {{'b': 3, 'c': 4}}, s = s + {{30}}, "
            "u.b = 9 WHERE k = 1 AND c = 1"
        )
        s.execute("INSERT INTO ew.t (k, c, v) VALUES (1, 2, 0)")
        yield s


def _one(session: Any, selectors: str, where: str = "k = 1 AND c = 1") -> tuple[Any, ...]:
    return tuple(session.execute(f"SELECT {selectors} FROM ew.t WHERE {where}").one())


def test_each_map_and_set_element_has_its_own_writetime_and_ttl(session: Any) -> None:
    stamps = _one(
        session, "writetime(m['a']), writetime(m['b']), writetime(m['c']), writetime(s[10]), writetime(s[30])"
    )
    assert stamps == (T1, T2, T2, T1, T2)
    ttl_a, ttl_b, ttl_s = _one(session, "ttl(m['a']), ttl(m['b']), ttl(s[30])")
    assert ttl_a is None and 4000 < ttl_b <= 5000 and 4000 < ttl_s <= 5000
    # an element not there, a null subscript, a row without the collection: null
    assert _one(session, "writetime(m['zz']), ttl(s[99]), writetime(m[null])") == (None, None, None)
    assert _one(session, "writetime(m['a']), ttl(s[10])", "k = 1 AND c = 2") == (None, None)
    # beside the whole map and its elements; under an alias; aggregated; prepared
    row = session.execute("SELECT m, m['b'], writetime(m['b']) AS wb FROM ew.t WHERE k = 1 AND c = 1").one()
    assert dict(row.m) == {"a": 1, "b": 3, "c": 4} and row.m__b == 3 and row.wb == T2
    assert _one(session, "max(writetime(s[10])), min(writetime(m['c']))", "k = 1") == (T1, T2)
    prepared = session.prepare("SELECT writetime(m['c']), ttl(m['a']) FROM ew.t WHERE k = ? AND c = ?")
    assert [c[2] for c in prepared.result_metadata] == ["writetime(m['c'])", "ttl(m['a'])"]
    assert [c[3].typename for c in prepared.result_metadata] == ["bigint", "int"]
    assert tuple(session.execute(prepared, (1, 1)).one()) == (T2, None)
    # a non-frozen UDT's fields, as before
    assert _one(session, "writetime(u.a), writetime(u.b)") == (T1, T2)


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("writetime(l[0])", "WRITETIME on a subscript is only valid for non-frozen map or set columns"),
        ("ttl(fm[1])", "TTL on a subscript is only valid for non-frozen map or set columns"),
        ("writetime(tu[0])", "Column tu is not a map/set/list, cannot be subscripted"),
        ("writetime(v[3])", "Column v is not a map/set/list, cannot be subscripted"),
        ("ttl(tu.a)", r"Invalid field selection: tu of type tuple<int, int> is not a user type"),
        ("writetime(fu.a)", "WRITETIME on a field selection is only valid for non-frozen UDT columns"),
        ("writetime(k[1])", "WRITETIME is not legal on primary key component k"),
        ("writetime(m[1])", r"Invalid INTEGER constant \(1\) for \"key\(m\)\" of type text"),
    ],
)
def test_parts_without_a_cell_of_their_own_are_refused(session: Any, selector: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        session.execute(f"SELECT {selector} FROM ew.t")


def test_collection_slices_are_not_cql(session: Any) -> None:
    for statement in (
        "SELECT m['a'..'b'] FROM ew.t",
        "SELECT s[1..2] FROM ew.t WHERE k = 1",
        "SELECT k FROM ew.t WHERE k = 1 AND m['a'..'b'] = 1 ALLOW FILTERING",
    ):
        with pytest.raises(SyntaxException):
            session.execute(statement)
    assert _one(session, "m['b'], s[20]") == (3, 20)  # single elements are
