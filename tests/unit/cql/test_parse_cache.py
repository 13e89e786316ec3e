"""The parse cache is bounded by text length, not only entries: statements from any user fill
it, so its memory must not grow with the size of the statements sent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tabletdb.cql import parser
from tabletdb.cql.parser import _StatementCache, parse


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    parser.clear_cache()
    yield
    parser.clear_cache()


def _select(width: int, i: int) -> str:
    literal = "x" * width
    return f"SELECT * FROM ks.t WHERE k = '{literal}' AND c = {i}"


def test_repeated_statement_is_served_from_the_cache() -> None:
    text = "SELECT * FROM ks.t WHERE k = 1"
    assert parse(text) == parse(text)
    assert len(parser._statement_cache) == 1


def test_very_large_statements_are_not_cached() -> None:
    text = _select(parser.CACHE_MAX_STATEMENT_CHARS, 0)
    parse(text)
    assert len(parser._statement_cache) == 0 and parser._statement_cache.chars == 0


def test_total_text_length_is_bounded() -> None:
    cache = parser._statement_cache
    width = parser.CACHE_MAX_STATEMENT_CHARS // 2
    count = 2 * parser.CACHE_MAX_CHARS // width
    for i in range(count):
        parse(_select(width, i))
    assert 0 < cache.chars <= parser.CACHE_MAX_CHARS
    assert len(cache) < count


def test_least_recently_used_is_evicted_first() -> None:
    cache = _StatementCache(max_entries=2, max_chars=1000, max_statement_chars=1000)
    a, b, c = ((parse(f"SELECT * FROM t WHERE k = {i}")[0],) for i in range(3))
    cache.put("a", a)
    cache.put("b", b)
    assert cache.get("a") == a  # "b" is now the oldest
    cache.put("c", c)
    assert cache.get("b") is None and cache.get("a") == a and cache.get("c") == c


def test_eviction_by_length_keeps_the_count_of_chars_exact() -> None:
    cache = _StatementCache(max_entries=100, max_chars=10, max_statement_chars=10)
    statements = parse("SELECT * FROM t")
    cache.put("aaaa", tuple(statements))
    cache.put("bbbb", tuple(statements))
    cache.put("cccccc", tuple(statements))
    assert cache.chars == 10 and cache.get("aaaa") is None and len(cache) == 2
