"""CQL text -> statement objects (`tabletdb.cql.ast`) and type strings -> CqlType.

Drivers may send unprepared QUERYs thousands of times a second, so:
- the LALR parser is built once, lazily, and builds AST objects directly during reductions
  (lark's inline transformer: no parse tree is materialised);
- parsed statements are immutable, so `parse` keeps an LRU cache of text -> statements. It is
  bounded by the total length of the cached texts as well as by entries, and very long texts are
  not cached: any user, even one allowed nothing, can send statements, and 4,096 entries of 4 MB
  statements would hold gigabytes. Repeated statements are short; long ones are bulk literals.

Syntax errors are CqlSyntaxError with ScyllaDB-like messages that start `line L:C` (line from 1,
column from 0, as ANTLR counts) and quote the offending input.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
from collections import OrderedDict
from functools import lru_cache
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from tabletdb.cql import ast
from tabletdb.cql.errors import CqlSyntaxError
from tabletdb.cql.grammar.auth import AuthCallbacks
from tabletdb.cql.grammar.errors import SemanticSyntaxError
from tabletdb.cql.types import CqlType

CACHE_SIZE = 4096
CACHE_MAX_CHARS = 16 * 1024 * 1024
"""Total length of the statement texts the parse cache holds (their ASTs grow with them)."""
CACHE_MAX_STATEMENT_CHARS = 64 * 1024
"""Statements longer than this are parsed every time, never cached."""
log = logging.getLogger(__name__)


class _Builder(AuthCallbacks, Transformer[Token, object]):
    """All grammar callbacks plus the two top-level rules (every one receives its children as
    positional arguments: see `_inline_callbacks`)."""

    def __init__(self) -> None:
        AuthCallbacks.__init__(self)
        Transformer.__init__(self)

    def statement(self, statement: ast.Statement) -> ast.Statement:
        # Reduced once per top-level statement: bind markers restart at 0 for the next one.
        self.reset_markers()
        return statement

    def start(self, *statements: ast.Statement) -> list[ast.Statement]:
        return list(statements)


def _inline_callbacks(cls: type) -> None:
    """Make lark pass children as arguments to every callback, inherited ones included (lark's
    class-level v_args only covers methods defined on the Transformer subclass itself)."""
    for name in [*dir(AuthCallbacks), "statement", "start"]:
        if not name.startswith("_") and callable(getattr(cls, name)):
            setattr(cls, name, v_args(inline=True)(getattr(cls, name)))


_inline_callbacks(_Builder)


def _analysis_cache(grammar: str) -> str | bool:
    """Where lark keeps its LALR tables between processes (building them takes seconds).

    A private per-user directory rather than lark's default shared temp dir, because the cache
    is a pickle. The grammar hash is in the name; lark also verifies it before loading.
    """
    digest = hashlib.sha256(grammar.encode()).hexdigest()[:16]
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tabletdb"
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
    except (OSError, RuntimeError):
        return False  # no home, or a read-only one: build the tables in memory every time
    return str(base / f"cql-grammar-{digest}-py{sys.version_info[0]}{sys.version_info[1]}.lark")


class _Parser:
    """The lark parser and its transformer; parsing is serialised because the transformer
    carries the bind-marker counter of the statement being parsed."""

    def __init__(self) -> None:
        grammar = resources.files("tabletdb.cql.grammar").joinpath("cql.lark").read_text(encoding="utf-8")
        self.builder = _Builder()
        self.lark = Lark(
            grammar,
            parser="lalr",
            lexer="contextual",
            start=["start", "type_start"],
            maybe_placeholders=True,
            transformer=self.builder,
            propagate_positions=False,
            cache=_analysis_cache(grammar),
        )
        self.lock = threading.Lock()
        # For error messages: how each terminal is written, and which ones IDENT stands for.
        self.spellings = {
            term.name: (repr(term.pattern.value) if term.pattern.type == "str" else term.name)
            for term in self.lark.terminals
        }
        self.unreserved = frozenset(
            rule.expansion[0].name for rule in self.lark.rules if rule.origin.name == "unreserved_keyword"
        )

    def run(self, text: str, start: str) -> object:
        with self.lock:
            self.builder.reset_markers()
            try:
                return self.lark.parse(text, start=start)
            except UnexpectedInput as exc:
                raise CqlSyntaxError(self.describe_unexpected(text, exc)) from None
            except SemanticSyntaxError as exc:
                raise CqlSyntaxError(_describe_semantic(text, exc)) from None

    def describe_unexpected(self, text: str, exc: UnexpectedInput) -> str:
        if isinstance(exc, UnexpectedToken | UnexpectedEOF):
            token = getattr(exc, "token", None)
            if token is None or token.type == "$END":
                line, column = _end_position(text)
                return f"line {line}:{column} mismatched input '<EOF>' expecting {self.expected(exc)}"
            return f"line {token.line}:{token.column - 1} no viable alternative at input '{token}'"
        if isinstance(exc, UnexpectedCharacters):
            return f"line {exc.line}:{exc.column - 1} no viable alternative at character '{exc.char}'"
        return f"line {exc.line}:{max(exc.column - 1, 0)} syntax error"

    def expected(self, exc: UnexpectedInput) -> str:
        names = set(getattr(exc, "expected", ()) or ())
        if "IDENT" in names:
            names -= self.unreserved  # "an identifier" already covers every unreserved keyword
        shown = sorted(self.spellings.get(name, name) for name in names)
        if not shown:
            return "more input"
        return ", ".join(shown[:8]) + (", ..." if len(shown) > 8 else "")


_instance: _Parser | None = None
_instance_lock = threading.Lock()


def _parser() -> _Parser:
    global _instance
    if _instance is None:
        with _instance_lock:
            if _instance is None:
                _instance = _Parser()
    return _instance


def load_in_background() -> threading.Thread:
    """Start loading the parser in a daemon thread and return it (join it to wait for the load).

    A starting node calls this first thing so that the ~0.3 s of rebuilding lark's tables from
    its cache overlaps whatever the node waits on before it serves CQL (a joining node waits
    for its seed, which is itself still starting). The first parse simply blocks until the
    load finishes; a failed load is retried (and its error raised) by that first parse.
    """
    thread = threading.Thread(target=_load_quietly, name="cql-parser-load", daemon=True)
    thread.start()
    return thread


def _load_quietly() -> None:
    try:
        _parser()
    except Exception:
        log.debug("background CQL parser load failed; the first parse retries it", exc_info=True)


# ----------------------------------------------------------------------------------- public API


def parse(text: str) -> list[ast.Statement]:
    """All statements of `text` (separated by `;`, a trailing `;` allowed). Raises CqlSyntaxError,
    or InvalidRequest for the few checks ScyllaDB also makes while parsing. Callback bugs
    (TypeError, ValueError from the AST) are not disguised as syntax errors."""
    return list(_parse_cached(text))


def parse_statement(text: str) -> ast.Statement:
    """Exactly one statement (a trailing `;` allowed)."""
    statements = _parse_cached(text)
    if len(statements) != 1:
        line, column = _end_position(text)
        raise CqlSyntaxError(f"line {line}:{column} expected exactly one statement, got {len(statements)}")
    return statements[0]


def parse_type(text: str) -> CqlType:
    """A CQL type as written in DDL or stored in system_schema, e.g. `frozen<map<text, int>>`,
    `vector<float, 3>`; UDT names become `UserTypeRef`."""
    return _parse_type_cached(text)


def clear_cache() -> None:
    """Forget cached parses (for benchmarks and tests)."""
    _statement_cache.clear()
    _parse_type_cached.cache_clear()


class _StatementCache:
    """LRU of statement text -> statements, bounded by entries and by total text length.

    A lock, because the parser also runs in the background loader thread and in executor threads.
    """

    def __init__(self, max_entries: int, max_chars: int, max_statement_chars: int) -> None:
        self.max_entries = max_entries
        self.max_chars = max_chars
        self.max_statement_chars = max_statement_chars
        self.chars = 0
        self._entries: OrderedDict[str, tuple[ast.Statement, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, text: str) -> tuple[ast.Statement, ...] | None:
        with self._lock:
            found = self._entries.get(text)
            if found is not None:
                self._entries.move_to_end(text)
            return found

    def put(self, text: str, statements: tuple[ast.Statement, ...]) -> None:
        size = len(text)
        if size > self.max_statement_chars:
            return
        with self._lock:
            if text in self._entries:
                return
            self._entries[text] = statements
            self.chars += size
            while len(self._entries) > self.max_entries or self.chars > self.max_chars:
                old, _ = self._entries.popitem(last=False)
                self.chars -= len(old)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.chars = 0


_statement_cache = _StatementCache(CACHE_SIZE, CACHE_MAX_CHARS, CACHE_MAX_STATEMENT_CHARS)


def _parse_cached(text: str) -> tuple[ast.Statement, ...]:
    cached = _statement_cache.get(text)
    if cached is not None:
        return cached
    statements = _parse_uncached(text)
    _statement_cache.put(text, statements)
    return statements


def _parse_uncached(text: str) -> tuple[ast.Statement, ...]:
    if not text.strip(" \t\r\n;"):
        line, column = _end_position(text)
        raise CqlSyntaxError(f"line {line}:{column} mismatched input '<EOF>' expecting a statement")
    result = _parser().run(text, "start")
    assert isinstance(result, list)
    return tuple(result)


@lru_cache(maxsize=256)
def _parse_type_cached(text: str) -> CqlType:
    result = _parser().run(text, "type_start")
    assert isinstance(result, CqlType)
    return result


# ---------------------------------------------------------------------------------- error text


def _end_position(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1])


def _describe_semantic(text: str, exc: SemanticSyntaxError) -> str:
    if not exc.positioned:
        return exc.message
    token = exc.token
    if token is not None and token.line is not None and token.column is not None:
        return f"line {token.line}:{token.column - 1} {exc.message}"
    line, column = _end_position(text)
    return f"line {line}:{column} {exc.message}"
