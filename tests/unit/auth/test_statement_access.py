"""The permission each data/schema statement needs."""

from __future__ import annotations

import pytest

from tabletdb.auth.resources import Permission
from tabletdb.auth.statement_access import required_permissions
from tabletdb.cql.errors import InvalidRequest
from tests.unit.auth.helpers import catalog, stmt

CATALOG = catalog()
P = Permission


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SELECT * FROM ks.t", [(P.SELECT, "data/ks/t")]),
        ("SELECT * FROM t", [(P.SELECT, "data/cur/t")]),
        ("INSERT INTO ks.t (pk, v) VALUES (1, 1)", [(P.MODIFY, "data/ks/t")]),
        (
            "INSERT INTO ks.t (pk, v) VALUES (1, 1) IF NOT EXISTS",
            [(P.MODIFY, "data/ks/t"), (P.SELECT, "data/ks/t")],
        ),
        ("UPDATE ks.t SET v = 1 WHERE pk = 1 IF v = 2", [(P.MODIFY, "data/ks/t"), (P.SELECT, "data/ks/t")]),
        ("DELETE FROM ks.t WHERE pk = 1", [(P.MODIFY, "data/ks/t")]),
        (
            "BEGIN BATCH INSERT INTO ks.t (pk, v) VALUES (1, 1); DELETE FROM ks.u WHERE pk = 1; "
            "INSERT INTO ks.t (pk, v) VALUES (2, 2); APPLY BATCH",
            [(P.MODIFY, "data/ks/t"), (P.MODIFY, "data/ks/u")],
        ),
        ("TRUNCATE ks.t", [(P.MODIFY, "data/ks/t")]),
        (
            "CREATE KEYSPACE k2 WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}",
            [(P.CREATE, "data")],
        ),
        ("DROP KEYSPACE ks", [(P.DROP, "data/ks")]),
        ("CREATE TABLE ks.n (pk int PRIMARY KEY)", [(P.CREATE, "data/ks")]),
        ("ALTER TABLE ks.t ADD w int", [(P.ALTER, "data/ks/t")]),
        ("DROP TABLE ks.t", [(P.DROP, "data/ks/t")]),
        ("CREATE TYPE ks.ty (a int)", [(P.CREATE, "data/ks")]),
        ("CREATE INDEX ON ks.t (v)", [(P.ALTER, "data/ks/t")]),
        ("DROP INDEX ks.missing", [(P.ALTER, "data/ks")]),
        (
            "CREATE FUNCTION ks.g (x int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua AS 'return x'",
            [(P.CREATE, "functions/ks")],
        ),
        ("DROP FUNCTION ks.f(int)", [(P.DROP, "functions/ks/f[int]")]),
        ("USE ks", []),
    ],
)
def test_required_permissions(text: str, expected: list[tuple[Permission, str]]) -> None:
    assert required_permissions(stmt(text), CATALOG, "cur") == expected


def test_unqualified_name_without_keyspace() -> None:
    with pytest.raises(InvalidRequest, match="No keyspace has been specified"):
        required_permissions(stmt("SELECT * FROM t"), CATALOG, None)
