"""Property tests of the CQL parser: identifiers, literals and types survive formatting -> parsing,
and the grammar's keyword bookkeeping stays consistent."""

from __future__ import annotations

import re
from importlib import resources

from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cql import ast
from tabletdb.cql import types as t
from tabletdb.cql.identifiers import RESERVED_KEYWORDS, quote_identifier, quote_string
from tabletdb.cql.parser import _Builder, _parser, parse_statement, parse_type

GRAMMAR = resources.files("tabletdb.cql.grammar").joinpath("cql.lark").read_text(encoding="utf-8")

identifiers = st.one_of(
    st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20),
    st.sampled_from([*sorted(RESERVED_KEYWORDS), "key", "type", "ttl", "true", "false", "Key", 'a"b']),
)


@settings(max_examples=150, deadline=None)
@given(keyspace=identifiers, table=identifiers, column=identifiers)
def test_identifiers_round_trip_through_quote_identifier(keyspace: str, table: str, column: str) -> None:
    q = quote_identifier
    statement = parse_statement(f"SELECT {q(column)} FROM {q(keyspace)}.{q(table)} WHERE {q(column)} = 1")
    assert isinstance(statement, ast.SelectStatement)
    assert statement.table == ast.QualifiedName(keyspace, table)
    assert statement.selectors == (ast.Selector(ast.ColumnRef(column)),)
    assert statement.where[0].lhs == ast.ColumnRef(column)


@settings(max_examples=100, deadline=None)
@given(column=identifiers)
def test_identifiers_round_trip_in_ddl(column: str) -> None:
    statement = parse_statement(f"CREATE TABLE t ({quote_identifier(column)} int PRIMARY KEY)")
    assert isinstance(statement, ast.CreateTable)
    assert statement.partition_key == (column,)


@settings(max_examples=100, deadline=None)
@given(value=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_string_literals_round_trip(value: str) -> None:
    statement = parse_statement(f"INSERT INTO t (a) VALUES ({quote_string(value)})")
    assert isinstance(statement, ast.InsertStatement)
    assert statement.values == (ast.Literal("string", value),)


@settings(max_examples=100, deadline=None)
@given(number=st.integers(min_value=-(2**70), max_value=2**70))
def test_integer_literals_keep_their_sign(number: int) -> None:
    statement = parse_statement(f"SELECT * FROM t WHERE a = {number}")
    assert isinstance(statement, ast.SelectStatement)
    assert statement.where[0].rhs == ast.Literal("integer", str(number))


@settings(max_examples=100, deadline=None)
@given(number=st.floats(allow_nan=False, allow_infinity=False))
def test_float_literals_are_kind_float(number: float) -> None:
    text = repr(number)
    if "e" not in text and "." not in text:  # pragma: no cover - repr always has one of them
        text += ".0"
    statement = parse_statement(f"SELECT * FROM t WHERE a = {text}")
    assert isinstance(statement, ast.SelectStatement)
    literal = statement.where[0].rhs
    assert isinstance(literal, ast.Literal) and literal.kind == "float"
    assert float(literal.text) == number


def _udt_names() -> st.SearchStrategy[str]:
    return identifiers.filter(lambda n: n not in t.NATIVE_TYPE_NAMES and n not in t.NATIVE_ALIASES)


def _types() -> st.SearchStrategy[t.CqlType]:
    natives = st.sampled_from([t.native(n) for n in t.NATIVE_TYPE_NAMES if n != "counter"])
    udts = st.builds(t.UserTypeRef, st.one_of(st.none(), identifiers), _udt_names(), st.booleans())
    leaves = st.one_of(natives, udts)

    def extend(inner: st.SearchStrategy[t.CqlType]) -> st.SearchStrategy[t.CqlType]:
        frozen_inner = inner.map(lambda x: x.frozen_form())
        return st.one_of(
            st.builds(t.ListType, frozen_inner, st.booleans()),
            st.builds(t.SetType, frozen_inner, st.booleans()),
            st.builds(t.MapType, frozen_inner, frozen_inner, st.booleans()),
            st.builds(t.TupleType, st.lists(frozen_inner, min_size=1, max_size=3).map(tuple)),
            st.builds(t.VectorType, natives, st.integers(min_value=1, max_value=4096)),
        )

    return st.recursive(leaves, extend, max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(cql_type=_types())
def test_types_round_trip_through_their_cql_text(cql_type: t.CqlType) -> None:
    assert parse_type(cql_type.cql()) == cql_type


def test_native_aliases_and_custom_types() -> None:
    assert parse_type("varchar") == t.TEXT
    assert parse_type("'org.apache.cassandra.db.marshal.BytesType'") == t.CustomType(
        "org.apache.cassandra.db.marshal.BytesType"
    )


def test_unreserved_keywords_are_exactly_the_non_reserved_ones() -> None:
    keywords = {k.lower() for k in re.findall(r'"([A-Za-z_]+)"i', GRAMMAR)}
    body = GRAMMAR.split("!unreserved_keyword:")[1].split("\n\n")[0]
    unreserved = {k.lower() for k in re.findall(r'"([A-Za-z_]+)"i', body)}
    for terminal in re.findall(r"\b([A-Z_]+)\b", re.sub(r'"[A-Za-z_]+"i', "", body)):
        definition = re.search(rf"^{terminal}: \"([A-Za-z_]+)\"i$", GRAMMAR, re.MULTILINE)
        assert definition is not None, terminal
        unreserved.add(definition.group(1).lower())
    assert unreserved == keywords - RESERVED_KEYWORDS


def test_every_rule_has_a_callback() -> None:
    """A rule without a callback would leak a raw lark Tree into the AST."""
    builder = _Builder()
    names = set()
    for rule in _parser().lark.rules:
        name = rule.alias or rule.options.template_source or rule.origin.name
        name = str(name)
        if not name.startswith("_") and not rule.options.expand1:
            names.add(name)
    missing = sorted(n for n in names if not hasattr(builder, n))
    assert missing == []
