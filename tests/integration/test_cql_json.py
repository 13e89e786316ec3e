"""INSERT JSON, SELECT JSON, toJson and fromJson over every type, through the real driver and one
real node: what goes in as JSON comes back as the same JSON, DEFAULT UNSET leaves the columns a
document does not name alone and DEFAULT NULL (the default) clears them, and a bad document is an
InvalidRequest."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra import InvalidRequest

from tests.harness.clients import scylla_cluster
from tests.harness.node import TestNode

DOC = {
    "k": 1,
    "i": -7,
    "big": 9007199254740993,
    "vi": 123456789012345678901234567890,
    "dec": "3.14159265358979323846264338327950288419716939937510",
    "dbl": 2.5,
    "txt": 'h\u00e9llo "q"',
    "flag": True,
    "id": "50554d6e-29bb-11e5-b345-feff819cdc9f",
    "ts": "2021-03-04 05:06:07.891Z",
    "day": "2021-03-04",
    "tod": "05:06:07.000000123",
    "ip": "10.1.2.3",
    "raw": "0x00ff",
    "l": [1, 2, 2],
    "s": ["b", "a"],
    "m": {"x": 1, "y": 2},
    "mi": {"3": "three"},
    "tup": [1, "t"],
    "a": {"street": "Main", "zip": 123},
}


@pytest.fixture(scope="module")
def session(node: TestNode) -> Iterator[Any]:
    with scylla_cluster(node) as cluster:
        s = cluster.connect()
        s.execute(
            "CREATE KEYSPACE js WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        s.execute("CREATE TYPE js.addr (street text, zip int)")
        s.execute(
            "CREATE TABLE js.t (k int PRIMARY KEY, i int, big bigint, vi varint, dec decimal, dbl double, "
            "txt text, flag boolean, id timeuuid, ts timestamp, day date, tod time, ip inet, raw blob, "
            "l list<int>, s set<text>, m map<text, int>, mi map<int, text>, tup frozen<tuple<int, text>>, "
            "a frozen<addr>)"
        )
        yield s


def test_insert_json_then_select_json_gives_the_same_document(session: Any) -> None:
    session.execute("INSERT INTO js.t JSON %s", (json.dumps(DOC),))
    got = json.loads(session.execute("SELECT JSON * FROM js.t WHERE k = 1").one()[0])
    want = dict(DOC, dec=float(DOC["dec"]), s=["a", "b"])  # a set comes back sorted
    got["dec"] = float(got["dec"])
    assert got == want
    # every digit of the decimal survives (JSON numbers keep them in the text)
    text = session.execute("SELECT toJson(dec), toJson(vi) FROM js.t WHERE k = 1").one()
    assert text == (DOC["dec"], str(DOC["vi"]))


def test_default_unset_keeps_columns_the_document_omits_and_default_null_clears_them(session: Any) -> None:
    session.execute('INSERT INTO js.t JSON \'{"k": 2, "i": 1, "txt": "keep"}\'')
    session.execute('INSERT INTO js.t JSON \'{"k": 2, "i": 5}\' DEFAULT UNSET')
    assert tuple(session.execute("SELECT i, txt FROM js.t WHERE k = 2").one()) == (5, "keep")
    session.execute('INSERT INTO js.t JSON \'{"k": 2, "i": 6}\' DEFAULT NULL')
    assert tuple(session.execute("SELECT i, txt FROM js.t WHERE k = 2").one()) == (6, None)
    session.execute('INSERT INTO js.t JSON \'{"k": 2, "txt": "x"}\'')  # DEFAULT NULL is the default
    assert tuple(session.execute("SELECT i, txt FROM js.t WHERE k = 2").one()) == (None, "x")


def test_prepared_insert_json_and_fromjson_of_every_kind(session: Any) -> None:
    ps = session.prepare("INSERT INTO js.t JSON ?")
    session.execute(ps, (json.dumps({"k": 3, "m": {"q": 9}, "a": {"zip": 5}}),))
    row = session.execute("SELECT m, a FROM js.t WHERE k = 3").one()
    assert row.m == {"q": 9} and row.a.zip == 5 and row.a.street is None
    session.execute(
        "UPDATE js.t SET l = fromJson('[4, 5]'), tup = fromJson('[2, \"u\"]'), ts = fromJson('0') WHERE k = 3"
    )
    row = session.execute("SELECT l, tup, toUnixTimestamp(ts) FROM js.t WHERE k = 3").one()
    assert row[0] == [4, 5] and row[1] == (2, "u") and row[2] == 0


def test_select_json_of_expressions_uses_their_column_names(session: Any) -> None:
    session.execute('INSERT INTO js.t JSON \'{"k": 4, "i": 10, "m": {"x": 3}}\'')
    got = json.loads(
        session.execute("SELECT JSON i AS n, m['x'], blobAsInt(intAsBlob(i)) FROM js.t WHERE k = 4").one()[0]
    )
    assert got == {"n": 10, "m['x']": 3, "system.blobasint(system.intasblob(i))": 10}


def test_bad_documents_are_invalid_requests(session: Any) -> None:
    for doc, message in (
        ('{"k": 5, "nope": 1}', "nope"),
        ('{"k": 5, "i": "x"}', "i"),
        ("not json", "JSON"),
        ('{"i": 1}', "k"),
    ):
        with pytest.raises(InvalidRequest, match=message):
            session.execute("INSERT INTO js.t JSON %s", (doc,))
