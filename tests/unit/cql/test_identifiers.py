"""quote_identifier: bare only when the word would parse back as the same identifier."""

from __future__ import annotations

import pytest

from tabletdb.cql import ast
from tabletdb.cql.identifiers import quote_identifier
from tabletdb.cql.parser import parse


@pytest.mark.parametrize("name", ["p0d", "pt5m", "p2w", "p1y2m3dt4h5m6s", "select", "Mixed", "a b", 'q"x'])
def test_words_that_would_not_read_back_as_identifiers_are_quoted(name: str) -> None:
    quoted = quote_identifier(name)
    assert quoted.startswith('"')
    (stmt,) = parse(f"SELECT {quoted} FROM ks.t")
    assert isinstance(stmt, ast.SelectStatement)
    assert stmt.selectors[0].expr == ast.ColumnRef(name)


@pytest.mark.parametrize("name", ["p", "pt", "pa", "p1dx", "period", "v1"])
def test_plain_words_stay_bare(name: str) -> None:
    assert quote_identifier(name) == name
    (stmt,) = parse(f"SELECT {name} FROM ks.t")
    assert isinstance(stmt, ast.SelectStatement)
    assert stmt.selectors[0].expr == ast.ColumnRef(name)
