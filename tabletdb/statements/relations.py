"""One WHERE relation as a test on decoded rows: shared by filtering, IF conditions, view filters and
the virtual system tables, so all of them read a relation the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import CqlType, ListType, MapType, SetType
from tabletdb.cql.values import Unset
from tabletdb.statements.terms import Bindings, term_value

Row = dict[str, Any]


def bound_value(term: ast.Term, t: CqlType, receiver: str, bindings: Bindings) -> Any:
    value = term_value(term, t, receiver, bindings)
    if isinstance(value, Unset):
        raise InvalidRequest(f"Invalid unset value for column {receiver}")
    return value


def relation_predicate(name: str, t: CqlType, rel: ast.Relation, bindings: Bindings) -> Callable[[Row], bool]:
    """A test of one WHERE relation on decoded rows (column name -> Python value): shared by
    filtering, IF conditions and view filters, so all of them read a relation the same way."""
    op = rel.op
    if op == "IN":
        if isinstance(rel.rhs, ast.InValues):
            options = [bound_value(item, t, name, bindings) for item in rel.rhs.items]
        else:
            options = list(bound_value(rel.rhs, _list_of(t), name, bindings) or ())
        return lambda r: r.get(name) in options
    if op in ("CONTAINS", "CONTAINS KEY"):
        element = _element_type(t, key=op == "CONTAINS KEY")
        wanted = bound_value(_single(rel.rhs), element, name, bindings)
        if op == "CONTAINS KEY":
            return lambda r: any(k == wanted for k, _ in (r.get(name) or ()))
        if hasattr(t, "key"):
            return lambda r: any(v == wanted for _, v in (r.get(name) or ()))
        return lambda r: wanted in (r.get(name) or ())
    wanted = bound_value(_single(rel.rhs), t, name, bindings)
    compare: dict[str, Callable[[Any, Any], bool]] = {
        "=": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        "<": lambda a, b: a is not None and a < b,
        "<=": lambda a, b: a is not None and a <= b,
        ">": lambda a, b: a is not None and a > b,
        ">=": lambda a, b: a is not None and a >= b,
    }
    if op not in compare:
        raise InvalidRequest(f"Unsupported restriction {op} on column {name}")
    check = compare[op]
    return lambda r: check(r.get(name), wanted)


def _single(rhs: ast.Term | ast.InValues) -> ast.Term:
    if isinstance(rhs, ast.InValues):
        raise InvalidRequest("A list of values is only allowed with IN")
    return rhs


def _list_of(t: CqlType) -> CqlType:
    return ListType(t)


def _element_type(t: CqlType, key: bool) -> CqlType:
    if isinstance(t, MapType):
        return t.key if key else t.value
    if isinstance(t, ListType | SetType) and not key:
        return t.element
    raise InvalidRequest(f"Cannot use CONTAINS{' KEY' if key else ''} on non-collection column")
