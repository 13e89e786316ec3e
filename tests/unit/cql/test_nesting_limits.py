"""How deep terms, selectors, relations and types may nest: ScyllaDB's limit of 12 for
expressions (its message, as a SyntaxException), 128 for types (InvalidRequest); input nested
far beyond either is refused quickly and without RecursionError."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cql import types as t
from tabletdb.cql.errors import CqlSyntaxError, InvalidRequest
from tabletdb.cql.nesting import (
    EXPRESSION_TOO_DEEP,
    MAX_EXPRESSION_NESTING,
    MAX_TYPE_NESTING,
    check_type_nesting,
    type_children,
    type_nesting,
)
from tabletdb.cql.parser import parse_statement, parse_type
from tests.unit.cql.strategies import cql_types

# One level of a term around `inner`: every way a term nests another.
TERM_WRAPPERS: dict[str, Callable[[str], str]] = {
    "list": lambda inner: f"[{inner}]",
    "set": lambda inner: f"{{{inner}}}",
    "map value": lambda inner: f"{{1: {inner}}}",
    "map key": lambda inner: f"{{{inner}: 1}}",
    "tuple": lambda inner: f"(1, {inner})",
    "user type": lambda inner: f"{{f: {inner}}}",
    "function call": lambda inner: f"blobasint({inner})",
    "type hint": lambda inner: f"(int) {inner}",
}


def _term(wrappers: list[Callable[[str], str]]) -> str:
    text = "1"
    for wrap in wrappers:
        text = wrap(text)
    return text


def _insert(term: str) -> str:
    return f"INSERT INTO ks.t (k, v) VALUES (0, {term})"


@pytest.mark.parametrize("kind", sorted(TERM_WRAPPERS))
def test_terms_nest_up_to_scyllas_limit_and_no_further(kind: str) -> None:
    wrap = TERM_WRAPPERS[kind]
    deepest = _term([wrap] * (MAX_EXPRESSION_NESTING - 1))  # the constant inside is a level too
    parse_statement(_insert(deepest))
    with pytest.raises(CqlSyntaxError) as refused:
        parse_statement(_insert(wrap(deepest)))
    assert str(refused.value) == EXPRESSION_TOO_DEEP  # ScyllaDB's message, without a position


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(sorted(TERM_WRAPPERS)), min_size=0, max_size=MAX_EXPRESSION_NESTING + 3))
def test_any_mix_of_terms_is_refused_exactly_past_the_limit(kinds: list[str]) -> None:
    statement = _insert(_term([TERM_WRAPPERS[k] for k in kinds]))
    if len(kinds) + 1 <= MAX_EXPRESSION_NESTING:
        parse_statement(statement)
    else:
        with pytest.raises(CqlSyntaxError, match=EXPRESSION_TOO_DEEP):
            parse_statement(statement)


@pytest.mark.parametrize(
    "template",
    [
        "SELECT * FROM ks.t WHERE k = {}",  # a relation is a level of its own, as in ScyllaDB
        "SELECT * FROM ks.t WHERE k IN ({}, 2)",
        "SELECT * FROM ks.t WHERE m[{}] = 1",
        "SELECT * FROM ks.t WHERE l CONTAINS {}",
        "UPDATE ks.t SET v = 1 WHERE k = 0 IF v = {}",
    ],
)
def test_relations_count_as_a_level(template: str) -> None:
    parse_statement(template.format(_term([TERM_WRAPPERS["list"]] * (MAX_EXPRESSION_NESTING - 2))))
    with pytest.raises(CqlSyntaxError, match=EXPRESSION_TOO_DEEP):
        parse_statement(template.format(_term([TERM_WRAPPERS["list"]] * (MAX_EXPRESSION_NESTING - 1))))


def test_selectors_nest_up_to_the_limit() -> None:
    def select(levels: int) -> str:
        return "SELECT " + "blobasint(" * levels + "v" + ")" * levels + " FROM ks.t"

    parse_statement(select(MAX_EXPRESSION_NESTING - 1))
    with pytest.raises(CqlSyntaxError, match=EXPRESSION_TOO_DEEP):
        parse_statement(select(MAX_EXPRESSION_NESTING))
    casts = (
        "SELECT " + "cast(" * MAX_EXPRESSION_NESTING + "v" + " AS int)" * MAX_EXPRESSION_NESTING + " FROM t"
    )
    with pytest.raises(CqlSyntaxError, match=EXPRESSION_TOO_DEEP):
        parse_statement(casts)


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE ROLE r WITH OPTIONS = {}",
        "ALTER TABLE ks.t WITH caching = {}",
        "UPDATE ks.t USING TTL {} SET v = 1 WHERE k = 0",
        "UPDATE ks.t SET m[{}] = 1 WHERE k = 0",
    ],
)
def test_every_place_a_term_goes_is_bounded(statement: str) -> None:
    with pytest.raises(CqlSyntaxError, match=EXPRESSION_TOO_DEEP):
        parse_statement(statement.format(_term([TERM_WRAPPERS["map value"]] * MAX_EXPRESSION_NESTING)))


def _nested_type(levels: int, wrap: str = "frozen<list<{}>>") -> str:
    before, after = wrap.split("{}")
    return before * levels + "int" + after * levels


@pytest.mark.parametrize(
    "wrap", ["frozen<list<{}>>", "frozen<set<{}>>", "frozen<map<int, {}>>", "tuple<{}>", "vector<{}, 2>"]
)
def test_types_nest_up_to_the_limit_and_no_further(wrap: str) -> None:
    deepest = parse_type(_nested_type(MAX_TYPE_NESTING, wrap))
    assert type_nesting(deepest) == MAX_TYPE_NESTING
    with pytest.raises(InvalidRequest, match="nested too deeply"):
        parse_type(_nested_type(MAX_TYPE_NESTING + 1, wrap))
    with pytest.raises(InvalidRequest, match="nested too deeply"):
        parse_statement(
            f"CREATE TABLE ks.t (k int PRIMARY KEY, v {_nested_type(MAX_TYPE_NESTING + 1, wrap)})"
        )


def test_a_type_hint_is_bounded_like_any_type() -> None:
    hint = _nested_type(MAX_TYPE_NESTING + 1)
    with pytest.raises(InvalidRequest, match="nested too deeply"):
        parse_statement(f"INSERT INTO ks.t (k, v) VALUES (0, ({hint}) ?)")


@pytest.mark.parametrize(
    "statement",
    [
        _insert("[" * 20_000 + "1" + "]" * 20_000),
        _insert("(int) " * 20_000 + "1"),
        "SELECT " + "f(" * 20_000 + "v" + ")" * 20_000 + " FROM t",
        f"CREATE TABLE ks.t (k int PRIMARY KEY, v {_nested_type(20_000)})",
        f"CREATE TABLE ks.t (k int PRIMARY KEY, v {_nested_type(20_000, 'tuple<{}>')})",
    ],
    ids=["list", "type hints", "selector", "frozen list type", "tuple type"],
)
def test_input_nested_far_beyond_the_limits_is_refused_without_recursion(statement: str) -> None:
    """20,000 levels would overflow Python's stack in any recursive step; the refusal must come
    from the nesting check, not a RecursionError (how long it takes is bench material, not a test's)."""
    with pytest.raises((CqlSyntaxError, InvalidRequest), match="nested too deeply"):
        parse_statement(statement)


def _reference_nesting(cql_type: t.CqlType) -> int:
    children = type_children(cql_type)
    return 0 if not children else 1 + max(_reference_nesting(c) for c in children)


@settings(max_examples=200, deadline=None)
@given(cql_types(depth=3))
def test_type_nesting_counts_the_levels(cql_type: t.CqlType) -> None:
    assert type_nesting(cql_type) == _reference_nesting(cql_type)


def test_type_nesting_walks_types_deeper_than_python_can_recurse() -> None:
    deep: t.CqlType = t.INT
    for _ in range(50_000):
        deep = t.TupleType((t.INT, deep))
    assert type_nesting(deep) == MAX_TYPE_NESTING + 1  # stops counting past the limit
    assert type_nesting(deep, stop_after=100_000) == 50_000
    with pytest.raises(InvalidRequest, match="Column v is nested too deeply"):
        check_type_nesting(deep, "Column v")
