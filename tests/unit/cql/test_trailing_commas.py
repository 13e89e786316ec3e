"""CREATE TABLE and CREATE TYPE take empty elements and a trailing comma, as Cassandra's and
ScyllaDB's grammars do (published schemas rely on it); the first element is still required."""

from __future__ import annotations

import pytest

from tabletdb.cql import ast
from tabletdb.cql.errors import CqlSyntaxError
from tabletdb.cql.parser import parse_statement


@pytest.mark.parametrize(
    "text",
    [
        "CREATE TABLE ks.x (k int PRIMARY KEY, v int,)",
        "CREATE TABLE ks.x (k int, , v int, PRIMARY KEY (k))",
        "CREATE TABLE ks.x (k int, v int, PRIMARY KEY (k),,) WITH comment = 'c'",
    ],
)
def test_create_table_ignores_empty_elements(text: str) -> None:
    stmt = parse_statement(text)
    assert isinstance(stmt, ast.CreateTable)
    assert [c.name for c in stmt.columns] == ["k", "v"] and stmt.partition_key == ("k",)


def test_create_type_ignores_empty_fields() -> None:
    stmt = parse_statement("CREATE TYPE ks.t (a int, b text,)")
    assert isinstance(stmt, ast.CreateType)
    assert [name for name, _ in stmt.fields] == ["a", "b"]


@pytest.mark.parametrize(
    "text", ["CREATE TABLE ks.x (, k int PRIMARY KEY)", "CREATE TYPE ks.t (,)", "CREATE TABLE ks.x ()"]
)
def test_an_empty_first_element_is_still_a_syntax_error(text: str) -> None:
    with pytest.raises(CqlSyntaxError):
        parse_statement(text)
