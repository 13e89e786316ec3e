"""Error messages quote the client's CQL, never our parse tree: `cql_text` renders any selector or
term back as CQL that parses to the same tree."""

from __future__ import annotations

import pytest

from tabletdb.cql import ast
from tabletdb.cql.parser import parse_statement
from tabletdb.cql.unparse import cql_text

SELECTORS = [
    "k",
    '"Mixed Case"',
    "l[(1, 2)]",
    "m['it''s']",
    "u.f",
    "foo(k, 'x', 1.5, -3, 0xcafe, true)",
    "ks.f(k)",
    "cast(k AS text)",
    "count(*)",
    "writetime(v) AS w",
    "token(k)",
    "now()",
]

TERMS = [
    "[1, 2]",
    "{3, 4}",
    "{5: 6, 'k': [7]}",
    "(7, 'eight', null)",
    '{a: 1, "B": [2]}',
    "(int) ?",
    "(frozen<map<text, int>>) :m",
    "now()",
    "-1.5e-7",
    "NaN",
    "'multi''quote'''",
]


def _selectors(text: str) -> list[ast.Selector]:
    stmt = parse_statement(f"SELECT {text} FROM t")
    assert isinstance(stmt, ast.SelectStatement)
    return list(stmt.selectors)


@pytest.mark.parametrize("text", SELECTORS)
def test_selector_text_parses_back_to_the_same_tree(text: str) -> None:
    selectors = _selectors(text)
    rendered = ", ".join(cql_text(s) for s in selectors)
    assert _selectors(rendered) == selectors
    assert "Literal(" not in rendered and "Ref(" not in rendered


def _values(text: str) -> tuple[ast.Term, ...]:
    stmt = parse_statement(f"INSERT INTO t (k) VALUES ({text})")
    assert isinstance(stmt, ast.InsertStatement)
    return stmt.values


@pytest.mark.parametrize("text", TERMS)
def test_term_text_parses_back_to_the_same_tree(text: str) -> None:
    parsed = _values(text)
    assert _values(cql_text(parsed[0])) == parsed


def test_relation_sides_render_as_cql() -> None:
    stmt = parse_statement("SELECT * FROM t WHERE (a, b) > (1, 2) AND token(k) > 3 AND c IN (1, 2)")
    assert isinstance(stmt, ast.SelectStatement)
    assert [f"{cql_text(r.lhs)} {r.op} {cql_text(r.rhs)}" for r in stmt.where] == [
        "(a, b) > (1, 2)",
        "token(k) > 3",
        "c IN (1, 2)",
    ]
