"""Turning `WITH ...` option terms into the plain Python values the schema layer validates.

Options are constants (strings, numbers, booleans), maps of constants and, for rack lists,
lists of strings. Bind markers and function calls are not allowed in DDL, as in Cassandra.
"""

from __future__ import annotations

from typing import Any

from tabletdb.cql import ast
from tabletdb.cql.errors import ConfigurationError, CqlSyntaxError, InvalidRequest
from tabletdb.cql.numbers import brief_int, parse_int


def option_value(term: ast.Term, option: str) -> Any:
    """The plain value of one option term (str, int, float, bool, dict, list)."""
    if isinstance(term, ast.Literal):
        return _literal_value(term, option)
    if isinstance(term, ast.MapLiteral):
        return {_map_key(k, option): option_value(v, option) for k, v in term.pairs}
    if isinstance(term, ast.ListLiteral | ast.SetLiteral | ast.TupleLiteral):
        return [option_value(item, option) for item in term.items]
    if isinstance(term, ast.Null):
        return None
    raise InvalidRequest(f"Invalid value for property '{option}': only constants are allowed")


def options_dict(properties: ast.Properties) -> dict[str, Any]:
    """All options of a WITH clause; a repeated option is an error, as in ScyllaDB."""
    result: dict[str, Any] = {}
    for name, term in properties.items:
        if name in result:
            raise CqlSyntaxError(f"Multiple definitions for property '{name}'")
        result[name] = option_value(term, name)
    return result


def _literal_value(term: ast.Literal, option: str) -> Any:
    kind, text = term.kind, term.text
    if kind == "integer":
        number = parse_int(text)
        if not -(2**63) <= number < 2**63:  # no option takes more; the schema stores 64 bits at most
            raise ConfigurationError(
                f"Invalid value for property '{option}': {brief_int(number)} is out of range"
            )
        return number
    if kind == "float":
        return float(text)
    if kind == "boolean":
        return text.lower() == "true"
    return text


def _map_key(term: ast.Term, option: str) -> str:
    if isinstance(term, ast.Literal):
        return term.text if term.kind != "boolean" else term.text.lower()
    raise InvalidRequest(f"Invalid key in map property '{option}': only constants are allowed")
